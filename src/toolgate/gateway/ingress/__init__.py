"""Where a request enters the gateway, once: the HTTP guard (Host/Origin, the caller
resolved, the body read) and the server protocol, sessions per client, authentication's
HTTP side, and the fast path for ``tools/call``, assembled as one declared list in
``app``; over stdio, the host's lines on stdin (``stdio``). Imports the gateway's
config, never the relay or the backends.
"""
