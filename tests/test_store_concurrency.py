"""No lost update, on every store: concurrent mutations, replicas and processes.

In-process callers are serialized per key by ``StateStore.mutate``; separate store
objects (Redis replicas) and separate processes (one SQLite file) are kept honest by
compare-and-set alone, so those races are run for real here.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path

import pytest

from _fixtures.core import listing
from toolgate.state import MemoryStore, SessionState, StateStore
from toolgate.state.redis import RedisStore
from toolgate.state.sqlite import SqliteStore

#: each call's store timeout: 3,000 calls queue at once for 50 connections (or the file),
#: and on a loaded 2-core machine the last waited more than 15 s (a CI-like full run)
SLOW = 120.0
# Two writers hammering ONE key: the base class's CAS loop backs off with jitter after a
# lost race, so its default attempt budget must carry every write. No update may be lost.
RACE_ATTEMPTS = 200
SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StateStore]:
    # Thousands of calls are queued at once here, and each one's timeout counts its wait
    # for a connection or the file; these tests are about lost updates, not latency.
    built: StateStore
    if request.param == "memory":
        built = MemoryStore(timeout=SLOW)
    elif request.param == "sqlite":
        built = SqliteStore(path=str(tmp_path / "state.db"), timeout=SLOW)
    else:
        built = RedisStore(url=request.getfixturevalue("redis_url"), timeout=SLOW)
    yield built
    await built.close()


def adding(group: str) -> Callable[[SessionState], Awaitable[tuple[SessionState, None]]]:
    async def change(state: SessionState) -> tuple[SessionState, None]:
        return replace(state, active=state.active | {group}), None

    return change


def entering(stage: str) -> Callable[[SessionState], Awaitable[tuple[SessionState, None]]]:
    async def change(state: SessionState) -> tuple[SessionState, None]:
        return replace(state, stage=stage), None

    return change


async def test_200_concurrent_mutations_of_one_session_are_all_kept(store: StateStore) -> None:
    groups = {f"group-{index:03d}" for index in range(200)}
    await asyncio.gather(*(store.mutate("one", adding(group)) for group in groups))
    state = await store.load("one")
    assert state.active == groups
    assert state.version == 200


async def test_1000_sessions_mutated_concurrently_end_in_their_exact_states(
    store: StateStore,
) -> None:
    keys = [f"session-{index:04d}" for index in range(1000)]
    await asyncio.gather(
        *(
            change
            for key in keys
            for change in (
                store.mutate(key, adding(f"{key}-a")),
                store.mutate(key, adding("shared")),
                store.mutate(key, entering(f"{key}-stage")),
            )
        )
    )
    states = await asyncio.gather(*(store.load(key) for key in keys))
    for key, state in zip(keys, states, strict=True):
        assert (set(state.active), state.stage, state.version) == (
            {f"{key}-a", "shared"},
            f"{key}-stage",
            3,
        )
    assert await listing(store).session_count() == 1000


WORKER = textwrap.dedent(
    """
    import asyncio, sys, time
    from dataclasses import replace
    from pathlib import Path
    from toolgate.state.sqlite import SqliteStore

    path, name, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    RACE_ATTEMPTS = int(sys.argv[5])

    def adding(group):
        async def change(state):
            return replace(state, active=state.active | {group}), None
        return change

    async def main():
        store = SqliteStore(path=path, timeout=10.0)
        while not go.exists():
            time.sleep(0.001)
        for index in range(count):
            await store.mutate("shared", adding(f"{name}-{index}"), max_attempts=RACE_ATTEMPTS)
        await store.close()

    asyncio.run(main())
    """
)


async def test_two_processes_on_one_sqlite_file_lose_no_update(tmp_path: Path) -> None:
    path, go, per_process = tmp_path / "state.db", tmp_path / "go", 150
    SqliteStore(path=str(path))  # create the schema before the race starts
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                str(path),
                name,
                str(per_process),
                str(go),
                str(RACE_ATTEMPTS),
            ],
            env={**os.environ, "PYTHONPATH": str(SRC)},
            stderr=subprocess.PIPE,
        )
        for name in ("left", "right")
    ]
    time.sleep(0.3)  # both interpreters are up and polling for the go file
    go.touch()
    for worker in workers:
        _, stderr = worker.communicate(timeout=60)
        assert worker.returncode == 0, stderr.decode()

    store = SqliteStore(path=str(path))
    try:
        state = await store.load("shared")
        assert state.active == {f"{n}-{i}" for n in ("left", "right") for i in range(per_process)}
        assert state.version == 2 * per_process
    finally:
        await store.close()


async def test_two_redis_replicas_racing_on_one_key_lose_no_update(redis_url: str) -> None:
    replicas = [RedisStore(url=redis_url, timeout=SLOW), RedisStore(url=redis_url, timeout=SLOW)]
    try:
        await asyncio.gather(
            *(
                replicas[index % 2].mutate(
                    "shared", adding(f"group-{index:03d}"), max_attempts=RACE_ATTEMPTS
                )
                for index in range(200)
            )
        )
        for replica in replicas:
            state = await replica.load("shared")
            assert state.active == {f"group-{index:03d}" for index in range(200)}
            assert state.version == 200
    finally:
        for replica in replicas:
            await replica.close()


async def test_a_rate_limit_counts_globally_across_redis_replicas(redis_url: str) -> None:
    replicas = [RedisStore(url=redis_url, timeout=SLOW), RedisStore(url=redis_url, timeout=SLOW)]
    try:
        results = await asyncio.gather(
            *(replicas[index % 2].rate_check("alice:deploy", 10, 60.0) for index in range(40))
        )
        allowed = [result for result in results if result is None]
        refused = [result for result in results if result is not None]
        assert len(allowed) == 10
        assert len(refused) == 30
        assert all(0.0 < retry_after <= 60.0 for retry_after in refused)
    finally:
        for replica in replicas:
            await replica.close()
