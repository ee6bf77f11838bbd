"""Built-in demo backends for `toolgate demo`: two real MCP servers over one SQLite file.

`tracker` (project tracker) and `shop` (small web shop) run as `python -m` modules;
`toolgate.json` here is the gateway configuration that fronts them.
"""
