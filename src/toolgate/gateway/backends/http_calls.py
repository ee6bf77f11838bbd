"""The backend hop of a tool call: one ``tools/call`` to a streamable-HTTP backend, sent
on the session the SDK's client opened with it (its ``Mcp-Session-Id`` and negotiated
version, learned from its traffic by ``pool.KeepAliveTransport``), over kept-open
HTTP/1.1 connections of plain asyncio streams instead of the SDK's transport and
dispatcher. What comes back on the call's stream is handled by that same
``ClientSession``: the backend's requests go to its request handler (the gateway's
sampling, elicitation and roots callbacks) and their answers back to the backend; its
notifications to its notification handler; progress to the caller. A session the
backend no longer knows (404) sends the call the SDK's way.

A backend that also serves 2026-07-28 (``discover``) can take a call as a stateless
request instead (``Stateless``): the envelope in its ``_meta``, the routing headers,
no session; cancelled by closing its connection. ``CallRelay`` sends that way the calls
of 2026-07-28 clients that can be asked nothing, as they would reach the backend
directly. Edge layer: imports ``mcp``, ``gateway.pool``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import ssl
import urllib.request
from collections.abc import AsyncIterator, Coroutine, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import anyio
import mcp_types as mt
import pydantic_core
from mcp import ClientSession
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    encode_header_value,
    find_invalid_x_mcp_header,
    mcp_param_headers,
    x_mcp_header_map,
)
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.transport_context import TransportContext
from mcp_types.version import LATEST_MODERN_VERSION

from toolgate.gateway.backends.http_client import SessionSeen

#: set while the hop hands on what a backend sent on a call's own response stream
_ON_CALL_STREAM: ContextVar[bool] = ContextVar("toolgate.hop.on_call_stream", default=False)


def on_call_stream() -> bool:
    """Whether the backend message being handled came on the response stream of the call
    running in this task (a request related to that call), not on a shared stream."""
    return _ON_CALL_STREAM.get()


logger = logging.getLogger("toolgate.gateway")

#: ids of the hop's requests: strings the SDK's client never mints (its ids are numbers)
ID_PREFIX = "toolgate-hop-"
#: kept-open connections per backend, at most, between calls
MAX_IDLE = 64
#: the longest line (status, header, chunk size, SSE field) the hop reads
MAX_LINE = 64 * 1024
#: how long the rest of an answered stream is read before its connection is dropped
DRAIN_SECONDS = 0.5


def _envelope(client_info: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``_meta`` envelope of the hop's 2026-07-28 requests: the version, and no
    client capabilities (the hop can answer nothing)."""
    envelope: dict[str, Any] = {
        mt.PROTOCOL_VERSION_META_KEY: LATEST_MODERN_VERSION,
        mt.CLIENT_CAPABILITIES_META_KEY: {},
    }
    if client_info is not None:
        envelope[mt.CLIENT_INFO_META_KEY] = dict(client_info)
    return envelope


@dataclass(frozen=True)
class Stateless:
    """A call sent as a 2026-07-28 request: the ``_meta`` envelope it carries (the
    gateway's client info, no capabilities, the log level wanted) and its routing
    headers (``Mcp-Name`` and the ``Mcp-Param-*`` its tool's schema asks for)."""

    envelope: Mapping[str, Any]
    headers: Mapping[str, str]

    @classmethod
    def of(
        cls,
        tool: str,
        params: HeaderParams,
        arguments: Mapping[str, Any],
        client_info: Mapping[str, Any],
        level: str | None,
    ) -> Stateless:
        """The stateless form of a call to ``tool``, whose arguments at ``params``
        (``header_params``) travel as headers too."""
        envelope = _envelope(client_info)
        if level is not None:
            envelope[mt.LOG_LEVEL_META_KEY] = level
        headers = {MCP_NAME_HEADER: encode_header_value(tool)}
        if params:
            headers.update(mcp_param_headers(params, arguments))
        return cls(envelope, headers)


#: the arguments (by property path) a tool's ``x-mcp-header`` annotations mirror in
#: ``Mcp-Param-*`` headers, each with its header's token
HeaderParams = Mapping[tuple[str, ...], str]


def header_params(input_schema: Any) -> HeaderParams | None:
    """What of a tool's arguments a 2026-07-28 request mirrors in headers, or ``None``
    when its ``x-mcp-header`` annotations are invalid (a 2026-07-28 client would not
    call it: such a call stays on the session)."""
    if find_invalid_x_mcp_header(input_schema) is not None:
        return None
    return x_mcp_header_map(input_schema)


class SessionGone(Exception):
    """The backend does not know the session (HTTP 404): nothing ran; send it the SDK's way."""


class HopError(Exception):
    """The backend answered something the hop cannot read (a status, a broken stream)."""


Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@dataclass
class _Reply:
    """What came back on one connection: status, headers, and the connection to read
    the body from (``reusable`` once it is read to its end)."""

    status: int
    headers: dict[str, str]
    conn: Stream
    reusable: bool = True
    given: bool = False  # the connection went back to the pool (or to the task draining it)


@dataclass(eq=False)
class _Asked:
    """The ``DispatchContext`` the client session's request handler reads for one of
    the backend's requests: its id (the handler answers; nothing goes out through it)."""

    request_id: Any
    transport: TransportContext = field(
        default_factory=lambda: TransportContext(kind="streamable-http", can_send_request=False)
    )
    message_metadata: Any = None
    can_send_request: bool = False
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: Any = None) -> None:
        return None

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: Any = None
    ) -> dict[str, Any]:
        raise MCPError(code=mt.INVALID_REQUEST, message=f"{method} cannot be sent from here")

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        return None


def usable(url: str) -> bool:
    """Whether the hop may reach ``url`` itself: http(s), and no proxy applies to it
    (the SDK's client would take the proxy; the hop leaves such backends to it)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    proxies = urllib.request.getproxies()
    if not proxies.get(parts.scheme) and not proxies.get("all"):
        return True
    return bool(urllib.request.proxy_bypass(parts.hostname))


class Hop:
    """``tools/call`` to one HTTP backend on the SDK client's session, over plain
    asyncio connections kept open between calls."""

    def __init__(self, url: str, headers: Mapping[str, str], seen: SessionSeen) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.tls = ssl.create_default_context() if parts.scheme == "https" else None
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.authority = parts.netloc
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.seen = seen
        self.idle: list[Stream] = []
        self.ids = itertools.count(1)
        self.calls = 0  # calls sent this way, so far
        self.stateless = False  # the backend serves 2026-07-28 requests too (``discover``)
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def ready(self) -> bool:
        """Whether the session is known (the SDK's client initialized it)."""
        return self.seen.session_id is not None and self.seen.protocol_version is not None

    # -- a call ------------------------------------------------------------------------
    async def call_tool(
        self,
        session: ClientSession,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        timeout: float,
        progress: ProgressFnT | None = None,
        meta: Mapping[str, Any] | None = None,
        stateless: Stateless | None = None,
    ) -> mt.CallToolResult:
        """Run ``tool`` (with ``stateless``, as a 2026-07-28 request); raises
        ``SessionGone`` (nothing ran), ``MCPError`` (the backend's error, or
        ``REQUEST_TIMEOUT`` after ``timeout`` seconds: the backend is told it is
        cancelled), ``HopError`` or ``OSError`` (transport trouble)."""
        request_id = f"{ID_PREFIX}{next(self.ids)}"
        self.calls += 1
        params: dict[str, Any] = {"name": tool, "arguments": dict(arguments)}
        extra = dict(meta or {})
        if progress is not None:
            extra["progressToken"] = request_id
        if stateless is not None:
            extra.update(stateless.envelope)
        if extra:
            params["_meta"] = extra
        body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        headers = self._stateless_head("tools/call", stateless.headers) if stateless else None
        reply: _Reply | None = None
        try:
            async with asyncio.timeout(timeout):
                reply = await self._post(body, headers)
                if reply.status == 404 and stateless is None:
                    self._done(reply)
                    raise SessionGone(tool)
                outcome = await self._outcome(reply, session, request_id, progress)
        except TimeoutError:
            if stateless is None:  # a stateless request is cancelled by its closed connection
                self._cancel(request_id, "timeout")
            raise MCPError(
                code=mt.REQUEST_TIMEOUT,
                message=f"Timed out while waiting for response to tools/call. Waited {timeout}s.",
            ) from None
        except asyncio.CancelledError:
            if stateless is None:
                self._cancel(request_id, "cancelled by the client")
            raise
        finally:
            if reply is not None and not reply.given:
                _close(reply.conn)  # what is left of its stream is of no use now
        if isinstance(outcome, mt.ErrorData):
            raise MCPError.from_error_data(outcome)
        if stateless is not None:
            outcome = _completed(outcome)
        # relayed as sent: structured content is the client's to check (``RelaySession``)
        return mt.CallToolResult.model_validate(outcome, by_name=False)

    async def discover(self, session: ClientSession, timeout: float) -> None:
        """Learn whether the backend also serves 2026-07-28 requests (``server/discover``);
        any failure leaves the hop on the session."""
        request_id = f"{ID_PREFIX}{next(self.ids)}"
        params = {"_meta": _envelope()}
        body = {"jsonrpc": "2.0", "id": request_id, "method": "server/discover", "params": params}
        reply: _Reply | None = None
        try:
            async with asyncio.timeout(timeout):
                reply = await self._post(body, self._stateless_head("server/discover", {}))
                outcome = await self._outcome(reply, session, request_id, None)
        except (OSError, HopError, TimeoutError, asyncio.IncompleteReadError) as exc:
            logger.debug("server/discover failed on %s: %s", self.authority, exc)
            return
        finally:
            if reply is not None and not reply.given:
                _close(reply.conn)
        versions = outcome.get("supportedVersions") if isinstance(outcome, dict) else None
        self.stateless = isinstance(versions, list) and LATEST_MODERN_VERSION in versions

    async def _outcome(
        self,
        reply: _Reply,
        session: ClientSession,
        request_id: str,
        progress: ProgressFnT | None,
    ) -> dict[str, Any] | mt.ErrorData:
        """Read the call's answer, handling what the backend sends before it."""
        kind = reply.headers.get("content-type", "").split(";")[0].strip().lower()
        if reply.status not in (200, 201) and kind != "application/json":
            self._done(reply, reusable=False)
            raise HopError(f"the backend answered HTTP {reply.status}")
        if kind == "application/json":
            data = b"".join([chunk async for chunk in _Body(reply)])
            self._done(reply)
            message = _parse(data)
            answer = _answer(message, request_id) if message is not None else None
            if answer is None:
                raise HopError(f"the backend answered HTTP {reply.status} without a response")
            return answer
        if kind != "text/event-stream":
            self._done(reply, reusable=False)
            raise HopError(f"the backend answered with {kind or 'no content type'}")
        body = _Body(reply)
        async for data in _Events(body):
            message = _parse(data)
            if message is None:
                continue
            answer = _answer(message, request_id)
            if answer is not None:
                reply.given = True
                self._spawn(self._drain(reply, body))  # the rest of the stream, off the call's path
                return answer
            await self._heard(message, session, request_id, progress)
        self._done(reply, reusable=False)
        raise HopError("the backend's stream ended before its answer")

    async def _heard(
        self,
        message: dict[str, Any],
        session: ClientSession,
        request_id: str,
        progress: ProgressFnT | None,
    ) -> None:
        """A message before the answer: a request to the client, or a notification.
        Handled in the call's own task, marked as come on its stream (``on_call_stream``)."""
        token = _ON_CALL_STREAM.set(True)
        try:
            method = message.get("method")
            if not isinstance(method, str):
                return
            params = message.get("params")
            params = params if isinstance(params, dict) else None
            if "id" in message:
                await self._ask(session, message["id"], method, params)
                return
            if method == "notifications/progress" and params is not None:
                if progress is not None and params.get("progressToken") == request_id:
                    try:
                        note = mt.ProgressNotificationParams.model_validate(params)
                    except pydantic_core.ValidationError:
                        logger.warning("a malformed progress notification from a backend; dropped")
                        return
                    await progress(note.progress, note.total, note.message)
                return
            await session._on_notify(_Asked(None), method, params)
        finally:
            _ON_CALL_STREAM.reset(token)

    async def _ask(
        self, session: ClientSession, asked: Any, method: str, params: dict[str, Any] | None
    ) -> None:
        """The backend asks the client: the session's request handler answers (the
        gateway's callbacks), and the answer goes back to the backend."""
        try:
            result = await session._on_request(_Asked(asked), method, params)
            response: dict[str, Any] = {"jsonrpc": "2.0", "id": asked, "result": result}
        except Exception as exc:  # the backend gets an error, never silence
            error = handler_exception_to_error_data(exc) or mt.ErrorData(
                code=mt.INTERNAL_ERROR, message=f"toolgate could not answer {method}"
            )
            if not isinstance(exc, MCPError):
                logger.warning("answering a backend's %s failed: %s", method, exc)
            dumped = error.model_dump(by_alias=True, mode="json", exclude_none=True)
            response = {"jsonrpc": "2.0", "id": asked, "error": dumped}
        reply = await self._post(response)
        async for _ in _Body(reply):
            pass
        self._done(reply)

    def _cancel(self, request_id: str, reason: str) -> None:
        """Tell the backend a call is cancelled (in the background: the caller is leaving)."""
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason},
        }

        async def tell() -> None:
            try:
                async with asyncio.timeout(10):
                    reply = await self._post(note)
                    async for _ in _Body(reply):
                        pass
                    self._done(reply)
            except Exception as exc:  # the backend may be gone; nothing more to do
                logger.debug("could not cancel %s on the backend: %s", request_id, exc)

        self._spawn(tell())

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- HTTP/1.1 ------------------------------------------------------------------------
    @staticmethod
    def _stateless_head(method: str, headers: Mapping[str, str]) -> list[str]:
        """The header lines of a 2026-07-28 request for ``method``."""
        return [
            f"{MCP_PROTOCOL_VERSION_HEADER}: {LATEST_MODERN_VERSION}",
            f"{MCP_METHOD_HEADER}: {method}",
            *(f"{name}: {value}" for name, value in headers.items()),
        ]

    async def _post(self, message: Mapping[str, Any], routing: list[str] | None = None) -> _Reply:
        """POST one JSON-RPC message on the session (with ``routing``, the header lines
        of a stateless request, without it); a kept-open connection the server closed
        meanwhile is replaced once (nothing was read from it: nothing ran)."""
        body = pydantic_core.to_json(message)
        if routing is None:
            routing = [
                f"mcp-session-id: {self.seen.session_id}",
                f"mcp-protocol-version: {self.seen.protocol_version}",
            ]
        lines = [
            f"POST {self.target} HTTP/1.1",
            f"host: {self.authority}",
            "content-type: application/json",
            "accept: application/json, text/event-stream",
            f"content-length: {len(body)}",
            *routing,
            *(f"{name}: {value}" for name, value in self.headers.items()),
        ]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        while True:
            conn, reused = await self._take()
            try:
                conn[1].write(head + body)
                await conn[1].drain()
                status, headers = await _head(conn[0])
            except (OSError, asyncio.IncompleteReadError, HopError):
                _close(conn)
                if reused:
                    continue
                raise
            except BaseException:  # cancelled mid-request: the connection is of no use now
                _close(conn)
                raise
            return _Reply(status, headers, conn)

    async def _take(self) -> tuple[Stream, bool]:
        while self.idle:
            conn = self.idle.pop()
            if not conn[1].is_closing() and not conn[0].at_eof():
                return conn, True
            _close(conn)
        conn = await asyncio.open_connection(
            self.host,
            self.port,
            ssl=self.tls,
            server_hostname=self.host if self.tls else None,
            limit=MAX_LINE,
        )
        return conn, False

    def _done(self, reply: _Reply, *, reusable: bool = True) -> None:
        """The reply is read to its end: keep its connection for the next call."""
        reply.given = True
        if reusable and reply.reusable and len(self.idle) < MAX_IDLE:
            self.idle.append(reply.conn)
        else:
            _close(reply.conn)

    async def _drain(self, reply: _Reply, body: _Body) -> None:
        """Read what is left of an answered stream, briefly; else drop the connection."""
        try:
            async with asyncio.timeout(DRAIN_SECONDS):
                async for _ in body:
                    pass
        except TimeoutError:
            self._done(reply, reusable=False)
            return
        self._done(reply)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        while self.idle:
            _close(self.idle.pop())


def _close(conn: Stream) -> None:
    conn[1].close()


async def _head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    """The status and headers of one response (interim 1xx responses skipped)."""
    while True:
        try:
            block = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError as exc:
            raise HopError("the backend's response headers are too long") from exc
        lines = block[:-4].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise HopError(f"not an HTTP/1.1 response: {lines[0][:80]!r}")
        status = int(parts[1])
        if 100 <= status < 200:
            continue
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return status, headers


class _Body:
    """The body as it arrives: chunked, sized, or to the end of the connection. An
    iterator object, not an async generator: one left unfinished (a stream answered
    before its end) is simply dropped, with no finalizer scheduled on the loop."""

    def __init__(self, reply: _Reply) -> None:
        self.reply = reply
        self.reader = reply.conn[0]
        headers = reply.headers
        if headers.get("connection", "").lower() == "close":
            reply.reusable = False
        self.chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        self.left = int(length) if length is not None and not self.chunked else None
        if not self.chunked and self.left is None:
            reply.reusable = False  # read to the end of the connection
        self.ended = False

    def __aiter__(self) -> _Body:
        return self

    async def __anext__(self) -> bytes:
        if self.ended:
            raise StopAsyncIteration
        reader = self.reader
        if self.chunked:
            line = await reader.readuntil(b"\r\n")
            size = int(line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass  # trailers
                return self._end()
            chunk = await reader.readexactly(size)
            await reader.readexactly(2)
            return chunk
        if self.left is not None:
            if self.left <= 0:
                return self._end()
            chunk = await reader.read(min(self.left, 65536))
            if not chunk:
                raise HopError("the backend closed the connection mid-response")
            self.left -= len(chunk)
            return chunk
        chunk = await reader.read(65536)
        return chunk if chunk else self._end()

    def _end(self) -> bytes:
        self.ended = True
        raise StopAsyncIteration


class _Events:
    """The data of each server-sent ``message`` event in ``chunks`` (an iterator object,
    like ``_Body``, so one left before its end costs nothing)."""

    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        self.chunks = chunks
        self.buffer = b""
        self.data: list[bytes] = []
        self.event = b""

    def __aiter__(self) -> _Events:
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
                    raise HopError("an event from the backend is too long")
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


def _parse(data: bytes) -> dict[str, Any] | None:
    try:
        message = pydantic_core.from_json(data)
    except ValueError:
        logger.warning("a message from a backend is not JSON; dropped")
        return None
    return message if isinstance(message, dict) else None


def _completed(result: dict[str, Any]) -> dict[str, Any]:
    """A stateless request's result as the session would have it: a backend that asks
    for input (``input_required``) asks a client that declared nothing to answer with,
    which is the backend's error; the server info it stamps on the result is its own
    envelope's, not the result's."""
    if result.get("resultType", "complete") != "complete":
        asked = ", ".join(sorted(result.get("inputRequests") or {}))
        raise MCPError(
            code=mt.INTERNAL_ERROR,
            message=f"The backend asked for input ({asked or result.get('resultType')}) "
            "that the client of this call declared no capability to give.",
        )
    meta = result.get("_meta")
    if not (isinstance(meta, dict) and mt.SERVER_INFO_META_KEY in meta):
        return result
    kept = {k: v for k, v in result.items() if k != "_meta"}
    rest = {k: v for k, v in meta.items() if k != mt.SERVER_INFO_META_KEY}
    if rest:
        kept["_meta"] = rest
    return kept


def _answer(message: Mapping[str, Any], request_id: str) -> dict[str, Any] | mt.ErrorData | None:
    """The result or error ``message`` answers ``request_id`` with, if it does."""
    if message.get("id") != request_id or "method" in message:
        return None
    if isinstance(message.get("result"), dict):
        result: dict[str, Any] = message["result"]
        return result
    try:
        return mt.ErrorData.model_validate(message.get("error"))
    except pydantic_core.ValidationError:
        return mt.ErrorData(code=mt.INTERNAL_ERROR, message="The backend's answer is malformed")


__all__ = ["HeaderParams", "Hop", "HopError", "SessionGone", "Stateless", "header_params", "usable"]
