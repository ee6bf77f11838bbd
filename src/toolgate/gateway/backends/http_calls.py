"""``tools/call`` to a streamable-HTTP backend by hand: on the session the SDK's client
opened (its ``Mcp-Session-Id`` and version, as ``http_client.SessionSeen`` saw them) or as a
2026-07-28 stateless request, over ``http11``'s kept-open connections; what the backend
sends before its answer goes to that ``ClientSession``'s handlers. Imports ``mcp`` and the
backends' ``http11``, ``http_client``, ``stateless`` and errors.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Coroutine, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as mt
import pydantic_core
from mcp import ClientSession
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_METHOD_HEADER, MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.transport_context import TransportContext
from mcp_types.version import LATEST_MODERN_VERSION

from toolgate.gateway.backends import malformed
from toolgate.gateway.backends.errors import SessionEnded
from toolgate.gateway.backends.http11 import Body, Connections, Events, Reply, ResponseError
from toolgate.gateway.backends.http_client import SessionSeen
from toolgate.gateway.backends.malformed import MalformedAnswer
from toolgate.gateway.backends.stateless import Stateless, completed, envelope
from toolgate.sdk_internals import client_asked, client_notified

#: set while what a backend sent on a call's own response stream is handed on
_ON_CALL_STREAM: ContextVar[bool] = ContextVar("toolgate.hop.on_call_stream", default=False)


def on_call_stream() -> bool:
    """Whether the backend message being handled came on the response stream of the call
    running in this task (a request related to that call), not on a shared stream."""
    return _ON_CALL_STREAM.get()


logger = logging.getLogger("toolgate.gateway")

#: ids of these requests: strings the SDK's client never mints (its ids are numbers)
ID_PREFIX = "toolgate-hop-"


class HttpCalls:
    """``tools/call`` to one HTTP backend on the SDK client's session (or stateless),
    over plain asyncio connections kept open between calls. A session the backend no
    longer knows (404) raises ``SessionEnded``: nothing ran."""

    def __init__(self, url: str, headers: Mapping[str, str], seen: SessionSeen) -> None:
        self.connections = Connections(url)
        self.headers = {name.lower(): value for name, value in headers.items()}
        self.seen = seen
        self.ids = itertools.count(1)
        self.calls = 0  # calls sent this way, so far
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
        ``SessionEnded`` (nothing ran), ``MCPError`` (the backend's error, or
        ``REQUEST_TIMEOUT`` after ``timeout`` seconds: the backend is told it is
        cancelled), ``ResponseError`` or ``OSError`` (transport trouble). A call is
        never sent twice: one whose kept-open connection closes under it fails."""
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
        reply: Reply | None = None
        try:
            async with asyncio.timeout(timeout):
                reply = await self._post(body, headers, replayable=False)
                if reply.status == 404 and stateless is None:
                    self.connections.done(reply, reusable=False)
                    raise SessionEnded(tool)
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
                reply.conn[1].close()  # what is left of its stream is of no use now
        if isinstance(outcome, mt.ErrorData):
            raise MCPError.from_error_data(outcome)
        if stateless is not None:
            outcome = completed(outcome)
        # relayed as sent: structured content is the client's to check (``RelaySession``)
        return mt.CallToolResult.model_validate(outcome, by_name=False)

    async def discover(self, session: ClientSession, timeout: float) -> bool:
        """Whether the backend also serves 2026-07-28 requests (``server/discover``); any
        failure says no."""
        request_id = f"{ID_PREFIX}{next(self.ids)}"
        params = {"_meta": envelope()}
        body = {"jsonrpc": "2.0", "id": request_id, "method": "server/discover", "params": params}
        reply: Reply | None = None
        try:
            async with asyncio.timeout(timeout):
                reply = await self._post(body, self._stateless_head("server/discover", {}))
                outcome = await self._outcome(reply, session, request_id, None)
        except (OSError, ResponseError, MalformedAnswer, TimeoutError) as exc:
            logger.debug("server/discover failed on %s: %s", self.connections.authority, exc)
            return False
        finally:
            if reply is not None and not reply.given:
                reply.conn[1].close()
        versions = outcome.get("supportedVersions") if isinstance(outcome, dict) else None
        return isinstance(versions, list) and LATEST_MODERN_VERSION in versions

    async def _outcome(
        self,
        reply: Reply,
        session: ClientSession,
        request_id: str,
        progress: ProgressFnT | None,
    ) -> dict[str, Any] | mt.ErrorData:
        """Read the call's answer, handling what the backend sends before it."""
        kind = reply.headers.get("content-type", "").split(";")[0].strip().lower()
        if reply.status not in (200, 201) and kind != "application/json":
            self.connections.done(reply, reusable=False)
            raise ResponseError(f"the backend answered HTTP {reply.status}")
        if kind == "application/json":
            data = b"".join([chunk async for chunk in Body(reply)])
            self.connections.done(reply)
            message = _parse(data, request_id)
            answer = _answer(message, request_id) if message is not None else None
            if answer is None:
                raise ResponseError(f"the backend answered HTTP {reply.status} without a response")
            return answer
        if kind != "text/event-stream":
            self.connections.done(reply, reusable=False)
            raise ResponseError(f"the backend answered with {kind or 'no content type'}")
        body = Body(reply)
        async for data in Events(body):
            message = _parse(data, request_id)
            if message is None:
                continue
            answer = _answer(message, request_id)
            if answer is not None:
                reply.given = True
                # the rest of the stream is read off the call's path
                self._spawn(self.connections.drain(reply, body))
                return answer
            await self._heard(message, session, request_id, progress)
        self.connections.done(reply, reusable=False)
        raise ResponseError("the backend's stream ended before its answer")

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
            await client_notified(session, _Asked(None), method, params)
        finally:
            _ON_CALL_STREAM.reset(token)

    async def _ask(
        self, session: ClientSession, asked: Any, method: str, params: dict[str, Any] | None
    ) -> None:
        """The backend asks the client: the session's request handler answers (the
        gateway's callbacks), and the answer goes back to the backend."""
        try:
            result = await client_asked(session, _Asked(asked), method, params)
            response: dict[str, Any] = {"jsonrpc": "2.0", "id": asked, "result": result}
        except Exception as exc:  # the backend gets an error, never silence
            error = handler_exception_to_error_data(exc) or mt.ErrorData(
                code=mt.INTERNAL_ERROR, message=f"toolgate could not answer {method}"
            )
            if not isinstance(exc, MCPError):
                logger.warning("answering a backend's %s failed: %s", method, exc)
            dumped = error.model_dump(by_alias=True, mode="json", exclude_none=True)
            response = {"jsonrpc": "2.0", "id": asked, "error": dumped}
        await self._tell(response)

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
                    await self._tell(note)
            except Exception as exc:  # the backend may be gone; nothing more to do
                logger.debug("could not cancel %s on the backend: %s", request_id, exc)

        self._spawn(tell())

    async def _tell(self, message: Mapping[str, Any]) -> None:
        """POST a notification or a response; its answer (202, no body) is read past. Sent
        again on a new connection if a kept-open one fails: the backend ignores a repeat."""
        reply = await self._post(message)
        async for _ in Body(reply):
            pass
        self.connections.done(reply)

    # -- HTTP/1.1 ------------------------------------------------------------------------
    @staticmethod
    def _stateless_head(method: str, headers: Mapping[str, str]) -> list[str]:
        """The header lines of a 2026-07-28 request for ``method``."""
        return [
            f"{MCP_PROTOCOL_VERSION_HEADER}: {LATEST_MODERN_VERSION}",
            f"{MCP_METHOD_HEADER}: {method}",
            *(f"{name}: {value}" for name, value in headers.items()),
        ]

    async def _post(
        self,
        message: Mapping[str, Any],
        routing: list[str] | None = None,
        *,
        replayable: bool = True,
    ) -> Reply:
        """POST one JSON-RPC message on the session (with ``routing``, the header lines
        of a stateless request, without it)."""
        if routing is None:
            routing = [
                f"mcp-session-id: {self.seen.session_id}",
                f"mcp-protocol-version: {self.seen.protocol_version}",
            ]
        lines = [
            "content-type: application/json",
            "accept: application/json, text/event-stream",
            *routing,
            *(f"{name}: {value}" for name, value in self.headers.items()),
        ]
        body = pydantic_core.to_json(message)
        return await self.connections.post(lines, body, replayable=replayable)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        self.connections.close()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


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


def _parse(data: bytes, request_id: str) -> dict[str, Any] | None:
    """``data`` as a JSON object; one that is not JSON is dropped, unless it holds
    ``request_id`` (the gateway's own, unlike any other): then the answer is malformed."""
    try:
        message = pydantic_core.from_json(data)
    except ValueError as exc:
        if f'"{request_id}"'.encode() in data:
            raise MalformedAnswer(f"it is not JSON ({exc})") from None
        logger.warning("a message from a backend is not JSON; dropped")
        return None
    return message if isinstance(message, dict) else None


def _answer(message: Mapping[str, Any], request_id: str) -> dict[str, Any] | mt.ErrorData | None:
    """The result or error ``message`` answers ``request_id`` with, if it does; raises
    ``MalformedAnswer`` when it is no valid answer."""
    if message.get("id") != request_id or "method" in message:
        return None
    problem = malformed.problem(message)
    if problem is not None:
        raise MalformedAnswer(problem)
    if isinstance(message.get("result"), dict):
        result: dict[str, Any] = message["result"]
        return result
    return mt.ErrorData.model_validate(message["error"])


__all__ = ["ID_PREFIX", "HttpCalls", "on_call_stream"]
