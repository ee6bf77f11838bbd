"""A ``tools/call`` on a legacy (handshake-era) session, on the fast path: run by the
SDK's ``ServerRunner`` on the session's own ``Connection`` (met on the SDK path), its
progress, log messages and requests to the client on the POST's own stream, and the
client's answers and cancellations taken back. Ingress layer, under the fast path:
imports ``mcp`` and the response writer.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as mt
import pydantic_core
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult
from mcp.server.lowlevel import Server
from mcp.server.runner import ServerRunner
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import (
    handler_exception_to_error_data,
    progress_token_from_params,
)
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from starlette.requests import Request
from starlette.types import Scope, Send

from toolgate.gateway.ingress.call_response import (
    LANE_METHODS,
    CallResponse,
    event,
    is_request_id,
    rpc_error,
    write_json,
)
from toolgate.request import Context
from toolgate.sdk_internals import (
    SSE_HEADERS,
    connection_of,
    has_modern_envelope,
    holding,
    live_transports,
    session_owner,
)

logger = logging.getLogger("toolgate.gateway")

#: ids of the fast path's requests to clients: strings the SDK never mints (its are numbers)
ASK_PREFIX = "toolgate-lane-"


@dataclass(eq=False)
class FastPathSession:
    """What the fast path knows of one legacy session: its connection, the kernel serving
    it, the calls in flight here and the requests to the client awaiting an answer."""

    connection: Connection
    runner: ServerRunner[Any]
    calls: dict[Any, FastPathCall] = field(default_factory=dict)  # client request id → call
    asked: dict[str, asyncio.Future[Any]] = field(default_factory=dict)
    ids: itertools.count[int] = field(default_factory=itertools.count)

    def end(self) -> None:
        """The session is over: its calls are cancelled, its questions unanswered."""
        for call in list(self.calls.values()):
            call.abandon()
        for waiting in self.asked.values():
            if not waiting.done():
                waiting.cancel()
        self.asked.clear()


class FastPathCall:
    """One legacy ``tools/call`` on the fast path, run by its POST's own task: the SDK's
    ``DispatchContext`` for it (the back-channel its handler uses) and its
    ``CallResponse``."""

    transport = TransportContext(kind="streamable-http", can_send_request=True)

    def __init__(
        self,
        session: FastPathSession,
        request_id: Any,
        params: Mapping[str, Any] | None,
        request: Any,
        send: Send,
    ) -> None:
        self.session = session
        self._request_id = request_id
        self._token = progress_token_from_params(params)
        self.message_metadata = ServerMessageMetadata(request_context=request)
        self.cancel_requested = anyio.Event()
        headers = [*SSE_HEADERS, _session_header(session)]
        self.response = CallResponse(send, headers, name=f"lane-stream:{request_id}")
        self.closed = False  # the handler is done: nothing more goes out for it
        self.ended = False  # the session ended under the call
        self.task = asyncio.current_task()  # the POST's, running the call
        self.stopped = False  # the fast path cancelled the call (the client's or the session's end)

    @property
    def detached(self) -> bool:
        """The client's stream is gone, or its session."""
        return self.ended or self.response.gone

    @property
    def request_id(self) -> Any:
        return self._request_id

    @property
    def can_send_request(self) -> bool:
        return not (self.closed or self.detached)

    def _put(self, message: Mapping[str, Any]) -> None:
        if not self.detached:
            self.response.put(event(message))

    async def finish(self, answer: Mapping[str, Any] | None) -> None:
        """End the response with ``answer`` (``None``: nothing to answer)."""
        if answer is None:
            await self.response.end(None, None)
            return
        headers = [_session_header(self.session)]
        await self.response.end(
            answer, lambda: write_json(self.response.send, answer, 200, headers)
        )

    def stop(self) -> None:
        """Cancel the call (once): its handler stops at the await it is in."""
        if not self.stopped and not self.closed and self.task is not None:
            self.stopped = True
            self.task.cancel()

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        if self.closed:
            logger.debug("dropped %s: the call is over", method)
            return
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        self._put(message)

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        if self._token is None:
            return
        params: dict[str, Any] = {"progressToken": self._token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.notify("notifications/progress", params)

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        """Ask the client on this call's stream; its answer comes back as a POST the
        fast path takes (``SessionCalls._answer``)."""
        if not self.can_send_request:
            raise NoBackChannelError(method)
        session = self.session
        key = f"{ASK_PREFIX}{next(session.ids)}"
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        session.asked[key] = answer
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": key, "method": method}
        if params is not None:
            message["params"] = dict(params)
        timeout = (opts or {}).get("timeout")
        try:
            self._put(message)
            with anyio.fail_after(timeout if timeout is not None else math.inf):
                outcome = await answer
        except TimeoutError:
            await self.notify("notifications/cancelled", {"requestId": key, "reason": "timeout"})
            raise MCPError(
                code=mt.REQUEST_TIMEOUT, message=f"Timed out waiting for the answer to {method}"
            ) from None
        finally:
            session.asked.pop(key, None)
        if isinstance(outcome, mt.ErrorData):
            raise MCPError.from_error_data(outcome)
        result: dict[str, Any] = outcome
        return result

    def abandon(self) -> None:
        """The session ended under the call: stop it and its stream."""
        self.ended = True
        self.stop()


def _answer_of(message: Mapping[str, Any]) -> dict[str, Any] | mt.ErrorData | None:
    """A client's JSON-RPC response: its result, its error, or ``None`` if malformed."""
    if "result" in message and isinstance(message["result"], dict):
        result: dict[str, Any] = message["result"]
        return result
    try:
        return mt.ErrorData.model_validate(message.get("error"))
    except pydantic_core.ValidationError:
        return None


class SessionCalls:
    """The fast path's legacy calls: the sessions it knows (``learn`` met them on the SDK
    path) and, for each, the calls it serves and the client's answers to them."""

    def __init__(self, server: Server[Any], manager: StreamableHTTPSessionManager) -> None:
        self.server = server
        self.manager = manager
        self.sessions: dict[str, FastPathSession] = {}
        self.served = 0  # calls served, so far

    # -- meeting sessions on the SDK path ----------------------------------------------
    async def learn(self, ctx: Context, call_next: CallNext) -> HandlerResult:
        """``ServerMiddleware``: remember each streamable-HTTP session's connection once
        it is initialized, and forget it when it closes."""
        connection = connection_of(ctx)
        key = connection.session_id
        if key is not None and key not in self.sessions and connection.initialize_accepted:
            runner = ServerRunner(self.server, connection, ctx.lifespan_context)
            self.sessions[key] = session = FastPathSession(connection, runner)
            ref = weakref.ref(session)
            connection.exit_stack.callback(self._forget, key, ref)
        return await call_next(ctx)

    def _forget(self, key: str, ref: weakref.ref[FastPathSession]) -> None:
        session = ref()
        if session is not None and self.sessions.get(key) is session:
            del self.sessions[key]
        if session is not None:
            session.end()

    def find(
        self, scope: Scope, headers: Mapping[bytes, bytes], key: str | None
    ) -> tuple[FastPathSession, StreamableHTTPServerTransport] | None:
        """The session a POST belongs to, when the SDK would serve it as it stands: a
        live session of the same credential, negotiated version, both media accepted."""
        if key is None:
            return None
        session = self.sessions.get(key)
        transport = live_transports(self.manager).get(key)
        if session is None or transport is None or transport.is_terminated:
            return None
        user = scope.get("user")
        requestor = authorization_context(user) if isinstance(user, AuthenticatedUser) else None
        if requestor != session_owner(self.manager, key):
            return None
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER.encode(), b"").decode("latin-1")
        if version != session.connection.protocol_version:
            return None
        accept = headers.get(b"accept", b"").decode("latin-1")
        if "application/json" not in accept or "text/event-stream" not in accept:
            return None
        return session, transport

    async def take(
        self,
        message: dict[str, Any],
        session: FastPathSession,
        transport: StreamableHTTPServerTransport,
        scope: Scope,
        send: Send,
    ) -> bool:
        """Serve ``message`` if it is the fast path's; ``False`` hands it to the SDK."""
        method = message.get("method")
        if method is None:
            return await self._answer(message, session, send)
        if method == "notifications/cancelled" and "id" not in message:
            return await self._cancel(message, session, send)
        if method not in LANE_METHODS or not is_request_id(message.get("id")):
            return False
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            return False
        if message["id"] in session.calls:
            return False  # a duplicate id: the SDK's answer to it is the one to give
        async with holding(transport):
            await self._serve(message, params, session, scope, send)
        return True

    async def _serve(
        self,
        message: dict[str, Any],
        params: dict[str, Any] | None,
        session: FastPathSession,
        scope: Scope,
        send: Send,
    ) -> None:
        request_id = message["id"]
        call = FastPathCall(session, request_id, params, Request(scope), send)
        session.calls[request_id] = call
        self.served += 1
        try:
            answer = await self._run(call, message["method"], params)
        except BaseException:
            call.response.abort()  # the POST's task is being cancelled: so is its stream
            raise
        await call.finish(answer)

    async def _run(
        self, call: FastPathCall, method: str, params: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """The kernel's answer to one call, as the SDK's dispatcher shapes it; ``None``
        when there is none to give (the client cancelled it, or is gone)."""
        answer: dict[str, Any] | None = None
        try:
            if has_modern_envelope(params):
                raise MCPError(
                    code=mt.INVALID_REQUEST,
                    message="this connection serves the handshake protocol era; requests "
                    "carrying the 2026-07-28 envelope are not accepted on it",
                )
            result = await call.session.runner.on_request(call, method, params)
            answer = {"jsonrpc": "2.0", "id": call.request_id, "result": result}
        except asyncio.CancelledError:
            if not call.stopped:
                raise  # not the fast path's doing: the POST's task itself is being cancelled
        except Exception as exc:
            error = handler_exception_to_error_data(exc)
            if error is None:
                logger.exception("handler for %r raised", method)
                error = mt.ErrorData(code=0, message=str(exc))
            answer = rpc_error(call.request_id, error)
        finally:
            call.closed = True
            if call.session.calls.get(call.request_id) is call:
                del call.session.calls[call.request_id]  # nothing cancels it from now on
            task = call.task
            if call.stopped and task is not None and task.cancelling():
                task.uncancel()  # the fast path's cancel is spent: the POST's task goes on
        return None if call.cancel_requested.is_set() or call.detached else answer

    # -- the client's answers and cancellations (legacy) -----------------------------------
    async def _answer(self, message: dict[str, Any], session: FastPathSession, send: Send) -> bool:
        """A client's response to one of the fast path's requests: hand it to the waiter."""
        key = message.get("id")
        waiting = session.asked.get(key) if isinstance(key, str) else None
        if waiting is None:
            return False
        outcome = _answer_of(message)
        if outcome is None:
            return False  # malformed: the SDK says why
        if not waiting.done():
            waiting.set_result(outcome)
        await _accepted(send)
        return True

    async def _cancel(self, message: dict[str, Any], session: FastPathSession, send: Send) -> bool:
        """``notifications/cancelled`` for a call on the fast path: stop it, answer nothing."""
        params = message.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        call = session.calls.get(request_id) if is_request_id(request_id) else None
        if call is None:
            return False
        call.cancel_requested.set()
        call.stop()
        await _accepted(send)
        return True


def _session_header(session: FastPathSession) -> tuple[bytes, bytes]:
    return (MCP_SESSION_ID_HEADER.encode(), (session.connection.session_id or "").encode())


async def _accepted(send: Send) -> None:
    await send({"type": "http.response.start", "status": 202, "headers": []})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


__all__ = ["ASK_PREFIX", "FastPathCall", "FastPathSession", "SessionCalls"]
