"""Core benchmark: listing, view computation, activation, dispatch and session memory.

Runs the framework-independent core (catalog, view, toolset, memory store) on catalogs of
100, 1,000 and 10,000 tools (a tenth as many groups, three levels deep) and writes a table
to ``benchmarks/RESULTS.md`` between the ``core`` markers. Imports no MCP framework.
Run: ``.venv/bin/python benchmarks/bench_core.py``.
"""

from __future__ import annotations

import asyncio
import gc
import math
import re
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolgate import CallContext, Group, MemoryStore, Principal, Tool, ToolSet

RESULTS = Path(__file__).with_name("RESULTS.md")
BEGIN, END = "<!-- core:begin -->", "<!-- core:end -->"
SIZES = (100, 1_000, 10_000)
SESSIONS_FOR_MEMORY = 10_000
TARGETS = {
    "cached_list_ms": 0.2,
    "uncached_view_ms": 5.0,
    "activate_ms": 1.0,
    "dispatch_overhead_us": 50.0,
    "session_bytes": 2048.0,
}
SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}}


def trivial(args: Mapping[str, Any], ctx: CallContext) -> str:
    return "ok"


@dataclass(frozen=True)
class Shape:
    """Three levels: 1% top-level groups, 9% second level, 90% leaves; 10 tools each."""

    tools: int

    @property
    def groups(self) -> int:
        return self.tools // 10

    def build(self) -> tuple[ToolSet, list[str], list[str]]:
        n = self.groups
        top = [f"top{i}" for i in range(max(1, math.ceil(n * 0.01)))]
        mid = [f"mid{i}" for i in range(max(1, math.ceil(n * 0.09)))]
        leaves = [f"leaf{i}" for i in range(n - len(top) - len(mid))]
        groups = [Group(g, f"Group {g}.") for g in top]
        groups += [Group(g, f"Group {g}.", parent=top[i % len(top)]) for i, g in enumerate(mid)]
        groups += [Group(g, f"Group {g}.", parent=mid[i % len(mid)]) for i, g in enumerate(leaves)]
        ts = ToolSet()
        ts.add_groups(groups)
        ts.add_tools(
            Tool(
                f"{g.name}_tool{j}",
                f"Tool {j} of {g.name}. Does one thing well.",
                handler=trivial,
                input_schema=SCHEMA,
                groups=(g.name,),
            )
            for g in groups
            for j in range(10)
        )
        # the leaves under mid0, in order: a session enables top0, mid0 and three of them
        under_mid0 = [g for i, g in enumerate(leaves) if i % len(mid) == 0]
        return ts, ["top0", "mid0", *under_mid0[:3]], under_mid0[3:]


ROUNDS = 5


async def median_ns(fn: Callable[[], Awaitable[Any]], reps: int) -> float:
    """The lowest of ``ROUNDS`` medians of ``reps`` timed calls: a shared machine's noise
    only ever adds time, so the quietest round is the closest to the code's own cost."""
    for _ in range(min(50, reps)):  # warm up
        await fn()
    medians = []
    for _ in range(ROUNDS):
        samples = []
        for _ in range(reps):
            t0 = time.perf_counter_ns()
            await fn()
            samples.append(time.perf_counter_ns() - t0)
        medians.append(statistics.median(samples))
    return min(medians)


async def measure(size: int) -> dict[str, float]:
    ts, enabled, spare = Shape(size).build()
    s = ts.session("bench")
    result = await s.activate(enabled)
    assert not result.errors, result.errors
    visible = len(await s.list_tools())
    out: dict[str, float] = {"tools": size, "groups": len(ts.catalog.groups), "visible": visible}

    async def cached_list() -> Any:
        return await s.list_tools()

    async def uncached_view() -> Any:
        ts.views.clear()
        return await s.list_tools()

    out["cached_list_ms"] = await median_ns(cached_list, 2000) / 1e6
    out["uncached_view_ms"] = await median_ns(uncached_view, 500) / 1e6

    # activation: a leaf whose parent is active, from a cold view cache each time
    leaf = spare[0] if spare else enabled[-1]
    if not spare:
        await s.deactivate([leaf])
    medians = []
    for _ in range(ROUNDS):
        samples = []
        for _ in range(400):
            ts.views.clear()
            t0 = time.perf_counter_ns()
            r = await s.activate([leaf])
            samples.append(time.perf_counter_ns() - t0)
            assert r.changed == (leaf,)
            await s.deactivate([leaf])
        medians.append(statistics.median(samples))
    out["activate_ms"] = min(medians) / 1e6

    name = f"{enabled[0]}_tool0"
    tool = ts.catalog.tools[name]
    assert tool.handler is not None
    handler = tool.handler
    args = {"x": 1}
    ctx = CallContext(name, "bench", s.principal)

    async def direct() -> Any:
        value = handler(args, ctx)
        return await value if asyncio.iscoroutine(value) else value

    async def dispatch() -> Any:
        return await s.call(name, args)

    direct_ns = await median_ns(direct, 2000)
    dispatch_ns = await median_ns(dispatch, 2000)
    out["dispatch_us"] = dispatch_ns / 1e3
    out["dispatch_overhead_us"] = (dispatch_ns - direct_ns) / 1e3
    out["session_bytes"] = await session_memory(ts, enabled)
    return out


async def session_memory(ts: ToolSet, enabled: list[str]) -> float:
    """Bytes per stored session: 10,000 sessions each enabling the same groups."""
    ts.store = MemoryStore()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for i in range(SESSIONS_FOR_MEMORY):
        await ts.session(f"session-{i:05d}", Principal()).activate(enabled)
    ts.views.clear()
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert await ts.store.session_count() == SESSIONS_FOR_MEMORY
    return grown / SESSIONS_FOR_MEMORY


def growth(rows: list[dict[str, float]], key: str) -> str:
    """How a measure grows per 10x tools: the exponent of n (1.0 = linear)."""
    first, last = rows[0], rows[-1]
    if first[key] <= 0:
        return "n/a"
    exponent = math.log(last[key] / first[key]) / math.log(last["tools"] / first["tools"])
    return f"n^{exponent:.2f}"


def table(rows: list[dict[str, float]]) -> str:
    measures = [
        ("cached list (median)", "cached_list_ms", "ms", 3),
        ("uncached view (median)", "uncached_view_ms", "ms", 3),
        ("activate one group (median)", "activate_ms", "ms", 3),
        ("dispatch overhead vs direct handler", "dispatch_overhead_us", "µs", 1),
        ("dispatch total (median)", "dispatch_us", "µs", 1),
        ("session state in MemoryStore", "session_bytes", "B", 0),
    ]
    target_of = {
        "cached_list_ms": "≤ 0.2 ms",
        "uncached_view_ms": "≤ 5 ms",
        "activate_ms": "≤ 1 ms",
        "dispatch_overhead_us": "≤ 50 µs",
        "session_bytes": "≤ 2 KB",
    }
    head = " | ".join(f"{int(r['tools']):,} tools" for r in rows)
    sizes = " → ".join(f"{int(r['tools']):,}" for r in rows)
    groups = " → ".join(f"{int(r['groups']):,}" for r in rows)
    lines = [
        "## Core (`benchmarks/bench_core.py`)",
        "",
        f"Catalogs of {sizes} tools in {groups} groups (3 levels); one session "
        f"with {int(rows[-1]['visible'])} visible tools; memory over "
        f"{SESSIONS_FOR_MEMORY:,} sessions (tracemalloc). "
        "Times are the lowest of 5 medians (a shared machine only adds noise); growth is "
        "the exponent of n from the smallest to the largest catalog.",
        "",
        f"| measure | {head} | growth | target | met |",
        "|---|" + "---:|" * len(rows) + "---|---|---|",
    ]
    for label, key, unit, digits in measures:
        cells = " | ".join(f"{r[key]:,.{digits}f} {unit}" for r in rows)
        target = target_of.get(key)
        met = "" if target is None else ("yes" if rows[-1][key] <= TARGETS[key] else "**no**")
        lines.append(f"| {label} | {cells} | {growth(rows, key)} | {target or ''} | {met} |")
    lines.append("")
    version = ".".join(map(str, sys.version_info[:3]))
    lines.append(f"Python {version}; measured {time.strftime('%Y-%m-%d')}.")
    return "\n".join(lines)


def write_section(text: str) -> None:
    """Replace only the core section of RESULTS.md (re-read right before writing)."""
    block = f"{BEGIN}\n{text}\n{END}"
    current = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Benchmarks\n"
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.DOTALL)
    if pattern.search(current):
        updated = pattern.sub(lambda _: block, current, count=1)
    else:
        updated = current.rstrip("\n") + "\n\n" + block + "\n"
    RESULTS.write_text(updated, encoding="utf-8")


async def main() -> None:
    rows = []
    for size in SIZES:
        row = await measure(size)
        rows.append(row)
        print(
            f"{size:>6} tools: list {row['cached_list_ms']:.4f} ms, "
            f"view {row['uncached_view_ms']:.3f} ms, activate {row['activate_ms']:.3f} ms, "
            f"dispatch +{row['dispatch_overhead_us']:.1f} µs, "
            f"session {row['session_bytes']:.0f} B"
        )
    text = table(rows)
    print(text)
    write_section(text)


if __name__ == "__main__":
    asyncio.run(main())
