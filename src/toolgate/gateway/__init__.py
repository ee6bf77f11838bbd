"""Gateway edge: fronts existing MCP servers (config, backends, serving, demo).

May import the core, the adapters, `mcp` and `fastmcp`; nothing imports it but the CLI.
"""
