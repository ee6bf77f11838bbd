"""What one backend's two protocol eras cost it: ``tools/call`` on a legacy session vs.
as a 2026-07-28 request, from one raw HTTP client (no MCP client library in the way).

Starts the gateway benchmark's FastMCP backend (``tests/servers/gw_math.py``) over
streamable HTTP, opens one legacy session on it, then alternates ``echo`` calls of the
two kinds on one kept-open connection and prints the median of each. The gateway sends a
call that can be asked nothing in the era its client speaks (docs/decisions.md), so this
is what decides whether a 2026-07-28 client's calls cost the backend more through the
gateway than directly. Prints only; the numbers go into ``benchmarks/RESULTS.md`` by hand.
Run: ``.venv/bin/python benchmarks/bench_backend_eras.py [--calls 2000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import fastmcp
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gateway import ROOT, free_port, wait_port

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}


async def timed(
    http: httpx2.AsyncClient, url: str, headers: Mapping[str, str], params: dict[str, Any]
) -> float:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    start = time.perf_counter()
    response = await http.post(url, headers=dict(headers), json=body)
    elapsed = time.perf_counter() - start
    if b'"hello"' not in response.content or b'"isError":true' in response.content:
        raise RuntimeError(f"the call failed: {response.content[:200]!r}")
    return elapsed


async def measure(url: str, calls: int) -> dict[str, float]:
    async with httpx2.AsyncClient(timeout=30) as http:
        init = {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        }
        first = await http.post(
            url,
            headers=ACCEPT,
            json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
        )
        session = {
            **ACCEPT,
            "mcp-session-id": first.headers["mcp-session-id"],
            "mcp-protocol-version": LEGACY,
        }
        await http.post(
            url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        modern = {
            **ACCEPT,
            "mcp-protocol-version": MODERN,
            "mcp-method": "tools/call",
            "mcp-name": "echo",
        }
        call = {"name": "echo", "arguments": {"text": "hello"}}
        legacy_times: list[float] = []
        modern_times: list[float] = []
        for i in range(calls + 50):  # the first 50 of each warm the paths
            one = await timed(http, url, session, call)
            other = await timed(http, url, modern, {**call, "_meta": ENVELOPE})
            if i >= 50:
                legacy_times.append(one)
                modern_times.append(other)
    return {
        "legacy_ms": statistics.median(legacy_times) * 1000,
        "modern_ms": statistics.median(modern_times) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    port = free_port()
    backend = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/servers/gw_math.py"), "--http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port, backend)
        result = asyncio.run(measure(f"http://127.0.0.1:{port}/mcp", args.calls))
    finally:
        backend.terminate()
        backend.wait(10)
    print(json.dumps({"fastmcp": fastmcp.__version__, "calls": args.calls, **result}))


if __name__ == "__main__":
    main()
