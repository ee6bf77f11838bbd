"""The call relay: what travels with a tool call through the gateway, both ways, on both
eras. ``CallRelay`` runs a call on its backend, passes progress and cancellation, and is
every backend's ``Peer``: it hands the backend's log messages and requests for input to
the call they belong to (legacy: ``SessionCall``; 2026-07-28: ``rounds``). Imports ``mcp``,
the backends, the rounds, log levels and input requests, the access seam, the request kit.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Hashable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import mcp_types as mt
from mcp.server import Server
from mcp.server.context import ServerMiddleware, ServerRequestContext
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp.shared.message import ServerMessageMetadata
from mcp_types import INTERNAL_ERROR
from pydantic import ValidationError

from toolgate.catalog import CallContext, ToolResult
from toolgate.events import EventBus
from toolgate.gateway.backends.backend import Backend
from toolgate.gateway.backends.http_calls import on_call_stream
from toolgate.gateway.relay.access import Audience, FactsOf
from toolgate.gateway.relay.input_requests import (
    OpenElicitations,
    answer_type,
    answers_input,
    error,
    lacks,
)
from toolgate.gateway.relay.log_levels import LogLevels, requested_level
from toolgate.gateway.relay.rounds import ParkedCall, Rounds
from toolgate.lowlevel import REQUEST_CONTEXT
from toolgate.request import Context
from toolgate.sdk_internals import connection_of
from toolgate.strategies.base import is_stateless

logger = logging.getLogger("toolgate.gateway")

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
        self.connection: Any = connection_of(ctx)
        self.origin: Hashable = id(self.connection)

    @property
    def wants_progress(self) -> bool:
        return progress_token_from_params(self.ctx.params) is not None

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        await self.ctx.session.report_progress(progress, total, message)

    async def ask(self, request: mt.InputRequest) -> mt.InputResponse | mt.ErrorData:
        ctx = self.ctx
        lacking = lacks(ctx, request)
        if lacking is not None:
            return lacking
        try:
            result: mt.InputResponse = await ctx.session.send_request(
                request,
                answer_type(request),
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
        except MCPError as exc:
            return exc.error
        except NoBackChannelError:
            return error("The client's connection cannot take a request from the server now.")
        except ValidationError:
            return error(f"The client's answer to {request.method} is not valid", INTERNAL_ERROR)
        return result

    async def log(self, params: mt.LoggingMessageNotificationParams) -> None:
        ctx = self.ctx
        if not self.levels.admits(connection_of(ctx), params.level):
            return
        await ctx.session.send_notification(
            mt.LoggingMessageNotification(params=params), related_request_id=ctx.request_id
        )


InFlight = SessionCall | ParkedCall


@dataclass(frozen=True)
class Unnamed:
    """Why no call can be named for what a backend sent: ``during_calls`` when calls are
    in flight but of several clients (not the same as no call at all)."""

    reason: str
    during_calls: bool


#: the call whose backend request the running code serves (set by ``CallRelay._in_flight``)
_CALLING: ContextVar[InFlight | None] = ContextVar("toolgate.relay.calling", default=None)


class CallRelay:
    """Relays tool calls and what travels with them between clients and backends for one
    gateway; every backend's ``Peer`` (``Backend.peer``)."""

    def __init__(self, backends: Mapping[str, Backend]) -> None:
        self.backends = backends
        self.levels = LogLevels(backends)
        self.rounds = Rounds(self._backend_call)
        self.elicitations = OpenElicitations()
        self._running: dict[str, list[InFlight]] = {}  # backend name → calls in flight
        self._server: Server[Any] | None = None
        #: its MCP middleware, set by ``install``: ``input_required``'s sealed state, its rounds
        self.middleware: tuple[ServerMiddleware[Any], ...] = ()
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
        self.levels.facts, self.levels.audience = facts, audience
        self.rounds.facts, self.rounds.events = facts, events
        if server is self._server:  # built again: the handlers are in place
            return
        self._server = server
        server.add_request_handler(
            "logging/setLevel", mt.SetLevelRequestParams, self.levels.set_level
        )
        server.add_notification_handler(
            "notifications/roots/list_changed", mt.NotificationParams, self.roots_changed
        )
        self.middleware = tuple(self.rounds.middleware())  # the gateway places them

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
        meta, level = call_meta(ctx), requested_level(ctx)
        wants_progress = progress_token_from_params(ctx.params) is not None
        parked = ParkedCall(backend, tool, arguments, meta, level, wants_progress, call=call)
        if answers_input(ctx):
            return await self.rounds.first(parked, ctx)
        # A client that can answer no request for input (it declared neither sampling,
        # elicitation nor roots) is refused each at once (``lacks``), so no round can end
        # early: its call is never parked and runs in the request's own task, routing the
        # backend's progress and logs; a backend that serves 2026-07-28 gets it as the
        # client would send it.
        parked.ctx = ctx
        return await self._backend_call(parked, stateless=True)

    async def _backend_call(self, parked: ParkedCall, *, stateless: bool = False) -> ToolResult:
        """The backend request of a 2026-07-28 call. The backend is asked for progress
        only if the first request wants it, as a legacy call asks only with the client's
        token (a backend told to report progress does work for it that nobody reads).
        ``stateless``: the call can be asked nothing, so a backend that serves 2026-07-28
        gets it as such a request (``Backend.stateless_form``), as it would from the
        client directly; its log level travels in its envelope, not held on the
        backend's session."""
        backend, tool, level = parked.backend, parked.tool, parked.level
        report = parked.progress if parked.wants_progress else None
        form = backend.stateless_form(tool, parked.arguments, level) if stateless else None
        with self._in_flight(backend, parked):
            async with self.levels.holding(backend, parked, None if form is not None else level):
                return await backend.call(
                    tool, parked.arguments, progress=report, meta=parked.meta, stateless=form
                )

    @contextlib.contextmanager
    def _in_flight(self, backend: Backend, call: InFlight) -> Any:
        calls = self._running.setdefault(backend.name, [])
        calls.append(call)
        token = _CALLING.set(call)  # for what the backend sends on this call's own stream
        try:
            yield
        finally:
            _CALLING.reset(token)
            calls.remove(call)

    def _caller(self, backend: Backend) -> InFlight | Unnamed:
        """The call a backend's request belongs to, or why none can be named. One that
        came on a call's own response stream is that call's: the HTTP transport hands it
        on in the call's own task (``on_call_stream``), where ``_in_flight`` named the
        call. Otherwise (stdio, the SDK's client) the backend connection is shared and its
        requests do not say which call they serve, so it must be the one call in
        flight (or calls of one connection)."""
        calls = self._running.get(backend.name, [])
        mine = _CALLING.get() if on_call_stream() else None
        if mine is not None and any(c is mine for c in calls):
            return mine
        if not calls:
            return Unnamed("no client call to this backend is in progress", during_calls=False)
        if len({c.origin for c in calls}) > 1:
            return Unnamed(
                f"{len(calls)} calls from different clients are in progress on this "
                "backend, and its request does not say which one it serves",
                during_calls=True,
            )
        return calls[-1]

    # -- what backends send (``Peer``) -------------------------------------------------------
    async def ask(
        self, backend: Backend, request: mt.InputRequest
    ) -> mt.InputResponse | mt.ErrorData:
        caller = self._caller(backend)
        if isinstance(caller, Unnamed):
            reason = caller.reason
            logger.info("backend %s: %s refused: %s", backend.name, request.method, reason)
            return error(f"toolgate cannot relay {request.method}: {reason}.")
        session = caller.connection if isinstance(caller, SessionCall) else None
        opened = self.elicitations.open(backend.name, request, session)
        answer = await caller.ask(request)
        self.elicitations.answered(opened, answer)
        return answer

    async def elicitation_complete(
        self, backend: Backend, params: mt.ElicitCompleteNotificationParams
    ) -> None:
        await self.elicitations.complete(backend, params)

    async def log(self, backend: Backend, params: mt.LoggingMessageNotificationParams) -> None:
        """A backend's log message: to the call it belongs to; outside any call, to the
        sessions that hear the backend (``LogLevels.outside_calls``). While calls of
        several clients are in flight it may be any one's (its content one user's), so,
        as a request for input then is refused, it goes to nobody."""
        caller = self._caller(backend)
        if not isinstance(caller, Unnamed):
            await caller.log(params)
        elif not caller.during_calls:
            await self.levels.outside_calls(backend, params)
        else:
            logger.debug("backend %s: a log message dropped: %s", backend.name, caller.reason)

    # -- what clients send -------------------------------------------------------------
    async def roots_changed(self, ctx: Context, params: mt.NotificationParams | None) -> None:
        for backend in self.backends.values():
            with contextlib.suppress(Exception):  # a backend going down is not the client's
                await backend.roots_changed()

    async def close(self) -> None:
        """Cancel every pending level change and parked call (the gateway is stopping)."""
        self.levels.close()
        await self.rounds.close()


__all__ = ["CallRelay", "SessionCall", "call_meta"]
