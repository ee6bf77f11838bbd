"""``RedisStore``: session state shared by many gateway replicas through one Redis, or
through the primary Redis Sentinel names (``redis+sentinel://``, ``SentinelTarget``).

Owns the key layout (``{prefix}s:{key}`` JSON state with idle expiry, ``{prefix}r:{bucket}``
sorted-set rate logs) and the Lua scripts that make compare-and-set and rate limiting
atomic on the server. Base layer: imports only ``state.base``, ``state.listing``, the stdlib
and ``redis``; never ``mcp`` or ``fastmcp``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

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

# KEYS[1] rate log; ARGV: now - window, limit. _RATE_HIT's answer, recording nothing:
# nil when a call would be recorded, else the oldest live entry's score (a string).
_RATE_PEEK = """
local after = '(' .. ARGV[1]
if redis.call('ZCOUNT', KEYS[1], after, '+inf') >= tonumber(ARGV[2]) then
  return redis.call('ZRANGEBYSCORE', KEYS[1], after, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2]
end
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


SENTINEL_SCHEMES = ("redis+sentinel://", "rediss+sentinel://")
SENTINEL_PORT = 26379
_SENTINEL_OPTIONS = ("sentinel_username", "sentinel_password", "wait_replicas", "wait_timeout")


@dataclass(frozen=True)
class SentinelTarget:
    """Where a Sentinel store URL points, parsed (``SentinelTarget.of``):

    ``redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/service[/db][?options]``
    (``rediss+sentinel://``: TLS to the data nodes and the sentinels). Sentinels default to
    port 26379; the credentials are the data nodes'; options: ``sentinel_username``,
    ``sentinel_password``, ``wait_replicas`` (replicas that must hold a state write before
    it counts, default 1; 0: none) and ``wait_timeout`` (seconds to wait for them).
    """

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    sentinel_username: str | None = None
    sentinel_password: str | None = None
    tls: bool = False
    wait_replicas: int = 1
    wait_timeout: float | None = None

    @classmethod
    def of(cls, url: str) -> SentinelTarget:
        """Parse ``url``; a ``ValueError`` says what is wrong (never the password)."""
        scheme, _, rest = url.partition("://")
        rest, _, query = rest.partition("?")
        netloc, _, path = rest.partition("/")
        userinfo, at, hosts = netloc.rpartition("@")
        username, _, password = userinfo.partition(":") if at else ("", "", "")
        sentinels = tuple(_host_port(h) for h in hosts.split(",") if h.strip())
        if not sentinels:
            raise ValueError("name at least one sentinel: redis+sentinel://host:26379/service")
        service, _, db = path.strip("/").partition("/")
        if not service:
            raise ValueError("name the service Sentinel monitors: .../<service>[/<db>]")
        if db and not db.isdigit():
            raise ValueError(f"the database must be a number, got {db!r}")
        options = dict(parse_qsl(query, keep_blank_values=True))
        unknown = sorted(set(options) - set(_SENTINEL_OPTIONS))
        if unknown:
            raise ValueError(
                f"unknown option {unknown[0]!r}; known: {', '.join(_SENTINEL_OPTIONS)}"
            )
        try:
            replicas = int(options.get("wait_replicas", "1"))
            wait = float(options["wait_timeout"]) if "wait_timeout" in options else None
        except ValueError:
            raise ValueError("wait_replicas is a whole number, wait_timeout seconds") from None
        if replicas < 0 or (wait is not None and wait <= 0):
            raise ValueError("wait_replicas must be >= 0 and wait_timeout > 0")
        return cls(
            sentinels=sentinels,
            service=unquote(service),
            db=int(db or 0),
            username=unquote(username) or None,
            password=unquote(password) or None,
            sentinel_username=options.get("sentinel_username") or None,
            sentinel_password=options.get("sentinel_password") or None,
            tls=scheme == "rediss+sentinel",
            wait_replicas=replicas,
            wait_timeout=wait,
        )


def _host_port(node: str) -> tuple[str, int]:
    node = node.strip()
    if node.startswith("["):  # [::1]:26379
        host, _, port = node[1:].partition("]")
        port = port.removeprefix(":")
    else:
        host, _, port = node.partition(":")
    if not host or (port and not port.isdigit()):
        raise ValueError(f"{node!r} is not a sentinel's host[:port]")
    return host, int(port or SENTINEL_PORT)


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
    #: replicas that must hold a session-state write before it counts (``WAIT``); a
    #: Sentinel URL sets it (default 1), a plain one leaves it 0
    wait_replicas: int = field(default=0, init=False)
    wait_timeout: float = field(default=1.0, init=False)
    _pool: aioredis.BlockingConnectionPool[Any] = field(init=False, repr=False)
    _client: aioredis.Redis[bytes] = field(init=False, repr=False)
    _sentinel: Sentinel | None = field(default=None, init=False, repr=False)
    _cas: Any = field(init=False, repr=False)
    _rate_hit: Any = field(init=False, repr=False)
    _rate_peek: Any = field(init=False, repr=False)
    _sweep: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.url.startswith(SENTINEL_SCHEMES):
            self._sentinel_client(SentinelTarget.of(self.url))
        else:
            self._direct_client()
        # Script objects re-load themselves after NOSCRIPT (e.g. a restarted server).
        self._cas = self._client.register_script(_CAS)
        self._rate_hit = self._client.register_script(_RATE_HIT)
        self._rate_peek = self._client.register_script(_RATE_PEEK)
        self._sweep = self._client.register_script(_SWEEP)

    def _socket_options(self) -> dict[str, Any]:
        return {
            "socket_timeout": self.socket_timeout if self.socket_timeout else self.timeout,
            "socket_connect_timeout": (
                self.connect_timeout if self.connect_timeout else min(1.0, self.timeout)
            ),
        }

    def _sentinel_client(self, target: SentinelTarget) -> None:
        """The primary Sentinel names, found again on every new connection: while a
        failover runs there is none, commands fail and the store fails closed."""
        tls = {"ssl": True} if target.tls else {}
        credentials = {"username": target.sentinel_username, "password": target.sentinel_password}
        self._sentinel = Sentinel(
            list(target.sentinels),
            sentinel_kwargs={**self._socket_options(), **credentials, **tls},
        )
        self._client = self._sentinel.master_for(
            target.service,
            connection_pool_class=SentinelConnectionPool,
            db=target.db,
            username=target.username,
            password=target.password,
            max_connections=self.max_connections,
            retry=Retry(NoBackoff(), self.retries),
            **self._socket_options(),
            **tls,
        )
        self._pool = self._client.connection_pool
        self.wait_replicas = target.wait_replicas
        self.wait_timeout = target.wait_timeout or self.timeout / 2

    def _direct_client(self) -> None:
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

    async def _replicated(self, write: Callable[[Any], Any]) -> Any:
        """``write(client)`` and, when replicas must hold it (``wait_replicas``), ``WAIT``
        on the same connection; fewer replicas in ``wait_timeout`` fail it (closed)."""
        if not self.wait_replicas:
            return await write(self._client)
        async with self._client.pipeline(transaction=False) as pipe:
            await write(pipe)
            pipe.execute_command("WAIT", self.wait_replicas, _milliseconds(self.wait_timeout))
            result, replicas = await pipe.execute()
        if int(replicas) < self.wait_replicas:
            raise RedisConnectionError(
                f"the write reached {replicas} of {self.wait_replicas} replica(s) within "
                f"{self.wait_timeout:g}s, so it is not acknowledged"
            )
        return result

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
        args = [
            expected_version,
            state.to_json(),
            repr(self.clock()),
            repr(float(self.idle_ttl)),
            _milliseconds(self.idle_ttl),
        ]
        written = await self._replicated(
            lambda client: self._cas(keys=[self._state_key(key)], args=args, client=client)
        )
        return bool(written)

    async def delete(self, key: str) -> None:
        keys = (self._state_key(key), self._info_key(key))
        await self._replicated(lambda client: client.delete(*keys))

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

    async def rate_peek(self, bucket: str, limit: int, window_s: float) -> float | None:
        now = self.clock()
        oldest = await self._rate_peek(
            keys=[self._rate_key(bucket)], args=[repr(now - window_s), limit]
        )
        return None if oldest is None else min(float(oldest) + window_s - now, window_s)

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
        if self._sentinel is not None:
            await self._sentinel.aclose()  # type: ignore[attr-defined,unused-ignore]  # old stubs
