"""A misbehaving MCP backend for the adversarial gateway tests: raw JSON-RPC over stdio,
written by hand (no SDK) so it can break the protocol on purpose.

Tools: ``repeat`` and ``pid`` behave; ``hang`` never answers; ``wrong_id`` answers with
another request's id; ``bad_error`` answers with an error that is not an object;
``bad_utf8`` writes a line of bytes that are not UTF-8, then answers with one such byte
in its text; ``cancelled`` lists the request ids the gateway cancelled.
Run: ``python tests/servers/gw_adversary.py`` (stdio).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from toolgate.exiting import quick_exit

OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
TOOLS = [
    {"name": name, "description": text, "inputSchema": OBJECT}
    for name, text in [
        ("repeat", "Return the arguments."),
        ("pid", "This process's id."),
        ("hang", "Never answer."),
        ("wrong_id", "Answer with the wrong request id."),
        ("bad_error", "Answer with an error that is not an object."),
        ("bad_utf8", "Write bytes that are not UTF-8."),
        ("cancelled", "The request ids the client cancelled."),
        ("spell", "Spells " + "a" * 64 + "!"),  # for patterns that backtrack forever
    ]
]
CANCELLED: list[Any] = []


def write(message: dict[str, Any] | bytes) -> None:
    data = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def text(rid: Any, value: str) -> dict[str, Any]:
    content = [{"type": "text", "text": value}]
    return {"jsonrpc": "2.0", "id": rid, "result": {"content": content, "isError": False}}


def call(rid: Any, name: str, arguments: dict[str, Any]) -> None:
    if name == "repeat":
        write(text(rid, json.dumps(arguments)))
    elif name == "pid":
        write(text(rid, str(os.getpid())))
    elif name == "hang":
        return
    elif name == "wrong_id":
        write(text(f"not-{rid}", "for somebody else"))
    elif name == "bad_error":
        write({"jsonrpc": "2.0", "id": rid, "error": "no"})
    elif name == "bad_utf8":
        write(b"\xff\xfe\xfd not a message\n")
        answer = json.dumps(text(rid, "caf@")).encode().replace(b"@", b"\xe9")
        write(answer + b"\n")
    elif name == "spell":
        write(text(rid, "a" * 64))
    elif name == "cancelled":
        write(text(rid, json.dumps(CANCELLED)))
    else:
        write({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "no such tool"}})


def main() -> None:
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            version = params.get("protocolVersion", "2025-11-25")
            result = {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "gw-adversary", "version": "1"},
            }
            write({"jsonrpc": "2.0", "id": rid, "result": result})
        elif method == "tools/list":
            write({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            call(rid, params["name"], params.get("arguments") or {})
        elif method == "ping":
            write({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "notifications/cancelled":
            CANCELLED.append(params.get("requestId"))
        elif rid is not None:
            write({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})


if __name__ == "__main__":
    main()
    quick_exit()  # end without collecting the heap (toolgate.exiting)
