"""The HTTP client the SDK's session with a streamable-HTTP backend runs on: one pooled
keep-alive ``httpx2.AsyncClient`` per connection, whose responses closed early are read to
their end so their connections are reused, and which notes the session the SDK's client
holds (``SessionSeen``, for ``http_calls``); all share one TLS context. Imports
``httpx2``, nothing of the gateway.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

import anyio
import httpx2

#: how long and how much a closed response may still be read to end its body cleanly;
#: a server that streams on past this loses the connection, as before
DRAIN_SECONDS = 0.5
DRAIN_BYTES = 64 * 1024
#: 30 s to connect, write and wait in the pool; 300 s between two reads, so an SSE stream
#: may go quiet for five minutes: the values the SDK's own client is made with
#: (``create_mcp_http_client``), so the session behaves as it would there
TIMEOUT = httpx2.Timeout(30.0, read=300.0)


@functools.cache
def shared_tls() -> ssl.SSLContext:
    """The one TLS context of this process's backend clients. Each client used to build
    its own, reading the system's CA bundle (about 50 ms of CPU, for a backend on plain
    HTTP too) on every connect, reconnect and reload; the settings are the same for all
    (httpx2's defaults, environment included), so one serves them all."""
    return httpx2.create_ssl_context()


class _DrainOnClose(httpx2.AsyncByteStream):
    """A response body that, when closed early, first reads what is left of it; one read
    to its end is closed at once (read again, a body already ended waits out the bound:
    every DELETE that ends a backend's session cost half a second)."""

    def __init__(self, stream: httpx2.AsyncByteStream) -> None:
        self._stream = stream
        self._ended = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk
        self._ended = True

    async def aclose(self) -> None:
        if self._ended:
            await self._stream.aclose()
            return
        try:
            read = 0
            with anyio.move_on_after(DRAIN_SECONDS):
                async for chunk in self._stream:
                    read += len(chunk)
                    if read > DRAIN_BYTES:
                        break
        except (httpx2.TransportError, httpx2.StreamError):
            pass  # the connection is gone anyway; closing below discards it
        finally:
            await self._stream.aclose()


@dataclass
class SessionSeen:
    """The MCP session the SDK's client holds with a backend, as its traffic shows it:
    the ``Mcp-Session-Id`` the backend gave and the protocol version the client sends."""

    session_id: str | None = None
    protocol_version: str | None = None


class KeepAliveTransport(httpx2.AsyncBaseTransport):
    """``httpx2.AsyncHTTPTransport`` (or ``inner``) whose responses end cleanly when
    closed early. Not a GET's: that is the server's standalone event stream, which it
    keeps open, so draining it would only wait out the bound before dropping the
    connection anyway."""

    def __init__(
        self, seen: SessionSeen | None = None, inner: httpx2.AsyncBaseTransport | None = None
    ) -> None:
        self._inner = inner or httpx2.AsyncHTTPTransport(verify=shared_tls())
        self.seen = seen if seen is not None else SessionSeen()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        version = request.headers.get("mcp-protocol-version")
        if version:
            self.seen.protocol_version = version
        response = await self._inner.handle_async_request(request)
        session_id = response.headers.get("mcp-session-id")
        if session_id:
            self.seen.session_id = session_id
        stream = response.stream
        if request.method != "GET" and isinstance(stream, httpx2.AsyncByteStream):
            response.stream = _DrainOnClose(stream)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def backend_http_client(
    headers: Mapping[str, str] | None = None, seen: SessionSeen | None = None
) -> httpx2.AsyncClient:
    """A pooled keep-alive client for one HTTP backend, with the SDK's timeouts; what
    session it holds goes in ``seen``."""
    return httpx2.AsyncClient(
        headers=dict(headers or {}), timeout=TIMEOUT, transport=KeepAliveTransport(seen)
    )


__all__ = ["KeepAliveTransport", "SessionSeen", "backend_http_client"]
