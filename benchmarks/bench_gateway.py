"""Gateway overhead and load: ``tools/call`` through ``toolgate serve`` vs. the backend.

Starts a FastMCP backend over streamable HTTP and ``toolgate serve`` (HTTP) in front of
it, then (1) alternates sequential calls direct/through the gateway for the median
overhead, (2) runs N concurrent clients for D seconds against the backend directly and
then through the gateway, in the same run: throughput of each, their ratio, p50/p99,
errors, and the TCP connections the gateway holds to the backend (``ss``); then the
same for each peer relay (``PEERS``; with ``--clients 0``, their overhead only). With
``--profile FILE`` the gateway runs under cProfile and its profile is written to FILE.
Writes its section of ``benchmarks/RESULTS.md`` unless ``--no-write``.
``--no-fast-path`` serves with ``toolgate.http.fast_path`` off (not written).
Run: ``.venv/bin/python benchmarks/bench_gateway.py [--clients 100] [--duration 30]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx2
import mcp
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
BEGIN, END = "<!-- gateway:begin -->", "<!-- gateway:end -->"


#: relays measured beside the gateway: (title, script taking ``BACKEND_URL --port N``)
PEERS = [
    ("FastMCP's proxy, `create_proxy`", "benchmarks/peer_fastmcp_proxy.py"),
    ("a bare relay on the SDK (one kept-open `ClientSession`)", "benchmarks/peer_sdk_relay.py"),
    ("an HTTP reverse proxy on asyncio streams, no MCP", "benchmarks/peer_http_proxy.py"),
    (
        "toolgate with the SDK's kernel, argument checks and events cut away (not for use)",
        "benchmarks/peer_toolgate_stripped.py",
    ),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


#: the protocol era the clients speak (``--era``): "legacy" (2025-11-25, sessions, the
#: SDK's ``ClientSession``) or "2026" (2026-07-28, stateless, the SDK's ``mcp.Client``)
ERA = "legacy"


class Connection:
    """One MCP client over streamable HTTP, of the era ``ERA`` names."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.stack = AsyncExitStack()
        self.session: ClientSession | None = None

    async def __aenter__(self) -> Any:
        if ERA == "2026":
            return await self.stack.enter_async_context(mcp.Client(self.url))
        http = await self.stack.enter_async_context(httpx2.AsyncClient(timeout=60))
        read, write = await self.stack.enter_async_context(
            streamable_http_client(self.url, http_client=http)
        )
        session = await self.stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        return session

    async def __aexit__(self, *exc: object) -> None:
        await self.stack.aclose()


def gateway_connections(gateway_pid: int, backend_port: int) -> int:
    """TCP connections the gateway process has open to the backend's port (``ss``)."""
    out = subprocess.run(
        ["ss", "-tnpH", "state", "established", "dport", f"= :{backend_port}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return sum(1 for line in out.splitlines() if f"pid={gateway_pid}," in line)


async def timed_call(session: Any) -> float:
    start = time.perf_counter()
    result = await session.call_tool("echo", {"text": "hello"})
    elapsed = time.perf_counter() - start
    if result.is_error:
        raise RuntimeError(f"call failed: {result.content}")
    return elapsed


async def overhead(
    direct_url: str, gateway_url: str, calls: int, relay_pid: int
) -> dict[str, float]:
    """Median of sequential calls, alternating direct and through the relay, and the
    relay's CPU per call meanwhile (it is idle while the direct calls run)."""
    async with Connection(direct_url) as direct, Connection(gateway_url) as gateway:
        for _ in range(20):  # warm both paths
            await timed_call(direct)
            await timed_call(gateway)
        d: list[float] = []
        g: list[float] = []
        cpu = cpu_seconds(relay_pid)
        for _ in range(calls):
            d.append(await timed_call(direct))
            g.append(await timed_call(gateway))
        cpu = cpu_seconds(relay_pid) - cpu
    return {
        "direct_ms": statistics.median(d) * 1000,
        "gateway_ms": statistics.median(g) * 1000,
        "overhead_ms": (statistics.median(g) - statistics.median(d)) * 1000,
        "relay_cpu_ms_per_call": cpu / calls * 1000,
    }


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def load(
    url: str,
    clients: int,
    duration: float,
    probe: Callable[[], int] | None = None,
    pids: dict[str, int] | None = None,
) -> dict[str, float]:
    """``clients`` sessions calling ``echo`` back to back for ``duration`` seconds (calls
    that end later are not counted); ``probe`` (connections to the backend) is sampled
    halfway through; the CPU time each process in ``pids`` (and this one) spends over
    the window is reported per call."""
    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + duration
    ready = asyncio.Barrier(clients + 1)
    sampled: list[int] = []

    async def sample() -> None:
        if probe is not None:
            await asyncio.sleep(duration / 2)
            sampled.append(await asyncio.to_thread(probe))

    async def worker() -> None:
        nonlocal errors
        connection = Connection(url)
        try:
            session = await connection.__aenter__()
        except BaseException:
            await ready.abort()  # a client that cannot connect must not hang the others
            raise
        try:
            await ready.wait()
            while time.perf_counter() < stop:
                try:
                    latency = await timed_call(session)
                except Exception:
                    errors += 1
                else:
                    if time.perf_counter() <= stop:
                        latencies.append(latency)
        finally:
            await connection.__aexit__(None, None, None)

    tasks = [asyncio.create_task(worker()) for _ in range(clients)]
    pids = {**(pids or {}), "client": os.getpid()}
    await ready.wait()  # every client connected: the window counts calls only
    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    start = time.perf_counter()
    stop = start + duration

    async def window() -> dict[str, float]:
        await asyncio.sleep(duration)
        return {name: cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}

    cpu = (await asyncio.gather(sample(), window(), *tasks))[1]
    assert isinstance(cpu, dict)
    latencies.sort()
    done = len(latencies)
    calls = max(done, 1)
    if not latencies:  # nothing finished inside the window
        latencies = [float("nan")]
    return {
        **{f"cpu_ms_per_call_{name}": used / calls * 1000 for name, used in cpu.items()},
        "connections": sampled[0] if sampled else -1,
        "calls": done,
        "errors": errors,
        "throughput": done / duration,
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000,
        "max_ms": latencies[-1] * 1000,
    }


def gateway_config(backend_url: str, clients: int) -> dict[str, Any]:
    """The gateway the benchmarks measure: the backend's tools always shown, events not
    logged, and a session for each of ``clients`` (all from 127.0.0.1)."""
    return {
        "mcpServers": {"math": {"url": backend_url}},
        "toolgate": {
            "always": ["math:*"],
            "events": {"logging": False},
            "http": {"max_sessions_per_client": max(32, clients + 8)},
        },
    }


def start_backend(port: int, tmp: Path, procs: list[Any]) -> subprocess.Popen[bytes]:
    """The benchmark's backend (``tests/servers/gw_math.py`` over HTTP), listening."""
    backend = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/servers/gw_math.py"), "--http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=(tmp / "backend.log").open("wb"),
    )
    procs.append(backend)
    wait_port(port, backend)
    return backend


def start_peer(
    script: str, backend_url: str, tmp: Path, env: dict[str, str], procs: list[Any]
) -> tuple[subprocess.Popen[bytes], str]:
    """A peer relay in front of the backend, listening (added to ``procs``, to be
    stopped with the rest); and its MCP endpoint."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / script), backend_url, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=(tmp / f"{Path(script).stem}.log").open("wb"),
        env=env,
    )
    procs.append(proc)
    wait_port(port, proc)
    return proc, f"http://127.0.0.1:{port}/mcp"


def write_results(text: str) -> None:
    current = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    section = f"{BEGIN}\n{text.rstrip()}\n{END}"
    if BEGIN in current and END in current:
        head, rest = current.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        current = head + section + tail
    else:
        current = current.rstrip() + "\n\n" + section + "\n"
    RESULTS.write_text(current)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument(
        "--era", choices=("legacy", "2026"), default="legacy", help="the clients' protocol era"
    )
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--profile", type=Path, help="run the gateway under cProfile into FILE")
    parser.add_argument("--label", default="", help="a note for the results (e.g. the commit)")
    parser.add_argument(
        "--no-peers", action="store_true", help="skip the peer relays (measured after the gateway)"
    )
    parser.add_argument(
        "--no-fast-path",
        action="store_true",
        help="serve with toolgate.http.fast_path off: every request through the SDK's transport",
    )
    args = parser.parse_args()
    global ERA
    ERA = args.era
    if ERA != "legacy":
        args.no_write = True  # the written section describes legacy clients
    tmp = Path(tempfile.mkdtemp(prefix="bench-gateway-"))
    backend_port, gateway_port = free_port(), free_port()
    peers: dict[str, tuple[str, dict[str, float]]] = {}
    backend_url = f"http://127.0.0.1:{backend_port}/mcp"
    config = gateway_config(backend_url, args.clients)
    if args.no_fast_path:
        config["toolgate"]["http"]["fast_path"] = False
        args.no_write = True  # the written section describes the gateway as it ships
    (tmp / "toolgate.json").write_text(json.dumps(config))
    env = {**os.environ}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        backend = start_backend(backend_port, tmp, procs)
        profiler = ["-m", "cProfile", "-o", str(args.profile), "-m"] if args.profile else ["-m"]
        serve = [sys.executable, *profiler, "toolgate.cli", "serve", str(tmp / "toolgate.json")]
        gateway = subprocess.Popen(
            [*serve, "--transport", "http", "--port", str(gateway_port), "--log-level", "warning"],
            stdout=subprocess.DEVNULL,
            stderr=(tmp / "gateway.log").open("wb"),
            env=env,
        )
        procs.append(gateway)
        wait_port(gateway_port, gateway)
        gateway_url = f"http://127.0.0.1:{gateway_port}/mcp"
        over = await overhead(backend_url, gateway_url, args.calls, gateway.pid)
        print(json.dumps(over), flush=True)
        if args.clients == 0:  # overhead only (e.g. to profile the per-call path)
            for title, script in [] if args.no_peers else PEERS:
                proc, url = start_peer(script, backend_url, tmp, env, procs)
                print(json.dumps({title: await overhead(backend_url, url, args.calls, proc.pid)}))
            return
        direct = await load(backend_url, args.clients, args.duration, pids={"backend": backend.pid})
        print(json.dumps({"direct": direct}), flush=True)
        probe = lambda: gateway_connections(gateway.pid, backend_port)  # noqa: E731
        loaded = await load(
            gateway_url,
            args.clients,
            args.duration,
            probe,
            pids={"backend": backend.pid, "gateway": gateway.pid},
        )
        print(json.dumps({"gateway": loaded}), flush=True)
        for title, script in [] if args.no_peers else PEERS:
            # a peer relay in front of the same backend, same clients, same run
            proc, url = start_peer(script, backend_url, tmp, env, procs)
            measured = await overhead(backend_url, url, args.calls, proc.pid)
            pids = {"backend": backend.pid, "relay": proc.pid}
            measured.update(await load(url, args.clients, args.duration, pids=pids))
            peers[title] = (script, measured)
            print(json.dumps({title: measured}), flush=True)
    finally:
        for p in reversed(procs):  # the gateway first: a profile is written as it exits
            # SIGINT: uvicorn re-raises the signal it stopped on, and only an interrupt
            # (not SIGTERM's default action) lets cProfile write its file
            p.send_signal(signal.SIGINT)
            p.wait(timeout=30)
    ratio = loaded["throughput"] / max(direct["throughput"], 1e-9)
    print(json.dumps({"throughput_ratio": ratio}))
    load_avg = os.getloadavg()[0]
    label = f" ({args.label})" if args.label else ""
    table = f"""## Gateway (`toolgate serve`, streamable HTTP)

`.venv/bin/python benchmarks/bench_gateway.py --clients {args.clients} \
--duration {args.duration:g}`{label}: a FastMCP backend (`tests/servers/gw_math.py`,
`echo`) over streamable HTTP, `toolgate serve` (HTTP, strategy auto, events logging off)
in front of it; clients are `mcp.ClientSession` over streamable HTTP, legacy protocol, in
one Python process on the same machine ({os.cpu_count()} CPUs, \
{platform.python_version()}, 1-minute load average at the end: {load_avg:.1f}).

| measurement | value | target |
|---|---|---|
| median `tools/call`, direct to the backend | {over["direct_ms"]:.2f} ms | |
| median `tools/call`, through the gateway | {over["gateway_ms"]:.2f} ms | |
| gateway overhead per call (difference of medians, {args.calls} alternating calls) \
| {over["overhead_ms"]:.2f} ms | ≤ 1 ms |
| gateway CPU per call meanwhile (unloaded) | {over["relay_cpu_ms_per_call"]:.2f} ms | |
| {args.clients} clients for {args.duration:g} s, direct: calls/s (p50, p99) \
| {direct["throughput"]:.0f} ({direct["p50_ms"]:.0f} ms, {direct["p99_ms"]:.0f} ms) | |
| {args.clients} clients for {args.duration:g} s, through the gateway: calls/s (p50, p99) \
| {loaded["throughput"]:.0f} ({loaded["p50_ms"]:.0f} ms, {loaded["p99_ms"]:.0f} ms) | |
| throughput, gateway / direct (same run) | {ratio:.2f} | ≥ 0.9 |
| errors (direct, gateway) | {direct["errors"]:.0f}, {loaded["errors"]:.0f} | 0 |
| TCP connections gateway → backend under load (`ss`) | {loaded["connections"]:.0f} | pooled |
| CPU per call, direct: client, backend | {direct["cpu_ms_per_call_client"]:.2f} ms, \
{direct["cpu_ms_per_call_backend"]:.2f} ms | |
| CPU per call, through the gateway: client, gateway, backend \
| {loaded["cpu_ms_per_call_client"]:.2f} ms, {loaded["cpu_ms_per_call_gateway"]:.2f} ms, \
{loaded["cpu_ms_per_call_backend"]:.2f} ms | |
"""
    if peers:
        table += """
The same backend and clients through other relays, measured after the gateway in the
same run (their throughput over the direct one above):

| relay | median `tools/call` (overhead) | relay CPU per call, unloaded \
| calls/s (p50, p99) | throughput / direct | CPU per call: client, relay, backend |
|---|---|---|---|---|---|
"""
        for title, (script, m) in peers.items():
            rate = (
                f"{m['throughput']:.0f} ({m['p50_ms']:.0f} ms, {m['p99_ms']:.0f} ms)"
                if m["calls"]
                else f"none finished in {args.duration:g} s"
            )
            table += (
                f"| {title} (`{script}`) | {m['gateway_ms']:.2f} ms ({m['overhead_ms']:.2f} ms) "
                f"| {m['relay_cpu_ms_per_call']:.2f} ms | {rate} "
                f"| {m['throughput'] / max(direct['throughput'], 1e-9):.2f} "
                + (
                    f"| {m['cpu_ms_per_call_client']:.2f}, {m['cpu_ms_per_call_relay']:.2f}, "
                    f"{m['cpu_ms_per_call_backend']:.2f} ms |\n"
                    if m["calls"]
                    else "| — |\n"
                )
            )
    print(table)
    if not args.no_write:
        write_results(table)


if __name__ == "__main__":
    asyncio.run(main())
