"""What the groups extension costs and saves on GitHub's MCP catalog (117 tools).

The catalog is grouped into GitHub's natural toolsets by the fixed name rules in
``RULES`` (first match wins; ``get_me`` and ``ui_get`` stay top-level). Sizes are what a
model reads of each JSON-RPC ``result``: every tool definition in it counted apart, as a
host hands it on (name, description, input schema: ``toolgate.tokens.model_text``; never
``icons``, ``_meta``, ``title`` or annotations), and the rest of the result as compact JSON,
the rule every token count of the project follows; tokens are o200k (``toolgate.tokens``).

``--auto`` compares groups made for you (``toolgate.grouping``, what ``toolgate init``
writes) with hand-written ones on the same tasks, on GitHub's catalog (against ``RULES``)
and on the GitLab MCP server's (262 tools, against the toolsets its authors wrote;
``benchmarks/data/``, captured by ``benchmarks/capture_gitlab.py``): a task names the
tools it needs, and the agent opens every group holding one of them (with the groups
above it, which it must open to find a nested one).
Run: ``python benchmarks/bench_groups.py [--auto [--size N]]`` (writes its section of
RESULTS.md; ``--no-write`` only prints).
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolgate.catalog import Group, Tool
from toolgate.grouping import GroupingSettings, propose_groups
from toolgate.strategies import Delivery
from toolgate.strategies.base import GROUPS_EXTENSION
from toolgate.strategies.groups import GroupsStrategy
from toolgate.tokens import TokenCounter, best_counter, model_text, result_texts
from toolgate.toolset import ToolSet

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
CATALOG = DATA / "catalogs" / "github-mcp-server.json"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
GITLAB = ROOT / "benchmarks" / "data" / "gitlab-mcp-server.json"
GITLAB_TOOLSETS = ROOT / "benchmarks" / "data" / "gitlab-mcp-toolsets.json"
BEGIN, END = "<!-- groups:begin -->", "<!-- groups:end -->"
AUTO_BEGIN, AUTO_END = "<!-- autogroups:begin -->", "<!-- autogroups:end -->"

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


def size(
    result: Mapping[str, Any],
    counter: TokenCounter,
    form: Callable[[Mapping[str, Any]], str] = model_text,
) -> tuple[int, int]:
    """(bytes, tokens) of ``result`` as a model reads it. Each tool definition in it is
    counted apart, as a host hands it on (``toolgate.tokens.model_text``: the rule of
    ``estimate_tokens``, ``toolgate inspect`` and every count of the project); the rest
    of the result, if any (a ``groups/get``'s instructions and child groups, a
    ``groups/list``), in the one serialization (``wire_text``): the texts of
    ``toolgate.tokens.result_texts``, which ``groups/get``'s ``tool.selection`` counts
    too. ``form=wire_text`` counts every wire field instead (icons too), for the size a
    model never reads."""
    texts = result_texts(result, form)
    return sum(len(t.encode()) for t in texts), sum(counter.count(t) for t in texts)


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
        "Sizes are what a model reads of each JSON-RPC result: each tool in it counted apart "
        "as a host hands it on (name, description, input schema: `toolgate.tokens.model_text`, "
        "as `toolgate inspect` counts; no `icons`, `_meta`, `title` or annotations), the rest "
        f"of the result as compact JSON; tokens: {m['counter']}.",
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


def write(section: str, begin: str = BEGIN, end: str = END) -> None:
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    block = f"{begin}\n{section}\n{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    RESULTS.write_text(text)


# -- groups made for you against hand-written ones --------------------------------------------


@dataclass(frozen=True)
class Grouping:
    """A catalog's tools in groups: each group's description and parent, each tool's groups."""

    label: str
    groups: Mapping[str, tuple[str, str | None]]
    member: Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class GroupTask:
    title: str
    tools: tuple[str, ...]


GITLAB_TASKS = [
    GroupTask(
        "Triage an issue: read it, comment, update it",
        ("get_issue", "create_issue_note", "update_issue"),
    ),
    GroupTask(
        "Review a merge request and merge it",
        (
            "get_merge_request",
            "get_merge_request_diffs",
            "create_merge_request_note",
            "approve_merge_request",
            "merge_merge_request",
        ),
    ),
    GroupTask(
        "Find why a pipeline failed and open an issue",
        ("list_pipelines", "list_pipeline_jobs", "get_pipeline_job_output", "create_issue"),
    ),
    GroupTask(
        "Cut a release: tag, release notes, close the milestone",
        ("create_tag", "create_release", "edit_milestone"),
    ),
    GroupTask(
        "Fix the bug an issue reports in a merge request",
        ("get_issue", "get_file_contents", "create_branch", "push_files", "create_merge_request"),
    ),
]


def raw_tools(path: Path) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return tools


def github_grouping() -> Grouping:
    names = [t["name"] for t in raw_tools(CATALOG)]
    member = {n: (g,) if (g := group_of(n)) else () for n in names}
    return Grouping("hand-written (`RULES`)", {g: (d, None) for g, d in GROUPS.items()}, member)


def gitlab_grouping() -> Grouping:
    sets: dict[str, list[str]] = json.loads(GITLAB_TOOLSETS.read_text())
    member: dict[str, list[str]] = {t["name"]: [] for t in raw_tools(GITLAB)}
    for toolset, tools in sets.items():
        for t in tools:
            member[t].append(toolset)
    groups = {
        name: (f"GitLab {name.replace('_', ' ')}: " + ", ".join(tools[:6]), None)
        for name, tools in sets.items()
    }
    return Grouping("the server's own toolsets", groups, {t: tuple(g) for t, g in member.items()})


def auto_grouping(raw: Sequence[Mapping[str, Any]], server: str, size: int) -> Grouping:
    tools = [
        Tool(t["name"], t.get("description") or "", annotations=t.get("annotations")) for t in raw
    ]
    proposed = propose_groups(tools, server=server, settings=GroupingSettings(max_size=size))
    member: dict[str, tuple[str, ...]] = {t["name"]: () for t in raw}
    for g in proposed:
        for t in g.tools:
            member[t] += (g.name,)
    groups = {g.name: (g.description, g.parent) for g in proposed}
    return Grouping(f"auto (≤ {size} per group)", groups, member)


def grouped_toolset(raw: Sequence[Mapping[str, Any]], grouping: Grouping) -> ToolSet:
    ts = ToolSet("catalog", page_size=1000)
    ts.add_groups(Group(n, d, parent=p) for n, (d, p) in grouping.groups.items())
    for t in raw:
        ts.add_tool(
            Tool(
                t["name"],
                t.get("description") or "",
                input_schema=t["inputSchema"],
                annotations=t.get("annotations"),
                meta=t.get("_meta"),
                icons=tuple(t["icons"]) if t.get("icons") else None,
                groups=grouping.member[t["name"]],
            )
        )
    return ts


@dataclass(frozen=True)
class Costs:
    flat: int
    top: int
    listed: int
    gets: Mapping[str, int]
    grouping: Grouping

    def opened(self, tools: Sequence[str]) -> list[str]:
        """The groups an agent opens for ``tools``: for each tool its cheapest group, and
        the groups above those (a nested group is found in its parent's ``groups/get``)."""
        out: set[str] = set()
        for t in tools:
            held = self.grouping.member[t]
            if not held:
                continue  # listed at the top level
            g: str | None = min(held, key=lambda g: (self.gets[g], g))
            while g is not None and g not in out:
                out.add(g)
                g = self.grouping.groups[g][1]
        return sorted(out)

    def saved(self, tools: Sequence[str]) -> tuple[float, int, int]:
        """(share of the flat list saved, groups opened, requests)."""
        opened = self.opened(tools)
        spent = self.top + self.listed + sum(self.gets[g] for g in opened)
        return 1 - spent / self.flat, len(opened), 2 + len(opened)


async def costs(
    raw: Sequence[Mapping[str, Any]], grouping: Grouping, counter: TokenCounter
) -> Costs:
    ts = grouped_toolset(raw, grouping)
    delivery = Delivery(ts)
    _, flat_req = delivery.request(session_key=None, protocol="2026-07-28")
    strategy, req = delivery.request(
        session_key=None, protocol="2026-07-28", extensions=frozenset({GROUPS_EXTENSION})
    )
    assert isinstance(strategy, GroupsStrategy)
    flat = size({"tools": await delivery.strategies["flat"].list_tools(flat_req)}, counter)[1]
    top = size({"tools": await strategy.list_tools(req)}, counter)[1]
    listed = size(strategy.groups_list(req), counter)[1]
    gets = {
        g: size(await strategy.groups_get(req, g.replace("_", "-")), counter)[1]
        for g in grouping.groups
    }
    return Costs(flat, top, listed, gets, grouping)


def group_tasks(
    grouping: Grouping, tasks: Sequence[GroupTask], whole: Sequence[Sequence[str]]
) -> list[GroupTask]:
    """The hand-written grouping's whole-group tasks (every tool of the named groups),
    then ``tasks``."""
    out = [
        GroupTask(
            f"every tool of {', '.join(gs)}",
            tuple(sorted(t for t, held in grouping.member.items() if set(held) & set(gs))),
        )
        for gs in whole
    ]
    return out + list(tasks)


async def compare(
    server: str,
    raw: Sequence[Mapping[str, Any]],
    hand: Grouping,
    tasks: Sequence[GroupTask],
    counter: TokenCounter,
    size_limit: int = 15,
) -> tuple[list[str], list[tuple[int, float, float]]]:
    """Table rows and, per task, (hand-written groups it opens, saved by hand, saved auto)."""
    auto = auto_grouping(raw, server, size_limit)
    by_hand = await costs(raw, hand, counter)
    made = await costs(raw, auto, counter)
    sizes = sorted(sum(1 for h in auto.member.values() if g in h) for g in auto.groups)
    rows = [
        f"**{server}** ({len(raw)} tools; flat `tools/list` {by_hand.flat:,} tokens): "
        f"{hand.label}: {len(hand.groups)} groups, `groups/list` {by_hand.listed:,} tokens; "
        f"{auto.label}: {len(auto.groups)} groups "
        f"({sum(1 for d, p in auto.groups.values() if p)} nested), {sizes[0]} to {sizes[-1]} tools "
        f"each, `groups/list` {made.listed:,} tokens.",
        "",
        "| task | hand-written groups | saved (hand-written) | auto groups | saved (auto) "
        "| difference |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    out = []
    for task in tasks:
        hs, hn, _ = by_hand.saved(task.tools)
        a, an, _ = made.saved(task.tools)
        out.append((hn, hs, a))
        rows.append(
            f"| {task.title} ({len(task.tools)} tools) | {hn} | {hs:.1%} | {an} | {a:.1%} "
            f"| {100 * (a - hs):+.1f} pt |"
        )
    return rows, out


async def auto_section(size_limit: int = 15) -> str:
    from bench_tasks import TASKS  # the task benchmark's tasks (it imports this module)

    counter = best_counter(vocab_dir=DATA / "tokenizers")
    github = raw_tools(CATALOG)
    gh_tasks = group_tasks(
        github_grouping(), [GroupTask(t.title, t.tools) for t in TASKS], [ONE_GROUP, THREE_GROUPS]
    )
    gh_rows, gh = await compare("github", github, github_grouping(), gh_tasks, counter, size_limit)
    gitlab = raw_tools(GITLAB)
    gl_tasks = group_tasks(
        gitlab_grouping(), GITLAB_TASKS, [["issues"], ["issues", "merge_requests", "pipelines"]]
    )
    gl_rows, gl = await compare("gitlab", gitlab, gitlab_grouping(), gl_tasks, counter, size_limit)
    worst = {
        n: min((a - h for k, h, a in gh + gl if (k == 1) == (n == 1) and k > 0), default=0.0)
        for n in (1, 3)
    }
    holds = all(w >= -0.05 for w in worst.values())
    rows = [
        "### Groups made for you against hand-written ones",
        "",
        "`python benchmarks/bench_groups.py --auto` "
        f"({__import__('datetime').date.today().isoformat()}): the same catalog grouped by hand "
        "and by `toolgate.grouping` (what `toolgate init` and `toolgate inspect "
        "--suggest-groups` write), each task through the groups extension: `tools/list` + "
        "`groups/list` + one `groups/get` per group holding a needed tool (its cheapest, and "
        f"the groups above it). Tokens: {counter.name}. A task's "
        "first rows open whole hand-written groups (`bench_groups.py`'s 1- and 3-group tasks); "
        "the rest are `bench_tasks.py`'s tasks (GitHub) and five GitLab tasks. Counted like "
        "the section above: each result's tools apart, as a model reads them (name, "
        "description, input schema; no `icons` or `_meta`), the rest as compact JSON, both "
        "groupings alike. One run on a shared 2-core machine; the numbers are deterministic.",
        "",
        *gh_rows,
        "",
        *gl_rows,
        "",
        f"Verdict: {'holds' if holds else 'misses'} — auto groups are at worst "
        f"{100 * worst[1]:+.1f} points on 1-group tasks and {100 * worst[3]:+.1f} points on "
        "multi-group tasks against the hand-written groupings (target: within 5 points).",
    ]
    return "\n".join(rows)


def main() -> None:
    if "--auto" in sys.argv:
        size = int(sys.argv[sys.argv.index("--size") + 1]) if "--size" in sys.argv else 15
        section = asyncio.run(auto_section(size))
        print(section)
        if "--no-write" not in sys.argv:
            write(section, AUTO_BEGIN, AUTO_END)
        return
    m = asyncio.run(measure())
    section = table(m)
    print(section)
    if "--no-write" not in sys.argv:
        write(section)


if __name__ == "__main__":
    main()
