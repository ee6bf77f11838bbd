"""The fast lane: ``tools/call`` over streamable HTTP, served without the SDK's
per-session transport and JSON-RPC dispatcher (memory streams, a task group and two
pydantic passes per message) but by the same kernel, so a call here is the call the SDK
path makes. A legacy session's call runs the SDK's ``ServerRunner`` on the session's own
``Connection``; a 2026-07-28 call passes the SDK's own envelope checks and runs it as its
``serve_one`` does, with its own single-exchange dispatch context. This module only frames
them: the request's body in, the response and everything related to it (progress, log
messages, on the legacy protocol the server's requests to the client) out on the POST's
stream, the client's answers and cancellations back in. Anything else, or anything it
cannot vouch for, goes on to the SDK untouched. Edge layer: imports ``mcp``,
``starlette`` types, ``pydantic_core``.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import math
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import anyio
import mcp_types as mt
import pydantic
import pydantic_core
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult
from mcp.server.lowlevel import Server
from mcp.server.runner import ServerRunner, aclose_shielded, modern_error_data
from mcp.server.streamable_http import (
    MCP_SESSION_ID_HEADER,
    StreamableHTTPServerTransport,
    check_accept_headers,
)
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
)
from mcp.shared.jsonrpc_dispatcher import (
    handler_exception_to_error_data,
    progress_token_from_params,
)
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import ClientCapabilities, Implementation, JSONRPCRequest
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolgate.gateway.ingress.guard import LEAVING, Leaving
from toolgate.request import Context
from toolgate.sdk_internals import (
    SSE_HEADERS,
    SSE_PING_INTERVAL,
    SingleExchangeDispatchContext,
    connection_of,
    has_exit_callbacks,
    has_modern_envelope,
    holding,
    lifespan_state,
    live_transports,
    mcp_param_rejection,
    session_owner,
)

logger = logging.getLogger("toolgate.gateway")
_M = TypeVar("_M", bound=pydantic.BaseModel)

#: the methods the lane serves; every other message goes to the SDK
LANE_METHODS = frozenset({"tools/call"})
#: ids of the lane's requests to clients: strings the SDK never mints (its ids are numbers)
ASK_PREFIX = "toolgate-lane-"
#: an SSE comment sent every ``SSE_PING_INTERVAL`` seconds a call says nothing
_PING = b": ping\r\n\r\n"
_END: Any = object()  # the end of a call's stream


def _event(message: Mapping[str, Any]) -> bytes:
    return b"event: message\r\ndata: " + pydantic_core.to_json(message) + b"\r\n\r\n"


def _request_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


@dataclass(eq=False)
class LaneSession:
    """What the lane knows of one legacy session: its connection, the kernel serving
    it, the calls in flight here and the requests to the client awaiting an answer."""

    connection: Connection
    runner: ServerRunner[Any]
    calls: dict[Any, LaneCall] = field(default_factory=dict)  # client request id → call
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


class LaneCall:
    """One legacy ``tools/call`` in the lane, run by its POST's own task: the SDK's
    ``DispatchContext`` for it (the back-channel its handler uses) and its
    ``_Response``."""

    transport = TransportContext(kind="streamable-http", can_send_request=True)

    def __init__(
        self,
        session: LaneSession,
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
        self.response = _Response(send, headers, name=f"lane-stream:{request_id}")
        self.closed = False  # the handler is done: nothing more goes out for it
        self.ended = False  # the session ended under the call
        self.task = asyncio.current_task()  # the POST's, running the call
        self.stopped = False  # the lane cancelled the call (the client's or the session's end)

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
            self.response.put(_event(message))

    async def finish(self, answer: Mapping[str, Any] | None) -> None:
        """End the response with ``answer`` (``None``: nothing to answer)."""
        if answer is None:
            await self.response.end(None, None)
            return
        headers = [_session_header(self.session)]
        await self.response.end(answer, lambda: _json(self.response.send, answer, 200, headers))

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
        lane takes (``Lane._answer``)."""
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


class Lane:
    """ASGI in front of the SDK's session manager: serves ``LANE_METHODS`` for legacy
    sessions it knows (``learn`` met them on the SDK path), and the client's answers to
    and cancellations of what it serves; passes everything else on, body and all."""

    def __init__(self, app: ASGIApp, manager: StreamableHTTPSessionManager, server: Server[Any]):
        self.app = app
        self.manager = manager
        self.server = server
        self.sessions: dict[str, LaneSession] = {}
        self.served = 0  # calls the lane served, so far
        self.security = TransportSecurityMiddleware(manager.security_settings)

    # -- meeting sessions on the SDK path ----------------------------------------------
    async def learn(self, ctx: Context, call_next: CallNext) -> HandlerResult:
        """``ServerMiddleware``: remember each streamable-HTTP session's connection once
        it is initialized, and forget it when it closes."""
        connection = connection_of(ctx)
        key = connection.session_id
        if key is not None and key not in self.sessions and connection.initialize_accepted:
            runner = ServerRunner(self.server, connection, ctx.lifespan_context)
            self.sessions[key] = session = LaneSession(connection, runner)
            ref = weakref.ref(session)
            connection.exit_stack.callback(self._forget, key, ref)
        return await call_next(ctx)

    def _forget(self, key: str, ref: weakref.ref[LaneSession]) -> None:
        session = ref()
        if session is not None and self.sessions.get(key) is session:
            del self.sessions[key]
        if session is not None:
            session.end()

    # -- ASGI -------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        key = headers.get(MCP_SESSION_ID_HEADER.encode())
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER.encode(), b"").decode("latin-1")
        if key is None and version in MODERN_PROTOCOL_VERSIONS:
            await self._stateless(scope, receive, send)
            return
        found = self._session(scope, headers, key.decode("latin-1") if key else None)
        if found is None or await self._refused(scope):  # the SDK answers, as it always did
            await self.app(scope, receive, send)
            return
        session, transport = found
        body, more = await _body(receive)
        message = _message(body) if not more else None
        if message is not None and await self._take(message, session, transport, scope, send):
            return
        await self.app(scope, _replay(body, more, receive), send)

    async def _refused(self, scope: Scope) -> bool:
        """Whether the SDK's transport-security check (content type, host, origin)
        refuses this POST."""
        return await self.security.validate_request(Request(scope), is_post=True) is not None

    def _session(
        self, scope: Scope, headers: Mapping[bytes, bytes], key: str | None
    ) -> tuple[LaneSession, StreamableHTTPServerTransport] | None:
        """The lane session a POST belongs to, when the SDK would serve it as it stands:
        a live session of the same credential, negotiated version, both media types."""
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
        content_type = headers.get(b"content-type", b"").split(b";")[0].strip()
        return (session, transport) if content_type == b"application/json" else None

    async def _take(
        self,
        message: dict[str, Any],
        session: LaneSession,
        transport: StreamableHTTPServerTransport,
        scope: Scope,
        send: Send,
    ) -> bool:
        """Serve ``message`` if it is the lane's; ``False`` hands it to the SDK."""
        method = message.get("method")
        if method is None:
            return await self._answer(message, session, send)
        if method == "notifications/cancelled" and "id" not in message:
            return await self._cancel(message, session, send)
        if method not in LANE_METHODS or not _request_id(message.get("id")):
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
        session: LaneSession,
        scope: Scope,
        send: Send,
    ) -> None:
        request_id = message["id"]
        call = LaneCall(session, request_id, params, Request(scope), send)
        session.calls[request_id] = call
        self.served += 1
        try:
            answer = await self._run(call, message["method"], params)
        except BaseException:
            call.response.abort()  # the POST's task is being cancelled: so is its stream
            raise
        await call.finish(answer)

    async def _run(
        self, call: LaneCall, method: str, params: dict[str, Any] | None
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
                raise  # not the lane's doing: the POST's task itself is being cancelled
        except Exception as exc:
            error = handler_exception_to_error_data(exc)
            if error is None:
                logger.exception("handler for %r raised", method)
                error = mt.ErrorData(code=0, message=str(exc))
            answer = _error(call.request_id, error)
        finally:
            call.closed = True
            if call.session.calls.get(call.request_id) is call:
                del call.session.calls[call.request_id]  # nothing cancels it from now on
            task = call.task
            if call.stopped and task is not None and task.cancelling():
                task.uncancel()  # the lane's cancel is spent: the POST's task goes on
        return None if call.cancel_requested.is_set() or call.detached else answer

    # -- 2026-07-28 --------------------------------------------------------------------
    async def _stateless(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A 2026-07-28 ``tools/call``: the SDK's envelope checks, then its kernel on a
        connection built from the envelope; the rest goes to the SDK as it came."""
        body, more = await _body(receive)
        message = _message(body) if not more else None
        request = Request(scope)
        checked = await self._modern_call(message, request) if message is not None else None
        if checked is None:
            await self.app(scope, _replay(body, more, receive), send)
            return
        req, connection = checked
        response = _Response(send, SSE_HEADERS, name=f"lane-stream:{req.id}")
        dctx = SingleExchangeDispatchContext(
            transport=TransportContext(
                kind="streamable-http", can_send_request=False, headers=request.headers
            ),
            request_id=req.id,
            message_metadata=ServerMessageMetadata(request_context=request),
            progress_token=progress_token_from_params(req.params),
        )
        dctx.sink = cast(Any, _Sink(response))
        self.served += 1
        lifespan = lifespan_state(self.manager)
        task = asyncio.current_task()
        left = False

        def leave() -> None:  # on this protocol a client that leaves cancels its call
            nonlocal left
            if not left:
                left = response.gone = True
                if task is not None:
                    task.cancel()

        stop_watching = _on_leaving(scope, receive, leave)
        try:
            result = await _serve_one(
                self.server,
                dctx,
                req.method,
                req.params,
                connection=connection,
                lifespan_state=lifespan,
            )
            reply, status = {"jsonrpc": "2.0", "id": req.id, "result": result}, 200
        except asyncio.CancelledError:
            response.abort()
            if not left:
                raise  # not the client's leaving: the POST's task itself is cancelled
            return  # the call is cancelled; there is nobody to answer
        except Exception as exc:  # mapped as the SDK's modern entry maps it
            error = modern_error_data(exc)
            reply, status = _error(req.id, error), ERROR_CODE_HTTP_STATUS.get(error.code, 200)
        except BaseException:
            response.abort()
            raise
        finally:
            stop_watching()
            if left and task is not None and task.cancelling():
                task.uncancel()  # the lane's cancel is spent: the POST's task goes on
        # as the SDK's modern entry answers: one JSON body (its HTTP status mapped from
        # the error) when the call ends before saying anything, else the stream's end
        await response.end(reply, lambda: _json(send, reply, status, []))

    async def _modern_call(
        self, message: dict[str, Any], request: Request
    ) -> tuple[JSONRPCRequest, Connection] | None:
        """The request and its connection, if the SDK's modern entry would serve this
        body as it stands (every check it makes first passes); else ``None``."""
        request_id, params = message.get("id"), message.get("params")
        if message.get("method") not in LANE_METHODS or not _request_id(request_id):
            return None
        if params is not None and not isinstance(params, dict):
            return None  # so the request is what the SDK's model validates
        if await self._refused(request.scope):
            return None
        has_json, has_sse = _accepts(request)
        if not (has_json and has_sse):
            return None
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.scope["headers"]]
        if find_duplicated_routing_header(headers) is not None:
            return None
        verdict = classify_inbound_request(message, headers=dict(headers))
        if isinstance(verdict, InboundLadderRejection):
            return None
        req = JSONRPCRequest.model_construct(
            jsonrpc="2.0", id=message["id"], method=message["method"], params=params
        )
        lifespan = lifespan_state(self.manager)
        if await mcp_param_rejection(self.server, request, req, verdict, lifespan) is not None:
            return None
        connection = Connection.from_envelope(
            verdict.protocol_version,
            _typed(Implementation, verdict.client_info),
            _typed(ClientCapabilities, verdict.client_capabilities),
        )
        return req, connection

    # -- the client's answers and cancellations (legacy) -----------------------------------
    async def _answer(self, message: dict[str, Any], session: LaneSession, send: Send) -> bool:
        """A client's response to one of the lane's requests: hand it to the waiter."""
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

    async def _cancel(self, message: dict[str, Any], session: LaneSession, send: Send) -> bool:
        """``notifications/cancelled`` for a call in the lane: stop it, answer nothing."""
        params = message.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        call = session.calls.get(request_id) if _request_id(request_id) else None
        if call is None:
            return False
        call.cancel_requested.set()
        call.stop()
        await _accepted(send)
        return True


class _Response:
    """A call's HTTP response, written as the call goes, from the task that runs it: the
    answer alone as the whole response when nothing went before it (``end``'s
    ``alone``); else an SSE stream begun by the first event, or by a ping after
    ``SSE_PING_INTERVAL`` of quiet (as the SDK's transport keeps a stream alive),
    written by a task of its own so it goes on whatever the call is doing."""

    def __init__(self, send: Send, headers: list[tuple[bytes, bytes]], *, name: str) -> None:
        self.send = send
        self.headers = headers
        self.name = name
        self.out: asyncio.Queue[Any] | None = None  # the SSE stream's, once one began
        self.writer: asyncio.Task[None] | None = None  # writes the SSE stream
        self.gone = False  # the client's stream is gone (a write failed, or it left)
        self.quiet: asyncio.TimerHandle | None = asyncio.get_running_loop().call_later(
            SSE_PING_INTERVAL, self.put, None
        )

    def put(self, event: bytes | None) -> None:
        """One encoded SSE event (``None``: a ping) for the stream, begun if need be."""
        if self.gone:
            return
        self._hush()
        self._begin().put_nowait(event)

    async def end(
        self, last: Mapping[str, Any] | None, alone: Callable[[], Awaitable[None]] | None
    ) -> None:
        """End the response: ``alone`` writes the answer as all of it when nothing went
        before; else ``last`` (the answer; ``None``: no answer) ends the stream."""
        self._hush()
        if self.out is None and alone is not None:
            try:
                await alone()
            except OSError:
                self.gone = True  # the client left before its answer
            return
        if last is not None:
            self.put(_event(last))
        self._begin().put_nowait(_END)  # begun now if nothing was said: an empty stream
        assert self.writer is not None
        await self.writer

    def abort(self) -> None:
        """The call is cancelled under its response: stop writing it."""
        self._hush()
        if self.writer is not None:
            self.writer.cancel()

    def _begin(self) -> asyncio.Queue[Any]:
        """The stream's queue, its writer started with it."""
        if self.out is None:
            self.out = asyncio.Queue()
            self.writer = asyncio.get_running_loop().create_task(
                self._write(self.out), name=self.name
            )
        return self.out

    async def _write(self, out: asyncio.Queue[Any]) -> None:
        """The SSE stream: each event queued, a ping for each quiet
        ``SSE_PING_INTERVAL``, until ``_END``."""
        try:
            await self.send({"type": "http.response.start", "status": 200, "headers": self.headers})
            while (item := await _next(out)) is not _END:
                chunk = _PING if item is None else item
                await self.send({"type": "http.response.body", "body": chunk, "more_body": True})
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            # the client left; a legacy call goes on, as on the SDK path, with nowhere to talk
            self.gone = True

    def _hush(self) -> None:
        if self.quiet is not None:
            self.quiet.cancel()
            self.quiet = None


class _Sink:
    """Where the SDK's single-exchange dispatch context sends each encoded SSE event."""

    def __init__(self, response: _Response) -> None:
        self.response = response

    async def send(self, event: bytes) -> None:
        self.response.put(event)


async def _next(out: asyncio.Queue[Any]) -> Any:
    """The next event, ``_END``, or ``None`` when a ping is due."""
    try:
        async with asyncio.timeout(SSE_PING_INTERVAL):
            return await out.get()
    except TimeoutError:
        return None


async def _serve_one(
    server: Server[Any],
    dctx: SingleExchangeDispatchContext,
    method: str,
    params: Mapping[str, Any] | None,
    *,
    connection: Connection,
    lifespan_state: Any,
) -> dict[str, Any]:
    """The SDK's ``serve_one``: the request run once on a kernel of its own, then the
    connection's exit stack closed as the SDK closes it (shielded, bounded), when the
    request put anything on it."""
    runner = ServerRunner(server, connection, lifespan_state)
    try:
        return await runner.on_request(dctx, method, params)
    finally:
        if has_exit_callbacks(connection):
            await aclose_shielded(connection)


def _accepts(request: Request) -> tuple[bool, bool]:
    """Whether a request accepts JSON and SSE: the usual header read as it stands, any
    other (wildcards, parameters) as the SDK reads it."""
    accept = request.headers.get("accept", "")
    if accept == "application/json, text/event-stream":
        return True, True
    return check_accept_headers(request)


@functools.lru_cache(maxsize=256)
def _model(model: type[_M], raw: bytes) -> _M | str:
    """An envelope value as its model, validated once per distinct value (a client sends
    the same on every request); the validation error's text if it is not one."""
    try:
        return model.model_validate(pydantic_core.from_json(raw), by_name=False)
    except pydantic_core.ValidationError as exc:
        return str(exc)


def _typed(model: type[_M], raw: Any) -> Any:
    """``raw`` as ``model`` if it is one (``Connection.from_envelope`` takes a model
    as it is, so the client's info and capabilities are not validated per request);
    else ``raw`` as it came, for the SDK to judge."""
    if not isinstance(raw, dict):
        return raw
    try:
        typed = _model(model, pydantic_core.to_json(raw))
    except pydantic_core.PydanticSerializationError:
        return raw
    return raw if isinstance(typed, str) else typed


def _on_leaving(scope: Scope, receive: Receive, leave: Callable[[], None]) -> Callable[[], object]:
    """Call ``leave`` when the client's connection closes; returns what stops watching.
    Behind the edge's protocol its ``Leaving`` says so; elsewhere a task waits on
    ``receive`` for ``http.disconnect``."""
    leaving = scope.get(LEAVING)
    if isinstance(leaving, Leaving):
        return leaving.when(leave)

    async def watch() -> None:
        while (await receive()).get("type") != "http.disconnect":
            pass
        leave()

    return asyncio.get_running_loop().create_task(watch()).cancel


def _session_header(session: LaneSession) -> tuple[bytes, bytes]:
    return (MCP_SESSION_ID_HEADER.encode(), (session.connection.session_id or "").encode())


async def _json(
    send: Send, message: Mapping[str, Any], status: int, headers: list[tuple[bytes, bytes]]
) -> None:
    """``message`` as the whole response, one JSON body, as the SDK's JSON responses
    send it (either is the client's to read), written by the call's own task."""
    body = pydantic_core.to_json(message)
    head = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _error(request_id: Any, error: mt.ErrorData) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": error.model_dump(by_alias=True, mode="json", exclude_none=True),
    }


async def _accepted(send: Send) -> None:
    await send({"type": "http.response.start", "status": 202, "headers": []})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _body(receive: Receive) -> tuple[bytes, bool]:
    """The request body as far as it has come; ``more`` when the client is still
    sending (the Edge has bounded and buffered it, so this is the whole of it)."""
    message = await receive()
    if message["type"] != "http.request":
        return b"", True
    chunks = [message.get("body", b"")]
    more = bool(message.get("more_body"))
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), True
        chunks.append(message.get("body", b""))
        more = bool(message.get("more_body"))
    return b"".join(chunks), False


def _message(body: bytes) -> dict[str, Any] | None:
    """A single JSON-RPC 2.0 message object, or ``None`` (the SDK judges the rest)."""
    try:
        message = pydantic_core.from_json(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    return message


def _replay(body: bytes, more: bool, receive: Receive) -> Receive:
    """``receive`` with what the lane already read put back in front."""
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": more}]

    async def replay() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replay


def install(server: Server[Any]) -> Lane:
    """Put a lane in front of ``server``'s streamable-HTTP session manager (call after
    ``streamable_http_app()`` built it) and teach it the sessions the SDK opens."""
    manager = server.session_manager
    if isinstance(manager.asgi_app, Lane):  # the app was built again: the lane is in place
        return manager.asgi_app
    lane = Lane(manager.asgi_app, manager, server)
    manager.asgi_app = lane  # type: ignore[assignment]  # any ASGI app serves there
    # an app built before had a lane of its own: only this one learns sessions now
    server.middleware[:] = [
        m for m in server.middleware if not isinstance(getattr(m, "__self__", None), Lane)
    ]
    server.middleware.insert(0, lane.learn)
    return lane


__all__ = ["ASK_PREFIX", "LANE_METHODS", "Lane", "LaneCall", "LaneSession", "install"]
