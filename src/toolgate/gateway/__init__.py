"""Gateway edge: fronts existing MCP servers (config, build, backends, check, inspect,
the dashboard, serve; layered in that order by an import-linter contract).

May import the core, the adapters (WebMCP too), `mcp` and `fastmcp`; nothing imports it
but the CLI and the demo (`toolgate.demo`).
"""
