"""Where a request enters the gateway: the HTTP guard and server protocol, sessions per
client, OAuth's HTTP side, and the fast path for ``tools/call``. Imports the gateway's
config, never the relay or the backends.
"""
