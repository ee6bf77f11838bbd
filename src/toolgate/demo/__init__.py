"""Built-in demo backends for `toolgate demo`: two real MCP servers over one SQLite file.

`tracker` (project tracker) and `shop` (small web shop) run as `python -m` packages;
`toolgate.json` here is the gateway configuration that fronts them, `run` is
`toolgate demo`. An edge above `toolgate.gateway`: nothing in toolgate imports it but the CLI.
"""
