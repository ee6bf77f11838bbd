"""The StateStore contract, run unchanged against memory, SQLite and a real Redis.

Each store is built by ``make_store(**options)`` with a ``FakeClock`` so idle expiry and
rate-limit windows are checked at their exact edges; store-specific behaviour (restart,
Redis key expiry, fail-closed on a dead Redis, ``open_store`` URLs) follows at the end.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from _fixtures.core import asked_again
from _fixtures.redis_server import RedisServer
from toolgate import Group, Tool, ToolSet
from toolgate.errors import ConfigError, StoreUnavailable
from toolgate.policy import Principal
from toolgate.state import MemoryStore, SessionListing, SessionState, StateStore, open_store
from toolgate.state.base import EMPTY
from toolgate.state.redis import RedisStore
from toolgate.state.sqlite import SqliteStore

STORES = ["memory", "sqlite", "redis"]
IDLE_TTL = 100.0


class FakeClock:
    """A clock tests move by hand; starts at a round number so float edges are exact."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


MakeStore = Callable[..., SessionListing]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=STORES)
async def make_store(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> AsyncIterator[MakeStore]:
    """Builds stores of one kind (sharing one file / database), closing them afterwards."""
    kind: str = request.param
    built: list[SessionListing] = []
    url = request.getfixturevalue("redis_url") if kind == "redis" else ""

    def make(**options: Any) -> SessionListing:
        options = {"idle_ttl": IDLE_TTL, "clock": clock, **options}
        store: SessionListing
        if kind == "memory":
            store = MemoryStore(**options)
        elif kind == "sqlite":
            store = SqliteStore(path=str(tmp_path / "state.db"), **options)
        else:
            store = RedisStore(url=url, **options)
        built.append(store)
        return store

    yield make
    for store in built:
        await store.close()


def adding(group: str) -> Callable[[SessionState], Awaitable[tuple[SessionState, str]]]:
    async def change(state: SessionState) -> tuple[SessionState, str]:
        if group in state.active:
            return state, "already"
        return replace(state, active=state.active | {group}), "added"

    return change


async def unchanged(state: SessionState) -> tuple[SessionState, str]:
    return state, "nothing to do"


def count_writes(store: StateStore) -> list[int]:
    """Wraps the store's compare_and_set; the list grows by one per call."""
    calls: list[int] = []
    original = store.compare_and_set

    async def counting(key: str, expected_version: int, state: SessionState) -> bool:
        calls.append(expected_version)
        return await original(key, expected_version, state)

    store.compare_and_set = counting  # type: ignore[method-assign]
    return calls


# -- reading and compare-and-set --------------------------------------------------------


async def test_an_unknown_session_reads_as_absent_and_loads_as_empty(make_store: MakeStore) -> None:
    store = make_store()
    assert await store.get("nobody") is None
    assert await store.load("nobody") == EMPTY


async def test_compare_and_set_writes_only_over_the_expected_version(
    make_store: MakeStore, clock: FakeClock
) -> None:
    store = make_store()
    first = SessionState(active=frozenset({"a"}), version=1, touched_at=clock.now)
    second = SessionState(active=frozenset({"a", "b"}), stage="s", version=2, touched_at=clock.now)

    assert await store.compare_and_set("k", 0, first) is True
    assert await store.get("k") == first
    assert await store.compare_and_set("k", 0, second) is False  # no longer absent
    assert await store.compare_and_set("k", 2, second) is False  # stored version is 1
    assert await store.get("k") == first
    assert await store.compare_and_set("k", 1, second) is True
    assert await store.get("k") == second


async def test_every_state_field_round_trips_through_the_store(
    make_store: MakeStore, clock: FakeClock
) -> None:
    store = make_store()
    state = SessionState(
        active=frozenset({"code", "repos"}),
        stage="checkout",
        described=frozenset({"get_file"}),
        revealed=frozenset({"fork_repo", "search"}),
        version=1,
        touched_at=clock.now + 0.123456789,
    )
    assert await store.compare_and_set("k", 0, state) is True
    assert await store.get("k") == state


async def test_delete_forgets_a_session(make_store: MakeStore) -> None:
    store = make_store()
    await store.mutate("k", adding("a"))
    await store.delete("k")
    assert await store.get("k") is None
    assert await store.load("k") == EMPTY
    await store.delete("k")  # deleting an absent session is not an error


# -- mutate -----------------------------------------------------------------------------


async def test_mutate_returns_the_change_result_and_saves_the_next_version(
    make_store: MakeStore, clock: FakeClock
) -> None:
    store = make_store()
    assert await store.mutate("k", adding("a")) == "added"
    clock.advance(5)
    assert await store.mutate("k", adding("b")) == "added"
    assert await store.load("k") == SessionState(
        active=frozenset({"a", "b"}), version=2, touched_at=clock.now
    )


async def test_an_unchanged_mutate_writes_nothing(make_store: MakeStore, clock: FakeClock) -> None:
    store = make_store()
    writes = count_writes(store)
    assert await store.mutate("new", unchanged) == "nothing to do"
    assert await store.get("new") is None
    assert writes == []

    await store.mutate("k", adding("a"))
    clock.advance(1)
    assert await store.mutate("k", adding("a")) == "already"
    assert writes == [0]
    assert await store.load("k") == SessionState(
        active=frozenset({"a"}), version=1, touched_at=clock.now - 1
    )


async def test_an_unchanged_mutate_on_an_old_session_refreshes_its_idle_clock(
    make_store: MakeStore, clock: FakeClock
) -> None:
    store = make_store()
    await store.mutate("k", adding("a"))
    clock.advance(90)  # past the touch threshold, min(60, idle_ttl / 4) = 25 s
    await store.mutate("k", unchanged)
    touched = clock.now
    clock.advance(90)  # 180 s after the write, 90 s after the touch
    assert await store.load("k") == SessionState(
        active=frozenset({"a"}), version=1, touched_at=touched
    )


# -- idle expiry ------------------------------------------------------------------------


async def test_a_session_idle_for_longer_than_idle_ttl_reads_as_absent(
    make_store: MakeStore, clock: FakeClock
) -> None:
    store = make_store()
    await store.mutate("k", adding("a"))
    clock.advance(IDLE_TTL)
    assert (await store.load("k")).active == {"a"}  # exactly idle_ttl old: still alive
    clock.advance(0.5)
    assert await store.get("k") is None
    assert await store.load("k") == EMPTY


async def test_an_expired_session_starts_again_from_version_one(
    make_store: MakeStore, clock: FakeClock
) -> None:
    store = make_store()
    await store.mutate("k", adding("a"))
    await store.mutate("k", adding("b"))
    clock.advance(IDLE_TTL + 1)
    assert await store.mutate("k", adding("c")) == "added"
    assert await store.load("k") == SessionState(
        active=frozenset({"c"}), version=1, touched_at=clock.now
    )


async def test_compare_and_set_cannot_update_an_expired_session(
    make_store: MakeStore, clock: FakeClock
) -> None:
    store = make_store()
    await store.mutate("k", adding("a"))
    clock.advance(IDLE_TTL + 1)
    late = SessionState(active=frozenset({"b"}), version=2, touched_at=clock.now)
    assert await store.compare_and_set("k", 1, late) is False
    assert await store.get("k") is None


async def test_sweep_removes_only_idle_sessions(make_store: MakeStore, clock: FakeClock) -> None:
    store = make_store()
    await store.mutate("old", adding("a"))
    clock.advance(60)
    await store.mutate("fresh", adding("a"))
    clock.advance(50)  # "old" is 110 s idle, "fresh" 50 s
    assert await store.sweep() == 1
    assert await store.session_count() == 1
    assert await store.get("old") is None
    assert (await store.load("fresh")).active == {"a"}
    assert await store.sweep() == 0


async def test_session_count_counts_stored_sessions(make_store: MakeStore) -> None:
    store = make_store()
    assert await store.session_count() == 0
    for index in range(5):
        await store.mutate(f"session-{index}", adding("a"))
    await store.mutate("session-0", adding("b"))
    assert await store.session_count() == 5
    await store.delete("session-3")
    assert await store.session_count() == 4


async def test_sessions_are_isolated_from_each_other(make_store: MakeStore) -> None:
    store = make_store()
    await store.mutate("one", adding("a"))
    await store.mutate("two", adding("b"))
    assert (await store.load("one")).active == {"a"}
    assert (await store.load("two")).active == {"b"}


# -- rate limits ------------------------------------------------------------------------


async def test_rate_limit_allows_exactly_limit_calls_per_window(
    make_store: MakeStore, clock: FakeClock
) -> None:
    store = make_store()
    for _ in range(3):
        assert await store.rate_check("p:tool", 3, 10.0) is None
        clock.advance(1)
    # three calls at t=0, 1, 2; now t=3: the fourth is refused until t=10
    assert await store.rate_check("p:tool", 3, 10.0) == 7.0
    clock.advance(6.75)
    assert await store.rate_check("p:tool", 3, 10.0) == 0.25
    clock.advance(0.25)  # t=10: the call at t=0 is now exactly window_s old
    assert await store.rate_check("p:tool", 3, 10.0) is None
    # refused calls were not recorded: the window holds t=1, 2, 10, so retry at t=11
    assert await store.rate_check("p:tool", 3, 10.0) == 1.0


async def test_rate_limit_buckets_count_separately(make_store: MakeStore) -> None:
    store = make_store()
    assert await store.rate_check("alice:delete", 1, 60.0) is None
    assert await store.rate_check("bob:delete", 1, 60.0) is None
    assert await store.rate_check("alice:delete", 1, 60.0) == 60.0


async def test_rate_limit_calls_at_one_instant_are_each_counted(make_store: MakeStore) -> None:
    store = make_store()
    results = [await store.rate_check("burst", 4, 30.0) for _ in range(6)]
    assert results == [None, None, None, None, 30.0, 30.0]


async def test_rate_limit_peek_answers_as_a_hit_would_and_records_nothing(
    make_store: MakeStore, clock: FakeClock
) -> None:
    store = make_store()
    assert await store.rate_check("p:tool", 2, 10.0, record=False) is None  # empty bucket
    for _ in range(5):  # looking, however often, spends nothing
        assert await store.rate_check("p:tool", 1, 10.0, record=False) is None
    assert await store.rate_check("p:tool", 2, 10.0) is None  # t=0
    clock.advance(1)
    assert await store.rate_check("p:tool", 2, 10.0) is None  # t=1
    clock.advance(3)
    # t=4: the window holds t=0 and t=1; a look and a hit agree on the retry
    assert await store.rate_check("p:tool", 2, 10.0, record=False) == 6.0
    assert await store.rate_check("p:tool", 2, 10.0) == 6.0
    assert await store.rate_check("p:tool", 3, 10.0, record=False) is None
    clock.advance(6)  # t=10: the call at t=0 is exactly window_s old, gone for both
    assert await store.rate_check("p:tool", 2, 10.0, record=False) is None
    assert await store.rate_check("p:tool", 2, 10.0) is None  # t=10 recorded
    assert await store.rate_check("p:tool", 2, 10.0, record=False) == 1.0
    assert await store.rate_check("other:tool", 1, 10.0, record=False) is None


# -- SQLite: persistence ----------------------------------------------------------------


async def test_sqlite_state_survives_a_restart(tmp_path: Path, clock: FakeClock) -> None:
    path = str(tmp_path / "nested" / "state.db")
    store = SqliteStore(path=path, clock=clock)
    await store.mutate("k", adding("a"))
    await store.mutate("k", adding("b"))
    assert await store.rate_check("p:tool", 1, 60.0) is None
    await store.close()

    reopened = SqliteStore(path=path, clock=clock)
    try:
        assert await reopened.load("k") == SessionState(
            active=frozenset({"a", "b"}), version=2, touched_at=clock.now
        )
        assert await reopened.rate_check("p:tool", 1, 60.0) == 60.0
    finally:
        await reopened.close()


async def test_sqlite_uses_write_ahead_logging(tmp_path: Path) -> None:
    store = SqliteStore(path=str(tmp_path / "state.db"))
    try:
        mode = await store._run(lambda conn: conn.execute("PRAGMA journal_mode").fetchone()[0])
        assert mode == "wal"
    finally:
        await store.close()


@pytest.mark.parametrize("how", ["deleted", "replaced"])
async def test_a_sqlite_file_deleted_or_replaced_while_open_fails_closed(
    tmp_path: Path, how: str
) -> None:
    path = tmp_path / "state.db"
    store = SqliteStore(path=str(path))
    try:
        await store.mutate("k", adding("a"))
        for name in ("state.db", "state.db-wal", "state.db-shm"):
            (tmp_path / name).unlink(missing_ok=True)
        if how == "replaced":
            path.write_bytes(b"")
        gone = f"the SQLite file {path} was deleted or replaced while in use"
        with pytest.raises(StoreUnavailable, match=gone):
            await store.load("k")
        with pytest.raises(StoreUnavailable, match=gone):
            await store.mutate("k", adding("b"))
        with pytest.raises(StoreUnavailable, match=gone):
            await store.rate_check("p:tool", 5, 60.0)
    finally:
        await store.close()


# -- Redis: key layout and real expiry --------------------------------------------------


async def test_redis_keeps_state_as_json_under_the_prefix(redis_url: str) -> None:
    store = RedisStore(url=redis_url, prefix="app:", idle_ttl=IDLE_TTL)
    client = aioredis.Redis.from_url(redis_url)
    try:
        await store.mutate("k", adding("a"))
        assert await client.keys("*") == [b"app:s:k"]
        raw = await client.get("app:s:k")
        assert raw is not None
        assert SessionState.from_json(raw) == await store.load("k")
        assert 0 < await client.pttl("app:s:k") <= IDLE_TTL * 1000
        await store.rate_check("p:tool", 2, 30.0)
        assert 0 < await client.pttl("app:r:p:tool") <= 30_000
    finally:
        await client.aclose()  # type: ignore[attr-defined]  # types-redis predates aclose
        await store.close()


async def test_redis_prefixes_keep_two_deployments_apart(redis_url: str) -> None:
    first = RedisStore(url=redis_url, prefix="one:")
    second = RedisStore(url=redis_url, prefix="two:")
    try:
        await first.mutate("k", adding("a"))
        assert await second.get("k") is None
        assert await second.session_count() == 0
        assert await first.session_count() == 1
    finally:
        await first.close()
        await second.close()


async def test_redis_drops_an_idle_session_by_key_expiry(redis_url: str) -> None:
    store = RedisStore(url=redis_url, idle_ttl=1.0)  # the real clock: Redis expires the key
    client = aioredis.Redis.from_url(redis_url)
    try:
        await store.mutate("k", adding("a"))
        assert await client.exists("toolgate:s:k") == 1
        await asyncio.sleep(1.1)
        assert await client.exists("toolgate:s:k") == 0
        assert await store.session_count() == 0
        assert await store.load("k") == EMPTY
    finally:
        await client.aclose()  # type: ignore[attr-defined]  # types-redis predates aclose
        await store.close()


# -- Redis: failing closed and recovering -----------------------------------------------


async def test_a_stopped_redis_fails_closed_promptly_and_the_store_recovers(
    redis_server: RedisServer, redis_url: str
) -> None:
    store = RedisStore(url=redis_url, timeout=1.0)
    try:
        await store.mutate("k", adding("a"))
        redis_server.stop()
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: store.load("k"),
            lambda: store.mutate("k", adding("b")),
            lambda: store.rate_check("p:tool", 5, 60.0),
        ]
        for call in calls:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match="Session store unavailable"):
                await call()
            assert time.monotonic() - started < 1.5

        redis_server.start()
        assert await store.load("k") == EMPTY  # persistence is off: the restart lost it
        assert await store.mutate("k", adding("b")) == "added"
        assert (await store.load("k")).active == {"b"}
        assert await store.rate_check("p:tool", 5, 60.0) is None
    finally:
        redis_server.start()
        await store.close()


async def test_a_frozen_redis_fails_closed_within_the_timeout_and_the_store_recovers(
    redis_server: RedisServer, redis_url: str
) -> None:
    store = RedisStore(url=redis_url, timeout=0.5)
    try:
        # set-up, not the timing under test: a loaded machine may take longer to connect
        await asked_again(lambda: store.mutate("k", adding("a")), StoreUnavailable, 15.0)
        redis_server.freeze()
        started = time.monotonic()
        timed_out = r"^Session store unavailable: no answer within 0\.5s \(timed out\)$"
        with pytest.raises(StoreUnavailable, match=timed_out):
            await store.load("k")
        with pytest.raises(StoreUnavailable, match=timed_out):
            await store.mutate("k", adding("b"))
        assert time.monotonic() - started < 1.5

        redis_server.thaw()
        assert (await store.load("k")).active == {"a"}  # the first call after the thaw answers
        assert await store.mutate("k", adding("b")) == "added"
        assert (await store.load("k")).active == {"a", "b"}
    finally:
        redis_server.thaw()
        await store.close()


# -- the narrow interface ---------------------------------------------------------------


@dataclass
class PrimitivesOnly(StateStore):
    """The narrowest store there is: the four primitives the core needs, in a dict."""

    saved: dict[str, SessionState] = field(default_factory=dict)

    async def get(self, key: str) -> SessionState | None:
        return self.saved.get(key)

    async def compare_and_set(self, key: str, expected_version: int, state: SessionState) -> bool:
        current = self.saved.get(key)
        if (current.version if current is not None else 0) != expected_version:
            return False
        self.saved[key] = state
        return True

    async def delete(self, key: str) -> None:
        self.saved.pop(key, None)

    async def rate_hit(self, bucket: str, limit: int, window_s: float) -> float | None:
        return None


async def test_a_store_with_only_the_four_primitives_keeps_a_toolsets_sessions() -> None:
    store = PrimitivesOnly()
    ts = ToolSet(store=store)
    ts.add_groups([Group("notes", "Notes.")])
    ts.add_tools([Tool("read_note", "Read a note.", handler=lambda a, c: "ok", groups=("notes",))])
    await ts.session("s").activate(["notes"])
    assert [t.name for t in await ts.session("s").list_tools()] == ["read_note"]
    assert store.saved["s"].active == {"notes"}
    assert not isinstance(store, SessionListing)


async def test_the_dashboard_lists_no_sessions_of_a_store_that_keeps_no_records() -> None:
    from toolgate.gateway.ops.dashboard.sessions import SessionRecorder, session_rows

    ts = ToolSet(store=PrimitivesOnly())
    await SessionRecorder(ts).seen("s", Principal("alice"), protocol=None, strategy="catalog")
    await ts.session("s").activate([])
    assert await session_rows(ts) == []


# -- open_store -------------------------------------------------------------------------


async def test_open_store_builds_a_memory_store_from_memory_url() -> None:
    store = open_store("memory://", idle_ttl=5.0)
    assert isinstance(store, MemoryStore)
    assert isinstance(store, SessionListing)
    assert store.idle_ttl == 5.0


async def test_open_store_builds_a_sqlite_store_from_an_absolute_path(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = open_store(f"sqlite://{path}", idle_ttl=5.0, busy_timeout=1.0)
    try:
        assert isinstance(store, SqliteStore)
        assert (store.path, store.idle_ttl, store.busy_timeout) == (str(path), 5.0, 1.0)
        await store.mutate("k", adding("a"))
        assert path.is_file()
    finally:
        await store.close()


async def test_open_store_builds_a_redis_store_from_a_redis_url(redis_server: RedisServer) -> None:
    url = f"redis://127.0.0.1:{redis_server.port}/0"
    store = open_store(url, idle_ttl=5.0, prefix=f"open-store-{time.monotonic_ns()}:")
    try:
        assert isinstance(store, RedisStore)
        assert (store.url, store.idle_ttl) == (url, 5.0)
        await store.mutate("k", adding("a"))
        assert (await store.load("k")).active == {"a"}
        await store.delete("k")
    finally:
        await store.close()


@pytest.mark.parametrize("url", ["postgres://db/toolgate", "memcached://x"])
def test_open_store_rejects_an_unknown_url_with_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError, match="Unknown store URL") as raised:
        open_store(url)
    assert raised.value.details == {"key": "store"}
