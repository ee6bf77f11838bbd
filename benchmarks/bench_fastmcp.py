"""toolgate on FastMCP vs. plain FastMCP vs. FastMCP's own per-session visibility.

One run, one 1,000-tool catalog (50 groups of 20), FastMCP's in-memory transport, a
legacy-protocol ``fastmcp.Client``. Measures the median ``tools/list`` and ``tools/call``
latency of a session with one group open, and the tokens of the initial list, as
ratios to plain FastMCP; writes the table to benchmarks/RESULTS.md.

    .venv/bin/python benchmarks/bench_fastmcp.py [--rounds 100] [--no-write]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastmcp import Client, Context, FastMCP

from toolgate import Group, ToolSet
from toolgate.fastmcp import ToolgateMiddleware
from toolgate.strategies import DeliveryConfig
from toolgate.tokens import TokenCounter, best_counter, model_text

GROUPS = 50
PER_GROUP = 20
RESULTS = Path(__file__).parent / "RESULTS.md"
BEGIN, END = "<!-- fastmcp:begin -->", "<!-- fastmcp:end -->"
OPEN_GROUP = "g07"
CALLED = "g07_t03"


def add_tools(mcp: FastMCP[Any]) -> None:
    """The same 1,000 tools on every server, tagged with their group."""
    for g in range(GROUPS):
        for t in range(PER_GROUP):
            name = f"g{g:02d}_t{t:02d}"

            def run(x: int, label: str = "", _name: str = name) -> str:
                return f"{_name}({x}, {label})"

            mcp.tool(
                run,
                name=name,
                description=f"Tool {t} of group {g}: combine the number x with an "
                "optional label and report what happened.",
                tags={f"g{g:02d}"},
            )


def plain() -> FastMCP[Any]:
    mcp: FastMCP[Any] = FastMCP("plain")
    add_tools(mcp)
    return mcp


def visibility() -> FastMCP[Any]:
    """FastMCP's own disclosure: every group's tools hidden, enabled per session."""
    mcp: FastMCP[Any] = FastMCP("visibility")
    add_tools(mcp)

    @mcp.tool
    async def open_group(group: str, ctx: Context) -> str:
        """Show the tools of one group in this session."""
        await ctx.enable_components(tags={group})
        return f"opened {group}"

    mcp.disable(tags={f"g{g:02d}" for g in range(GROUPS)})
    return mcp


def toolgate() -> FastMCP[Any]:
    mcp: FastMCP[Any] = FastMCP("toolgate")
    add_tools(mcp)
    ts = ToolSet(page_size=2000)
    ts.add_groups(Group(f"g{g:02d}", f"Group {g}") for g in range(GROUPS))
    ToolgateMiddleware(ts, DeliveryConfig(strategy="list_changed")).attach(mcp)
    return mcp


async def medians_ms(ops: list[Callable[[], Awaitable[Any]]], rounds: int) -> list[float]:
    """Median latency of each op, interleaved round by round so that a busy machine
    slows every server alike."""
    for _ in range(min(20, rounds)):
        for op in ops:
            await op()
    samples: list[list[float]] = [[] for _ in ops]
    gc.collect()
    for r in range(rounds):
        order = list(range(len(ops)))
        order = order[r % len(ops) :] + order[: r % len(ops)]
        for i in order:
            t0 = time.perf_counter()
            await ops[i]()
            samples[i].append(time.perf_counter() - t0)
    return [statistics.median(s) * 1000 for s in samples]


def list_tokens(tools: list[Any], counter: TokenCounter) -> int:
    """What the model reads of a list: each tool's name, description and input schema."""
    return sum(
        counter.count(model_text(t.model_dump(by_alias=True, exclude_none=True, mode="json")))
        for t in tools
    )


@dataclass
class Subject:
    name: str
    server: FastMCP[Any]
    opener: tuple[str, dict[str, Any]] | None


async def measure(
    subjects: list[Subject], rounds: int, counter: TokenCounter
) -> list[dict[str, Any]]:
    async with contextlib.AsyncExitStack() as stack:
        rows: list[dict[str, Any]] = []
        clients = []
        for s in subjects:
            client = await stack.enter_async_context(Client(s.server, mode="legacy"))
            initial = (await client.list_tools_mcp()).tools
            if s.opener is not None:
                await client.call_tool_mcp(*s.opener)
            listed = (await client.list_tools_mcp()).tools
            assert CALLED in [t.name for t in listed], f"{s.name}: {CALLED} not listed"
            result = await client.call_tool_mcp(CALLED, {"x": 1})
            assert not result.is_error, result
            clients.append(client)
            rows.append(
                {
                    "name": s.name,
                    "initial_tools": len(initial),
                    "initial_tokens": list_tokens(list(initial), counter),
                    "open_tools": len(listed),
                    "tokenizer": counter.name,
                }
            )
        lists = await medians_ms([c.list_tools_mcp for c in clients], rounds)
        calls = await medians_ms(
            [lambda c=c: c.call_tool_mcp(CALLED, {"x": 1}) for c in clients], rounds
        )
    for row, list_ms, call_ms in zip(rows, lists, calls, strict=True):
        row["list_ms"], row["call_ms"] = list_ms, call_ms
    return rows


def table(rows: list[dict[str, Any]], rounds: int) -> str:
    base = rows[0]
    lines = [
        f"1,000 tools ({GROUPS} groups of {PER_GROUP}), FastMCP in-memory transport, "
        f"legacy-protocol `fastmcp.Client`, median of {rounds} requests per server after "
        "warm-up, interleaved; "
        f"a session with one group open. Tokens: {base['tokenizer']}. "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}.",
        "",
        "| server | initial list | initial tokens | vs plain | tools/list (one group open) "
        "| vs plain | tools/call | vs plain |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['initial_tools']} tools | {r['initial_tokens']:,} "
            f"| {r['initial_tokens'] / base['initial_tokens']:.3f} "
            f"| {r['list_ms']:.3f} ms ({r['open_tools']} tools) "
            f"| {r['list_ms'] / base['list_ms']:.2f} "
            f"| {r['call_ms']:.3f} ms | {r['call_ms'] / base['call_ms']:.2f} |"
        )
    tg, vis = rows[2], rows[1]
    lines += [
        "",
        f"Targets: toolgate call <= 1.15x plain FastMCP - "
        f"{'met' if tg['call_ms'] <= 1.15 * base['call_ms'] else 'MISSED'} "
        f"({tg['call_ms'] / base['call_ms']:.2f}x); toolgate list faster than FastMCP's own "
        f"per-session visibility - {'met' if tg['list_ms'] < vis['list_ms'] else 'MISSED'} "
        f"({tg['list_ms']:.3f} vs {vis['list_ms']:.3f} ms).",
    ]
    return "\n".join(lines)


def write(section: str) -> None:
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    block = f"{BEGIN}\n{section}\n{END}"
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    RESULTS.write_text(text)


async def main(rounds: int) -> str:
    tokenizers = Path(__file__).resolve().parents[2] / "shared" / "data" / "tokenizers"
    counter = best_counter(vocab_dir=tokenizers if tokenizers.is_dir() else None)
    subjects = [
        Subject("plain FastMCP (everything listed)", plain(), None),
        Subject(
            "FastMCP per-session visibility (`ctx.enable_components`)",
            visibility(),
            ("open_group", {"group": OPEN_GROUP}),
        ),
        Subject(
            "toolgate (`list_changed`)", toolgate(), ("enable_tools", {"groups": [OPEN_GROUP]})
        ),
    ]
    return table(await measure(subjects, rounds, counter), rounds)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--no-write", action="store_true")
    ns = parser.parse_args()
    import logging

    logging.getLogger("toolgate.fastmcp").setLevel(logging.ERROR)
    result = asyncio.run(main(ns.rounds))
    print(result)
    if not ns.no_write:
        write(result)
        print(f"\nwritten to {RESULTS}", file=sys.stderr)
