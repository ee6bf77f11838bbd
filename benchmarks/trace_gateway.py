"""Where an unloaded ``tools/call`` spends its time inside ``toolgate serve``, per era.

Starts the backend of ``bench_gateway.py`` and the gateway in front of it, the gateway
with every socket read and write of its event loop timestamped (``perf_counter_ns``,
in its own process). One client makes sequential calls; for each, the trace gives:

- ``in → backend``: from the client's request arriving to the call written to the
  backend (the edge, the lane, the pipeline, the hop);
- ``backend``: from that write to the last bytes of the backend's answer read before
  the reply (a legacy backend's SSE stream ends after its answer; that end is not
  waited for);
- ``answer → out``: from those bytes to the reply written to the client;
- ``in → out``: the gateway's whole time for the call.

Run: ``.venv/bin/python benchmarks/trace_gateway.py [--era 2026] [--calls 2000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_gateway as bench

ROOT = Path(__file__).resolve().parents[1]
QUIET = ["--log-level", "warning"]
SEGMENTS = ("in_backend", "backend", "answer_out", "in_out")


def serve_traced(config: str, port: int, out: str) -> None:
    """Run ``toolgate serve`` with its socket reads and writes timestamped; the trace
    (time, "r" or "w", peer port, local port) is written to ``out`` at exit."""
    import asyncio.selector_events as se

    from toolgate.cli import main

    trace: list[tuple[int, str, int, int]] = []
    transport = se._SelectorSocketTransport
    write, read = transport.write, transport._read_ready__data_received

    def ports(t: Any) -> tuple[int, int]:
        return t._extra.get("peername", ("", 0))[1], t._extra.get("sockname", ("", 0))[1]

    def traced_write(self: Any, data: Any) -> None:
        trace.append((time.perf_counter_ns(), "w", *ports(self)))
        write(self, data)

    def traced_read(self: Any) -> None:
        trace.append((time.perf_counter_ns(), "r", *ports(self)))
        read(self)

    transport.write = traced_write  # type: ignore[method-assign]
    transport._read_ready__data_received = traced_read  # type: ignore[method-assign]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        main(["serve", config, "--transport", "http", "--port", str(port), *QUIET])
    finally:
        Path(out).write_text(json.dumps(trace))


def segments(trace: list[list[Any]], backend: int, gateway: int, last: int) -> dict[str, float]:
    """Median microseconds of each segment over the ``last`` calls of the trace."""
    calls: list[list[tuple[int, str]]] = []
    for t, kind, peer, local in trace:
        if local == gateway and kind == "r":
            event = "in"
        elif local == gateway:
            event = "out"
        elif peer == backend:
            event = "b" + kind
        else:
            continue
        if event == "in" and (not calls or any(e == "out" for _, e in calls[-1])):
            calls.append([])  # a new call begins with the first read of its request
        if calls:
            calls[-1].append((t, event))
    parts: dict[str, list[float]] = {k: [] for k in SEGMENTS}
    for call in calls[-last:]:
        sent = [t for t, e in call if e == "bw"]
        out = [t for t, e in call if e == "out"]
        if not sent or not out:
            continue
        answers = [t for t, e in call if e == "br" and sent[0] < t < out[-1]]
        if not answers:
            continue
        start = call[0][0]
        parts["in_backend"].append(sent[0] - start)
        parts["backend"].append(answers[-1] - sent[0])
        parts["answer_out"].append(out[-1] - answers[-1])
        parts["in_out"].append(out[-1] - start)
    return {k: statistics.median(v) / 1000 for k, v in parts.items() if v} | {
        "calls": float(len(parts["in_out"]))
    }


async def run(era: str, calls: int) -> dict[str, float]:
    bench.ERA = era
    tmp = Path(tempfile.mkdtemp(prefix="trace-gateway-"))
    backend_port, gateway_port = bench.free_port(), bench.free_port()
    backend_url = f"http://127.0.0.1:{backend_port}/mcp"
    (tmp / "toolgate.json").write_text(json.dumps(bench.gateway_config(backend_url, 1)))
    out = tmp / "trace.json"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        bench.start_backend(backend_port, tmp, procs)
        serve = [sys.executable, __file__, "--serve", str(tmp / "toolgate.json")]
        gateway = subprocess.Popen(
            [*serve, "--port", str(gateway_port), "--out", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=(tmp / "gateway.log").open("wb"),
        )
        procs.append(gateway)
        bench.wait_port(gateway_port, gateway)
        took: list[float] = []
        async with bench.Connection(f"http://127.0.0.1:{gateway_port}/mcp") as session:
            for _ in range(200):  # warm up
                await bench.timed_call(session)
            for _ in range(calls):
                took.append(await bench.timed_call(session))
    finally:
        for proc in reversed(procs):
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    trace = json.loads(out.read_text())
    measured = segments(trace, backend_port, gateway_port, calls)
    measured["client_median"] = statistics.median(took) * 1e6
    return measured


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--era", choices=("legacy", "2026"), default="2026")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # the traced gateway's own run
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_traced(args.serve, args.port, args.out)
        return
    m = asyncio.run(run(args.era, args.calls))
    print(json.dumps({k: round(v, 1) for k, v in m.items()}))
    print(
        f"{args.era}, {m['calls']:.0f} calls, medians: in → backend {m['in_backend']:.0f} µs, "
        f"backend {m['backend']:.0f} µs, answer → out {m['answer_out']:.0f} µs, "
        f"in → out {m['in_out']:.0f} µs (the client's call: {m['client_median']:.0f} µs)"
    )


if __name__ == "__main__":
    main()
