"""A request answered before its body was read ends its connection: the answer says
``Connection: close`` and the gateway closes, so the unread body is never read as the
next request's head. A raw keep-alive client against the gateway's HTTP app on its own
HTTP server protocol (``GuardedProtocol``): a body over the size limit (413), a body
from a caller the guard refuses (401), and a client that sends its next request right
behind the refused body.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import httpx
import pytest
import uvicorn

from _fixtures.gateway import sha256
from _fixtures.mcp_servers import free_port
from toolgate.gateway.config.model import parse_config
from toolgate.gateway.ingress.app import server_options
from toolgate.gateway.serve import Gateway

LIMIT = 1_048_576  # the default http.max_body_bytes


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    """The gateway's HTTP app and server options (no backends: the edge is under test),
    served by uvicorn in a thread of its own."""
    identity = {"tokens": {sha256("known-token"): {"id": "alice", "scope": ["*"]}}}
    cfg = parse_config({"mcpServers": {}, "toolgate": {"identity": identity}})
    port, servers, done = free_port(), list[uvicorn.Server](), threading.Event()

    async def serve() -> None:
        gateway = Gateway(cfg)
        try:
            async with gateway.running():
                config = uvicorn.Config(
                    gateway.http_app(), **server_options(cfg, host="127.0.0.1", port=port)
                )
                servers.append(uvicorn.Server(config))
                await servers[0].serve()
        finally:
            await gateway.close()
            done.set()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    while not (servers and servers[0].started) and not done.is_set():
        done.wait(0.02)
    try:
        yield port
    finally:
        if servers:
            servers[0].should_exit = True
        thread.join(timeout=30)


def post_head(length: int, *, token: str = "") -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\n{auth}Content-Length: {length}\r\n\r\n"
    ).encode()


def read_to_end(s: socket.socket) -> bytes:
    """Everything the gateway sends until it closes the connection (a timeout fails)."""
    answer = b""
    while chunk := s.recv(65_536):
        answer += chunk
    return answer


def head_of(answer: bytes) -> tuple[bytes, dict[str, str]]:
    head = answer.split(b"\r\n\r\n", 1)[0].decode()
    status, *lines = head.split("\r\n")
    fields = dict(line.split(": ", 1) for line in lines)
    return status.encode(), {k.lower(): v.lower() for k, v in fields.items()}


def test_a_body_over_the_limit_gets_413_with_connection_close_and_the_connection_ends(
    port: int,
) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(post_head(2 * LIMIT) + b"x" * 65_536)  # the head, then part of the body
        answer = read_to_end(s)  # returns only because the gateway closed its side
    status, fields = head_of(answer)
    assert status.startswith(b"HTTP/1.1 413 ")
    assert fields.get("connection") == "close"
    assert answer.count(b"HTTP/1.1 ") == 1
    # a well-formed request on a new connection is served
    assert httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200


def test_a_request_sent_right_behind_a_refused_body_never_gets_431_or_a_mangled_answer(
    port: int,
) -> None:
    body = b"x" * (LIMIT + 100_000)  # all of it, and the next request after it
    after = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(post_head(len(body)) + body + after)
        answer = read_to_end(s)
    status, fields = head_of(answer)
    assert status.startswith(b"HTTP/1.1 413 ")
    assert fields.get("connection") == "close"
    # one answer, the 413, whole: the body was not read as a head (no 431, no 400)
    assert b" 431 " not in answer
    assert answer.count(b"HTTP/1.1 ") == 1
    assert answer.endswith(f"the request body is larger than {LIMIT} bytes".encode())


def test_a_body_the_guard_leaves_unread_for_an_unknown_caller_ends_its_connection(
    port: int,
) -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}' * 2000  # 100 kB, unread
    after = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(post_head(len(body), token="not-a-known-token") + body[:1000])
        first = s.recv(65_536)  # the 401, answered before the body is in
        s.sendall(body[1000:] + after)
        answer = first + read_to_end(s)
    status, fields = head_of(answer)
    assert status.startswith(b"HTTP/1.1 401 ")
    assert fields.get("connection") == "close"
    assert answer.count(b"HTTP/1.1 ") == 1
