"""``tools/list`` latency through the real gateway, state in Redis vs. memory:
``python benchmarks/bench_store_list.py``.

Starts a ``redis-server`` (``bench_stores.redis_server``) and, per store, one
``toolgate serve --transport http`` process in front of the test backends
(``tests/servers/gw_notes.py``, ``gw_math.py``) with a bearer token. A client times
sequential ``tools/list`` requests after a warm-up, on both protocol eras: legacy (the
MCP session id keys the state; one group enabled, so every list reads it) and
2026-07-28 (stateless HTTP; the principal keys the state). Writes a markdown table into
``benchmarks/RESULTS.md`` between the ``store-list`` markers (only that section).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_stores import _free_port as free_port
from bench_stores import redis_server
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

ROOT = Path(__file__).resolve().parents[1]
SERVERS = ROOT / "tests" / "servers"
RESULTS = Path(__file__).with_name("RESULTS.md")
BEGIN, END = "<!-- store-list:begin -->", "<!-- store-list:end -->"
TOKEN = "bench-secret-token"


@dataclass
class Row:
    store: str
    protocol: str
    tools: int
    p50_ms: float
    p99_ms: float
    mean_ms: float


def write_config(directory: Path, store: str) -> Path:
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    config = {
        "mcpServers": {
            "notes": {"command": sys.executable, "args": [str(SERVERS / "gw_notes.py")]},
            "math": {"command": sys.executable, "args": [str(SERVERS / "gw_math.py")]},
        },
        "toolgate": {
            "groups": {
                "notes": {"description": "Take notes", "tools": ["notes:note_*"]},
                "math": {"description": "Arithmetic", "tools": ["math:*"]},
            },
            "identity": {"tokens": {digest: {"id": "bench", "trust": "verified"}}},
            "events": {"logging": False},
            "store": store,
        },
    }
    path = directory / f"toolgate-{store.split(':')[0]}.json"
    path.write_text(json.dumps(config, indent=2))
    return path


@contextmanager
def gateway(config: Path, log: Path) -> Iterator[str]:
    port = free_port()
    script = Path(sys.executable).parent / "toolgate"
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "toolgate.cli"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*argv, "serve", str(config), "--transport", "http", "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(os.environ),
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                sys.exit(f"toolgate exited with {process.returncode}:\n{log.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit(f"toolgate did not listen on {port}")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(url: str, store: str, mode: str, requests: int, warmup: int) -> Row:
    transport = StreamableHttpTransport(url, auth=TOKEN)
    async with Client(transport, mode=mode) as client:
        if mode == "legacy":
            await client.call_tool_mcp("enable_tools", {"groups": ["math"]})
        tools: list[Any] = []
        for _ in range(warmup):
            tools = await client.list_tools()
        samples: list[float] = []
        for _ in range(requests):
            start = time.perf_counter()
            tools = await client.list_tools()
            samples.append((time.perf_counter() - start) * 1000)
    protocol = "legacy (2025-11-25)" if mode == "legacy" else "2026-07-28"
    return Row(
        store,
        protocol,
        len(tools),
        statistics.median(samples),
        percentile(samples, 0.99),
        statistics.fmean(samples),
    )


def table(rows: list[Row], requests: int, warmup: int) -> str:
    lines = [
        f"`tools/list` through `toolgate serve --transport http` (two stdio backends, bearer "
        f"token), {requests:,} sequential requests per row after {warmup} warm-up, one "
        "`fastmcp.Client`; the same run for both stores. "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}. "
        "`benchmarks/bench_store_list.py`.",
        "",
        "| store | protocol | tools listed | p50 | p99 | mean |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.store} | {r.protocol} | {r.tools} | {r.p50_ms:.2f} ms | "
            f"{r.p99_ms:.2f} ms | {r.mean_ms:.2f} ms |"
        )
    return "\n".join(lines)


def write_section(markdown: str) -> None:
    section = f"{BEGIN}\n{markdown}\n{END}"
    text = RESULTS.read_text()  # re-read: other benchmarks write their own sections
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        RESULTS.write_text(head + section + tail)
    else:
        RESULTS.write_text(text.rstrip("\n") + f"\n\n{section}\n")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=1_000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    rows: list[Row] = []
    with redis_server() as port, tempfile.TemporaryDirectory() as directory:
        tmp = Path(directory)
        for name, store in (("memory", "memory://"), ("redis", f"redis://127.0.0.1:{port}/0")):
            with gateway(write_config(tmp, store), tmp / f"{name}.log") as url:
                for mode in ("legacy", "auto"):
                    rows.append(await measure(url, name, mode, args.requests, args.warmup))
    markdown = table(rows, args.requests, args.warmup)
    print(markdown)
    if not args.no_write:
        write_section(markdown)


if __name__ == "__main__":
    asyncio.run(main())
