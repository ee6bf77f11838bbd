"""Tokens an agent reads with lazy descriptions vs. a flat tool list, on a real server.

The catalog is GitHub's MCP server (117 tools, ``../shared/data/catalogs``). Counts are
o200k_base tokens of what the model reads (compact, sorted keys): ``tools/list`` with
each tool counted apart, as hosts hand it to a model (``toolgate.tokens.estimate_tokens``,
as ``toolgate inspect`` counts: name, description, input schema), ``resources/list``
for lazy and, for a task, the
descriptions it fetches. Writes ``benchmarks/RESULTS.md`` between the ``lazy`` markers.

Run: ``.venv/bin/python benchmarks/bench_lazy.py``
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from search_eval import RESULTS, write_section  # noqa: E402

from toolgate import Tool, ToolSet  # noqa: E402
from toolgate.strategies import Delivery, DeliveryConfig  # noqa: E402
from toolgate.strategies.lazy import LazyDescriptions  # noqa: E402
from toolgate.tokens import TokenCounter, best_counter, estimate_tokens, wire_text  # noqa: E402

CATALOG = ROOT.parent / "shared" / "data" / "catalogs" / "github-mcp-server.json"
VOCAB = ROOT.parent / "shared" / "data" / "tokenizers"
BEGIN, END = "<!-- lazy:begin -->", "<!-- lazy:end -->"
TARGET = 0.85

#: Fixed, realistic tasks: the tools an agent picks, then describes, then calls.
TASKS: dict[str, list[str]] = {
    "2 tools: find an issue and comment on it": ["search_issues", "add_issue_comment"],
    "5 tools: fix the bug an issue reports and open a PR": [
        "issue_read",
        "get_file_contents",
        "create_branch",
        "create_or_update_file",
        "create_pull_request",
    ],
}


def load_tools() -> list[Tool]:
    tools = []
    for d in json.loads(CATALOG.read_text("utf-8")):
        tools.append(
            Tool(
                d["name"],
                d.get("description", ""),
                input_schema=d["inputSchema"],
                output_schema=d.get("outputSchema"),
                annotations=d.get("annotations"),
                meta=d.get("_meta"),
                icons=tuple(d["icons"]) if d.get("icons") else None,
            )
        )
    return tools


def toolset() -> ToolSet:
    ts = ToolSet("github")
    ts.add_tools(load_tools())
    return ts


async def measure(counter: TokenCounter) -> dict[str, Any]:
    def tokens(data: Any) -> int:
        return counter.count(wire_text(data))

    def list_tokens(tools: list[dict[str, Any]]) -> int:
        """Each tool apart, as a host hands it on (``toolgate inspect``'s count)."""
        return int(estimate_tokens(tools, counter)["total"])

    async def listing(delivery: Delivery, key: str) -> list[dict[str, Any]]:
        strategy, request = delivery.request(session_key=key)
        items: list[dict[str, Any]] = []
        cursor = None
        while True:  # every page, as a client walks them
            page = await delivery.list_tools(strategy, request, cursor)
            items += page.items
            cursor = page.next_cursor
            if cursor is None:
                return items

    flat_list = await listing(Delivery(toolset(), DeliveryConfig(strategy="flat")), "flat")
    out: dict[str, Any] = {"tools": len(flat_list), "flat": list_tokens(flat_list)}
    for mode in ("full", "minimal"):
        ts = toolset()
        lazy = LazyDescriptions(ts, schema=mode)  # type: ignore[arg-type]
        delivery = Delivery(ts, DeliveryConfig(strategy="flat"), addons=[lazy])
        listed = await listing(delivery, mode)
        _, request = delivery.request(session_key=mode)
        resources = await delivery.list_resources(request)
        initial = list_tokens(listed) + tokens({"resources": resources})
        out[mode] = {"initial": initial}
        for task, names in TASKS.items():
            text = await delivery.read_resource(request, lazy.resource_uri(names))
            assert text is not None
            fetched = json.loads(text)
            assert all("error" not in v for v in fetched.values()), fetched
            out[mode][task] = initial + tokens(fetched)
    # every field the server sends, icons included: what counting the wire would say
    out["flat_wire"] = sum(tokens(t) for t in flat_list)
    out["tokenizer"] = counter.name
    return out


def pct(part: int, whole: int) -> str:
    return f"{100 * (1 - part / whole):.1f} %"


def cell(part: int, whole: int) -> str:
    saved = 1 - part / whole
    if saved >= 0:
        return f"{part:,} (saves {100 * saved:.1f} %)"
    return f"{part:,} (costs {-100 * saved:.1f} % more)"


def table(r: dict[str, Any]) -> str:
    flat = r["flat"]
    rows = [
        '| what the agent reads | flat | lazy, `schema="full"` | lazy, `schema="minimal"` |',
        "|---|---:|---:|---:|",
        f"| initial `tools/list` (+ `resources/list` for lazy) | {flat:,} | "
        f"{cell(r['full']['initial'], flat)} | {cell(r['minimal']['initial'], flat)} |",
    ]
    for task in TASKS:
        full, minimal = r["full"][task], r["minimal"][task]
        rows.append(
            f"| task, {task}: list + descriptions | {flat:,} | {cell(full, flat)} "
            f"| {cell(minimal, flat)} |"
        )
    tasks = "; ".join(f"{t.split(':')[0]}: `{'`, `'.join(n)}`" for t, n in TASKS.items())
    two = r["minimal"][next(iter(TASKS))]
    verdict = "met" if 1 - two / flat >= TARGET else "NOT met"
    return (
        f"Lazy descriptions on GitHub's MCP server ({r['tools']} tools), tokenizer "
        f"`{r['tokenizer']}`, over the compact sorted-key JSON of what the model reads (each "
        "listed tool apart: its name, description and input schema, as `toolgate inspect` "
        "counts). Lazy lists carry each tool's "
        "first sentence and the pointer to `describe_tools` (plus that meta-tool and the "
        "`tool_descriptions` resource entry); `minimal` keeps only the required arguments "
        "and their types; descriptions are derived from the tools (no doc files). Tasks: "
        + tasks
        + ".\n\n"
        + "\n".join(rows)
        + "\n\n"
        f"Seed claim: 75-80 % saved on a 2-tool task; target >= {TARGET:.0%}: {verdict} with "
        f'`schema="minimal"` ({pct(two, flat)} against the flat list). Icons, `_meta`, '
        "titles and annotations are never counted, on either side (with every wire field "
        f"the flat list would be {r['flat_wire']:,} tokens)."
    )


def main() -> None:
    counter = best_counter(vocab_dir=VOCAB)
    if counter.name != "tiktoken:o200k_base":
        raise SystemExit(f"o200k_base vocabulary not found in {VOCAB}")
    results = asyncio.run(measure(counter))
    md = table(results)
    print(md)
    write_section(RESULTS, BEGIN, END, md)


if __name__ == "__main__":
    main()
