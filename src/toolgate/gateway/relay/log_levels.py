"""Log levels and the messages outside calls: what each legacy session asked for with
``logging/setLevel`` and what a running 2026-07-28 call opted in to, applied to each
backend (the most verbose anyone who hears it wants), and a backend's messages outside any
call sent to the sessions that hear it. Imports ``mcp``, the request kit, the backends'
``Backend`` and the access seam.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Hashable, Iterable, Mapping
from dataclasses import replace
from typing import Any, get_args

import mcp_types as mt
from mcp.server.connection import allowed_log_levels

from toolgate.gateway.backends.backend import Backend
from toolgate.gateway.relay.access import Audience, FactsOf
from toolgate.request import Context, Live, RequestFacts
from toolgate.sdk_internals import connection_of

logger = logging.getLogger("toolgate.gateway")

#: severity-ascending, as the SDK's ``LoggingLevel`` literal declares them
LEVELS: tuple[mt.LoggingLevel, ...] = get_args(mt.LoggingLevel)
#: a backend's level once no session that hears it asks for one: every level, as an MCP
#: server that was never sent ``logging/setLevel`` sends (docs/decisions.md)
RESTING_LEVEL: mt.LoggingLevel = "debug"

Hears = Callable[[RequestFacts | None], bool]


def _level_index(level: str) -> int:
    return LEVELS.index(level) if level in LEVELS else 0


def opted_in(ctx: Context) -> frozenset[mt.LoggingLevel]:
    """The levels a request may hear (2026-07-28: those its ``_meta`` opted in to)."""
    meta = (ctx.params or {}).get("_meta") if isinstance(ctx.params, Mapping) else None
    return allowed_log_levels(ctx.protocol_version, meta if isinstance(meta, Mapping) else {})


def requested_level(ctx: Context) -> mt.LoggingLevel | None:
    """The most verbose level a 2026-07-28 request opted in to (its ``_meta``), if any."""
    allowed = opted_in(ctx)
    return min(allowed, key=LEVELS.index) if allowed else None


class LogLevels:
    """The ``logging/setLevel`` of each legacy connection, with the facts of the request
    that set it (its principal decides which backends it hears); each leaves when it
    closes. A 2026-07-28 call that opted in to a level holds it on its own backend while
    it runs (``holding``). Each backend logs at the lowest level of those (``apply``)."""

    def __init__(self, backends: Mapping[str, Backend]) -> None:
        self.backends = backends
        #: who asks (the principal of a level); set by ``CallRelay.install``
        self.facts: FactsOf | None = None
        #: which principals hear a backend outside any call (None: every session that
        #: set a level does)
        self.audience: Audience | None = None
        self._levels: weakref.WeakKeyDictionary[
            Any, tuple[mt.LoggingLevel, RequestFacts | None]
        ] = weakref.WeakKeyDictionary()
        self._held: dict[Hashable, tuple[mt.LoggingLevel, str]] = {}
        self._applied = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()

    async def set_level(self, ctx: Context, params: mt.SetLevelRequestParams) -> mt.EmptyResult:
        """``logging/setLevel`` (legacy): this session's level, until it closes; each
        backend logs at the lowest level a session that hears it asked for, and the
        gateway filters per session."""
        facts = await self.facts(ctx) if self.facts is not None else None
        connection = connection_of(ctx)
        new = connection not in self._levels
        self._levels[connection] = (params.level, facts)
        if new:
            connection.exit_stack.callback(self._left, connection)
        await self.apply()
        return mt.EmptyResult()

    def _left(self, connection: Any) -> None:
        """A session that set a level closed: the backends it heard may log less now."""
        self._levels.pop(connection, None)
        self._spawn(self.apply())

    def follow(self, live: Iterable[Live]) -> None:
        """Judge each connection that set a level as the principal its live facts name
        now (a reload gave it the principal as the new config has it): the backends it
        hears outside any call, and the level they log at, follow its scope."""
        for connection in live:
            level, facts = self._levels.get(connection.connection, (None, None))
            principal = connection.facts.principal
            if level is not None and facts is not None and facts.principal != principal:
                self._levels[connection.connection] = (level, replace(facts, principal=principal))
        self._spawn(self.apply())

    def admits(self, connection: Any, level: str) -> bool:
        """Whether ``connection`` wants a message at ``level`` (no level set: every one)."""
        wanted = self._levels.get(connection)
        return wanted is None or _level_index(level) >= _level_index(wanted[0])

    async def outside_calls(
        self, backend: Backend, params: mt.LoggingMessageNotificationParams
    ) -> None:
        """A message ``backend`` sent outside any call: to the sessions that hear it and
        asked for messages at its level."""
        data = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        hears, level = self._hearing(backend), _level_index(params.level)
        listeners = [
            c
            for c, (wanted, facts) in list(self._levels.items())
            if level >= _level_index(wanted) and hears(facts)
        ]
        for connection in listeners:
            await connection.notify("notifications/message", data)  # never raises

    @contextlib.asynccontextmanager
    async def holding(
        self, backend: Backend, call: Hashable, level: mt.LoggingLevel | None
    ) -> AsyncIterator[None]:
        """While a 2026-07-28 call that opted in to ``level`` runs, its backend logs at
        that level or lower (set before the call starts, so nothing early is lost)."""
        if level is None:
            yield
            return
        self._held[call] = (level, backend.name)
        await self.apply(backend)
        try:
            yield
        finally:
            self._held.pop(call, None)
            self._spawn(self.apply(backend))

    async def apply(self, only: Backend | None = None) -> None:
        """Give each backend (or ``only`` that one) the lowest level any session that
        hears it asked for or a call on it holds; once none does, ``RESTING_LEVEL`` (a
        backend never set is left alone)."""
        async with self._applied:
            for backend in self.backends.values() if only is None else (only,):
                level = self._lowest(backend)
                if level is None and backend.log_level is not None:
                    level = RESTING_LEVEL
                if level is None or level == backend.log_level:
                    continue
                try:
                    await backend.set_logging_level(level)
                except Exception as exc:  # a backend going down is not the client's
                    logger.warning("backend %s: logging/setLevel failed: %s", backend.name, exc)

    def _lowest(self, backend: Backend) -> mt.LoggingLevel | None:
        """The most verbose level a connection that hears ``backend`` asked for, or a
        call on it holds, if any."""
        hears = self._hearing(backend)
        levels = [level for level, facts in list(self._levels.values()) if hears(facts)]
        levels += [level for level, on in self._held.values() if on == backend.name]
        return min(levels, key=LEVELS.index) if levels else None

    def _hearing(self, backend: Backend) -> Hears:
        """Whether the session whose level came with given facts hears ``backend``
        outside any call (``audience``). Without facts or an audience every session
        does; one the audience cannot judge (it raised) hears nothing."""
        audience = self.audience

        def hears(facts: RequestFacts | None) -> bool:
            if facts is None or audience is None:
                return True
            try:
                return audience(facts, backend.name)
            except Exception as exc:
                logger.debug("cannot tell whether a session hears %s: %s", backend.name, exc)
                return False

        return hears

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        """Cancel every pending level change (the gateway is stopping)."""
        for task in list(self._tasks):
            task.cancel()


__all__ = ["LEVELS", "RESTING_LEVEL", "LogLevels", "opted_in", "requested_level"]
