"""The gateway's configuration: the file's models, server specs, ``${VAR}`` expansion, who
the caller is (identity from config) and the catalog built from it. The bottom of the
gateway: imports the core and ``toolgate.oauth``, nothing else of the gateway.
"""
