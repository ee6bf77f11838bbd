"""``toolgate.gateway.backends.http_client``: a response closed before its end gives its
connection back.

A small HTTP/1.1 server on a real socket answers with an SSE-like chunked body and counts
the connections it accepts. Closed after its first event, a body the server ends goes
back to the pool (the next request reuses the connection); a body the server never ends
is dropped once the bounded read gives up (the next request opens a new connection),
and closing it does not hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest

from toolgate.gateway.backends.http_client import (
    KeepAliveTransport,
    backend_http_client,
    shared_tls,
)

EVENT = b"event: message\r\ndata: {}\r\n\r\n"


class ChunkedServer:
    """Answers every request with one chunk; ends the body unless ``endless``."""

    def __init__(self, *, endless: bool) -> None:
        self.endless = endless
        self.accepted = 0
        self.port = 0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while True:
                await reader.readuntil(b"\r\n\r\n")  # requests here have no body
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"transfer-encoding: chunked\r\n\r\n"
                    + f"{len(EVENT):x}\r\n".encode()
                    + EVENT
                    + b"\r\n"
                )
                await writer.drain()
                if self.endless:
                    await asyncio.Event().wait()  # never ends the body
                writer.write(b"0\r\n\r\n")
                await writer.drain()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{self.port}/mcp"
        finally:
            server.close()


async def first_event_then_close(http: httpx2.AsyncClient, url: str, method: str = "POST") -> bytes:
    """Read up to the first event and close the response, as the SDK's client does with
    the SSE answer to a POST."""
    async with http.stream(method, url) as response:
        async for chunk in response.aiter_raw():
            return chunk
    return b""


async def test_a_body_the_server_ends_gives_its_connection_back_when_closed_early() -> None:
    server = ChunkedServer(endless=False)
    async with server.running() as url, backend_http_client() as http:
        for _ in range(5):
            assert await first_event_then_close(http, url) == EVENT
    assert server.accepted == 1


async def test_a_body_that_never_ends_is_dropped_without_hanging() -> None:
    server = ChunkedServer(endless=True)
    async with server.running() as url, backend_http_client() as http:
        async with asyncio.timeout(30):  # a hang fails; the read gives up far sooner
            assert await first_event_then_close(http, url) == EVENT
            assert await first_event_then_close(http, url) == EVENT
    assert server.accepted == 2


async def test_a_get_stream_is_closed_at_once_not_drained() -> None:
    """A GET is the server's standalone event stream, which it keeps open: closing one
    reads nothing more, so not even a body that had ended is read to its end, and its
    connection goes each time (the POSTs' answers are drained and reused, above)."""
    server = ChunkedServer(endless=False)
    async with server.running() as url, backend_http_client() as http:
        for _ in range(3):
            assert await first_event_then_close(http, url, "GET") == EVENT
    assert server.accepted == 3


class EndedBody(httpx2.AsyncByteStream):
    """A body of one chunk that has ended; read again after its end, it waits for data
    that never comes (as a keep-alive connection's stream does) and counts that read."""

    def __init__(self) -> None:
        self.reads_after_end = 0
        self._ended = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._ended:
            self.reads_after_end += 1
            await asyncio.Event().wait()
        yield b"{}"
        self._ended = True

    async def aclose(self) -> None:
        pass


class EndedBodies(httpx2.AsyncBaseTransport):
    """Answers every request with a new ``EndedBody``, kept in ``bodies``."""

    def __init__(self) -> None:
        self.bodies: list[EndedBody] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(EndedBody())
        return httpx2.Response(200, stream=self.bodies[-1])


async def test_a_body_read_to_its_end_is_closed_without_reading_it_again() -> None:
    """The SDK reads the answer to the DELETE that ends a backend's session to its end,
    then closes it: nothing is left to drain, and a read past the end would wait out the
    drain's bound on every backend's shutdown."""
    inner = EndedBodies()
    async with httpx2.AsyncClient(transport=KeepAliveTransport(inner=inner)) as http:
        for method in ("DELETE", "POST"):
            response = await http.request(method, "http://backend.test/mcp")
            assert response.content == b"{}"
    assert [body.reads_after_end for body in inner.bodies] == [0, 0]


async def test_backend_clients_share_one_tls_context(monkeypatch: pytest.MonkeyPatch) -> None:
    # building a TLS context reads the system's CA certificates; every connect,
    # reconnect and reload of an HTTP backend made a client, and each built its own
    built: list[ssl.SSLContext] = []
    made = httpx2.create_ssl_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        context = made(*args, **kwargs)
        built.append(context)
        return context

    monkeypatch.setattr(httpx2, "create_ssl_context", counting)
    shared_tls.cache_clear()
    clients = [backend_http_client() for _ in range(3)]
    try:
        assert len(built) == 1
        assert shared_tls() is built[0]
    finally:
        for client in clients:
            await client.aclose()
        shared_tls.cache_clear()
