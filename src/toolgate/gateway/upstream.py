"""What travels with a tool call through the gateway, both ways, on both eras: progress,
cancellation, logging, and the backend's sampling/elicitation/roots requests (legacy: push
requests related to the call; 2026-07-28: ``input_required`` rounds). ``Upstream`` is every
backend's ``Peer``. Edge layer: imports ``mcp``, ``gateway.backends`` and the core's types.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import weakref
from collections.abc import Hashable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import mcp_types as mt
from mcp.server import Server
from mcp.server.connection import allowed_log_levels
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp.shared.message import ServerMessageMetadata
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST
from pydantic import ValidationError

from toolgate.catalog import CallContext, ToolResult
from toolgate.errors import ToolgateError
from toolgate.gateway.backends import Backend
from toolgate.lowlevel import REQUEST_CONTEXT
from toolgate.strategies.base import is_stateless

logger = logging.getLogger("toolgate.gateway")

Context = ServerRequestContext[Any, Any]
LEVELS: tuple[mt.LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
#: how long a finished 2026-07-28 call waits for the client to come back for its result
UNCLAIMED_TTL = 300.0
_STATE_PREFIX = "toolgate.upstream:"
_CAPABILITY: dict[str, tuple[str, mt.ClientCapabilities]] = {
    "sampling/createMessage": ("sampling", mt.ClientCapabilities(sampling=mt.SamplingCapability())),
    "elicitation/create": (
        "elicitation",
        mt.ClientCapabilities(elicitation=mt.ElicitationCapability()),
    ),
    "roots/list": ("roots", mt.ClientCapabilities(roots=mt.RootsCapability())),
}


class InputPending(ToolgateError):
    """A 2026-07-28 call whose backend asked for input: the round ends with an
    ``input_required`` result (``Upstream.rounds`` puts it on the wire)."""

    code = "input_required"


def _error(message: str, code: int = INVALID_REQUEST) -> mt.ErrorData:
    return mt.ErrorData(code=code, message=message)


def _level_index(level: str) -> int:
    return LEVELS.index(level) if level in LEVELS else 0


def _meta_of(ctx: Context) -> Mapping[str, Any]:
    meta = (ctx.params or {}).get("_meta") if isinstance(ctx.params, Mapping) else None
    return meta if isinstance(meta, Mapping) else {}


def _answer_type(request: mt.InputRequest) -> type[mt.InputResponse]:
    """The result a client answers ``request`` with (one rule for both eras)."""
    if isinstance(request, mt.CreateMessageRequest):
        params = request.params
        tools = params.tools or params.tool_choice
        return mt.CreateMessageResultWithTools if tools else mt.CreateMessageResult
    if isinstance(request, mt.ElicitRequest):
        return mt.ElicitResult
    return mt.ListRootsResult


def _lacks(ctx: Context, request: mt.InputRequest) -> mt.ErrorData | None:
    """The error for a request the calling client declared no capability for."""
    name, capability = _CAPABILITY[request.method]
    if request.method == "elicitation/create" and isinstance(
        request.params, mt.ElicitRequestURLParams
    ):
        capability = mt.ClientCapabilities(
            elicitation=mt.ElicitationCapability(url=mt.UrlElicitationCapability())
        )
        name = "elicitation (url mode)"
    if ctx.session.check_client_capability(capability):
        return None
    return _error(
        f"The client of this call does not support {name}: it did not declare the "
        f"capability, so toolgate cannot relay the backend's {request.method} to it."
    )


# -- one call, as the backend's requests find it -------------------------------------------


class SessionCall:
    """What one client call carries to its backend and hears back, on the legacy protocol:
    progress and log messages related to the call, push requests to the client."""

    def __init__(self, ctx: Context, levels: LogLevels) -> None:
        self.ctx = ctx
        self.levels = levels
        self.origin: Hashable = id(ctx.session._connection)

    @property
    def wants_progress(self) -> bool:
        return progress_token_from_params(self.ctx.params) is not None

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        await self.ctx.session.report_progress(progress, total, message)

    async def ask(self, request: mt.InputRequest) -> mt.InputResponse | mt.ErrorData:
        ctx = self.ctx
        lacking = _lacks(ctx, request)
        if lacking is not None:
            return lacking
        try:
            result: mt.InputResponse = await ctx.session.send_request(
                request,
                _answer_type(request),
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
        except MCPError as exc:
            return exc.error
        except NoBackChannelError:
            return _error("The client's connection cannot take a request from the server now.")
        except ValidationError:
            return _error(f"The client's answer to {request.method} is not valid", INTERNAL_ERROR)
        return result

    async def log(self, params: mt.LoggingMessageNotificationParams) -> None:
        ctx = self.ctx
        if not self.levels.admits(ctx.session._connection, params.level):
            return
        await ctx.session.send_notification(
            mt.LoggingMessageNotification(params=params), related_request_id=ctx.request_id
        )


@dataclass
class _Round:
    """One 2026-07-28 ``tools/call`` request: the parked call it resumes, if any, and the
    ``input_required`` result it ends with when the backend asks for input."""

    resume: ParkedCall | None = None
    attached: bool = False
    asked: mt.InputRequiredResult | None = None


_ROUND: ContextVar[_Round | None] = ContextVar("toolgate.upstream.round", default=None)


@dataclass(eq=False)
class ParkedCall:
    """A backend call that outlives the 2026-07-28 requests driving it: each request
    (round) waits for its result or for the backend's next requests for input, which
    end the round as ``input_required``; the client's retry answers them."""

    backend: Backend
    tool: str
    id: str = field(default_factory=lambda: _STATE_PREFIX + secrets.token_urlsafe(16))
    ctx: Context | None = None  # the round in progress, if any
    task: asyncio.Task[ToolResult] | None = None
    pending: dict[str, tuple[mt.InputRequest, asyncio.Future[Any]]] = field(default_factory=dict)
    sent: set[str] = field(default_factory=set)  # keys of ``pending`` the client was given
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    asked: int = 0
    expiry: asyncio.TimerHandle | None = None  # while the client is between rounds

    @property
    def origin(self) -> Hashable:
        return self.id

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        ctx = self.ctx
        if ctx is not None and progress_token_from_params(ctx.params) is not None:
            await ctx.session.report_progress(progress, total, message)

    async def ask(self, request: mt.InputRequest) -> mt.InputResponse | mt.ErrorData:
        ctx = self.ctx
        if ctx is not None:
            lacking = _lacks(ctx, request)
            if lacking is not None:
                return lacking
        self.asked += 1
        key = f"{request.method.replace('/', '-')}-{self.asked}"
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[key] = (request, answer)
        self.changed.set()
        try:
            result: mt.InputResponse | mt.ErrorData = await answer
        finally:
            self.pending.pop(key, None)
            self.sent.discard(key)
        return result

    async def log(self, params: mt.LoggingMessageNotificationParams) -> None:
        ctx = self.ctx
        if ctx is None or params.level not in allowed_log_levels(
            ctx.protocol_version, _meta_of(ctx)
        ):
            return  # 2026-07-28: only on a request that opted in, at its level or above
        await ctx.session.send_notification(
            mt.LoggingMessageNotification(params=params), related_request_id=ctx.request_id
        )

    def answer(self, responses: Mapping[str, Any]) -> None:
        """Feed the client's ``inputResponses`` to the backend's waiting requests; one the
        client left out is refused, so the backend is never left waiting."""
        for key, (request, waiting) in list(self.pending.items()):
            if key not in self.sent or waiting.done():
                continue
            raw = responses.get(key)
            if raw is None:
                waiting.set_result(_error(f"The client did not answer {request.method}."))
                continue
            try:
                answer = _answer_type(request).model_validate(raw, by_name=False)
                waiting.set_result(answer)
            except ValidationError:
                waiting.set_result(
                    _error(f"The client's answer to {request.method} is not valid", INVALID_PARAMS)
                )

    async def next(self) -> ToolResult | dict[str, mt.InputRequest]:
        """The call's result, or the backend's requests for input not yet sent."""
        task = self.task
        assert task is not None
        while True:
            if task.done():
                return task.result()
            fresh = {
                key: request
                for key, (request, waiting) in self.pending.items()
                if key not in self.sent and not waiting.done()
            }
            if fresh:
                self.sent.update(fresh)
                return fresh
            self.changed.clear()
            waiter = asyncio.ensure_future(self.changed.wait())
            try:
                await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()

    def cancel(self) -> None:
        if self.expiry is not None:
            self.expiry.cancel()
        if self.task is not None:
            self.task.cancel()
        for _, waiting in self.pending.values():
            if not waiting.done():
                waiting.cancel()


# -- logging levels per legacy session ----------------------------------------------------


class LogLevels:
    """The ``logging/setLevel`` of each legacy connection; each leaves when it closes."""

    def __init__(self) -> None:
        self._levels: weakref.WeakKeyDictionary[Any, mt.LoggingLevel] = weakref.WeakKeyDictionary()

    def set(self, connection: Any, level: mt.LoggingLevel) -> None:
        self._levels[connection] = level

    def lowest(self) -> mt.LoggingLevel | None:
        levels: list[mt.LoggingLevel] = list(self._levels.values())
        return min(levels, key=LEVELS.index) if levels else None

    def admits(self, connection: Any, level: str) -> bool:
        """Whether ``connection`` wants a message at ``level`` (no level set: every one)."""
        wanted = self._levels.get(connection)
        return wanted is None or _level_index(level) >= _level_index(wanted)

    def listeners(self, level: str) -> list[Any]:
        """The connections that asked for messages at ``level`` (outside any call)."""
        return [
            c
            for c, wanted in list(self._levels.items())
            if _level_index(level) >= _level_index(wanted)
        ]


# -- the gateway's side ----------------------------------------------------------------------

InFlight = SessionCall | ParkedCall


class Upstream:
    """Relays between clients and backends for one gateway (``Backend.peer``)."""

    def __init__(self, backends: Mapping[str, Backend]) -> None:
        self.backends = backends
        self.levels = LogLevels()
        self.parked: dict[str, ParkedCall] = {}
        self._calls: dict[str, list[InFlight]] = {}  # backend name → calls in flight
        for backend in backends.values():
            backend.peer = self

    def install(self, server: Server[Any]) -> None:
        """Serve ``logging/setLevel`` and ``notifications/roots/list_changed``, and the
        2026-07-28 ``input_required`` rounds (``requestState`` sealed by the SDK)."""
        server.add_request_handler("logging/setLevel", mt.SetLevelRequestParams, self.set_level)
        server.add_notification_handler(
            "notifications/roots/list_changed", mt.NotificationParams, self.roots_changed
        )
        boundary = RequestStateBoundary(
            RequestStateSecurity.ephemeral(ttl=UNCLAIMED_TTL), default_audience="toolgate"
        )
        server.middleware.extend([boundary, self.rounds])

    # -- a call ------------------------------------------------------------------------
    async def call(
        self, backend: Backend, tool: str, arguments: Mapping[str, Any], call: CallContext
    ) -> ToolResult:
        """Run ``tool`` on ``backend`` for the client request behind ``call``."""
        ctx = call.extras.get(REQUEST_CONTEXT)
        if not isinstance(ctx, ServerRequestContext):
            return await backend.call(tool, arguments)
        if not is_stateless(ctx.protocol_version):
            here = SessionCall(ctx, self.levels)
            progress = here.progress if here.wants_progress else None
            with self._in_flight(backend, here):
                return await backend.call(tool, arguments, progress=progress)
        return await self._round(backend, tool, arguments, ctx)

    async def _round(
        self, backend: Backend, tool: str, arguments: Mapping[str, Any], ctx: Context
    ) -> ToolResult:
        """One 2026-07-28 request of a call: start it (or resume the parked one), then
        wait for its result or the backend's requests for input."""
        state = _ROUND.get()
        resume = state.resume if state is not None else None
        if (
            state is not None
            and resume is not None
            and (resume.backend, resume.tool)
            == (
                backend,
                tool,
            )
        ):
            state.attached = True
            parked = resume
        else:  # a new call (``rounds`` ends a resumed one this request did not reach)
            parked = self._park(backend, tool, arguments)
        if parked.expiry is not None:
            parked.expiry.cancel()
        parked.ctx = ctx
        try:
            outcome = await parked.next()
        except BaseException:  # cancelled by the client, or the call failed: end it
            self._drop(parked)
            raise
        finally:
            parked.ctx = None
        if isinstance(outcome, ToolResult):
            self._drop(parked)
            return outcome
        if state is None:  # no round keeper installed: nobody could carry the answers back
            self._drop(parked)
            return ToolResult.error(
                f"Backend {backend.name!r} asked for input ({', '.join(outcome)}), which "
                "this server cannot relay on protocol 2026-07-28."
            )
        state.asked = mt.InputRequiredResult(input_requests=outcome, request_state=parked.id)
        self._expire_later(parked)
        raise InputPending(f"Backend {backend.name!r} asked the client for input")

    def _park(self, backend: Backend, tool: str, arguments: Mapping[str, Any]) -> ParkedCall:
        parked = ParkedCall(backend, tool)

        async def run() -> ToolResult:
            with self._in_flight(backend, parked):
                return await backend.call(tool, arguments, progress=parked.progress)

        parked.task = asyncio.get_running_loop().create_task(run(), name=f"call:{backend.name}")
        self.parked[parked.id] = parked
        return parked

    def _drop(self, parked: ParkedCall) -> None:
        self.parked.pop(parked.id, None)
        parked.cancel()

    def _expire_later(self, parked: ParkedCall) -> None:
        """A parked call whose client never comes back: its backend request ends within
        the tool's timeout; its result is dropped ``UNCLAIMED_TTL`` seconds after."""
        seconds = parked.backend.spec.timeout_for(parked.tool) + UNCLAIMED_TTL
        parked.expiry = asyncio.get_running_loop().call_later(seconds, self._drop, parked)

    async def rounds(self, ctx: Context, call_next: CallNext) -> HandlerResult:
        """``ServerMiddleware`` for 2026-07-28 ``tools/call``: a retry carrying our
        ``requestState`` resumes its parked call with the client's ``inputResponses``;
        a round that ends waiting for input answers ``input_required``."""
        if ctx.method != "tools/call" or not is_stateless(ctx.protocol_version):
            return await call_next(ctx)
        params = ctx.params or {}
        state = params.get("requestState")
        resume: ParkedCall | None = None
        if isinstance(state, str) and state.startswith(_STATE_PREFIX):
            resume = self.parked.get(state)
            if resume is None:
                raise MCPError(
                    code=INVALID_PARAMS,
                    message="This call's input round is over: the backend call ended, "
                    "failed or expired. Call the tool again.",
                )
            responses = params.get("inputResponses")
            resume.answer(responses if isinstance(responses, Mapping) else {})
        round_ = _Round(resume)
        token = _ROUND.set(round_)
        try:
            result = await call_next(ctx)
        except MCPError:
            if round_.asked is None:
                raise
        finally:
            _ROUND.reset(token)
            if resume is not None and not round_.attached:
                self._drop(resume)  # refused before reaching the backend: end the call
        if round_.asked is not None:
            return round_.asked
        return result

    @contextlib.contextmanager
    def _in_flight(self, backend: Backend, call: InFlight) -> Any:
        calls = self._calls.setdefault(backend.name, [])
        calls.append(call)
        try:
            yield
        finally:
            calls.remove(call)

    def _caller(self, backend: Backend) -> InFlight | str:
        """The call a backend's request belongs to, or why none can be named: the
        backend connection is shared, and its requests do not say which call they
        serve, so it must be the one call in flight (or calls of one connection)."""
        calls = self._calls.get(backend.name, [])
        if not calls:
            return "no client call to this backend is in progress"
        if len({c.origin for c in calls}) > 1:
            return (
                f"{len(calls)} calls from different clients are in progress on this "
                "backend, and its request does not say which one it serves"
            )
        return calls[-1]

    # -- what backends send (``Peer``) -------------------------------------------------------
    async def ask(
        self, backend: Backend, request: mt.InputRequest
    ) -> mt.InputResponse | mt.ErrorData:
        caller = self._caller(backend)
        if isinstance(caller, str):
            logger.info("backend %s: %s refused: %s", backend.name, request.method, caller)
            return _error(f"toolgate cannot relay {request.method}: {caller}.")
        return await caller.ask(request)

    async def log(self, backend: Backend, params: mt.LoggingMessageNotificationParams) -> None:
        caller = self._caller(backend)
        if not isinstance(caller, str):
            await caller.log(params)
            return
        data = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        for connection in self.levels.listeners(params.level):
            await connection.notify("notifications/message", data)  # never raises

    # -- what clients send -------------------------------------------------------------
    async def set_level(self, ctx: Context, params: mt.SetLevelRequestParams) -> mt.EmptyResult:
        """``logging/setLevel`` (legacy): this session's level; each backend gets the
        lowest level any session asked for, and the gateway filters per session."""
        self.levels.set(ctx.session._connection, params.level)
        lowest = self.levels.lowest()
        if lowest is not None:
            for backend in self.backends.values():
                if backend.log_level != lowest:
                    await backend.set_logging_level(lowest)
        return mt.EmptyResult()

    async def roots_changed(self, ctx: Context, params: mt.NotificationParams | None) -> None:
        for backend in self.backends.values():
            with contextlib.suppress(Exception):  # a backend going down is not the client's
                await backend.roots_changed()

    async def close(self) -> None:
        """Cancel every parked call (the gateway is stopping)."""
        parked = list(self.parked.values())
        for p in parked:
            self._drop(p)
        for p in parked:
            if p.task is not None:
                with contextlib.suppress(BaseException):
                    await p.task


__all__ = ["InputPending", "LogLevels", "ParkedCall", "SessionCall", "Upstream"]
