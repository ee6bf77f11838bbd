"""The HTTP server's side of the way in: uvicorn's httptools protocol with header
deadlines, a bound on a request head's size and a connection cap (``GuardedProtocol``),
a response's head and body in one send, a request told at once when its client's
connection closes (``Leaving``, under ``LEAVING`` in its scope), and connections that
close without resetting what the client sent (a body refused unread, a stop), and an
absolute-form target's host as the request's ``Host``. Ingress layer, at the bottom:
imports uvicorn (and its parser, httptools) only.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, cast

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol


class _Paired:
    """A transport that sends a write together with the one right after it: a
    response's head waits for its body (written in the same turn of the event loop) and
    both leave in one send, one system call instead of two. A write nothing follows
    leaves at the end of the turn."""

    def __init__(
        self,
        transport: asyncio.Transport,
        loop: asyncio.AbstractEventLoop,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None
        #: how a close is carried out (the protocol's gentle close), else at once
        self._on_close = on_close
        self._closing = False

    def write(self, data: bytes) -> None:
        if not data:
            return
        if self._held is None:
            self._held = data
            self._loop.call_soon(self.flush)
            return
        held, self._held = self._held, None
        self._transport.write(held + data)

    def flush(self) -> None:
        held, self._held = self._held, None
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        if self._on_close is not None and not self._closing:
            self._closing = True
            self._on_close()
            return
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._closing or self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


#: the scope key under which ``GuardedProtocol`` puts its connection's ``Leaving``
LEAVING = "toolgate.leaving"


def _nothing() -> None:
    return None


class Leaving:
    """The end of one client connection, told to the requests on it that asked: a
    callback run when it closes, where a request would otherwise keep a task waiting on
    ``receive`` for ``http.disconnect``."""

    __slots__ = ("_callbacks", "left")

    def __init__(self) -> None:
        self.left = False
        self._callbacks: list[Callable[[], None]] = []

    def when(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` when the connection closes (now, if it has); returns what
        takes it back."""
        if self.left:
            callback()
            return _nothing
        self._callbacks.append(callback)

        def forget() -> None:
            with contextlib.suppress(ValueError):
                self._callbacks.remove(callback)

        return forget

    def closed(self) -> None:
        self.left = True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the edge's connection limits: a deadline for
    each request head (a client that opens a connection and dribbles, or never sends,
    its headers is closed after ``header_timeout`` seconds), a bound on a head's size
    (``max_header_bytes``: past it, 431 and the connection closes), and a cap on open
    connections (past ``max_connections`` a new one is closed at once). A response's
    head and body leave in one send (``_Paired``). Each request's scope carries the
    connection's ``Leaving`` (``LEAVING``). Configure with ``guarded_protocol``.

    Closing never resets what the client sent: our side is shut first (the client reads
    the answer to its end), what it sends meanwhile is read and dropped for ``linger``
    seconds (``_close_gently``). A response to a request whose body was not all
    received says ``Connection: close`` and the connection closes, so the unread body is
    never read as the next request's head. While ``draining()`` every response says
    ``Connection: close``; the server's shutdown answers a request whose head has begun
    to arrive instead of dropping it, and closes idle connections gently."""

    header_timeout: float = 10.0
    max_connections: int = 1000
    max_header_bytes: int = 16_384
    #: seconds a closing connection still reads (and drops) what the client sends
    linger: float = 2.0
    #: seconds an idle connection is given, at shutdown, for a request already on its way
    settle: float = 0.05
    #: ``linger`` once the server is stopping (an idle client may never close its side)
    stop_linger: float = 0.5

    @staticmethod
    def draining() -> bool:
        """Whether the server is stopping (``guarded_protocol(draining=...)`` sets it)."""
        return False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = cast(asyncio.Transport, _Paired(transport, self.loop, self._close_gently))
        self._head_deadline: asyncio.TimerHandle | None = None
        self._head_bytes = 0  # of the head under way (bytes since the last complete one)
        self._head_size = 0  # of the head being parsed: its target and header lines
        self._head_done = False
        self._leaving = Leaving()
        self._refused = False  # closing: what the client sends is read and dropped
        self._last = False  # the server is stopping: the next response closes the connection
        if len(self.connections) > self.max_connections:
            transport.close()
            return
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._head_done = False
        self._head_bytes = 0
        self._head_deadline = self.loop.call_later(self.header_timeout, self._head_late)

    def _disarm(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_late(self) -> None:
        self._head_deadline = None
        if not self._head_done and not self.transport.is_closing():
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # closing: what follows is read and dropped
        head_was_done = self._head_done
        super().data_received(data)
        if head_was_done or self._head_done or self.transport.is_closing():
            return
        # a head not ended yet: the parser holds all of it, parsed or not (one header
        # that never ends reaches no callback), so its bytes so far are what is measured
        self._head_bytes += len(data)
        if self._head_bytes > self.max_header_bytes:
            self._refuse_head()

    # a head as the parser hands it on: its target and each header line are measured as
    # they come, whether the head arrived in one read or many, first on a connection or
    # pipelined behind another request (``data_received`` measures only one not ended)
    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        self._grow_head(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        super().on_header(name, value)
        self._grow_head(len(name) + len(value) + 4)  # "name: value\r\n"

    def _grow_head(self, size: int) -> None:
        self._head_size += size
        if self._head_size > self.max_header_bytes and not self._refused:
            self._refuse_head()

    def _refuse_head(self) -> None:
        """431, then the connection closes gently (``_close_gently``). Behind a response
        still under way (pipelining) that response goes out first and closes the
        connection; the 431 would otherwise be read as its answer."""
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = False
            self._refused = True  # the rest of the parser's callbacks do nothing
            self._disarm()
            return
        message = b"Request header fields too large"
        self.transport.write(
            STATUS_LINE[431]
            + b"content-type: text/plain; charset=utf-8\r\n"
            + b"content-length: %d\r\nconnection: close\r\n\r\n" % len(message)
            + message
        )
        self.transport.close()

    def _close_gently(self) -> None:
        """Our side at once (the client reads the answer to its end), theirs after
        ``linger`` seconds, what they send meanwhile read and dropped: closing with it
        unread would reset the connection, and the client could lose the answer."""
        self._refused = True
        self._disarm()
        transport = cast(_Paired, self.transport)
        transport.flush()
        raw = transport._transport
        if raw.is_closing():
            return
        if not raw.can_write_eof():
            raw.close()
            return
        try:
            raw.write_eof()
        except OSError:
            # the client is gone already (it closed, and our last write drew its reset):
            # nothing is left to read or to lose, and a client that hangs up early is
            # no error of the gateway's
            raw.abort()
            return
        self.loop.call_later(self.stop_linger if self._last else self.linger, raw.close)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_size = 0
        self.scope[LEAVING] = self._leaving  # type: ignore[literal-required]

    def on_headers_complete(self) -> None:
        if self._refused:
            return  # a head refused (431): no request of it runs
        self._head_done = True
        self._host_of_target()
        self._disarm()  # the head is complete: the request is under way
        before = self.cycle
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is before:  # an upgrade: no request cycle of ours
            return
        if self._last or self.draining():
            cycle.keep_alive = False  # its answer says Connection: close
        send = cycle.send

        async def send_closing_if_unread(message: Any) -> None:
            if message["type"] == "http.response.start" and cycle.more_body:
                # answered before its body was all in: the rest must not be read as
                # the next request's head, so this connection ends with the answer
                cycle.keep_alive = False
            await send(message)

        cycle.send = send_closing_if_unread  # type: ignore[method-assign]

    def _host_of_target(self) -> None:
        """An absolute-form target (``GET http://host/path``) names the request's host:
        RFC 9112 (3.2.2) has a server ignore ``Host`` then and use the target's, so its
        authority becomes the one ``Host`` header everything behind reads (the guard's
        check included). Several ``Host`` headers are left for the guard to refuse."""
        if self.url.startswith(b"/") or b"://" not in self.url:
            return
        try:
            target = httptools.parse_url(self.url)
        except httptools.HttpParserInvalidURLError:
            return  # uvicorn refuses it (400)
        host = target.host or b""
        if b":" in host:
            host = b"[" + host + b"]"
        if target.port is not None:
            host += b":%d" % target.port
        if sum(name == b"host" for name, _ in self.headers) <= 1:
            self.headers[:] = [(n, v) for n, v in self.headers if n != b"host"]
            self.headers.append((b"host", host))

    def on_body(self, body: bytes) -> None:
        if not self._refused:  # a refused head's body belongs to no request
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self._refused:
            super().on_message_complete()

    def send_400_response(self, msg: str) -> None:
        if not self._refused:  # closing already, its answer (a 431) sent
            super().send_400_response(msg)

    def drain(self) -> None:
        """The server began to stop: the response under way, if any, closes the
        connection (an idle one stays open until ``shutdown``: a request sent on it is
        answered, with ``Connection: close``)."""
        self._last = True
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = False

    def shutdown(self) -> None:
        """The server is closing: a response under way closes the connection when it is
        sent; a request whose head has begun to arrive, or arrives within ``settle``
        seconds, is answered first; an idle connection closes gently. (uvicorn's own
        closes an idle connection at once, resetting a request written on it just
        then.)"""
        self._last = True
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = False
            return
        self.loop.call_later(self.settle, self._close_if_idle)

    @property
    def head_arriving(self) -> bool:
        """Part of a request's head is in, not all of it."""
        return bool(self._head_bytes) and not self._head_done

    def _close_if_idle(self) -> None:
        if self.transport.is_closing():
            return  # a request came, was answered and closed the connection itself
        busy = self.cycle is not None and not self.cycle.response_complete
        if not busy and not self.head_arriving:
            self.transport.close()

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)  # the next request's head is in already
        super().on_response_complete()
        if not self.transport.is_closing() and not pipelined:
            self._arm()  # the next request's head has the same deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)
        self._leaving.closed()


def guarded_protocol(
    *,
    header_timeout: float,
    max_connections: int,
    max_header_bytes: int = 16_384,
    draining: Callable[[], bool] | None = None,
) -> type[GuardedProtocol]:
    """A ``GuardedProtocol`` subclass with these limits, for ``uvicorn.Config(http=...)``;
    ``draining`` says whether the server is stopping (``ingress.drain.Drain``)."""
    attributes: dict[str, Any] = {
        "header_timeout": header_timeout,
        "max_connections": max_connections,
        "max_header_bytes": max_header_bytes,
    }
    if draining is not None:
        attributes["draining"] = staticmethod(draining)
    return type("GuardedProtocol", (GuardedProtocol,), attributes)


__all__ = ["LEAVING", "GuardedProtocol", "Leaving", "guarded_protocol"]
