"""Retrieval quality of tool search on MetaTool (199 tools, 20,544 queries).

Compares toolgate's ``SearchIndex`` with FastMCP's ``BM25SearchTransform`` and
``RegexSearchTransform`` over the same tools and queries in one run, and writes the
table to ``benchmarks/RESULTS.md`` between the ``search-eval`` markers. A benchmark,
not a test: it may import fastmcp; nothing in ``src/`` imports it.

Run: ``.venv/bin/python benchmarks/search_eval.py [--limit-queries N]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "retrieval"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
BEGIN, END = "<!-- search-eval:begin -->", "<!-- search-eval:end -->"
DEPTH = 10  # results asked of every engine; MRR is MRR@10

sys.path.insert(0, str(ROOT / "src"))

from toolgate.catalog import Catalog, Tool  # noqa: E402
from toolgate.search import SearchIndex  # noqa: E402

Ranker = Callable[[str], Sequence[str]]


def write_section(path: Path, begin: str, end: str, body: str) -> None:
    """Replace only the text between ``begin`` and ``end`` (other sections are others').

    The file is re-read right before writing, so concurrent edits elsewhere survive.
    """
    block = f"{begin}\n{body}\n{end}"
    text = path.read_text("utf-8") if path.exists() else "# Benchmark results\n"
    start, stop = text.find(begin), text.find(end)
    if start != -1 and stop > start:
        text = text[:start] + block + text[stop + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, "utf-8")


def mcp_name(name: str) -> str:
    """MetaTool has one name MCP rejects (``PDF&URLTool``); every engine sees this one."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", name)


def load() -> tuple[list[dict[str, str]], list[tuple[str, frozenset[str]]]]:
    tools = json.loads((DATA / "metatool_tools.json").read_text("utf-8"))
    tools = [{"name": mcp_name(t["name"]), "description": t["description"]} for t in tools]
    queries = []
    with (DATA / "metatool_queries.jsonl").open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            queries.append((row["query"], frozenset(mcp_name(g) for g in row["gold"])))
    return tools, queries


def toolgate_ranker(tools: list[dict[str, str]]) -> Ranker:
    catalog = Catalog()
    catalog.add_tools(Tool(name=t["name"], description=t["description"]) for t in tools)
    index = SearchIndex(catalog)
    index.refresh()
    return lambda q: [h.name for h in index.search(q, limit=DEPTH)]


def fastmcp_rankers(tools: list[dict[str, str]]) -> dict[str, Ranker]:
    logging.getLogger("fastmcp").setLevel(logging.ERROR)
    from fastmcp.server.transforms.search import BM25SearchTransform, RegexSearchTransform
    from fastmcp.tools.base import Tool as FastMCPTool

    fm_tools = [
        FastMCPTool(
            name=t["name"],
            description=t["description"],
            parameters={"type": "object", "properties": {}},
        )
        for t in tools
    ]
    loop = asyncio.new_event_loop()
    out: dict[str, Ranker] = {}
    for label, transform in (
        ("FastMCP BM25SearchTransform", BM25SearchTransform(max_results=DEPTH)),
        ("FastMCP RegexSearchTransform", RegexSearchTransform(max_results=DEPTH)),
    ):
        # _search(tools, query) is the ranking the transform's search_tools tool runs
        # after its auth filtering; calling it directly skips only the MCP plumbing.
        def rank(q: str, transform: object = transform) -> list[str]:
            found = loop.run_until_complete(transform._search(fm_tools, q))  # type: ignore[attr-defined]
            return [t.name for t in found]

        out[label] = rank
    return out


def evaluate(rank: Ranker, queries: list[tuple[str, frozenset[str]]]) -> dict[str, float]:
    r1 = r3 = r5 = 0
    rr = 0.0
    started = time.perf_counter()
    for query, gold in queries:
        names = rank(query)
        first = next((i for i, n in enumerate(names) if n in gold), None)
        if first is not None:
            r1 += first < 1
            r3 += first < 3
            r5 += first < 5
            rr += 1 / (first + 1)
    n = len(queries)
    return {
        "recall@1": r1 / n,
        "recall@3": r3 / n,
        "recall@5": r5 / n,
        "mrr@10": rr / n,
        "ms/query": 1000 * (time.perf_counter() - started) / n,
    }


def table(rows: dict[str, dict[str, float]], n_tools: int, n_queries: int) -> str:
    lines = [
        f"Tool retrieval on MetaTool: {n_tools} tools (name + description), "
        f"{n_queries:,} queries; a hit is any gold tool. `benchmarks/search_eval.py`.",
        "",
        "| engine | recall@1 | recall@3 | recall@5 | MRR@10 | ms/query |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, m in rows.items():
        lines.append(
            f"| {label} | {m['recall@1']:.3f} | {m['recall@3']:.3f} | {m['recall@5']:.3f} "
            f"| {m['mrr@10']:.3f} | {m['ms/query']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit-queries", type=int, default=None)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    tools, queries = load()
    queries = queries[: args.limit_queries]
    rankers = {"toolgate SearchIndex": toolgate_ranker(tools), **fastmcp_rankers(tools)}
    rows = {label: evaluate(rank, queries) for label, rank in rankers.items()}
    md = table(rows, len(tools), len(queries))
    print(md)
    gain = (
        rows["toolgate SearchIndex"]["recall@5"] - rows["FastMCP BM25SearchTransform"]["recall@5"]
    )
    print(f"\ntoolgate recall@5 - FastMCP BM25 recall@5 = {100 * gain:+.1f} points")
    if not args.no_write and args.limit_queries is None:
        write_section(RESULTS, BEGIN, END, md)
        print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
