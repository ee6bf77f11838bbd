"""Calls by hand to an HTTP backend, piece by piece (``backends.http_calls``, ``http11``,
``stateless``, ``http``): bodies chunked, sized or closed, events split anywhere and ended
by any line break, and when calls may reach a backend by hand (no proxy in the way). The
RFC 9112 rules on a real socket are in ``test_gateway_http11.py``; the calls end to end,
with real clients and a real backend, in ``test_gateway_call_relay.py``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, cast

import mcp_types as mt
import pytest
from mcp.shared.exceptions import MCPError

from toolgate.gateway.backends.http import HttpTransport, usable
from toolgate.gateway.backends.http11 import Body, Events, Reader, Reply, ResponseError, read_head
from toolgate.gateway.backends.http_calls import HttpCalls, _answer
from toolgate.gateway.backends.http_client import SessionSeen
from toolgate.gateway.backends.malformed import MalformedAnswer
from toolgate.gateway.backends.stateless import Stateless, completed, header_params
from toolgate.gateway.config.servers import HttpServer


def _reader(*pieces: bytes) -> Reader:
    reader = Reader()
    for piece in pieces:
        reader.feed_data(piece)
    reader.feed_eof()
    return reader


async def _chunks(*pieces: bytes) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


async def _all(events: AsyncIterator[bytes]) -> list[bytes]:
    return [e async for e in events]


async def test_events_split_anywhere_with_any_line_break_are_read_whole() -> None:
    stream = (
        b': a comment\r\n\r\nevent: message\r\ndata: {"a":\r\ndata: 1}\r\n\r\n'
        b"id: 7\nevent: ping\ndata: skipped\n\n"
        b"data: two\r\rdata: three\n\n"
    )
    expected = [b'{"a":\n1}', b"two", b"three"]
    whole = await _all(Events(_chunks(stream)))
    bytewise = await _all(Events(_chunks(*(stream[i : i + 1] for i in range(len(stream))))))
    assert whole == bytewise == expected


async def test_an_event_cut_after_its_carriage_return_waits_for_its_line_feed() -> None:
    # "\r" ends one chunk, "\n" starts the next: one line break, not two (no empty event)
    assert await _all(Events(_chunks(b"data: x\r", b"\n\r\n"))) == [b"x"]


async def test_an_endless_line_is_refused() -> None:
    with pytest.raises(ResponseError, match="too long"):
        await _all(Events(_chunks(b"data: " + b"x" * (64 * 1024 * 16 + 1))))


@pytest.mark.parametrize(
    ("head", "body", "reusable"),
    [
        (
            b"transfer-encoding: chunked",
            b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nx-t: 1\r\n\r\n",
            True,
        ),
        (b"content-length: 11", b"hello world", True),
        (b"connection: close", b"hello world", False),
    ],
)
async def test_bodies_chunked_sized_or_closed_are_read_to_their_end(
    head: bytes, body: bytes, reusable: bool
) -> None:
    reader = _reader(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n" + head + b"\r\n\r\n" + body
    )
    status, headers, persistent = await read_head(reader)
    reply = Reply(status, headers, (reader, None), persistent)  # type: ignore[arg-type]
    assert status == 200
    assert b"".join([c async for c in Body(reply)]) == b"hello world"
    assert reply.reusable is reusable


async def test_a_sized_body_cut_short_is_an_error() -> None:
    reader = _reader(b"HTTP/1.1 200 OK\r\ncontent-length: 20\r\n\r\nshort")
    status, headers, persistent = await read_head(reader)
    reply = Reply(status, headers, (reader, None), persistent)  # type: ignore[arg-type]
    with pytest.raises(ResponseError, match="mid-response"):
        _ = [c async for c in Body(reply)]


async def test_what_is_not_http_is_refused() -> None:
    with pytest.raises(ResponseError, match=r"not an HTTP/1\.1 response"):
        await read_head(_reader(b"SSH-2.0-OpenSSH\r\n\r\n"))


def test_an_answer_is_the_result_or_the_error_for_its_own_id() -> None:
    assert _answer({"jsonrpc": "2.0", "id": "h-1", "result": {"a": 1}}, "h-1") == {"a": 1}
    assert _answer({"jsonrpc": "2.0", "id": "h-2", "result": {}}, "h-1") is None
    assert _answer({"jsonrpc": "2.0", "id": "h-1", "method": "ping"}, "h-1") is None
    error = _answer(
        {"jsonrpc": "2.0", "id": "h-1", "error": {"code": -32042, "message": "x"}}, "h-1"
    )
    assert error == mt.ErrorData(code=-32042, message="x")
    with pytest.raises(MalformedAnswer, match="its error object is malformed"):
        _answer({"jsonrpc": "2.0", "id": "h-1", "error": "nope"}, "h-1")


def test_the_hop_leaves_a_backend_behind_a_proxy_to_the_sdks_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    assert usable("http://backend.example:8000/mcp")
    assert not usable("ftp://backend.example/mcp")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert usable("http://backend.example:8000/mcp")
    assert not usable("https://backend.example/mcp")
    monkeypatch.setenv("NO_PROXY", "backend.example")
    assert usable("https://backend.example/mcp")
    # decided once, as a connection's transport is made
    behind = HttpTransport(
        "b", HttpServer(url="https://other.example/mcp"), base_dir=Path(), errlog=None
    )
    assert behind.direct is None


async def test_calls_go_by_hand_only_on_a_session_the_backend_gave_an_id() -> None:
    """A backend that gives its session no id (a stateless server) has its calls sent
    through the SDK's session; nothing is sent to learn whether it serves 2026-07-28."""
    spec = HttpServer(url="http://127.0.0.1:9/mcp")
    transport = HttpTransport("b", spec, base_dir=Path(), errlog=None)
    assert transport.direct is not None
    await transport.started(None, timeout=1)  # type: ignore[arg-type]
    assert transport.direct is None and not transport.stateless


async def test_progress_for_the_call_reaches_the_caller_and_a_malformed_one_is_dropped() -> None:
    hop = HttpCalls("http://127.0.0.1:9/mcp", {}, SessionSeen())
    heard: list[tuple[float, float | None, str | None]] = []

    async def report(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    def note(token: str, value: object) -> dict[str, object]:
        params = {"progressToken": token, "progress": value, "total": 4, "message": "step"}
        return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}

    session: Any = None  # progress never reaches the client session
    await hop._heard(note("call-1", 1), session, "call-1", report)
    await hop._heard(note("call-1", "not a number"), session, "call-1", report)
    await hop._heard(note("another-call", 2), session, "call-1", report)
    assert heard == [(1.0, 4.0, "step")]


async def test_a_stream_answered_midway_is_drained_from_where_it_was_left() -> None:
    # a sized SSE body: the answer is the first event; the drain reads the rest of that
    # body, not a body's length anew, so the next response on the connection is intact
    events = b"data: answer\n\ndata: after\n\n"
    reader = _reader(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n"
        % len(events)
        + events
        + b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n"
    )
    status, headers, persistent = await read_head(reader)
    reply = Reply(status, headers, (reader, None), persistent)  # type: ignore[arg-type]
    body = Body(reply)
    assert await anext(Events(body)) == b"answer"
    assert b"".join([chunk async for chunk in body]) == b""  # all of it came in one read
    assert reply.reusable
    assert (await read_head(reader))[0] == 202


async def _answering(*responses: bytes) -> tuple[str, list[bytes], asyncio.Server]:
    """A backend on 127.0.0.1 that answers each request it reads with the next of
    ``responses``; the requests (head and body) are kept."""
    heard: list[bytes] = []
    left = list(responses)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while left:
            head = await reader.readuntil(b"\r\n\r\n")
            size = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            heard.append(head + await reader.readexactly(size))
            writer.write(left.pop(0))
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return f"http://127.0.0.1:{port}/mcp", heard, server


def _json_response(status: str, message: Mapping[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body


@pytest.mark.parametrize(
    ("response", "stateless"),
    [
        # a backend that serves 2026-07-28 lists it
        (
            _json_response(
                "200 OK",
                {
                    "jsonrpc": "2.0",
                    "id": "toolgate-hop-1",
                    "result": {"supportedVersions": ["2025-11-25", "2026-07-28"]},
                },
            ),
            True,
        ),
        # one that serves only the handshake era refuses a request without a session
        (
            _json_response(
                "400 Bad Request",
                {"jsonrpc": "2.0", "id": "server-error", "error": {"code": -32600, "message": "x"}},
            ),
            False,
        ),
        # and one that lists other versions only is not sent 2026-07-28 requests either
        (
            _json_response(
                "200 OK",
                {"jsonrpc": "2.0", "id": "toolgate-hop-1", "result": {"supportedVersions": ["x"]}},
            ),
            False,
        ),
        (b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n", False),
    ],
    ids=["modern", "handshake-only", "other-versions", "not-found"],
)
async def test_a_backend_serving_2026_is_told_apart_by_server_discover(
    response: bytes, stateless: bool
) -> None:
    url, heard, server = await _answering(response)
    hop = HttpCalls(url, {}, SessionSeen())
    try:
        served = await hop.discover(None, timeout=5)  # type: ignore[arg-type]
    finally:
        await hop.close()
        server.close()
    assert served is stateless
    head, _, body = heard[0].partition(b"\r\n\r\n")
    assert b"mcp-protocol-version: 2026-07-28" in head and b"mcp-session-id" not in head
    sent = json.loads(body)
    assert sent["method"] == "server/discover"
    assert sent["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"


async def test_a_stateless_call_carries_the_envelope_and_the_headers_its_tool_asks_for() -> None:
    schema = {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    }
    result = {
        "resultType": "complete",
        "content": [{"type": "text", "text": "eu"}],
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "b", "version": "1"}, "k": 1},
    }
    answer = {"jsonrpc": "2.0", "id": "toolgate-hop-1", "result": result}
    url, heard, server = await _answering(_json_response("200 OK", answer))
    hop = HttpCalls(url, {"authorization": "Bearer t"}, SessionSeen())
    params = header_params(schema)
    assert params is not None
    form = Stateless.of("region", params, {"region": "eu"}, {"name": "gw", "version": "1"}, "info")
    try:
        called = await hop.call_tool(None, "region", {"region": "eu"}, timeout=5, stateless=form)  # type: ignore[arg-type]
    finally:
        await hop.close()
        server.close()
    head, _, body = heard[0].partition(b"\r\n\r\n")
    lines = set(head.decode().lower().split("\r\n"))
    assert {
        "mcp-protocol-version: 2026-07-28",
        "mcp-method: tools/call",
        "mcp-name: region",
        "mcp-param-region: eu",
        "authorization: bearer t",
    } <= lines
    assert not any(line.startswith("mcp-session-id") for line in lines)
    meta = json.loads(body)["params"]["_meta"]
    assert meta == {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "gw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/logLevel": "info",
    }
    # the backend's own server info is its envelope's, not the result's
    assert called.meta == {"k": 1}
    assert called.content[0].text == "eu"  # type: ignore[union-attr]


def test_a_tool_whose_header_annotations_are_invalid_is_not_sent_stateless() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "object", "x-mcp-header": "A"}}}
    assert header_params(schema) is None
    assert header_params({"type": "object", "properties": {"a": {"type": "string"}}}) == {}


def test_a_backend_asking_a_stateless_call_for_input_is_its_error() -> None:
    asked = {"resultType": "input_required", "inputRequests": {"s": {"method": "sampling/x"}}}
    with pytest.raises(MCPError, match=r"asked for input \(s\)"):
        completed(asked)
    plain = {"content": [], "_meta": {"io.modelcontextprotocol/serverInfo": {}}}
    assert completed(plain) == {"content": []}


def test_a_backends_stateless_form_follows_its_tool_list() -> None:
    """Which arguments travel as headers is read once per tool list, again when the list
    changes; a tool the backend does not list, or one whose annotations are invalid,
    has no stateless form (its call stays on the session), nor has any tool of a backend
    that does not serve 2026-07-28, or whose calls go the SDK's way (a proxy in between)."""
    from toolgate.gateway.backends.backend import Backend

    spec = HttpServer(url="http://127.0.0.1:9/mcp")
    backend = Backend("b", spec)
    transport = backend.transport = HttpTransport("b", spec, base_dir=Path(), errlog=None)
    assert transport.direct is not None
    plain = {"name": "t", "inputSchema": {"type": "object", "properties": {"r": {}}}}
    backend.tools = (plain,)
    transport.stateless = True
    assert backend.stateless_form("t", {"r": "x"}, None) is None  # not up
    backend.status, backend.session = "up", cast(Any, object())
    transport.stateless = False
    assert backend.stateless_form("t", {"r": "x"}, None) is None  # not discovered yet
    transport.stateless = True
    form = backend.stateless_form("t", {"r": "x"}, "debug")
    assert form is not None and "mcp-param-r" not in {k.lower() for k in form.headers}
    assert form.envelope["io.modelcontextprotocol/logLevel"] == "debug"
    annotated = {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}}
    backend.tools = ({"name": "t", "inputSchema": annotated},)
    form = backend.stateless_form("t", {"r": "x"}, None)
    assert form is not None and form.headers["Mcp-Param-R"] == "x"
    invalid = {"type": "object", "properties": {"r": {"type": "object", "x-mcp-header": "R"}}}
    backend.tools = ({"name": "t", "inputSchema": invalid},)
    assert backend.stateless_form("t", {"r": {}}, None) is None
    assert backend.stateless_form("unlisted", {}, None) is None
    backend.tools = (plain,)
    assert backend.stateless_form("t", {"r": "x"}, None) is not None
    transport.direct = None  # calls through the SDK's session: never stateless
    assert backend.stateless_form("t", {"r": "x"}, None) is None


async def test_a_stateless_call_past_its_deadline_closes_its_connection() -> None:
    """A backend answering with one JSON body sends its head only at the end, so a
    2026-07-28 call that times out is still waiting for it; closing the connection is
    how the backend hears the call is cancelled (no session to notify)."""
    closed = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        while await reader.read(65536):  # never answers; reads until the client hangs up
            pass
        closed.set()
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    hop = HttpCalls(f"http://127.0.0.1:{port}/mcp", {}, SessionSeen())
    form = Stateless.of("t", {}, {}, {"name": "gw", "version": "1"}, None)
    try:
        with pytest.raises(MCPError) as raised:
            await hop.call_tool(None, "t", {}, timeout=0.2, stateless=form)  # type: ignore[arg-type]
        assert raised.value.error.code == mt.REQUEST_TIMEOUT
        await asyncio.wait_for(closed.wait(), 5)
        assert not hop._tasks  # nothing is posted to cancel it: there is no session
    finally:
        await hop.close()
        server.close()
