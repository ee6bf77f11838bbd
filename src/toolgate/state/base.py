"""``SessionState`` and the narrow ``StateStore`` base class every store subclasses.

A store implements four primitives (get, compare-and-set, delete, rate-limit hit) and
inherits ``mutate``: an atomic read-modify-write per session that serializes in-process
callers with a per-key lock and detects cross-process races by version (CAS).
Base layer: imports only ``toolgate.errors`` and the stdlib, never a concrete store.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, TypeVar

from toolgate.errors import ConfigError, StoreUnavailable, check_callable

T = TypeVar("T")

Clock = Callable[[], float]


@dataclass(frozen=True)
class SessionState:
    """What one session has done: active groups, stage, described and revealed tools.

    ``stage`` is ``None`` until the session leaves the flow's initial stage.
    ``version`` counts saved mutations; ``touched_at`` drives idle expiry.
    """

    active: frozenset[str] = frozenset()
    stage: str | None = None
    described: frozenset[str] = frozenset()
    revealed: frozenset[str] = frozenset()
    version: int = 0
    touched_at: float = 0.0

    @property
    def content_key(self) -> tuple[frozenset[str], str | None, frozenset[str]]:
        """What the view depends on (not ``described``, not ``version``)."""
        return (self.active, self.stage, self.revealed)

    def same_content(self, other: SessionState) -> bool:
        return (
            self.active == other.active
            and self.stage == other.stage
            and self.described == other.described
            and self.revealed == other.revealed
        )

    def to_json(self) -> str:
        return json.dumps(
            {
                "active": sorted(self.active),
                "stage": self.stage,
                "described": sorted(self.described),
                "revealed": sorted(self.revealed),
                "version": self.version,
                "touched_at": self.touched_at,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> SessionState:
        data: dict[str, Any] = json.loads(text)
        return cls(
            active=frozenset(data.get("active", ())),
            stage=data.get("stage"),
            described=frozenset(data.get("described", ())),
            revealed=frozenset(data.get("revealed", ())),
            version=int(data.get("version", 0)),
            touched_at=float(data.get("touched_at", 0.0)),
        )


EMPTY = SessionState()


@dataclass
class StateStore(ABC):
    """Base class of session stores.

    Subclasses implement :meth:`get`, :meth:`compare_and_set`, :meth:`delete` and
    :meth:`rate_hit` (:meth:`rate_peek`, :meth:`sweep` and :meth:`close` when they can);
    :meth:`mutate` and :meth:`load` come for free. Listing sessions for operators is
    :class:`toolgate.state.listing.SessionListing`'s, not the core's.
    ``idle_ttl`` is seconds of inactivity after which a session's state is forgotten.
    """

    idle_ttl: float = 3600.0
    clock: Clock = field(default=time.time)
    timeout: float = 2.0
    in_process: ClassVar[bool] = False
    """True for stores whose reads never wait on I/O (they skip the read timeout)."""
    _locks: weakref.WeakValueDictionary[str, asyncio.Lock] = field(
        default_factory=weakref.WeakValueDictionary, init=False, repr=False
    )

    def __post_init__(self) -> None:
        # a store given idle_ttl <= 0 would forget every session at its next read: no
        # group would stay on; a subclass's __post_init__ calls this one first
        for name, value in (("idle_ttl", self.idle_ttl), ("timeout", self.timeout)):
            if (
                not isinstance(value, int | float)
                or isinstance(value, bool)
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ConfigError(
                    f"store {name} must be a finite number of seconds > 0, got {value!r:.80}",
                    key=name,
                )
        check_callable(self.clock, "store clock", "a function like time.time", key="clock")

    # -- primitives a store implements -------------------------------------------------
    @abstractmethod
    async def get(self, key: str) -> SessionState | None:
        """The stored state, or None when absent or expired."""
        ...

    @abstractmethod
    async def compare_and_set(self, key: str, expected_version: int, state: SessionState) -> bool:
        """Store ``state`` if the stored version is ``expected_version`` (0 = absent)."""
        ...

    @abstractmethod
    async def delete(self, key: str) -> None: ...

    @abstractmethod
    async def rate_hit(self, bucket: str, limit: int, window_s: float) -> float | None:
        """Record one call in ``bucket`` if fewer than ``limit`` happened in the last
        ``window_s`` seconds. Returns None when allowed, else seconds until retry."""
        ...

    async def rate_peek(self, bucket: str, limit: int, window_s: float) -> float | None:
        """What :meth:`rate_hit` would answer now, recording nothing: None when a call
        would be allowed, else seconds until retry. The default cannot look, so it
        allows: the ``rate_hit`` that follows still enforces the limit."""
        return None

    async def sweep(self) -> int:
        """Forget idle sessions and old rate-limit entries; returns sessions removed."""
        return 0

    async def close(self) -> None:
        return None

    # -- derived operations -----------------------------------------------------------
    async def load(self, key: str) -> SessionState:
        """The session's state (empty when new). Store failures raise StoreUnavailable."""
        try:
            if self.in_process:
                state = await self.get(key)  # nothing to wait for: no timer on the hot path
            else:
                # asyncio.timeout, not wait_for: no task per read
                async with asyncio.timeout(self.timeout):
                    state = await self.get(key)
        except StoreUnavailable:
            raise
        except Exception as exc:  # any backend failure fails closed
            raise unavailable(exc, self.timeout) from exc
        return state if state is not None else EMPTY

    async def mutate(
        self,
        key: str,
        change: Callable[[SessionState], Awaitable[tuple[SessionState, T]]],
        *,
        max_attempts: int = 20,
        baseline: Callable[[SessionState], SessionState] | None = None,
    ) -> T:
        """Atomically apply ``change`` to the session's state and return its result.

        In-process callers on one key run one at a time; a concurrent writer elsewhere
        (another replica) makes the compare-and-set fail, and the change is re-run on
        the fresh state. Keys never block each other. An unchanged state is not written;
        ``baseline(stored)`` is what "unchanged" compares against (default: the stored
        state itself; a session with initial groups compares against those).
        """
        lock = self._locks.get(key)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[key] = lock
        async with lock:
            for attempt in range(max_attempts):
                current = await self.load(key)
                new, result = await change(current)
                if new.same_content(baseline(current) if baseline is not None else current):
                    if current.version > 0:
                        await self._touch(key, current)
                    return result
                stamped = replace(new, version=current.version + 1, touched_at=self.clock())
                try:
                    async with asyncio.timeout(self.timeout):
                        ok = await self.compare_and_set(key, current.version, stamped)
                except StoreUnavailable:
                    raise
                except Exception as exc:
                    raise unavailable(exc, self.timeout) from exc
                if ok:
                    return result
                await asyncio.sleep(random.uniform(0, min(0.05, 0.0005 * 2 ** min(attempt, 7))))
            raise StoreUnavailable(f"Session {key!r} is changing too fast; retry the request.")

    async def _touch(self, key: str, state: SessionState) -> None:
        """Refresh idle expiry without a content change (cheap: at most once per minute)."""
        now = self.clock()
        if now - state.touched_at < min(60.0, self.idle_ttl / 4):
            return
        try:
            async with asyncio.timeout(self.timeout):
                await self.compare_and_set(key, state.version, replace(state, touched_at=now))
        except StoreUnavailable:
            raise
        except Exception as exc:
            raise unavailable(exc, self.timeout) from exc

    async def rate_check(
        self, bucket: str, limit: int, window_s: float, *, record: bool = True
    ) -> float | None:
        """``rate_hit`` (``record=False``: ``rate_peek``) bounded by ``timeout``; a store
        fault raises StoreUnavailable."""
        look = self.rate_hit if record else self.rate_peek
        try:
            async with asyncio.timeout(self.timeout):
                return await look(bucket, limit, window_s)
        except StoreUnavailable:
            raise
        except Exception as exc:
            raise unavailable(exc, self.timeout) from exc


def unavailable(exc: BaseException, timeout: float) -> StoreUnavailable:
    """The retryable error for a store fault, always with a reason (a timeout's own
    text is empty)."""
    if isinstance(exc, TimeoutError):
        why = f"no answer within {timeout:g}s (timed out)"
    else:
        why = str(exc) or type(exc).__name__
    return StoreUnavailable(f"Session store unavailable: {why}")
