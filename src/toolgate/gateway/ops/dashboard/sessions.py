"""Who is connected: ``SessionInfo`` records written as requests arrive, read back for
the dashboard from the store (so every replica behind one Redis sees every session).

``SessionRecorder`` writes at most one record per session every few seconds and
forgets a legacy session when its connection closes; ``record_sessions`` is the SDK
server middleware that feeds it for MCP requests. Edge layer: imports
``toolgate.lowlevel`` (the binding) and the state stores.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

from mcp.server.context import CallNext, HandlerResult
from mcp_types import CLIENT_INFO_META_KEY

from toolgate.lowlevel import Binding
from toolgate.policy import Principal
from toolgate.request import Context
from toolgate.sdk_internals import connection_if_any
from toolgate.state.base import SessionState
from toolgate.state.listing import SessionInfo, SessionListing
from toolgate.strategies.base import is_stateless
from toolgate.toolset import ToolSet

logger = logging.getLogger("toolgate.dashboard")

#: methods that say nothing about a session's activity
_QUIET = ("initialize", "ping")
#: ``Connection.state`` key: the session key whose record ends with this connection
_FORGET_ON_CLOSE = "toolgate.dashboard.forget_on_close"


class SessionRecorder:
    """Records who each session is, throttled: a record is written when what it says
    changes, or when the last write is ``every`` seconds old (``last_seen`` is that
    coarse). Remembers at most ``remember`` sessions in process memory."""

    def __init__(self, toolset: ToolSet, *, every: float = 5.0, remember: int = 10_000) -> None:
        self.toolset = toolset
        self.every = every
        self.remember = remember
        self._written: OrderedDict[str, SessionInfo] = OrderedDict()
        #: what each written record was made from, to tell at once that nothing changed
        self._said: dict[str, tuple[Any, ...]] = {}

    @property
    def store(self) -> SessionListing | None:
        """The toolset's store when it keeps session records (else nothing is recorded)."""
        store = self.toolset.store
        return store if isinstance(store, SessionListing) else None

    async def seen(
        self,
        key: str,
        principal: Principal,
        *,
        protocol: str | None,
        strategy: str,
        transport: str = "mcp",
        client: tuple[str | None, str | None] = (None, None),
    ) -> None:
        """Note that session ``key`` was just used; store failures are logged, never
        raised (the dashboard must not break a request)."""
        store = self.store
        if store is None:
            return
        now = self.toolset.clock()
        last = self._written.get(key)
        said = (principal, protocol, strategy, transport, client)
        if last is not None and self._said.get(key) == said and now - last.last_seen < self.every:
            return  # nothing new, and written recently: the common case, kept cheap
        info = SessionInfo(
            key=key,
            principal=principal.id,
            trust=principal.trust,
            agent_class=principal.agent_class,
            scope=tuple(principal.scope),
            protocol=protocol,
            strategy=strategy,
            transport=transport,
            first_seen=last.first_seen if last is not None else now,
            last_seen=now,
            client=client[0],
            client_version=client[1],
        )
        unchanged = last is not None and replace(last, last_seen=now) == info
        if unchanged and last is not None and now - last.last_seen < self.every:
            return
        try:
            await store.put_info(info)
        except Exception as exc:
            logger.warning("cannot record session %r for the dashboard: %s", key, exc)
            return
        self._written[key] = info
        self._said[key] = said
        self._written.move_to_end(key)
        while len(self._written) > self.remember:
            gone, _ = self._written.popitem(last=False)
            self._said.pop(gone, None)

    async def closed(self, key: str) -> None:
        """Session ``key``'s connection closed: a legacy session key is never used
        again, so its record and state go now rather than at the idle expiry. Store
        failures are logged, never raised."""
        self._written.pop(key, None)
        self._said.pop(key, None)
        store = self.store
        if store is None:
            return
        try:
            await store.delete(key)
        except Exception as exc:
            logger.warning("cannot forget closed session %r: %s", key, exc)


def record_sessions(binding: Binding, recorder: SessionRecorder) -> Any:
    """An SDK ``ServerMiddleware`` that records every MCP session for the dashboard.

    >>> server.middleware.append(record_sessions(binding, SessionRecorder(toolset)))

    It reuses the facts the binding read for the request (``Binding.facts``: principal,
    session key) after it was handled. Ephemeral sessions (protocol 2026-07-28 without
    an authenticated principal) keep no state and are not listed.
    """

    async def middleware(ctx: Context, call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method in _QUIET or ctx.method.startswith("notifications/"):
            return result
        try:
            facts = await binding.facts(ctx)
            strategy, request = await binding.request_for(ctx)  # the handler's, if it ran
        except Exception as exc:  # unauthenticated, or no session: nothing to record
            logger.debug("not recording a %s request: %s", ctx.method, exc)
            return result
        session = request.session
        if session.key is not None:
            await recorder.seen(
                session.key,
                session.principal,
                protocol=ctx.protocol_version,
                strategy=strategy.name,
                client=client_software(ctx),
            )
            if facts.legacy:  # a 2026-07-28 "connection" lasts one request
                forget_on_close(ctx, session.key, recorder)
        return result

    return middleware


def client_software(ctx: Context) -> tuple[str | None, str | None]:
    """The client's name and version: ``clientInfo`` from ``initialize`` (legacy) or
    from the request's ``_meta`` (2026-07-28); ``(None, None)`` when it gave none."""
    params = ctx.session.client_params
    info: Any = params.client_info if params is not None else None
    if info is None and ctx.meta is not None:
        info = ctx.meta.get(CLIENT_INFO_META_KEY)  # typed by the SDK only with capabilities
    if isinstance(info, dict):
        name, version = info.get("name"), info.get("version")
    else:
        name, version = getattr(info, "name", None), getattr(info, "version", None)
    return (
        str(name) if name is not None else None,
        str(version) if version is not None else None,
    )


def forget_on_close(ctx: Context, key: str, recorder: SessionRecorder) -> None:
    """Forget session ``key`` when the connection behind ``ctx`` closes (client
    ``DELETE``, the SDK's idle timeout, end of stdio), once per connection."""
    connection = connection_if_any(ctx)
    if connection is None or connection.state.get(_FORGET_ON_CLOSE) == key:
        return
    connection.state[_FORGET_ON_CLOSE] = key
    connection.exit_stack.push_async_callback(recorder.closed, key)


@dataclass(frozen=True)
class SessionRow:
    """A session as the dashboard lists it: its record joined with its state."""

    key: str
    info: SessionInfo | None
    state: SessionState
    stage: str
    last_activity: float

    @property
    def principal(self) -> Principal | None:
        info = self.info
        if info is None:
            return None
        return Principal(
            id=info.principal,
            trust=info.trust or "declared",
            agent_class=info.agent_class,
            scope=info.scope,
            authenticated=True,
        )

    def to_dict(self) -> dict[str, Any]:
        info = self.info
        return {
            "key": self.key,
            "principal": info.principal if info else None,
            "trust": info.trust if info else None,
            "transport": info.transport if info else None,
            "protocol": info.protocol if info else None,
            "era": era(info.protocol) if info else None,
            "strategy": info.strategy if info else None,
            "client": info.client if info else None,
            "client_version": info.client_version if info else None,
            "active_groups": sorted(self.state.active),
            "stage": self.stage,
            "last_activity": self.last_activity,
        }


def era(protocol: str | None) -> str:
    """``legacy`` (initialize and sessions) or ``stateless`` (2026-07-28 and later)."""
    return "stateless" if is_stateless(protocol) else "legacy"


async def session_rows(toolset: ToolSet, *, limit: int = 500) -> list[SessionRow]:
    """Live sessions, most recently active first: every recorded session (a session
    that only listed tools has no state yet: it shows its initial state) and every
    session with state but no record (served by something that does not record).
    A store that is no ``SessionListing`` lists none."""
    store = toolset.store
    if not isinstance(store, SessionListing):
        return []
    infos = {info.key: info async for info in store.infos()}
    states = {key: state async for key, state in store.sessions()}
    initial = toolset.initial_state()
    flow = toolset.catalog.flow
    rows = []
    for key in infos.keys() | states.keys():
        info = infos.get(key)
        state = states.get(key, initial)
        seen = max(info.last_seen if info else 0.0, state.touched_at)
        rows.append(SessionRow(key, info, state, flow.current(state.stage), seen))
    rows.sort(key=lambda r: (-r.last_activity, r.key))
    return rows[:limit]
