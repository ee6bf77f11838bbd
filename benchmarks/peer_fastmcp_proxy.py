"""FastMCP's own proxy (``fastmcp.server.create_proxy``) in front of one backend URL,
served over streamable HTTP: the peer ``bench_gateway.py --peer`` measures toolgate
against in the same run.
Run: ``python benchmarks/peer_fastmcp_proxy.py BACKEND_URL --port N``.
"""

from __future__ import annotations

import argparse

from fastmcp.server import create_proxy

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--port", type=int, required=True)
    ns = parser.parse_args()
    proxy = create_proxy(ns.url, name="fastmcp-proxy")
    proxy.run(
        transport="http", host="127.0.0.1", port=ns.port, show_banner=False, log_level="warning"
    )
