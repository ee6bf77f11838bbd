"""What RFC 9110/9112 ask of an HTTP/1.1 client, asked of the calls the gateway sends an
HTTP backend by hand (``backends.http_calls`` over ``backends.http11``).

A backend on a raw socket answers each request with bytes written here and counts the
connections it accepts: bodies chunked (with chunk extensions and trailers), sized, or
read to the close; connections kept by HTTP/1.1's default, dropped on ``Connection:
close`` and, for HTTP/1.0, unless ``keep-alive``; interim 1xx answers read past; a
kept-open connection the backend closed while idle not used, and a call whose connection
closes as it goes out not sent again (it may have run), while a notification is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from toolgate.gateway.backends.http11 import ResponseError
from toolgate.gateway.backends.http_calls import HttpCalls
from toolgate.gateway.backends.http_client import SessionSeen

#: what the backend does with one request: the bytes it answers with (``None``: it hangs
#: up unanswered), given the request's JSON-RPC id; then, with the connection, what it does
#: before reading the next request on it (returns False to close the connection)
Answer = Callable[[Any], bytes | None]
Then = Callable[[asyncio.StreamWriter], Awaitable[bool]]


async def keep(writer: asyncio.StreamWriter) -> bool:
    return True


async def hang_up(writer: asyncio.StreamWriter) -> bool:
    return False


@dataclass
class RawBackend:
    """Answers the n-th request it reads with the n-th of ``steps``."""

    steps: list[tuple[Answer, Then]]
    accepted: int = 0
    #: (connection number, request body) of every request read, in order
    heard: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.tasks.add(asyncio.current_task())  # type: ignore[arg-type]
        conn, self.accepted = self.accepted, self.accepted + 1
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while self.steps:
                head = await reader.readuntil(b"\r\n\r\n")
                size = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                body = json.loads(await reader.readexactly(size))
                self.heard.append((conn, body))
                answer, then = self.steps.pop(0)
                data = answer(body.get("id"))
                if data is None:
                    break
                writer.write(data)
                await writer.drain()
                if not await then(writer):
                    break
            else:
                await reader.read()  # no more steps: wait for the client to hang up
        writer.close()

    @contextlib.asynccontextmanager
    async def calls(self) -> AsyncIterator[HttpCalls]:
        """The gateway's calls by hand to this backend, on a known session."""
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        seen = SessionSeen(session_id="s-1", protocol_version="2025-11-25")
        calls = HttpCalls(f"http://127.0.0.1:{port}/mcp", {}, seen)
        try:
            yield calls
        finally:
            await calls.close()
            server.close()
            for task in self.tasks:
                task.cancel()


def result(request_id: Any, text: str = "ok") -> bytes:
    content = [{"type": "text", "text": text}]
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": content}}).encode()


def sized(head: str = "HTTP/1.1 200 OK", *fields: str) -> Callable[[Any], bytes]:
    """A JSON answer with a Content-Length, after ``head`` and ``fields``."""

    def answer(request_id: Any) -> bytes:
        body = result(request_id)
        lines = [head, "content-type: application/json", f"content-length: {len(body)}", *fields]
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + body

    return answer


async def text_of(calls: HttpCalls) -> str:
    called = await calls.call_tool(None, "t", {}, timeout=5)  # type: ignore[arg-type]
    return str(called.content[0].text)  # type: ignore[union-attr]


async def two_calls(backend: RawBackend) -> int:
    """Two calls answered "ok" in turn; how many connections they took."""
    async with backend.calls() as calls:
        assert [await text_of(calls), await text_of(calls)] == ["ok", "ok"]
    return backend.accepted


async def test_a_chunked_answer_is_read_past_its_extensions_and_trailers() -> None:
    def chunked(request_id: Any) -> bytes:
        body = result(request_id)
        one, two = body[:10], body[10:]
        return (
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
            + b"%x;name=value\r\n%s\r\n" % (len(one), one)
            + b'%X ; quoted="a;b"\r\n%s\r\n' % (len(two), two)
            + b"0;last\r\nx-digest: abc\r\nx-more: 1\r\n\r\n"
        )

    assert await two_calls(RawBackend([(chunked, keep), (chunked, keep)])) == 1


async def test_a_sized_answer_is_read_to_its_length_and_its_connection_kept() -> None:
    assert await two_calls(RawBackend([(sized(), keep), (sized(), keep)])) == 1


async def test_an_answer_of_no_stated_length_is_read_to_the_close_and_not_reused() -> None:
    def to_the_close(request_id: Any) -> bytes:
        return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n" + result(request_id)

    assert await two_calls(RawBackend([(to_the_close, hang_up), (to_the_close, hang_up)])) == 2


@pytest.mark.parametrize(
    ("fields", "connections"),
    [((), 2), (("connection: Keep-Alive",), 1)],
    ids=["default-close", "keep-alive"],
)
async def test_an_http_1_0_answer_keeps_its_connection_only_when_it_says_keep_alive(
    fields: tuple[str, ...], connections: int
) -> None:
    """The backend keeps every connection open: only the version says whether to reuse."""
    answer = sized("HTTP/1.0 200 OK", *fields)
    assert await two_calls(RawBackend([(answer, keep), (answer, keep)])) == connections


@pytest.mark.parametrize("value", ["close", "keep-alive, Close"])
async def test_a_connection_the_backend_says_it_closes_is_not_reused(value: str) -> None:
    """The backend keeps the connection open, but said ``close``: a new one is opened."""
    answer = sized("HTTP/1.1 200 OK", f"connection: {value}")
    assert await two_calls(RawBackend([(answer, keep), (answer, keep)])) == 2


async def test_interim_answers_are_read_past_to_the_final_one() -> None:
    def hinted(request_id: Any) -> bytes:
        interim = (
            b"HTTP/1.1 100 Continue\r\n\r\n"
            b"HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n\r\n"
        )
        return interim + sized()(request_id)

    assert await two_calls(RawBackend([(hinted, keep), (hinted, keep)])) == 1


def closing(said: bytes, idle: asyncio.Event, closed: asyncio.Event) -> Then:
    """Once the connection is ``idle`` (the client is done with the answer), write
    ``said`` and close it; then set ``closed``."""

    async def then(writer: asyncio.StreamWriter) -> bool:
        await idle.wait()
        writer.write(said)
        await writer.drain()
        writer.close()
        closed.set()
        return False

    return then


@pytest.mark.parametrize(
    "said", [b"", b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"]
)
async def test_a_connection_the_backend_closed_while_idle_is_not_used(said: bytes) -> None:
    """Closed silently or after a 408: the next call goes on a new connection, and the
    closed one is sent nothing (a call is never sent twice, so it must not be tried)."""
    idle, closed = asyncio.Event(), asyncio.Event()
    backend = RawBackend([(sized(), closing(said, idle, closed)), (sized(), keep)])
    async with backend.calls() as calls:
        assert await text_of(calls) == "ok"
        idle.set()
        await asyncio.wait_for(closed.wait(), 5)
        await asyncio.sleep(0.1)  # the client's end of the connection hears of it
        assert await text_of(calls) == "ok"
    assert [conn for conn, _ in backend.heard] == [0, 1]


async def test_a_call_whose_kept_open_connection_closes_unanswered_is_not_sent_again() -> None:
    """The backend read the call and hung up: it may have run, so it fails, once."""
    backend = RawBackend([(sized(), keep), (lambda _: None, hang_up)])
    async with backend.calls() as calls:
        assert await text_of(calls) == "ok"
        with pytest.raises(ResponseError, match="may have run, so it is not sent again"):
            await text_of(calls)
    assert [(conn, body["method"]) for conn, body in backend.heard] == [
        (0, "tools/call"),
        (0, "tools/call"),
    ]


async def test_a_notification_whose_kept_open_connection_closes_is_sent_again() -> None:
    """A notification (or an answer to the backend) changes nothing twice: it goes again
    on a new connection; a 204 answer to it has no body, whatever follows."""
    no_content = (lambda _: b"HTTP/1.1 204 No Content\r\n\r\n", keep)
    backend = RawBackend([(sized(), keep), (lambda _: None, hang_up), no_content, no_content])
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    async with backend.calls() as calls:
        assert await text_of(calls) == "ok"
        async with asyncio.timeout(5):  # a body read to the close would wait for ever
            await calls._tell(note)
            await calls._tell(note)
    assert [conn for conn, _ in backend.heard] == [0, 0, 1, 1]


async def test_a_chunked_answer_with_a_content_length_too_is_read_chunked_and_not_reused() -> None:
    def both(request_id: Any) -> bytes:
        body = result(request_id)
        return (
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 3\r\n"
            b"transfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        )

    assert await two_calls(RawBackend([(both, keep), (both, keep)])) == 2


@pytest.mark.parametrize(
    ("framing", "problem"),
    [
        (b"content-length: 5, 6", "Content-Length is invalid"),
        (b"content-length: -1", "Content-Length is invalid"),
        (b"transfer-encoding: chunked\r\n\r\nzz", "not a chunk size"),
    ],
)
async def test_a_body_framed_wrongly_is_an_error(framing: bytes, problem: str) -> None:
    def broken(request_id: Any) -> bytes:
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n" + framing
        return head + (b"\r\n" if b"\r\n\r\n" in framing else b"\r\n\r\n")

    async with RawBackend([(broken, keep)]).calls() as calls:
        with pytest.raises(ResponseError, match=problem):
            await text_of(calls)
