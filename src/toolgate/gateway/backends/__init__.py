"""Where a backend is called: one supervised connection per configured server, reached
through one ``BackendTransport`` per connection (stdio, streamable HTTP). Imports the
gateway's config, never the relay, the ingress or the operations.
"""
