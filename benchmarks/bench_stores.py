"""Benchmark the three session stores in one run: ``python benchmarks/bench_stores.py``.

For memory, SQLite and Redis (a ``redis-server`` this script starts and stops itself):
activations per second, memory held by N sessions, and load latency (p50 / p99). Prints a
markdown table and writes it into ``benchmarks/RESULTS.md`` between the ``stores`` markers.
Imports only ``toolgate.state``, the stdlib and ``redis``; never ``mcp`` or ``fastmcp``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import redis

from toolgate.state import MemoryStore, SessionState, StateStore
from toolgate.state.redis import RedisStore
from toolgate.state.sqlite import SqliteStore

RESULTS = Path(__file__).with_name("RESULTS.md")
BEGIN, END = "<!-- stores:begin -->", "<!-- stores:end -->"
GROUPS = [f"group-{index:02d}" for index in range(20)]


@dataclass
class Row:
    store: str
    activations_per_s: float
    memory_bytes: int
    memory_how: str
    load_p50_ms: float
    load_p99_ms: float


# -- a tiny redis-server starter (the test fixture has its own; benchmarks stand alone) --


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def redis_server() -> Iterator[int]:
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("redis-server not found: apt-get update && apt-get install -y redis-server")
    port = _free_port()
    with tempfile.TemporaryDirectory() as directory:
        options = ["--save", "", "--appendonly", "no", "--bind", "127.0.0.1", "--dir", directory]
        process = subprocess.Popen(
            [binary, "--port", str(port), *options], stdout=subprocess.DEVNULL
        )
        try:
            client = redis.Redis(port=port)
            for _ in range(500):
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.01)
            else:
                sys.exit(f"redis-server on port {port} did not answer PING")
            client.close()
            yield port
        finally:
            process.terminate()
            process.wait(timeout=10)


# -- measurements -----------------------------------------------------------------------


def adding(group: str) -> Callable[[SessionState], Awaitable[tuple[SessionState, None]]]:
    async def change(state: SessionState) -> tuple[SessionState, None]:
        return replace(state, active=state.active | {group}), None

    return change


async def activate_all(store: StateStore, sessions: int, in_flight: int) -> float:
    """Activate one group in each of ``sessions`` sessions; returns activations per second."""
    keys = iter(range(sessions))

    async def worker() -> None:
        for index in keys:
            await store.mutate(f"session-{index:06d}", adding(GROUPS[index % len(GROUPS)]))

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return sessions / (time.perf_counter() - started)


async def load_latencies_ms(store: StateStore, sessions: int, samples: int) -> tuple[float, float]:
    rng = random.Random(7)
    timings: list[float] = []
    for _ in range(samples):
        key = f"session-{rng.randrange(sessions):06d}"
        started = time.perf_counter()
        await store.load(key)
        timings.append((time.perf_counter() - started) * 1000)
    cuts = statistics.quantiles(timings, n=100)
    return cuts[49], cuts[98]


@asynccontextmanager
async def opened(store: StateStore) -> AsyncIterator[StateStore]:
    try:
        yield store
    finally:
        await store.close()


async def bench_memory(sessions: int, in_flight: int, samples: int) -> Row:
    async with opened(MemoryStore()) as store:
        rate = await activate_all(store, sessions, in_flight)
        p50, p99 = await load_latencies_ms(store, sessions, samples)
    # a second, traced run: tracemalloc slows everything down, so it is not timed
    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    async with opened(MemoryStore()) as store:
        await activate_all(store, sessions, in_flight)
        held = tracemalloc.get_traced_memory()[0] - baseline
    tracemalloc.stop()
    return Row("memory", rate, held, "tracemalloc", p50, p99)


async def bench_sqlite(sessions: int, in_flight: int, samples: int) -> Row:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "state.db"
        async with opened(SqliteStore(path=str(path))) as store:
            rate = await activate_all(store, sessions, in_flight)
            p50, p99 = await load_latencies_ms(store, sessions, samples)
        size = path.stat().st_size  # closing checkpointed the WAL into the file
    return Row("sqlite", rate, size, "file size", p50, p99)


async def bench_redis(sessions: int, in_flight: int, samples: int) -> Row:
    with redis_server() as port:
        info = redis.Redis(port=port)
        before = int(info.info("memory")["used_memory"])
        async with opened(RedisStore(url=f"redis://127.0.0.1:{port}/0")) as store:
            rate = await activate_all(store, sessions, in_flight)
            used = int(info.info("memory")["used_memory"]) - before
            p50, p99 = await load_latencies_ms(store, sessions, samples)
        info.close()
    return Row("redis", rate, used, "INFO used_memory delta", p50, p99)


# -- report -----------------------------------------------------------------------------


def table(rows: list[Row], sessions: int, in_flight: int, samples: int) -> str:
    lines = [
        f"Session stores, {sessions:,} sessions, one activation each, {in_flight} in flight; "
        f"{samples:,} sequential loads of random sessions. Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}.",
        "",
        "| store | activations/s | memory for all sessions | per session | how measured "
        "| load p50 | load p99 |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row.store} | {row.activations_per_s:,.0f} | {row.memory_bytes / 2**20:.2f} MiB "
            f"| {row.memory_bytes / sessions:,.0f} B | {row.memory_how} "
            f"| {row.load_p50_ms:.3f} ms | {row.load_p99_ms:.3f} ms |"
        )
    return "\n".join(lines)


def write_section(markdown: str) -> None:
    section = f"{BEGIN}\n{markdown}\n{END}"
    if not RESULTS.exists():
        RESULTS.write_text(f"# Benchmark results\n\n{section}\n")
        return
    text = RESULTS.read_text()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        RESULTS.write_text(head + section + tail)
    else:
        RESULTS.write_text(text.rstrip("\n") + f"\n\n{section}\n")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--in-flight", type=int, default=32, help="concurrent callers")
    parser.add_argument("--samples", type=int, default=10_000, help="loads timed per store")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    rows = [
        await bench(args.sessions, args.in_flight, args.samples)
        for bench in (bench_memory, bench_sqlite, bench_redis)
    ]
    markdown = table(rows, args.sessions, args.in_flight, args.samples)
    print(markdown)
    if not args.no_write:
        write_section(markdown)
        print(f"\nwritten to {RESULTS}")


if __name__ == "__main__":
    asyncio.run(main())
