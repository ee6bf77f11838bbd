"""A backend that speaks JSON-RPC by hand and answers some calls malformed, over stdio
(default) or streamable HTTP (``--port N``: ``/mcp`` gives a session id, ``/plain``
none, ``/modern`` one and serves 2026-07-28 requests too, as ``server/discover`` says).
``initialize`` and ``tools/list`` are answered properly; each tool answers a call with
one shape: ``bad_error`` an error object of the wrong types, ``no_outcome`` neither
result nor error, ``bad_result`` a result that is no ``CallToolResult``, ``bad_json`` a
line that is not JSON, ``fine`` a good result. ``--sse`` answers HTTP calls as SSE.
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SHAPES = {
    "bad_error": lambda i: json.dumps(
        {"jsonrpc": "2.0", "id": i, "error": {"code": "x", "message": 5}}
    ),
    "no_outcome": lambda i: json.dumps({"jsonrpc": "2.0", "id": i}),
    "bad_result": lambda i: json.dumps(
        {"jsonrpc": "2.0", "id": i, "result": {"content": "no list"}}
    ),
    "bad_json": lambda i: '{"jsonrpc": "2.0", "id": ' + json.dumps(i) + ', "result": {"content": [',
    "fine": lambda i: json.dumps(
        {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "fine"}]}}
    ),
}
TOOLS = [
    {"name": name, "description": f"answers {name}", "inputSchema": {"type": "object"}}
    for name in SHAPES
]


def answer(message: dict[str, Any], modern: bool = False) -> str | None:
    """The line answering ``message`` (None for a notification); ``modern``: as a server
    of 2026-07-28 requests too."""
    method, rid = message.get("method"), message.get("id")
    if rid is None:
        return None
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw-malformed", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        return SHAPES[message["params"]["name"]](rid)
    elif method == "server/discover" and modern:
        result = {
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw-malformed", "version": "1"},
        }
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": f"no method {method}"}
        return json.dumps({"jsonrpc": "2.0", "id": rid, "error": error})
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": result})


def stdio() -> None:
    for line in sys.stdin:
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(reply + "\n")
            sys.stdout.flush()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    sse = False

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["content-length"])))
        reply = answer(message, modern=self.path == "/modern")
        if reply is None:
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        if self.sse:
            data = f"event: message\ndata: {reply}\n\n".encode()
            kind = "text/event-stream"
        else:
            data, kind = reply.encode(), "application/json"
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        if message.get("method") == "initialize" and self.path != "/plain":
            self.send_header("mcp-session-id", "raw-session")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.send_response(405)
        self.send_header("content-length", "0")
        self.end_headers()

    do_DELETE = do_GET


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    parser.add_argument("--sse", action="store_true")
    ns = parser.parse_args()
    if ns.port is None:
        stdio()
    else:
        Handler.sse = ns.sse
        ThreadingHTTPServer(("127.0.0.1", ns.port), Handler).serve_forever()
