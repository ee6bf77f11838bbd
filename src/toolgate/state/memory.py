"""``MemoryStore``: the default, in-process session store with idle expiry.

State lives in a dict; rate-limit windows are call-time logs per bucket. Expired
sessions are dropped on read and by ``sweep``. Base layer: imports only ``state.base``
and ``state.listing``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import ClassVar

from toolgate.state.base import SessionState
from toolgate.state.listing import SessionInfo, SessionListing


@dataclass
class MemoryStore(SessionListing):
    """Session state in process memory (one server process, lost on restart)."""

    in_process: ClassVar[bool] = True

    _states: dict[str, SessionState] = field(default_factory=dict, init=False, repr=False)
    _infos: dict[str, SessionInfo] = field(default_factory=dict, init=False, repr=False)
    _hits: dict[str, deque[float]] = field(default_factory=dict, init=False, repr=False)
    sweep_every: int = 1024
    _writes: int = field(default=0, init=False, repr=False)

    async def get(self, key: str) -> SessionState | None:
        state = self._states.get(key)
        if state is None:
            return None
        if self.clock() - state.touched_at > self.idle_ttl:
            del self._states[key]
            return None
        return state

    async def compare_and_set(self, key: str, expected_version: int, state: SessionState) -> bool:
        current = await self.get(key)
        if (current.version if current is not None else 0) != expected_version:
            return False
        self._states[key] = state
        self._writes += 1
        if self._writes % self.sweep_every == 0:
            await self.sweep()
        return True

    async def delete(self, key: str) -> None:
        self._states.pop(key, None)
        self._infos.pop(key, None)

    async def rate_hit(self, bucket: str, limit: int, window_s: float) -> float | None:
        now = self.clock()
        log = self._hits.setdefault(bucket, deque())
        while log and log[0] <= now - window_s:
            log.popleft()
        if len(log) >= limit:
            return log[0] + window_s - now
        log.append(now)
        return None

    async def rate_peek(self, bucket: str, limit: int, window_s: float) -> float | None:
        now = self.clock()
        live = [at for at in self._hits.get(bucket, ()) if at > now - window_s]
        return live[0] + window_s - now if len(live) >= limit else None

    async def sweep(self) -> int:
        now = self.clock()
        stale = [k for k, s in self._states.items() if now - s.touched_at > self.idle_ttl]
        for key in stale:
            del self._states[key]
        for key in [k for k, i in self._infos.items() if now - i.last_seen > self.idle_ttl]:
            del self._infos[key]
        # rate-limit logs whose newest entry is older than any sane window are dropped
        for bucket in [b for b, log in self._hits.items() if not log or now - log[-1] > 86400]:
            del self._hits[bucket]
        return len(stale)

    async def session_count(self) -> int:
        return len(self._states)

    async def sessions(self) -> AsyncIterator[tuple[str, SessionState]]:
        now = self.clock()
        for key, state in list(self._states.items()):
            if now - state.touched_at <= self.idle_ttl:
                yield key, state

    async def put_info(self, info: SessionInfo) -> None:
        self._infos[info.key] = info

    async def infos(self) -> AsyncIterator[SessionInfo]:
        now = self.clock()
        for info in list(self._infos.values()):
            if now - info.last_seen <= self.idle_ttl:
                yield info
