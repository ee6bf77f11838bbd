"""The 2026-07-28 ``input_required`` rounds: a call whose backend asks the client for input
is parked (``ParkedCall``) between the requests that drive it; each request ends as the
call's result or as ``input_required`` with the backend's requests, and the client's retry
(``requestState``, sealed by the SDK) answers them and resumes the call. Imports ``mcp``,
the backends' ``Backend``, the input requests, the log levels and the access seam.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Callable, Coroutine, Hashable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import mcp_types as mt
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp_types import INVALID_PARAMS, INVALID_REQUEST
from pydantic import ValidationError

from toolgate.catalog import CallContext, ToolResult
from toolgate.errors import ToolgateError
from toolgate.events import EventBus
from toolgate.gateway.backends.backend import Backend
from toolgate.gateway.relay.access import FactsOf
from toolgate.gateway.relay.input_requests import answer_type, error, lacks
from toolgate.gateway.relay.log_levels import opted_in
from toolgate.request import Context
from toolgate.strategies.base import is_stateless
from toolgate.wire import call_result_wire, error_as_result, raise_or_result

#: how long a finished 2026-07-28 call waits for the client to come back for its result
UNCLAIMED_TTL = 300.0
#: a parked call's id, the plain text of its ``requestState``: the SDK seals it under a key
#: only this process holds (``RequestStateSecurity.ephemeral``), so no client sees it and
#: nothing keeps it past the process; it was "toolgate.upstream:" before the relay's split
_STATE_PREFIX = "toolgate.parked:"


class InputPending(ToolgateError):
    """A 2026-07-28 call whose backend asked for input: the round ends with an
    ``input_required`` result (``Rounds`` puts it on the wire)."""

    code = "input_required"


@dataclass
class _Round:
    """The first 2026-07-28 ``tools/call`` request of a call: the ``input_required``
    result it ends with when the backend asks for input (a retry is ``Rounds._resume``)."""

    asked: mt.InputRequiredResult | None = None


_ROUND: ContextVar[_Round | None] = ContextVar("toolgate.relay.round", default=None)


@dataclass(eq=False)
class ParkedCall:
    """A backend call that outlives the 2026-07-28 requests driving it: each request
    (round) waits for its result or for the backend's next requests for input, which
    end the round as ``input_required``; the client's retry answers them."""

    backend: Backend
    tool: str
    arguments: Mapping[str, Any]
    meta: Mapping[str, Any] | None = None  # what of the client's ``_meta`` travels on
    level: mt.LoggingLevel | None = None  # the log level the first request opted in to
    wants_progress: bool = False  # the first request's: the backend is asked for it then
    #: whose call it is (``Rounds.owner``): only the same principal may answer it
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
            lacking = lacks(ctx, request)
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
        if ctx is None or params.level not in opted_in(ctx):
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
                waiting.set_result(error(f"The client did not answer {request.method}."))
                continue
            try:
                waiting.set_result(answer_type(request).model_validate(raw, by_name=False))
            except ValidationError:
                waiting.set_result(
                    error(f"The client's answer to {request.method} is not valid", INVALID_PARAMS)
                )

    async def next(self) -> ToolResult | dict[str, mt.InputRequest]:
        """The call's result, or the backend's requests for input not yet sent."""
        task = self.task
        assert task is not None
        while True:
            # cleared before looking: what sets it later (a request, the call's end: see
            # ``Rounds._park``) can only come while this waits below
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


#: runs a parked call's backend request (``CallRelay``: in flight, holding its log level)
Run = Callable[[ParkedCall], Coroutine[Any, Any, ToolResult]]


class Rounds:
    """The 2026-07-28 calls parked between rounds, and the ``ServerMiddleware`` that ends
    a round as ``input_required`` or resumes a call from its ``requestState``."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.parked: dict[str, ParkedCall] = {}
        #: who asks: the owner of a parked call (set by ``CallRelay.install``)
        self.facts: FactsOf | None = None
        #: hears how a call resumed after its first round ends (``tool.executed``)
        self.events: EventBus | None = None

    def middleware(self) -> list[ServerMiddleware[Any]]:
        """The SDK's ``requestState`` sealing, then the rounds (``__call__``)."""
        boundary = RequestStateBoundary(
            RequestStateSecurity.ephemeral(ttl=UNCLAIMED_TTL), default_audience="toolgate"
        )
        return [boundary, self]

    async def owner(self, ctx: Context) -> Hashable:
        """Whose 2026-07-28 call ``ctx`` is: its principal (``None``: the default one)."""
        if self.facts is None:
            return None
        principal = (await self.facts(ctx)).principal
        return principal.key if principal is not None else None

    async def first(self, parked: ParkedCall, ctx: Context) -> ToolResult:
        """The first 2026-07-28 request of a call: start it, then wait for its result or
        the backend's requests for input (its retries go to ``_resume``, not here)."""
        state = _ROUND.get()
        parked.owner = await self.owner(ctx)
        self._park(parked)
        outcome = await self._wait(parked, ctx)
        if isinstance(outcome, ToolResult):
            return outcome
        backend = parked.backend
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

    def _park(self, parked: ParkedCall) -> None:
        """Start the backend call of a 2026-07-28 call, in a task of its own."""
        name = f"call:{parked.backend.name}"
        parked.task = asyncio.get_running_loop().create_task(self.run(parked), name=name)
        parked.task.add_done_callback(lambda _: parked.changed.set())
        self.parked[parked.id] = parked

    def _drop(self, parked: ParkedCall) -> None:
        self.parked.pop(parked.id, None)
        parked.cancel()

    def _expire_later(self, parked: ParkedCall) -> None:
        """A parked call whose client never comes back: its backend request ends within
        the tool's timeout; its result is dropped ``UNCLAIMED_TTL`` seconds after."""
        seconds = parked.backend.spec.timeout_for(parked.tool) + UNCLAIMED_TTL
        parked.expiry = asyncio.get_running_loop().call_later(seconds, self._drop, parked)

    async def __call__(self, ctx: Context, call_next: CallNext) -> HandlerResult:
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
        if await self.owner(ctx) != parked.owner:
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
        if self.events is None or call is None:
            return
        outcome: dict[str, Any] = (
            {"outcome": "error", "reason": "tool reported error"}
            if result.is_error
            else {"outcome": "success"}
        )
        self.events.emit(
            "tool.executed",
            session=call.session_key,
            principal=call.principal.id,
            tool=call.tool,
            duration_s=time.perf_counter() - parked.started,
            **outcome,
        )

    async def close(self) -> None:
        """Cancel every parked call and wait for its backend request to end."""
        parked = list(self.parked.values())
        for p in parked:
            self._drop(p)
        for p in parked:
            if p.task is not None:
                with contextlib.suppress(BaseException):
                    await p.task


__all__ = ["UNCLAIMED_TTL", "InputPending", "ParkedCall", "Rounds"]
