"""Where a backend is called: one supervised connection per configured server and the
transports it is reached through (stdio, streamable HTTP). Imports the gateway's config,
never the relay, the ingress or the operations.
"""
