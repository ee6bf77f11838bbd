"""Replicas behind HAProxy under load: what a kill, a rolling restart, a reload and a
Redis failover cost the clients.

N ``toolgate serve`` replicas on Redis with Sentinel (or one Redis) behind Debian's HAProxy running
``deploy/haproxy.cfg`` as shipped (the test suite's harness, ``tests/_fixtures/replicas``),
and real clients calling ``work(10 ms)`` in a loop: 2026-07-28 clients (fastmcp's default
mode) and legacy ones (``mode="legacy"``, a new session after any failure). For each event
it reports calls, errors, p50 and p99 latency before, during and after, and how long after
the event the last error came. On a 2-core machine shared with other work, throughput does
not grow with replicas: read the errors and recovery times, not the call rates.

Run: ``.venv/bin/python benchmarks/bench_replicas.py [--store sentinel|redis]
[--events kill,rolling,reload,failover] [--no-write]`` (the failover needs Sentinel).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])

from fastmcp import Client  # noqa: E402
from fastmcp.client.transports import StreamableHttpTransport  # noqa: E402
from search_eval import RESULTS, write_section  # noqa: E402

from _fixtures.gateway import BOB_TOKEN  # noqa: E402
from _fixtures.mcp_servers import free_port  # noqa: E402
from _fixtures.redis_server import RedisServer  # noqa: E402
from _fixtures.replicas import ReplicaSet, ReplicaSetup, start_replicas  # noqa: E402

STORES = {
    "redis": "one Redis",
    "sentinel": "Redis with Sentinel (a primary, a replica, three sentinels)",
}
BEGIN, END = "<!-- replicas:begin -->", "<!-- replicas:end -->"
PHASE_S = 4.0
WORK_MS = 10


@dataclass(frozen=True)
class Call:
    era: str
    client: int
    started: float
    ended: float
    ok: bool
    error: str = ""


async def client_loop(
    url: str, era: str, number: int, stop: asyncio.Event, calls: list[Call]
) -> None:
    """One client calling until ``stop``; after a failure it connects again (for a legacy
    client: a new session), as an agent would."""
    mode = "legacy" if era == "legacy" else "auto"
    while not stop.is_set():
        try:
            async with Client(StreamableHttpTransport(url, auth=BOB_TOKEN), mode=mode) as client:
                while not stop.is_set():
                    started = time.monotonic()
                    try:
                        await client.call_tool("work", {"ms": WORK_MS})
                    except Exception as exc:
                        calls.append(Call(era, number, started, time.monotonic(), False, str(exc)))
                        break
                    calls.append(Call(era, number, started, time.monotonic(), True))
        except Exception as exc:  # a failed connect, or the broken client's exit
            now = time.monotonic()
            calls.append(Call(era, number, now, now, False, f"connect: {exc}"))
        await asyncio.sleep(0.05)


def served(calls: list[Call]) -> int:
    """How many clients have had a call served (each client's calls share a ``client``)."""
    return len({c.client for c in calls if c.ok})


def row(calls: list[Call]) -> str:
    latencies = sorted((c.ended - c.started) * 1000 for c in calls if c.ok)
    errors = sum(not c.ok for c in calls)
    if len(latencies) >= 2:
        p50 = statistics.median(latencies)
        p99 = statistics.quantiles(latencies, n=100, method="inclusive")[98]
        shown = f"{p50:.0f} | {p99:.0f}"
    else:
        shown = "- | -"
    return f"{len(calls):,} | {errors} | {shown}"


@dataclass
class Stage:
    """What the events act on: the replicas and, with ``--store sentinel``, the Redis
    primary, its replica and three sentinels (``tests/_fixtures/redis_sentinel``)."""

    replicas: ReplicaSet
    sentinels: Any = None


async def kill(stage: Stage) -> None:
    """SIGKILL one replica; the event ends when HAProxy has taken it out."""
    replicas = stage.replicas
    victim = replicas.replicas[0]
    victim.kill()
    await asyncio.to_thread(replicas.balancer.wait_states, {replicas.server(victim): False})


async def rolling(stage: Stage) -> None:
    """SIGTERM each replica in turn, start its replacement, wait until HAProxy has it."""
    replicas = stage.replicas
    for replica in replicas.replicas:
        replica.signal(signal.SIGTERM)
        await asyncio.to_thread(replica.wait, 60)
        await asyncio.to_thread(replica.start)
        await asyncio.to_thread(replicas.all_up)


async def reload(stage: Stage) -> None:
    """A new group in the config file, then SIGHUP to every replica in turn; the event
    ends when the last one has logged that it applied the file."""
    replicas = stage.replicas
    config = replicas.replicas[0].config
    data = json.loads(config.read_text())
    groups = data["toolgate"].setdefault("groups", {})
    groups[f"extra{len(groups)}"] = {"description": "Added by a reload", "tools": ["whoami"]}
    config.write_text(json.dumps(data))
    await asyncio.to_thread(replicas.reload)


async def failover(stage: Stage) -> None:
    """SIGKILL the Redis primary; the event ends when the sentinels agree on the new one
    (the replicas fail closed meanwhile, then follow it)."""
    group = stage.sentinels
    assert group is not None, "the failover needs --store sentinel"
    old = await asyncio.to_thread(group.kill_primary)
    await asyncio.to_thread(
        group.wait_until, lambda: group.primary_port() not in (None, old), "a new primary"
    )


EVENTS: dict[str, Callable[[Stage], Awaitable[None]]] = {
    "kill": kill,
    "rolling": rolling,
    "reload": reload,
    "failover": failover,
}
TITLES = {
    "kill": "(a) one replica SIGKILLed (event: until HAProxy takes it out)",
    "rolling": "(b) rolling restart: SIGTERM, replacement, ready, per replica",
    "reload": "(c) reload (SIGHUP) of every replica, a group added",
    "failover": "(d) Redis primary SIGKILLed, Sentinel promotes its replica",
}


async def measure(stage: Stage, event: str, clients: dict[str, int]) -> list[str]:
    replicas = stage.replicas
    stop, calls = asyncio.Event(), list[Call]()
    loops = [
        asyncio.create_task(client_loop(replicas.url, era, number, stop, calls))
        for number, era in enumerate(era for era, n in clients.items() for _ in range(n))
    ]
    # every client connected and served once, then the "before" window
    deadline = time.monotonic() + 120
    while served(calls) < sum(clients.values()):
        assert time.monotonic() < deadline, "the clients never got going"
        await asyncio.sleep(0.1)
    before = time.monotonic()
    await asyncio.sleep(PHASE_S)
    begun = time.monotonic()
    await EVENTS[event](stage)
    ended = time.monotonic()
    await asyncio.sleep(PHASE_S)
    stop.set()
    await asyncio.gather(*loops)
    await asyncio.to_thread(replicas.all_up)  # a killed replica restarted, outside the windows
    rows = []
    for era in clients:
        mine = [c for c in calls if c.era == era]
        errors = Counter(c.error[:120] for c in mine if not c.ok and c.ended >= before)
        for error, count in errors.most_common():
            print(f"  {event} {era}: {count} x {error}", file=sys.stderr, flush=True)
        failed = [c.ended for c in mine if not c.ok and c.ended >= begun]
        recovered = f"{max(failed) - begun:.1f} s" if failed else "no error"
        # a call counts where it ended, when its client learned how it went
        phases = (
            [c for c in mine if before <= c.ended < begun],
            [c for c in mine if begun <= c.ended < ended],
            [c for c in mine if c.ended >= ended],
        )
        cells = " | ".join(row(p) for p in phases)
        rows.append(f"| {TITLES[event]} | {era} | {ended - begun:.1f} s | {cells} | {recovered} |")
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--events", default=",".join(EVENTS))
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--store", choices=("redis", "sentinel"), default="sentinel")
    ns = parser.parse_args()
    clients = {"2026-07-28": 6, "legacy": 4}
    events = ns.events.split(",")
    rows: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        stop_store, store = open_store(ns.store, Path(tmp))
        try:
            replicas = start_replicas(ReplicaSetup(Path(tmp), store.url, count=ns.replicas))
            stage = Stage(replicas, store.group)
            try:
                for event in events:
                    rows += await measure(stage, event, clients)
                    print(*rows[-len(clients) :], sep="\n", flush=True)
            finally:
                replicas.stop()
        finally:
            stop_store()
    load = os.getloadavg()[0]
    body = "\n".join(
        [
            "## Replicas behind HAProxy (`benchmarks/bench_replicas.py`)",
            "",
            f"{ns.replicas} `toolgate serve` replicas on {STORES[ns.store]} behind HAProxy "
            f"{haproxy_version()} running `deploy/haproxy.cfg` as shipped; "
            f"{clients['2026-07-28']} 2026-07-28 clients and {clients['legacy']} legacy "
            f"clients (fastmcp) each calling `work({WORK_MS} ms)` in a loop, reconnecting "
            f"after a failure (a legacy client: a new session). {PHASE_S:.0f} s before and "
            "after each event; *during* is the event itself; a call counts in the window it "
            "ended in. Columns: calls, errors, p50 and "
            "p99 latency in ms; *last error* is how long after the event began the last "
            "failure came. Measured "
            f"{time.strftime('%Y-%m-%d')} on a shared 2-core machine (load average "
            f"{load:.1f}), Python {platform.python_version()}: replicas share the two "
            "cores, so throughput does not grow with replicas; read errors and recovery. "
            f"`.venv/bin/python benchmarks/bench_replicas.py --store {ns.store} "
            f"--events {ns.events}`",
            "",
            "| event | clients | event took | before: calls | errors | p50 | p99 "
            "| during: calls | errors | p50 | p99 | after: calls | errors | p50 | p99 "
            "| last error |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
        ]
    )
    print(body)
    if not ns.no_write:
        write_section(RESULTS, BEGIN, END, body)


@dataclass
class Store:
    url: str
    group: Any = None


def open_store(kind: str, directory: Path) -> tuple[Callable[[], None], Store]:
    """One ``redis-server``, or a Sentinel group (a primary, a replica, three sentinels)."""
    if kind == "sentinel":
        from _fixtures.redis_sentinel import SentinelGroup

        group = SentinelGroup(directory)
        group.start()
        return group.stop, Store(group.url(), group)
    binary = shutil.which("redis-server")
    assert binary, "redis-server is needed"
    redis = RedisServer(binary, free_port(), directory)
    redis.start()
    return redis.stop, Store(redis.url)


def haproxy_version() -> str:
    out = subprocess.run(["haproxy", "-v"], capture_output=True, text=True).stdout
    return out.split()[2] if out else "?"


if __name__ == "__main__":
    asyncio.run(main())
