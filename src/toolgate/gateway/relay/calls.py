"""What travels with a tool call through the gateway, both ways, on both eras: progress,
cancellation, logging, and the backend's sampling/elicitation/roots requests (legacy: push
requests related to the call; 2026-07-28: ``input_required`` rounds). ``Upstream`` is every
backend's ``Peer``. Edge layer: imports ``mcp``, ``gateway.backends``, the access seam, the
request kit and the core's types.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Hashable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, get_args

import mcp_types as mt
from mcp.server import Server
from mcp.server.connection import allowed_log_levels
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp.shared.message import ServerMessageMetadata
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST
from pydantic import ValidationError

from toolgate.catalog import CallContext, ToolResult
from toolgate.errors import ToolgateError
from toolgate.events import EventBus
from toolgate.gateway.backends.backend import Backend
from toolgate.gateway.backends.http_calls import on_call_stream
from toolgate.gateway.relay.access import Audience, FactsOf
from toolgate.lowlevel import REQUEST_CONTEXT
from toolgate.request import Context, RequestFacts
from toolgate.strategies.base import is_stateless
from toolgate.wire import call_result_wire, error_as_result, raise_or_result

logger = logging.getLogger("toolgate.gateway")

#: severity-ascending, as the SDK's ``LoggingLevel`` literal declares them
LEVELS: tuple[mt.LoggingLevel, ...] = get_args(mt.LoggingLevel)
#: how long a finished 2026-07-28 call waits for the client to come back for its result
UNCLAIMED_TTL = 300.0
#: a backend's level once no session that hears it asks for one: every level, as an MCP
#: server that was never sent ``logging/setLevel`` sends (docs/decisions.md)
RESTING_LEVEL: mt.LoggingLevel = "debug"
#: URL-mode elicitations whose completion is awaited, at most (the oldest are forgotten)
MAX_OPEN_ELICITATIONS = 1024
ELICITATION_COMPLETE = "notifications/elicitation/complete"
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


def _answers_input(ctx: Context) -> bool:
    """Whether the calling client declared any capability a backend's request for input
    needs (``_lacks`` refuses the others)."""
    check = ctx.session.check_client_capability
    return any(check(capability) for _, capability in _CAPABILITY.values())


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


#: ``_meta`` of the client→gateway hop, not of the call: the progress token (the gateway
#: asks the backend for progress with a token of its own) and MCP's reserved keys
#: (protocol version, client info and capabilities, log level on 2026-07-28)
_HOP_META = frozenset({"progressToken"})
_RESERVED_META = ("io.modelcontextprotocol/", "modelcontextprotocol.io/")


def call_meta(ctx: Context) -> dict[str, Any] | None:
    """What of the client's ``_meta`` on a call travels on to the backend: every key
    but the hop's own, as a direct call would carry it (trace context, a host's own
    keys). None when nothing is left."""
    meta = (ctx.params or {}).get("_meta")
    if not isinstance(meta, Mapping):
        return None
    kept = {
        str(k): v
        for k, v in meta.items()
        if k not in _HOP_META and not str(k).startswith(_RESERVED_META)
    }
    return kept or None


class SessionCall:
    """What one client call carries to its backend and hears back, on the legacy protocol:
    progress and log messages related to the call, push requests to the client."""

    def __init__(self, ctx: Context, levels: LogLevels) -> None:
        self.ctx = ctx
        self.levels = levels
        self.connection: Any = ctx.session._connection
        self.origin: Hashable = id(self.connection)

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
    """The first 2026-07-28 ``tools/call`` request of a call: the ``input_required``
    result it ends with when the backend asks for input (a retry is ``Upstream._resume``)."""

    asked: mt.InputRequiredResult | None = None


_ROUND: ContextVar[_Round | None] = ContextVar("toolgate.upstream.round", default=None)
#: the call whose backend request the running code serves (set by ``Upstream._in_flight``)
_CALLING: ContextVar[SessionCall | ParkedCall | None] = ContextVar(
    "toolgate.upstream.calling", default=None
)


@dataclass(eq=False)
class ParkedCall:
    """A backend call that outlives the 2026-07-28 requests driving it: each request
    (round) waits for its result or for the backend's next requests for input, which
    end the round as ``input_required``; the client's retry answers them."""

    backend: Backend
    tool: str
    #: whose call it is (``Upstream._owner``): only the same principal may answer it
    owner: Hashable = None
    call: CallContext | None = None  # the catalog's call, as its first round made it
    started: float = field(default_factory=time.perf_counter)
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
            # cleared before looking: what sets it later (a request, the call's end: see
            # ``Upstream._park``) can only come while this waits below
            self.changed.clear()
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
            await self.changed.wait()

    def cancel(self) -> None:
        if self.expiry is not None:
            self.expiry.cancel()
        if self.task is not None:
            self.task.cancel()
        for _, waiting in self.pending.values():
            if not waiting.done():
                waiting.cancel()


# -- logging levels per legacy session ----------------------------------------------------

Hears = Callable[[RequestFacts | None], bool]


def _everyone(facts: RequestFacts | None) -> bool:
    return True


def requested_level(ctx: Context) -> mt.LoggingLevel | None:
    """The most verbose level a 2026-07-28 request opted in to (its ``_meta``), if any."""
    allowed = allowed_log_levels(ctx.protocol_version, _meta_of(ctx))
    return min(allowed, key=LEVELS.index) if allowed else None


class LogLevels:
    """The ``logging/setLevel`` of each legacy connection, with the facts of the request
    that set it (its principal decides which backends it hears); each leaves when it
    closes (``drop``). A 2026-07-28 call that opted in to a level holds it on its own
    backend while it runs (``hold``/``release``)."""

    def __init__(self) -> None:
        self._levels: weakref.WeakKeyDictionary[
            Any, tuple[mt.LoggingLevel, RequestFacts | None]
        ] = weakref.WeakKeyDictionary()
        self._held: dict[Hashable, tuple[mt.LoggingLevel, str]] = {}

    def set(
        self, connection: Any, level: mt.LoggingLevel, facts: RequestFacts | None = None
    ) -> bool:
        """Record ``connection``'s level; whether it had none before."""
        new = connection not in self._levels
        self._levels[connection] = (level, facts)
        return new

    def drop(self, connection: Any) -> None:
        self._levels.pop(connection, None)

    def hold(self, call: Hashable, level: mt.LoggingLevel, backend: str) -> None:
        """``call`` wants ``backend``'s messages at ``level`` until it is released."""
        self._held[call] = (level, backend)

    def release(self, call: Hashable) -> None:
        self._held.pop(call, None)

    def lowest(
        self, hears: Hears = _everyone, backend: str | None = None
    ) -> mt.LoggingLevel | None:
        """The most verbose level a connection that ``hears`` asked for, or a call on
        ``backend`` holds, if any."""
        levels = [level for level, facts in list(self._levels.values()) if hears(facts)]
        levels += [level for level, on in self._held.values() if on == backend]
        return min(levels, key=LEVELS.index) if levels else None

    def admits(self, connection: Any, level: str) -> bool:
        """Whether ``connection`` wants a message at ``level`` (no level set: every one)."""
        wanted = self._levels.get(connection)
        return wanted is None or _level_index(level) >= _level_index(wanted[0])

    def listeners(self, level: str, hears: Hears = _everyone) -> list[Any]:
        """The connections that ``hears`` and that asked for messages at ``level``
        (outside any call)."""
        return [
            c
            for c, (wanted, facts) in list(self._levels.items())
            if _level_index(level) >= _level_index(wanted) and hears(facts)
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
        self._server: Server[Any] | None = None
        self._facts: FactsOf | None = None
        self._audience: Audience | None = None
        self._events: EventBus | None = None
        self._levels_applied = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()
        #: its MCP middleware, set by ``install``: ``input_required``'s sealed state, its rounds
        self.middleware: tuple[ServerMiddleware[Any], ...] = ()
        # (backend, elicitationId) → the legacy connection its URL-mode elicitation went to
        self._elicitations: OrderedDict[tuple[str, str], weakref.ref[Any]] = OrderedDict()
        for backend in backends.values():
            backend.peer = self

    def install(
        self,
        server: Server[Any],
        *,
        facts: FactsOf | None = None,
        audience: Audience | None = None,
        events: EventBus | None = None,
    ) -> None:
        """Serve ``logging/setLevel`` and ``notifications/roots/list_changed``, and the
        2026-07-28 ``input_required`` rounds (``requestState`` sealed by the SDK).
        ``facts`` names who asks (the owner of a parked call, the principal of a log
        level); ``audience`` says which principals hear a backend outside any call
        (without it, every session that set a level does); ``events`` hears how a call
        resumed after its first round ends, as the catalog's (``tool.executed``)."""
        self._facts, self._audience, self._events = facts, audience, events
        if server is self._server:  # built again: the handlers are in place
            return
        self._server = server
        server.add_request_handler("logging/setLevel", mt.SetLevelRequestParams, self.set_level)
        server.add_notification_handler(
            "notifications/roots/list_changed", mt.NotificationParams, self.roots_changed
        )
        boundary = RequestStateBoundary(
            RequestStateSecurity.ephemeral(ttl=UNCLAIMED_TTL), default_audience="toolgate"
        )
        self.middleware = (boundary, self.rounds)  # the gateway places them

    def _hearing(self, backend: Backend) -> Hears:
        """Whether the session whose level came with given facts hears ``backend``
        outside any call (``audience``). Without facts or an audience every session
        does; one the audience cannot judge (it raised) hears nothing."""
        audience = self._audience

        def hears(facts: RequestFacts | None) -> bool:
            if facts is None or audience is None:
                return True
            try:
                return audience(facts, backend.name)
            except Exception as exc:
                logger.debug("cannot tell whether a session hears %s: %s", backend.name, exc)
                return False

        return hears

    async def _owner(self, ctx: Context) -> Hashable:
        """Whose 2026-07-28 call ``ctx`` is: its principal (``None``: the default one)."""
        if self._facts is None:
            return None
        principal = (await self._facts(ctx)).principal
        return principal.key if principal is not None else None

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

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
                return await backend.call(tool, arguments, progress=progress, meta=call_meta(ctx))
        return await self._round(backend, tool, arguments, ctx, call)

    async def _round(
        self,
        backend: Backend,
        tool: str,
        arguments: Mapping[str, Any],
        ctx: Context,
        call: CallContext | None = None,
    ) -> ToolResult:
        """The first 2026-07-28 request of a call: start it, then wait for its result or
        the backend's requests for input (its retries go to ``_resume``, not here). A
        client that can answer none of them (it declared neither sampling, elicitation
        nor roots) is refused each at once (``_lacks``), so no round can end early: its
        call runs in the request's own task, with no parked task to hand over to."""
        meta, level = call_meta(ctx), requested_level(ctx)
        progress = progress_token_from_params(ctx.params) is not None
        if not _answers_input(ctx):
            # never parked: it routes the backend's progress and logs, and refuses its asks;
            # a backend that serves 2026-07-28 gets it as the client would send it
            here = ParkedCall(backend, tool, ctx=ctx)
            return await self._backend_call(here, arguments, meta, level, progress, stateless=True)
        state = _ROUND.get()
        owner = await self._owner(ctx)
        parked = self._park(
            backend,
            tool,
            arguments,
            owner=owner,
            call=call,
            meta=meta,
            level=level,
            progress=progress,
        )
        outcome = await self._wait(parked, ctx)
        if isinstance(outcome, ToolResult):
            return outcome
        if state is None:  # no round keeper installed: nobody could carry the answers back
            self._drop(parked)
            asked = ", ".join(outcome.input_requests or ())
            return ToolResult.error(
                f"Backend {backend.name!r} asked for input ({asked}), which this server "
                "cannot relay on protocol 2026-07-28."
            )
        state.asked = outcome
        raise InputPending(f"Backend {backend.name!r} asked the client for input")

    async def _wait(self, parked: ParkedCall, ctx: Context) -> ToolResult | mt.InputRequiredResult:
        """One round of ``parked``, driven by the request ``ctx``: its result (the call is
        over), or ``input_required`` with the backend's new requests (it stays parked)."""
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
        self._expire_later(parked)
        return mt.InputRequiredResult(input_requests=outcome, request_state=parked.id)

    def _park(
        self,
        backend: Backend,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        owner: Hashable,
        call: CallContext | None = None,
        meta: Mapping[str, Any] | None = None,
        level: mt.LoggingLevel | None = None,
        progress: bool = False,
    ) -> ParkedCall:
        """Start the backend call of a 2026-07-28 call, in a task of its own."""
        parked = ParkedCall(backend, tool, owner, call)
        run = self._backend_call(parked, arguments, meta, level, progress)
        parked.task = asyncio.get_running_loop().create_task(run, name=f"call:{backend.name}")
        parked.task.add_done_callback(lambda _: parked.changed.set())
        self.parked[parked.id] = parked
        return parked

    async def _backend_call(
        self,
        parked: ParkedCall,
        arguments: Mapping[str, Any],
        meta: Mapping[str, Any] | None,
        level: mt.LoggingLevel | None,
        progress: bool,
        *,
        stateless: bool = False,
    ) -> ToolResult:
        """The backend request of a 2026-07-28 call. The backend is asked for progress
        only if the first request wants it, as a legacy call asks only with the client's
        token (a backend told to report progress does work for it that nobody reads).
        ``stateless``: the call can be asked nothing, so a backend that serves 2026-07-28
        gets it as such a request (``Backend.stateless_form``), as it would from the
        client directly; its log level travels in its envelope, not held on the
        backend's session."""
        backend = parked.backend
        report = parked.progress if progress else None
        form = backend.stateless_form(parked.tool, arguments, level) if stateless else None
        with self._in_flight(backend, parked):
            async with self._holding(backend, parked, None if form is not None else level):
                return await backend.call(
                    parked.tool, arguments, progress=report, meta=meta, stateless=form
                )

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
        ``requestState`` resumes its parked call (``_resume``); a first request that
        ends waiting for input answers ``input_required``."""
        if ctx.method != "tools/call" or not is_stateless(ctx.protocol_version):
            return await call_next(ctx)
        params = ctx.params or {}
        state = params.get("requestState")
        if isinstance(state, str) and state.startswith(_STATE_PREFIX):
            return await self._resume(ctx, state, params)
        round_ = _Round()
        token = _ROUND.set(round_)
        try:
            result = await call_next(ctx)
        except MCPError:
            if round_.asked is None:
                raise
        finally:
            _ROUND.reset(token)
        if round_.asked is not None:
            return round_.asked
        return result

    async def _resume(self, ctx: Context, state: str, params: Mapping[str, Any]) -> HandlerResult:
        """A retry of a parked call: the client's ``inputResponses`` go to the backend and
        the call goes on where it was. It is the call admitted in its first round, not a
        new one: no second policy or rate-limit pass. Only its own principal may retry
        it; a refused retry leaves it parked for its owner."""
        parked = self.parked.get(state)
        if parked is None:
            raise MCPError(
                code=INVALID_PARAMS,
                message="This call's input round is over: the backend call ended, "
                "failed or expired. Call the tool again.",
            )
        if await self._owner(ctx) != parked.owner:
            raise MCPError(
                code=INVALID_PARAMS,
                message="This requestState belongs to a call another principal started: "
                "only the client that made the call can answer its requests for input.",
            )
        if parked.ctx is not None:
            raise MCPError(
                code=INVALID_REQUEST,
                message="A round of this call is in progress already: send each "
                "requestState once and wait for its answer.",
            )
        responses = params.get("inputResponses")
        parked.answer(responses if isinstance(responses, Mapping) else {})
        try:
            outcome = await self._wait(parked, ctx)
        except ToolgateError as exc:  # e.g. the backend's own JSON-RPC error: as on round one
            self._executed(parked, error_as_result(exc))
            return call_result_wire(raise_or_result(exc))
        except Exception as exc:  # as a failing tool is answered on its first round
            outcome = ToolResult.error(f"Tool {params.get('name')!r} failed: {exc}")
        if isinstance(outcome, ToolResult):
            self._executed(parked, outcome)
            return call_result_wire(outcome)
        return outcome

    def _executed(self, parked: ParkedCall, result: ToolResult) -> None:
        """Record the end of a resumed call as the catalog records a call's
        (``tool.executed``): its first round ended waiting for input, unrecorded."""
        call = parked.call
        if self._events is None or call is None:
            return
        outcome: dict[str, Any] = (
            {"outcome": "error", "reason": "tool reported error"}
            if result.is_error
            else {"outcome": "success"}
        )
        self._events.emit(
            "tool.executed",
            session=call.session_key,
            principal=call.principal.id,
            tool=call.tool,
            duration_s=time.perf_counter() - parked.started,
            **outcome,
        )

    @contextlib.asynccontextmanager
    async def _holding(
        self, backend: Backend, call: ParkedCall, level: mt.LoggingLevel | None
    ) -> AsyncIterator[None]:
        """While a 2026-07-28 call that opted in to ``level`` runs, its backend logs at
        that level or lower (set before the call starts, so nothing early is lost)."""
        if level is None:
            yield
            return
        self.levels.hold(call, level, backend.name)
        await self._apply_levels(backend)
        try:
            yield
        finally:
            self.levels.release(call)
            self._spawn(self._apply_levels(backend))

    @contextlib.contextmanager
    def _in_flight(self, backend: Backend, call: InFlight) -> Any:
        calls = self._calls.setdefault(backend.name, [])
        calls.append(call)
        token = _CALLING.set(call)  # for what the backend sends on this call's own stream
        try:
            yield
        finally:
            _CALLING.reset(token)
            calls.remove(call)

    def _caller(self, backend: Backend) -> InFlight | str:
        """The call a backend's request belongs to, or why none can be named. One that
        came on a call's own response stream is that call's: the hop hands it on in the
        call's own task (``on_call_stream``), where ``_in_flight`` named the call.
        Otherwise (stdio, the SDK's client) the backend connection is shared and its
        requests do not say which call they serve, so it must be the one call in
        flight (or calls of one connection)."""
        calls = self._calls.get(backend.name, [])
        mine = _CALLING.get() if on_call_stream() else None
        if mine is not None and any(c is mine for c in calls):
            return mine
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
        opened = self._open_elicitation(backend, request, caller)
        answer = await caller.ask(request)
        if opened is not None and not (
            isinstance(answer, mt.ElicitResult) and answer.action == "accept"
        ):
            self._elicitations.pop(opened, None)  # declined: no completion will follow
        return answer

    def _open_elicitation(
        self, backend: Backend, request: mt.InputRequest, caller: InFlight
    ) -> tuple[str, str] | None:
        """Remember which legacy session a URL-mode elicitation goes to, for its
        ``notifications/elicitation/complete`` (2026-07-28 has no such notification)."""
        if not (
            isinstance(caller, SessionCall)
            and isinstance(request, mt.ElicitRequest)
            and isinstance(request.params, mt.ElicitRequestURLParams)
            and request.params.elicitation_id is not None
        ):
            return None
        key = (backend.name, request.params.elicitation_id)
        self._elicitations[key] = weakref.ref(caller.connection)
        self._elicitations.move_to_end(key)
        while len(self._elicitations) > MAX_OPEN_ELICITATIONS:
            self._elicitations.popitem(last=False)
        return key

    async def elicitation_complete(
        self, backend: Backend, params: mt.ElicitCompleteNotificationParams
    ) -> None:
        """The backend's URL-mode elicitation is done: tell the session that was asked."""
        ref = self._elicitations.pop((backend.name, params.elicitation_id), None)
        connection = ref() if ref is not None else None
        if connection is None:
            logger.debug(
                "backend %s: elicitation %s completed; no session waits for it",
                backend.name,
                params.elicitation_id,
            )
            return
        data = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        await connection.notify(ELICITATION_COMPLETE, data)  # never raises

    async def log(self, backend: Backend, params: mt.LoggingMessageNotificationParams) -> None:
        caller = self._caller(backend)
        if not isinstance(caller, str):
            await caller.log(params)
            return
        data = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        for connection in self.levels.listeners(params.level, self._hearing(backend)):
            await connection.notify("notifications/message", data)  # never raises

    # -- what clients send -------------------------------------------------------------
    async def set_level(self, ctx: Context, params: mt.SetLevelRequestParams) -> mt.EmptyResult:
        """``logging/setLevel`` (legacy): this session's level, until it closes; each
        backend logs at the lowest level a session that hears it asked for, and the
        gateway filters per session."""
        facts = await self._facts(ctx) if self._facts is not None else None
        connection = ctx.session._connection
        if self.levels.set(connection, params.level, facts):
            connection.exit_stack.callback(self._left, connection)
        await self._apply_levels()
        return mt.EmptyResult()

    def _left(self, connection: Any) -> None:
        """A session that set a level closed: the backends it heard may log less now."""
        self.levels.drop(connection)
        self._spawn(self._apply_levels())

    async def _apply_levels(self, only: Backend | None = None) -> None:
        """Give each backend (or ``only`` that one) the lowest level any session that
        hears it asked for or a call on it holds; once none does, ``RESTING_LEVEL`` (a
        backend never set is left alone)."""
        async with self._levels_applied:
            for backend in self.backends.values() if only is None else (only,):
                level = self.levels.lowest(self._hearing(backend), backend.name)
                if level is None and backend.log_level is not None:
                    level = RESTING_LEVEL
                if level is None or level == backend.log_level:
                    continue
                try:
                    await backend.set_logging_level(level)
                except Exception as exc:  # a backend going down is not the client's
                    logger.warning("backend %s: logging/setLevel failed: %s", backend.name, exc)

    async def roots_changed(self, ctx: Context, params: mt.NotificationParams | None) -> None:
        for backend in self.backends.values():
            with contextlib.suppress(Exception):  # a backend going down is not the client's
                await backend.roots_changed()

    async def close(self) -> None:
        """Cancel every parked call and pending level change (the gateway is stopping)."""
        for task in list(self._tasks):
            task.cancel()
        parked = list(self.parked.values())
        for p in parked:
            self._drop(p)
        for p in parked:
            if p.task is not None:
                with contextlib.suppress(BaseException):
                    await p.task


__all__ = ["InputPending", "LogLevels", "ParkedCall", "SessionCall", "Upstream"]
