"""What the groups extension costs and saves on GitHub's MCP catalog (117 tools).

The catalog is grouped into GitHub's natural toolsets by the fixed name rules in
``RULES`` (first match wins; ``get_me`` and ``ui_get`` stay top-level). Sizes are the
compact JSON of each JSON-RPC ``result``; tokens are o200k (``toolgate.tokens``).
Run: ``python benchmarks/bench_groups.py`` (writes its section of RESULTS.md).
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

from toolgate.catalog import Group, Tool
from toolgate.strategies import Delivery
from toolgate.strategies.base import GROUPS_EXTENSION
from toolgate.strategies.groups import GroupsStrategy
from toolgate.tokens import TokenCounter, best_counter
from toolgate.toolset import ToolSet

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
CATALOG = DATA / "catalogs" / "github-mcp-server.json"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
BEGIN, END = "<!-- groups:begin -->", "<!-- groups:end -->"

GROUPS: dict[str, str] = {
    "actions": "GitHub Actions: workflows, runs, jobs, logs and artifacts.",
    "code_security": "Code scanning, secret scanning, Dependabot and security advisories.",
    "discussions": "Repository discussions, their categories and comments.",
    "gists": "Create, list and update gists.",
    "issues": "Issues: read, write, comment, label, sub-issues, fields and Copilot assignment.",
    "notifications": "Your notifications and subscriptions.",
    "projects": "GitHub Projects: items, fields and views.",
    "pull_requests": "Pull requests: create, read, update, review and merge.",
    "repos": "Repositories: files, branches, commits, releases, tags, stars and code search.",
    "users_orgs": "Users, organizations and teams.",
}
TOP_LEVEL = {"get_me", "ui_get"}  # always useful: left ungrouped
RULES: list[tuple[str, str]] = [  # (regex on the tool name, group); first match wins
    (r"^actions_|^get_job_logs$", "actions"),
    (r"code_scanning|secret_scanning|dependabot|security_advisor|code_quality", "code_security"),
    (r"notification", "notifications"),
    (r"gist", "gists"),
    (r"discussion", "discussions"),
    (r"^projects_", "projects"),
    (r"pull_request|review|^merge_|copilot_review", "pull_requests"),
    (r"issue|label|^find_duplicate$", "issues"),
    (r"team|^search_users$|^search_orgs$", "users_orgs"),
    (r".", "repos"),
]
ONE_GROUP = ["issues"]
THREE_GROUPS = ["issues", "pull_requests", "actions"]


def group_of(name: str) -> str | None:
    if name in TOP_LEVEL:
        return None
    for pattern, group in RULES:
        if re.search(pattern, name):
            return group
    raise AssertionError(name)


def load_toolset() -> ToolSet:
    ts = ToolSet("github", page_size=1000)
    ts.add_groups(Group(name, text) for name, text in GROUPS.items())
    for raw in json.loads(CATALOG.read_text()):
        group = group_of(raw["name"])
        ts.add_tool(
            Tool(
                raw["name"],
                raw.get("description", ""),
                input_schema=raw["inputSchema"],
                annotations=raw.get("annotations"),
                meta=raw.get("_meta"),
                icons=tuple(raw["icons"]) if raw.get("icons") else None,
                groups=(group,) if group else (),
            )
        )
    return ts


def size(result: Any, counter: TokenCounter) -> tuple[int, int]:
    text = json.dumps(result, separators=(",", ":"), ensure_ascii=False)
    return len(text.encode()), counter.count(text)


async def measure() -> dict[str, Any]:
    ts = load_toolset()
    delivery = Delivery(ts)
    counter = best_counter(vocab_dir=DATA / "tokenizers")
    flat_strategy, flat_req = delivery.request(session_key=None, protocol="2026-07-28")
    groups_strategy, req = delivery.request(
        session_key=None, protocol="2026-07-28", extensions=frozenset({GROUPS_EXTENSION})
    )
    assert isinstance(groups_strategy, GroupsStrategy) and flat_strategy.name == "catalog"
    flat = {"tools": await delivery.strategies["flat"].list_tools(flat_req)}
    top = {"tools": await groups_strategy.list_tools(req)}
    listed = groups_strategy.groups_list(req)
    gets = {g: await groups_strategy.groups_get(req, g.replace("_", "-")) for g in GROUPS}

    def task(groups: list[str]) -> tuple[int, int, int]:
        parts = [top, listed, *(gets[g] for g in groups)]
        sizes = [size(p, counter) for p in parts]
        return sum(b for b, _ in sizes), sum(t for _, t in sizes), 2 + len(groups)

    return {
        "counter": counter.name,
        "tools": len(ts.catalog.tools),
        "flat": size(flat, counter),
        "top": (len(top["tools"]), *size(top, counter)),
        "list": (len(listed["groups"]), *size(listed, counter)),
        "gets": {g: (len(r["contents"]["tools"]), *size(r, counter)) for g, r in gets.items()},
        "one": task(ONE_GROUP),
        "three": task(THREE_GROUPS),
    }


def table(m: dict[str, Any]) -> str:
    fb, ft = m["flat"]
    rows = [
        f"GitHub MCP server catalog ({m['tools']} tools) in {len(GROUPS)} groups by the fixed "
        f"name rules of `benchmarks/bench_groups.py`; `get_me` and `ui_get` stay top-level. "
        f"Sizes are compact JSON of each JSON-RPC result; tokens: {m['counter']}.",
        "",
        "| what the client reads | items | bytes | tokens | vs. flat tools/list |",
        "|---|---:|---:|---:|---:|",
        f"| flat `tools/list` (no extension) | {m['tools']} | {fb:,} | {ft:,} | 100% |",
    ]
    n, b, t = m["top"]
    rows.append(f"| `tools/list` for an extension client | {n} | {b:,} | {t:,} | {t / ft:.1%} |")
    n, b, t = m["list"]
    rows.append(f"| `groups/list` | {n} groups | {b:,} | {t:,} | {t / ft:.1%} |")
    for g, (n, b, t) in sorted(m["gets"].items(), key=lambda kv: -kv[1][2]):
        rows.append(
            f"| `groups/get {g.replace('_', '-')}` | {n} tools | {b:,} | {t:,} | {t / ft:.1%} |"
        )
    rows += [
        "",
        "| task | requests (flat) | requests (groups) | tokens (flat) | tokens (groups) | saved |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, key, names in (("1 group", "one", ONE_GROUP), ("3 groups", "three", THREE_GROUPS)):
        b, t, r = m[key]
        which = ", ".join(g.replace("_", "-") for g in names)
        rows.append(f"| {label} ({which}) | 1 | {r} | {ft:,} | {t:,} | {1 - t / ft:.1%} |")
    rows += [
        "",
        "Groups requests: `tools/list` + `groups/list` + one `groups/get` per group "
        "(a level's fetches may run in parallel). The catalog fallback takes the same number of "
        "round trips, as `list_groups` / `get_group` tool calls.",
    ]
    return "\n".join(rows)


def write(section: str) -> None:
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    block = f"{BEGIN}\n{section}\n{END}"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    RESULTS.write_text(text)


def main() -> None:
    m = asyncio.run(measure())
    section = table(m)
    print(section)
    if "--no-write" not in sys.argv:
        write(section)


if __name__ == "__main__":
    main()
