"""A small HTTP/1.1 client for one origin, as RFC 9110/9112 ask of a client: POSTs on
kept-open connections; responses read past interim 1xx, their bodies framed (none, chunked,
sized, or to the close) and their connections kept only when the version and ``Connection``
allow; server-sent events read from a body. The call path (``http_calls``) posts on it.
Imports nothing of the gateway.
"""

from __future__ import annotations

import asyncio
import re
import ssl
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import SupportsIndex
from urllib.parse import urlsplit

#: kept-open connections per backend, at most, between requests
MAX_IDLE = 64
#: the longest line (status, header, chunk size, SSE field) read
MAX_LINE = 64 * 1024
#: how long the rest of an answered stream is read before its connection is dropped
DRAIN_SECONDS = 0.5
HEX = b"0123456789abcdefABCDEF"
#: ``HTTP/1.x NNN reason``; a response of a later 1.x version reads as 1.1 (RFC 9110 §2.5)
STATUS_LINE = re.compile(r"HTTP/1\.([0-9]) ([0-9]{3})(?: .*)?")


class ResponseError(Exception):
    """The backend answered something this client cannot read, or nothing."""


class Reader(asyncio.StreamReader):
    """A connection's reader that notes what arrives while the connection is idle: a
    server that closes an idle connection may say why first (``408``), and such a
    connection is not used again."""

    idle = False
    stale = False

    def feed_data(self, data: Iterable[SupportsIndex]) -> None:
        self.stale |= self.idle
        super().feed_data(data)

    def feed_eof(self) -> None:
        self.stale |= self.idle
        super().feed_eof()


Stream = tuple[Reader, asyncio.StreamWriter]


@dataclass
class Reply:
    """A response's status and header fields (names lower-case, repeated fields joined),
    the connection to read its body from, and whether that connection may carry another
    request once the body is read (``reusable``: RFC 9112 §9.3, and ``Body``'s framing)."""

    status: int
    headers: dict[str, str]
    conn: Stream
    reusable: bool = True
    given: bool = False  # the connection went back to the pool (or to the task draining it)


class Connections:
    """Kept-open connections to the origin of ``url``, at most ``MAX_IDLE`` idle."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.tls = ssl.create_default_context() if parts.scheme == "https" else None
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.authority = parts.netloc
        self.idle: list[Stream] = []

    async def post(self, lines: list[str], body: bytes, *, replayable: bool) -> Reply:
        """POST ``body`` with the header ``lines``; the response's head. An idle
        connection the server closed, or wrote to, is not used. When a kept-open one
        fails before the response (the server closed it as the request went out), the
        request goes again on a new connection only if ``replayable``: it may have run."""
        head = [
            f"POST {self.target} HTTP/1.1",
            f"host: {self.authority}",
            f"content-length: {len(body)}",
            *lines,
        ]
        data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        while True:
            conn, reused = await self._take()
            try:
                conn[1].write(data)
                await conn[1].drain()
                status, headers, persistent = await read_head(conn[0])
            except (OSError, asyncio.IncompleteReadError) as exc:
                close(conn)
                if reused and replayable:
                    continue
                if reused:
                    raise ResponseError(
                        "the backend closed a kept-open connection as the request went out; "
                        "it may have run, so it is not sent again"
                    ) from exc
                if isinstance(exc, OSError):
                    raise
                raise ResponseError("the backend closed the connection unanswered") from None
            except BaseException:  # cancelled mid-request: the connection is of no use now
                close(conn)
                raise
            return Reply(status, headers, conn, persistent)

    async def _take(self) -> tuple[Stream, bool]:
        while self.idle:
            conn = self.idle.pop()
            if not (conn[1].is_closing() or conn[0].at_eof() or conn[0].stale):
                conn[0].idle = False
                return conn, True
            close(conn)
        loop = asyncio.get_running_loop()
        reader = Reader(limit=MAX_LINE, loop=loop)
        protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
        transport, _ = await loop.create_connection(
            lambda: protocol,
            self.host,
            self.port,
            ssl=self.tls,
            server_hostname=self.host if self.tls else None,
        )
        return (reader, asyncio.StreamWriter(transport, protocol, reader, loop)), False

    def done(self, reply: Reply, *, reusable: bool = True) -> None:
        """The reply is read to its end: keep its connection for the next request."""
        reply.given = True
        if reusable and reply.reusable and len(self.idle) < MAX_IDLE:
            reply.conn[0].idle = True
            self.idle.append(reply.conn)
        else:
            close(reply.conn)

    async def drain(self, reply: Reply, body: Body) -> None:
        """Read what is left of an answered stream, briefly; else drop the connection."""
        try:
            async with asyncio.timeout(DRAIN_SECONDS):
                async for _ in body:
                    pass
        except (TimeoutError, OSError, ResponseError):
            self.done(reply, reusable=False)
            return
        self.done(reply)

    def close(self) -> None:
        while self.idle:
            close(self.idle.pop())


def close(conn: Stream) -> None:
    conn[1].close()


async def read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bool]:
    """The status and header fields of a response, interim 1xx ones skipped (100
    Continue, 103 Early Hints), and whether its connection persists: HTTP/1.1 unless
    ``Connection: close``, HTTP/1.0 only with ``Connection: keep-alive``."""
    while True:
        try:
            block = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError as exc:
            raise ResponseError("the backend's response headers are too long") from exc
        lines = block[:-4].decode("latin-1").split("\r\n")
        status = STATUS_LINE.fullmatch(lines[0])
        if status is None:
            raise ResponseError(f"not an HTTP/1.1 response: {lines[0][:80]!r}")
        minor, code = status.groups()
        if code.startswith("1"):
            continue
        headers: dict[str, str] = {}
        name = ""
        for line in lines[1:]:
            if line[:1] in (" ", "\t") and name:  # obsolete line folding: one space
                headers[name] += " " + line.strip()
                continue
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
        persistent = "close" not in tokens and (minor != "0" or "keep-alive" in tokens)
        return int(code), headers, persistent


class Body:
    """A response body as it arrives (RFC 9112 §6.3): none (204, 304), chunked (chunk
    extensions and trailers read past), sized, or to the end of the connection, which
    then is not reused. An iterator object, not an async generator: one left unfinished
    (a stream answered before its end) is simply dropped, with nothing left on the loop."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.reader = reply.conn[0]
        headers = reply.headers
        codings = [c.strip().lower() for c in headers.get("transfer-encoding", "").split(",")]
        self.chunked = False
        self.left: int | None = None
        if reply.status in (204, 304):
            self.left = 0
        elif any(codings):  # framed by Transfer-Encoding; with a Content-Length too, not reused
            self.chunked = codings[-1] == "chunked"
            reply.reusable &= self.chunked and "content-length" not in headers
        elif "content-length" in headers:
            self.left = _length(headers["content-length"])
        else:
            reply.reusable = False  # read to the end of the connection
        self.ended = False

    def __aiter__(self) -> Body:
        return self

    async def __anext__(self) -> bytes:
        if self.ended:
            raise StopAsyncIteration
        reader = self.reader
        try:
            if self.chunked:
                size = _chunk_size(await self._line())
                if size == 0:
                    while await self._line() != b"\r\n":
                        pass  # trailer fields
                    return self._end()
                chunk = await reader.readexactly(size)
                if await reader.readexactly(2) != b"\r\n":
                    raise ResponseError("a chunk of the backend's response does not end in CRLF")
                return chunk
        except asyncio.IncompleteReadError:
            raise ResponseError("the backend closed the connection mid-response") from None
        if self.left is not None:
            if self.left <= 0:
                return self._end()
            chunk = await reader.read(min(self.left, 65536))
            if not chunk:
                raise ResponseError("the backend closed the connection mid-response")
            self.left -= len(chunk)
            return chunk
        chunk = await reader.read(65536)
        return chunk if chunk else self._end()

    async def _line(self) -> bytes:
        try:
            return await self.reader.readuntil(b"\r\n")
        except asyncio.LimitOverrunError as exc:
            raise ResponseError("a line of the backend's response is too long") from exc

    def _end(self) -> bytes:
        self.ended = True
        raise StopAsyncIteration


def _length(value: str) -> int:
    """A Content-Length: digits, or a list of one value repeated (RFC 9110 §8.6)."""
    values = {v.strip() for v in value.split(",")}
    found = values.pop() if len(values) == 1 else ""
    if not found.isdigit() or not found.isascii():
        raise ResponseError(f"the backend's Content-Length is invalid: {value[:40]!r}")
    return int(found)


def _chunk_size(line: bytes) -> int:
    """A chunk's size, its extensions (``;name=value``) ignored (RFC 9112 §7.1.1)."""
    size = line.split(b";", 1)[0].strip()
    if not size or size.strip(HEX):
        raise ResponseError(f"not a chunk size: {line[:40]!r}")
    return int(size, 16)


class Events:
    """The data of each server-sent ``message`` event in ``chunks`` (an iterator object,
    like ``Body``, so one left before its end costs nothing)."""

    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        self.chunks = chunks
        self.buffer = b""
        self.data: list[bytes] = []
        self.event = b""

    def __aiter__(self) -> Events:
        return self

    async def __anext__(self) -> bytes:
        while True:
            found = self._take()
            if found is not None:
                return found
            self.buffer += await anext(self.chunks)  # StopAsyncIteration ends us too

    def _take(self) -> bytes | None:
        """The next whole event already in the buffer, if there is one."""
        buffer = self.buffer
        while True:
            cut = min((i for i in (buffer.find(b"\n"), buffer.find(b"\r")) if i >= 0), default=-1)
            if cut < 0:
                if len(buffer) > MAX_LINE * 16:
                    raise ResponseError("an event from the backend is too long")
                break
            line = buffer[:cut]
            step = 2 if buffer[cut : cut + 2] == b"\r\n" else 1
            if buffer[cut : cut + 1] == b"\r" and cut + 1 == len(buffer):
                break  # a lone CR at the end: its LF may be in the next chunk
            buffer = buffer[cut + step :]
            if not line:
                data, event = self.data, self.event
                self.data, self.event = [], b""
                if data and event in (b"", b"message"):
                    self.buffer = buffer
                    return b"\n".join(data)
                continue
            name, _, value = line.partition(b":")
            value = value[1:] if value.startswith(b" ") else value
            if name == b"data":
                self.data.append(value)
            elif name == b"event":
                self.event = value
        self.buffer = buffer
        return None


__all__ = ["Body", "Connections", "Events", "Reader", "Reply", "ResponseError", "read_head"]
