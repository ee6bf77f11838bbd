"""``RedisStore``: session state shared by many gateway replicas through one Redis.

Owns the key layout (``{prefix}s:{key}`` JSON state with idle expiry, ``{prefix}r:{bucket}``
sorted-set rate logs) and the Lua scripts that make compare-and-set and rate limiting
atomic on the server. Base layer: imports only ``state.base``, ``state.listing``, the stdlib
and ``redis``; never ``mcp`` or ``fastmcp``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from toolgate.state.base import SessionState
from toolgate.state.listing import SessionInfo, SessionListing

# KEYS[1] state key; ARGV: expected version, new state JSON, now, idle_ttl, expiry ms.
# A stored state that is idle by the store's clock counts as absent (version 0), exactly
# as ``get`` reads it. If the stored value already *is* the new state, this write landed
# before (its reply was lost and the client retried): report success, never apply twice.
_CAS = """
local current = redis.call('GET', KEYS[1])
if current == ARGV[2] then
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return 1
end
local version = 0
if current then
  local stored = cjson.decode(current)
  if tonumber(ARGV[3]) - stored['touched_at'] <= tonumber(ARGV[4]) then
    version = stored['version']
  end
end
if version ~= tonumber(ARGV[1]) then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[5])
return 1
"""

# KEYS[1] rate log; ARGV: now, now - window (entries at or before it are gone), limit,
# unique member, expiry ms. Returns nil when the call is recorded, else the score of the
# oldest entry (a string: Lua would truncate a number reply to an integer).
_RATE_HIT = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return false
"""

# KEYS: state keys; ARGV: now, idle_ttl. Deletes the ones idle by the store's clock.
_SWEEP = """
local removed = 0
for _, key in ipairs(KEYS) do
  local current = redis.call('GET', key)
  if current then
    local stored = cjson.decode(current)
    if tonumber(ARGV[1]) - stored['touched_at'] > tonumber(ARGV[2]) then
      redis.call('DEL', key)
      removed = removed + 1
    end
  end
end
return removed
"""

_SCAN_BATCH = 1000


def _milliseconds(seconds: float) -> int:
    return max(1, math.ceil(seconds * 1000))


@dataclass
class RedisStore(SessionListing):
    """Session state in Redis; every replica pointing at the same URL shares it.

    Idle sessions disappear through Redis key expiry; :meth:`sweep` also removes those
    idle by ``clock`` (which only differs from Redis' own clock in tests).
    ``socket_timeout`` / ``connect_timeout`` default to ``timeout`` and ``min(1, timeout)``;
    ``retries`` is how often a command is re-sent at once on a dropped connection;
    ``max_connections`` bounds the pool (callers beyond it wait for a free connection).
    Example: ``RedisStore(url="redis://127.0.0.1:6379/0", prefix="myapp:")``.
    """

    url: str = field(kw_only=True)
    prefix: str = "toolgate:"
    socket_timeout: float | None = None
    connect_timeout: float | None = None
    retries: int = 1
    max_connections: int = 50
    _pool: aioredis.BlockingConnectionPool[Any] = field(init=False, repr=False)
    _client: aioredis.Redis[bytes] = field(init=False, repr=False)
    _cas: Any = field(init=False, repr=False)
    _rate_hit: Any = field(init=False, repr=False)
    _sweep: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # A blocking pool: a burst of requests waits (up to ``timeout``) for one of
        # ``max_connections`` instead of failing with "Too many connections". No backoff
        # between retries: the base class bounds every call by ``timeout``, and a dead
        # server must fail closed promptly rather than be waited for.
        self._pool = aioredis.BlockingConnectionPool.from_url(
            self.url,
            max_connections=self.max_connections,
            timeout=self.timeout,
            socket_timeout=self.socket_timeout if self.socket_timeout else self.timeout,
            socket_connect_timeout=(
                self.connect_timeout if self.connect_timeout else min(1.0, self.timeout)
            ),
            retry=Retry(NoBackoff(), self.retries),
        )
        self._client = aioredis.Redis(connection_pool=self._pool)
        # Script objects re-load themselves after NOSCRIPT (e.g. a restarted server).
        self._cas = self._client.register_script(_CAS)
        self._rate_hit = self._client.register_script(_RATE_HIT)
        self._sweep = self._client.register_script(_SWEEP)

    def _state_key(self, key: str) -> str:
        return f"{self.prefix}s:{key}"

    def _rate_key(self, bucket: str) -> str:
        return f"{self.prefix}r:{bucket}"

    def _info_key(self, key: str) -> str:
        return f"{self.prefix}i:{key}"

    def _state_pattern(self, kind: str = "s") -> str:
        # SCAN MATCH is a glob: a prefix holding glob characters must match literally.
        return re.sub(r"([*?\[\]\\])", r"\\\1", self.prefix) + f"{kind}:*"

    async def _scan_values(self, kind: str) -> AsyncIterator[tuple[str, bytes]]:
        """``(key, value)`` of every ``{prefix}{kind}:*`` key, fetched in MGET batches."""
        strip = len(f"{self.prefix}{kind}:".encode())
        batch: list[bytes] = []

        async def fetch(keys: list[bytes]) -> list[tuple[str, bytes]]:
            values = await self._client.mget(keys)
            return [(k[strip:].decode(), v) for k, v in zip(keys, values, strict=True) if v]

        async for key in self._client.scan_iter(match=self._state_pattern(kind), count=_SCAN_BATCH):
            batch.append(key)
            if len(batch) >= _SCAN_BATCH:
                for item in await fetch(batch):
                    yield item
                batch = []
        if batch:
            for item in await fetch(batch):
                yield item

    # -- primitives -------------------------------------------------------------------
    async def get(self, key: str) -> SessionState | None:
        raw = await self._client.get(self._state_key(key))
        if raw is None:
            return None
        state = SessionState.from_json(raw)
        if self.clock() - state.touched_at > self.idle_ttl:
            return None
        return state

    async def compare_and_set(self, key: str, expected_version: int, state: SessionState) -> bool:
        written = await self._cas(
            keys=[self._state_key(key)],
            args=[
                expected_version,
                state.to_json(),
                repr(self.clock()),
                repr(float(self.idle_ttl)),
                _milliseconds(self.idle_ttl),
            ],
        )
        return bool(written)

    async def delete(self, key: str) -> None:
        await self._client.delete(self._state_key(key), self._info_key(key))

    async def rate_hit(self, bucket: str, limit: int, window_s: float) -> float | None:
        now = self.clock()
        member = os.urandom(8).hex()  # unique even when a test clock repeats a timestamp
        oldest = await self._rate_hit(
            keys=[self._rate_key(bucket)],
            args=[repr(now), repr(now - window_s), limit, member, _milliseconds(window_s)],
        )
        if oldest is None:
            return None
        # Replicas' clocks differ a little: the oldest entry may come from a replica whose
        # clock is ahead of ours. Nobody ever waits longer than one window.
        return min(float(oldest) + window_s - now, window_s)

    async def sweep(self) -> int:
        now, ttl = repr(self.clock()), repr(float(self.idle_ttl))
        removed = 0
        batch: list[bytes] = []
        async for key in self._client.scan_iter(match=self._state_pattern(), count=_SCAN_BATCH):
            batch.append(key)
            if len(batch) >= _SCAN_BATCH:
                removed += int(await self._sweep(keys=batch, args=[now, ttl]))
                batch = []
        if batch:
            removed += int(await self._sweep(keys=batch, args=[now, ttl]))
        return removed

    async def session_count(self) -> int:
        """State keys present; Redis expiry has already dropped the idle ones."""
        count = 0
        async for _ in self._client.scan_iter(match=self._state_pattern(), count=_SCAN_BATCH):
            count += 1
        return count

    async def sessions(self) -> AsyncIterator[tuple[str, SessionState]]:
        now = self.clock()
        async for key, raw in self._scan_values("s"):
            state = SessionState.from_json(raw)
            if now - state.touched_at <= self.idle_ttl:
                yield key, state

    async def put_info(self, info: SessionInfo) -> None:
        await self._client.set(
            self._info_key(info.key), info.to_json(), px=_milliseconds(self.idle_ttl)
        )

    async def infos(self) -> AsyncIterator[SessionInfo]:
        now = self.clock()
        async for _, raw in self._scan_values("i"):
            info = SessionInfo.from_json(raw)
            if now - info.last_seen <= self.idle_ttl:
                yield info

    async def close(self) -> None:
        await self._client.aclose()  # type: ignore[attr-defined,unused-ignore]  # old stubs
        await self._pool.disconnect()
