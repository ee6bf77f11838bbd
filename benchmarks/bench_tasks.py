"""What an agent reads to reach the tools of a task, per disclosure style, end to end.

``toolgate serve`` (streamable HTTP, one process per style) fronts
``benchmarks/github_backend.py`` (GitHub's MCP catalog, 117 tools, grouped as
``bench_groups.py`` groups it). A scripted agent with a real MCP client
(``mcp.ClientSession``, protocol 2025-11-25) does, for each task, what the style offers:
list, open the groups the task needs (``enable_tools``, ``<group>.activate``,
``get_group``, ``groups/get``) or search, re-list after ``list_changed`` if it is a
client that does, and ``describe_tools`` for needed tools whose full definition it has
not read yet when the server offers that tool.

Counted in o200k tokens: what the model reads, i.e. every ``tools/list`` page (each tool
counted apart, as hosts hand it to a model: name, description, input schema,
``toolgate.tokens.model_text``, the rule of ``estimate_tokens`` and ``toolgate inspect``;
never ``icons``, ``_meta``, ``title`` or annotations) and the content blocks of each result
(``groups/*`` results as JSON, their tools counted the same way: ``bench_groups.size``);
the structured-content twin of results separately (a host shows one of the two).
Savings are against the flat list counted the same way; its whole wire form (every
field, icons included) is given once, as a size, never as a baseline (README and
RESULTS are restated on the honest one).
Extra calls are the requests after the first ``tools/list`` (re-lists are counted
apart). A task is *reached* when the model has read the full input schema of every tool
it needs. The styles whose cost depends on the grouping run a second time on the groups
``toolgate init`` proposes (``toolgate.grouping``; ``--grouping``), reported beside the
hand-written ones; a task keeps its size (1 or 3 groups) from the hand-written groups.
Run: ``.venv/bin/python benchmarks/bench_tasks.py`` (writes its RESULTS.md section);
``--style search`` runs one style (and the flat baseline) and writes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx2
import mcp_types as mt
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from pydantic import TypeAdapter

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from bench_groups import (  # noqa: E402
    CATALOG,
    Grouping,
    auto_grouping,
    github_grouping,
    group_of,
    raw_tools,
    size,
)
from search_eval import RESULTS, write_section  # noqa: E402

from _fixtures.gateway import HttpGateway, toolgate_argv  # noqa: E402
from toolgate.client import session_options  # noqa: E402
from toolgate.client.extension import (  # noqa: E402
    GetGroupParams,
    GetGroupRequest,
    ListGroupsParams,
    ListGroupsRequest,
)
from toolgate.grouping import GroupingSettings  # noqa: E402
from toolgate.tokens import TokenCounter, best_counter, wire_text  # noqa: E402

VOCAB = ROOT.parent / "shared" / "data" / "tokenizers"
BEGIN, END = "<!-- tasks:begin -->", "<!-- tasks:end -->"
RAW: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])
#: The targets for every on-demand path (a client that does not re-list).
PHRASED = False  # --phrased: the search agent sends Task.phrased, not Task.needs
SEARCH_LIMIT = 10  # results per need the agent asks for (one line each, but the best)
INDEX_LINE = re.compile(r"^([A-Za-z0-9_.-]+)\(")
TARGETS = {
    "initial": 1000,
    "one_group": 0.90,
    "three_groups": 0.85,
    "calls": 2,
    # a client that re-lists after list_changed reads the opened groups' tools again
    "relist_one_group": 0.80,
    "relist_three_groups": 0.75,
}


@dataclass(frozen=True)
class Task:
    """What a user asks, the tools it needs, and its needs as a user would phrase them
    for a search, one action each (what ``search_tools`` takes as ``query`` and
    ``queries``)."""

    title: str
    tools: tuple[str, ...]
    needs: tuple[str, ...]
    #: the same needs in a user's compound clauses, not one action per tool (``--phrased``)
    phrased: tuple[str, ...] = ()

    @property
    def groups(self) -> list[str]:
        """The hand-written groups it needs: what makes it a 1- or 3-group task."""
        return sorted({g for t in self.tools if (g := group_of(t)) is not None})

    def opens(self, grouping: Grouping) -> list[str]:
        """The groups an agent opens for it in ``grouping``: each needed tool's first
        group and the groups above it, parents before their children."""
        out: set[str] = set()
        for t in self.tools:
            g: str | None = next(iter(grouping.member[t]), None)
            while g is not None and g not in out:
                out.add(g)
                g = grouping.groups[g][1]

        def depth(g: str) -> int:
            parent = grouping.groups[g][1]
            return 0 if parent is None else 1 + depth(parent)

        return sorted(out, key=lambda g: (depth(g), g))


TASKS = [
    Task(
        "Triage an issue: read it, comment, relabel it",
        ("issue_read", "add_issue_comment", "update_issue_labels"),
        ("read an issue", "comment on an issue", "change an issue's labels"),
        ("read an issue, comment on it and change its labels",),
    ),
    Task(
        "Show a repository's README and its latest commits",
        ("get_file_contents", "list_commits"),
        ("read a file from a repository", "list a repository's recent commits"),
        ("read a file from a repository and list its recent commits",),
    ),
    Task(
        "Review a pull request, ask for a reviewer, merge it",
        (
            "pull_request_read",
            "pull_request_review_write",
            "request_pull_request_reviewers",
            "merge_pull_request",
        ),
        (
            "read a pull request",
            "review a pull request",
            "request a reviewer",
            "merge a pull request",
        ),
        ("review a pull request, request a reviewer and merge it",),
    ),
    Task(
        "Find why the CI run failed and open an issue about it",
        ("actions_list", "get_job_logs", "create_issue"),
        ("list workflow runs", "read the failed job's logs", "open a new issue"),
        ("list workflow runs and read the failed job's logs", "open a new issue"),
    ),
    Task(
        "Star a repository and watch its notifications",
        ("star_repository", "manage_repository_notification_subscription"),
        ("star a repository", "subscribe to a repository's notifications"),
        ("star a repository", "subscribe to a repository's notifications"),
    ),
    Task(
        "Fix the bug an issue reports and open a pull request",
        (
            "issue_read",
            "get_file_contents",
            "create_branch",
            "create_or_update_file",
            "create_pull_request",
        ),
        (
            "read an issue",
            "read a file",
            "create a branch",
            "commit a change to a file",
            "open a pull request",
        ),
        ("read an issue, read a file, create a branch and commit a change", "open a pull request"),
    ),
    Task(
        "Security sweep: alerts to an assigned issue for the team",
        (
            "list_code_scanning_alerts",
            "get_code_scanning_alert",
            "list_dependabot_alerts",
            "create_issue",
            "update_issue_assignees",
            "get_team_members",
        ),
        (
            "list code scanning alerts",
            "read a code scanning alert",
            "list dependabot alerts",
            "create an issue",
            "assign an issue to people",
            "list the members of a team",
        ),
        (
            "list code scanning and dependabot alerts",
            "create an issue, assign it to members of a team",
        ),
    ),
]

Opening = Literal["flat", "menu", "activators", "catalog", "groups", "search", "lazy", "view"]


@dataclass(frozen=True)
class Style:
    """One way to reach tools: a gateway config and what the agent does with it."""

    name: str
    toolgate: Mapping[str, Any]
    opening: Opening
    relists: bool = False
    on_demand: bool = False  # held to the on-demand targets
    relist_target: bool = False  # held to the re-listing client's targets


STYLES = [
    Style("flat list", {"strategy": "flat"}, "flat"),
    Style("menu (enable_tools)", {"strategy": "list_changed"}, "menu", on_demand=True),
    Style(
        "menu, client re-lists",
        {"strategy": "list_changed"},
        "menu",
        relists=True,
        relist_target=True,
    ),
    Style(
        "menu, client re-lists, grouped_list full",
        {"strategy": "list_changed", "grouped_list": "full"},
        "menu",
        relists=True,
    ),
    Style(
        "activators",
        {"strategy": "list_changed", "meta_tools": "activators"},
        "activators",
        on_demand=True,
    ),
    Style(
        "activators, client re-lists",
        {"strategy": "list_changed", "meta_tools": "activators"},
        "activators",
        relists=True,
        relist_target=True,
    ),
    Style("catalog (get_group)", {"strategy": "catalog"}, "catalog", on_demand=True),
    Style("groups extension (groups/get)", {"strategy": "groups"}, "groups"),
    Style(
        "groups-extension fallback",
        {"strategy": "groups", "groups_fallback": "catalog"},
        "catalog",
        on_demand=True,
    ),
    Style("search (search_tools)", {"strategy": "search"}, "search", on_demand=True),
    Style(
        "lazy, minimal schema",
        {"strategy": "flat", "descriptions": {"mode": "lazy", "schema": "minimal"}},
        "lazy",
    ),
    Style("per-request view (X-MCP-Toolsets)", {"strategy": "catalog"}, "view"),
]


# -- what the model reads ------------------------------------------------------------------
def wire(model: Any) -> Any:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def walk(data: Any) -> Iterable[Mapping[str, Any]]:
    """Every JSON object inside ``data``."""
    if isinstance(data, Mapping):
        yield data
        for v in data.values():
            yield from walk(v)
    elif isinstance(data, list):
        for v in data:
            yield from walk(v)


@dataclass
class Reading:
    """Everything one agent reads for one task, and which needed tools it reached."""

    counter: TokenCounter
    needed: Mapping[str, Any]  # tool name -> its full input schema
    listed: int = 0
    content: int = 0
    wire_extra: int = 0  # what counting every wire field (icons too) adds to listed + content
    steps: list[tuple[str, int]] = field(default_factory=list)  # (request, tokens read)
    structured: int = 0
    calls: int = 0
    relists: int = 0
    initial: int = 0
    reached: set[str] = field(default_factory=set)
    named: set[str] = field(default_factory=set)  # tools it has seen named somewhere
    names: set[str] = field(default_factory=set)  # what the last tools/list showed

    def saw(self, data: Any) -> None:
        for obj in walk(data):
            name = obj.get("name")
            if isinstance(name, str):
                self.named.add(name)
                if name in self.needed and self.needed[name] in obj.values():
                    self.reached.add(name)
            for key, value in obj.items():  # definitions keyed by name (describe_tools)
                needed = self.needed.get(key)
                if needed is not None and isinstance(value, Mapping) and needed in value.values():
                    self.reached.add(key)
            for value in obj.values():  # compact index lines: "name(args): summary"
                lines = value if isinstance(value, list) else []
                self.named.update(m.group(1) for v in lines if (m := INDEX_LINE.match(str(v))))

    def saw_text(self, text: str) -> None:
        with suppress(json.JSONDecodeError):
            self.saw(json.loads(text))

    @property
    def missing(self) -> list[str]:
        return sorted(set(self.needed) - self.reached)

    @property
    def describable(self) -> list[str]:
        """Needed tools it knows by name but has not read in full."""
        return [t for t in self.missing if t in self.named]

    async def list_tools(self, session: ClientSession) -> None:
        cursor: str | None = None
        names: set[str] = set()
        first = self.listed == 0
        while True:
            params = mt.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools = [wire(t) for t in page.tools]
            tokens = size({"tools": tools}, self.counter)[1]
            self.listed += tokens
            self.wire_extra += size({"tools": tools}, self.counter, wire_text)[1] - tokens
            self.steps.append(("tools/list", tokens))
            names |= {t["name"] for t in tools}
            self.named |= {t["name"] for t in tools}
            self.saw(tools)
            cursor = page.next_cursor
            if not cursor:
                break
        if first:
            self.initial = self.listed
        else:
            self.relists += 1
        self.names = names

    async def call(self, session: ClientSession, name: str, arguments: dict[str, Any]) -> None:
        self.calls += 1
        result = await session.call_tool(name, arguments)
        tokens = 0
        for block in result.content:
            if isinstance(block, mt.TextContent):
                tokens += self.counter.count(block.text)
                self.saw_text(block.text)
            else:
                tokens += self.counter.count(wire_text(wire(block)))
        self.content += tokens
        self.steps.append((name, tokens))
        if result.structured_content is not None:
            self.structured += self.counter.count(wire_text(result.structured_content))

    async def request(self, session: ClientSession, request: Any) -> dict[str, Any]:
        self.calls += 1
        result = await session.send_request(request, RAW)
        tokens = size(result, self.counter)[1]
        self.content += tokens
        self.wire_extra += size(result, self.counter, wire_text)[1] - tokens
        self.steps.append((str(request.method), tokens))
        self.saw(result)
        return result


# -- the scripted agent --------------------------------------------------------------------
def takes_many(session_tools: Sequence[mt.Tool], name: str) -> str | None:
    """The array argument of meta-tool ``name`` (e.g. ``names``), if it takes several."""
    for tool in session_tools:
        if tool.name == name:
            for arg, schema in (tool.input_schema.get("properties") or {}).items():
                if isinstance(schema, Mapping) and schema.get("type") == "array":
                    return str(arg)
    return None


async def open_groups(
    style: Style, groups: list[str], task: Task, session: ClientSession, r: Reading
) -> None:
    if style.opening == "menu":
        await r.call(session, "enable_tools", {"groups": groups})
    elif style.opening == "activators":
        if len(groups) > 1 and "enable_tools" in r.names:
            await r.call(session, "enable_tools", {"groups": groups})  # several at once
        else:
            for g in groups:
                await r.call(session, f"{g}.activate", {})
    elif style.opening == "catalog":
        listed = (await session.list_tools()).tools
        many = takes_many(listed, "get_group")
        if many is not None:
            await r.call(session, "get_group", {many: groups})
        elif len(groups) > 1 and "enable_tools" in r.names:
            await r.call(session, "enable_tools", {"groups": groups})  # several at once
        else:
            for g in groups:
                await r.call(session, "get_group", {"name": g})
    elif style.opening == "groups":
        await r.request(session, ListGroupsRequest(params=ListGroupsParams()))
        for g in groups:  # on the extension's wire, "_" in a group name becomes "-"
            wire_name = g.replace("_", "-")
            await r.request(session, GetGroupRequest(params=GetGroupParams(name=wire_name)))
    elif style.opening == "search":
        # one search for all the task's needs, then one need at a time until every
        # needed tool is known by name
        needs = task.phrased if PHRASED else task.needs
        first, *rest = needs
        arguments: dict[str, Any] = {"query": first, "limit": SEARCH_LIMIT}
        await r.call(session, "search_tools", {**arguments, **({"queries": rest} if rest else {})})
        for need in needs:
            if len(r.describable) == len(r.missing):
                break
            await r.call(session, "search_tools", {"query": need})


async def run_task(
    style: Style, task: Task, url: str, counter: TokenCounter, grouping: Grouping
) -> Reading:
    catalog = {t["name"]: t["inputSchema"] for t in json.loads(CATALOG.read_text("utf-8"))}
    r = Reading(counter, {t: catalog[t] for t in task.tools})
    groups = task.opens(grouping)
    headers = {"X-MCP-Toolsets": ",".join(groups)} if style.opening == "view" else {}
    extra = session_options() if style.opening == "groups" else {}
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=60, headers=headers))
        read, write = await stack.enter_async_context(streamable_http_client(url, http_client=http))
        session = await stack.enter_async_context(ClientSession(read, write, **extra))
        await session.initialize()
        await r.list_tools(session)
        await open_groups(style, groups, task, session, r)
        if style.relists and style.opening in ("menu", "activators"):
            await r.list_tools(session)
        if r.describable and "describe_tools" in r.names:
            await r.call(session, "describe_tools", {"tools": r.describable})
    return r


# -- running every style ---------------------------------------------------------------------
def gateway_config(tmp: Path, toolgate: Mapping[str, Any], grouping: Grouping) -> Path:
    members: dict[str, list[str]] = {g: [] for g in grouping.groups}
    for tool, held in grouping.member.items():
        for g in held:
            members[g].append(tool)

    def group(g: str) -> dict[str, Any]:
        description, parent = grouping.groups[g]
        return {"description": description, "tools": sorted(members[g])} | (
            {"parent": parent} if parent else {}
        )

    config = {
        "mcpServers": {
            "github": {
                "command": sys.executable,
                "args": [str(ROOT / "benchmarks" / "github_backend.py")],
            }
        },
        "toolgate": {
            "groups": {g: group(g) for g in grouping.groups},
            "page_size": 1000,
            "events": {"logging": False},
            **toolgate,
        },
    }
    path = tmp / "toolgate.json"
    path.write_text(json.dumps(config, indent=2))
    return path


async def measure_style(
    style: Style, counter: TokenCounter, grouping: Grouping | None = None
) -> list[Reading]:
    grouping = grouping or github_grouping()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = gateway_config(Path(tmp), style.toolgate, grouping)
        gateway = HttpGateway([*toolgate_argv(), "serve", str(cfg)], Path(tmp) / "gateway.log")
        gateway.start(timeout=180)  # a loaded machine starts a gateway slowly
        try:
            return [await run_task(style, t, gateway.url, counter, grouping) for t in TASKS]
        finally:
            gateway.stop()


def pct(saved: float) -> str:
    return f"{saved * 100:.1f} %"


def read_of(r: Reading, *, whole_wire: bool = False) -> int:
    """Tokens the agent read for one task (``whole_wire``: every wire field counted, for
    the flat list's size only)."""
    return r.listed + r.content + (r.wire_extra if whole_wire else 0)


def savings(rows: Sequence[Reading], flat: Sequence[Reading], groups: int) -> float:
    """The least saved, against the flat list, over the tasks that need ``groups`` groups."""
    return min(
        1 - read_of(r) / read_of(b)
        for t, r, b in zip(TASKS, rows, flat, strict=True)
        if len(t.groups) == groups
    )


def target_of(style: Style) -> tuple[float, float] | None:
    """(1-group, 3-group) savings ``style`` is held to, or None."""
    if style.on_demand:
        return TARGETS["one_group"], TARGETS["three_groups"]
    if style.relist_target:
        return TARGETS["relist_one_group"], TARGETS["relist_three_groups"]
    return None


def least_table(results: Mapping[str, list[Reading]], styles: Sequence[Style]) -> list[str]:
    """Every style's least savings on 1- and 3-group tasks, counted as the model reads."""
    flat = results[STYLES[0].name]
    lines = ["| style | 1-group | 3-group |", "|---|---:|---:|"]
    for style in styles[1:]:
        rows = results[style.name]
        cells = [pct(savings(rows, flat, n)) for n in (1, 3)]
        lines.append(f"| {style.name} | {' | '.join(cells)} |")
    return lines


def report(
    results: Mapping[str, list[Reading]], counter: TokenCounter, styles: Sequence[Style] = STYLES
) -> str:
    flat = results[STYLES[0].name]
    honest, whole = read_of(flat[0]), read_of(flat[0], whole_wire=True)
    lines = [
        f"Command: `.venv/bin/python benchmarks/bench_tasks.py` (tokenizer: {counter.name}; "
        "`toolgate serve` over streamable HTTP in front of GitHub's MCP catalog, 117 tools "
        "in 10 groups; client `mcp.ClientSession`, protocol 2025-11-25).",
        "",
        "Read = `tools/list` pages + content blocks of results, each tool counted apart, as a "
        "host hands it to a model (name, description, input schema: "
        "`toolgate.tokens.model_text`, as `toolgate inspect` counts; no `icons`, `_meta`, "
        "`title` or annotations); the structured twin is what a host "
        "showing `structuredContent` instead would read. Saved is against the flat list "
        f"counted the same way ({honest:,} tokens; the same list is {whole:,} tokens with "
        "every wire field, icons included, which no model reads).",
        "",
        "### Least saved per style",
        "",
        *least_table(results, styles),
        "",
    ]
    verdicts = []
    for style in styles:
        rows = results[style.name]
        lines += [
            f"### {style.name}",
            "",
            "| task | groups | tools | read | saved | structured twin | extra calls | "
            "re-lists | reached |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for task, r, base in zip(TASKS, rows, flat, strict=True):
            read = read_of(r)
            saved = pct(1 - read / read_of(base)) if not r.missing else "n/a"
            lines.append(
                f"| {task.title} | {len(task.groups)} | {len(task.tools)} | {read:,} | "
                f"{saved} | {r.structured:,} | {r.calls} | {r.relists} | "
                f"{'yes' if not r.missing else 'no: ' + ', '.join(r.missing)} |"
            )
        lines.append("")
        initial = rows[0].initial
        one, three = savings(rows, flat, 1), savings(rows, flat, 3)
        calls = max(r.calls for r in rows)
        reached = all(not r.missing for r in rows)
        summary = (
            f"initial list {initial:,} tokens; 1-group tasks save {pct(one)} at least; "
            f"3-group tasks {pct(three)} at least; at most {calls} extra calls; "
            f"{'every task reached' if reached else 'NOT every task reached'}"
        )
        target = target_of(style)
        if target is not None:
            ok = (
                initial <= TARGETS["initial"]
                and one >= target[0]
                and three >= target[1]
                and calls <= TARGETS["calls"]
                and reached
            )
            verdicts.append((style.name, ok))
            verdict = "met" if ok else "MISSED"
            summary += f" (targets {pct(target[0])} / {pct(target[1])}: {verdict})"
        lines += [f"{style.name}: {summary}.", ""]
    met = [n for n, ok in verdicts if ok]
    missed = [n for n, ok in verdicts if not ok]
    lines.append(
        f"**Verdict** (initial list ≤ {TARGETS['initial']:,} tokens, ≤ {TARGETS['calls']} "
        f"extra calls, every task reached; on-demand paths 1-group ≥ "
        f"{pct(TARGETS['one_group'])} and 3-group ≥ {pct(TARGETS['three_groups'])}; a client "
        f"that re-lists ≥ {pct(TARGETS['relist_one_group'])} and "
        f"≥ {pct(TARGETS['relist_three_groups'])}): met by {', '.join(met) or 'none'}; "
        f"missed by {', '.join(missed) or 'none'}."
    )
    return "\n".join(lines)


#: the largest group ``toolgate init`` proposes by default (``GroupingSettings.max_size``)
AUTO_SIZE = GroupingSettings().max_size
#: what depends on the grouping (the flat list, search and lazy descriptions do not)
GROUPED: tuple[Opening, ...] = ("menu", "activators", "catalog", "groups", "view")


def auto_report(
    results: Mapping[str, list[Reading]],
    auto: Mapping[str, list[Reading]],
    grouping: Grouping,
) -> str:
    """The grouped styles with the groups ``toolgate init`` proposes, beside the
    hand-written groups, on the same tasks (a task's size is still its hand-written
    group count) and against the same flat list."""
    flat = results[STYLES[0].name]
    sizes = sorted(
        sum(1 for held in grouping.member.values() if g in held) for g in grouping.groups
    )
    nested = sum(1 for _, parent in grouping.groups.values() if parent)
    opened = [len(t.opens(grouping)) for t in TASKS]
    lines = [
        f"### With the groups `toolgate init` proposes (at most {AUTO_SIZE} tools each)",
        "",
        f"The same tasks and agent, the catalog grouped by `toolgate.grouping` instead: "
        f"{len(grouping.groups)} groups ({nested} nested), {sizes[0]} to {sizes[-1]} tools each; "
        f"a task opens {min(opened)} to {max(opened)} of them (each needed tool's group and "
        "the groups above it). Tasks keep their size from the hand-written groups (1 or 3); "
        "saved is against the same flat list.",
        "",
        "| style | 1-group, hand-written | 1-group, auto | 3-group, hand-written | "
        "3-group, auto | extra calls (auto) | reached (auto) | targets (auto) |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    verdicts = []
    for style in STYLES:
        if style.name not in auto:
            continue
        hand, rows = results.get(style.name), auto[style.name]
        one, three = savings(rows, flat, 1), savings(rows, flat, 3)
        calls = max(r.calls for r in rows)
        reached = all(not r.missing for r in rows)
        target = target_of(style)
        verdict = "—"
        if target is not None:
            ok = (
                rows[0].initial <= TARGETS["initial"]
                and one >= target[0]
                and three >= target[1]
                and calls <= TARGETS["calls"]
                and reached
            )
            verdicts.append((style.name, ok))
            verdict = f"{pct(target[0])} / {pct(target[1])}: {'met' if ok else 'MISSED'}"
        by_hand = [pct(savings(hand, flat, n)) if hand else "—" for n in (1, 3)]
        lines.append(
            f"| {style.name} | {by_hand[0]} | {pct(one)} | {by_hand[1]} | {pct(three)} | "
            f"{calls} | {'yes' if reached else 'NO'} | {verdict} |"
        )
    met = [n for n, ok in verdicts if ok]
    missed = [n for n, ok in verdicts if not ok]
    lines += [
        "",
        f"**Verdict, auto groups**: met by {', '.join(met) or 'none'}; "
        f"missed by {', '.join(missed) or 'none'}.",
    ]
    return "\n".join(lines)


def steps_report(results: Mapping[str, list[Reading]]) -> str:
    """Where each style's tokens go: every request of every task, in order."""
    lines = []
    for name, rows in results.items():
        lines.append(f"{name}:")
        for task, r in zip(TASKS, rows, strict=True):
            steps = ", ".join(f"{what} {tokens:,}" for what, tokens in r.steps)
            lines.append(f"  {task.title}: {steps}")
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--style",
        action="append",
        default=[],
        help="run only the styles whose name contains this (repeatable; the flat list, "
        "the baseline, always runs); RESULTS.md is written only by a full run",
    )
    parser.add_argument(
        "--phrased",
        action="store_true",
        help="the search agent sends each task's needs as compound clauses (Task.phrased) "
        "instead of one action per needed tool; never writes RESULTS.md",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the tables, write nothing to RESULTS.md"
    )
    parser.add_argument(
        "--grouping",
        choices=("hand", "auto", "both"),
        default="both",
        help="the hand-written groups, the groups toolgate init proposes (grouped styles "
        "only), or both (the default; RESULTS.md is written only with both)",
    )
    parser.add_argument(
        "--steps",
        action="store_true",
        help="also print what each request of each task read (where the tokens go)",
    )
    args = parser.parse_args()
    global PHRASED
    PHRASED = args.phrased
    styles = [
        s
        for i, s in enumerate(STYLES)
        if i == 0 or not args.style or any(k in s.name for k in args.style)
    ]
    counter = best_counter("o200k_base", vocab_dir=VOCAB)
    results = {}
    for style in styles:
        if args.grouping == "auto" and style is not STYLES[0]:
            continue
        results[style.name] = await measure_style(style, counter)
        print(f"measured {style.name}", file=sys.stderr)
    body = report(results, counter, [s for s in styles if s.name in results])
    auto: dict[str, list[Reading]] = {}
    if args.grouping != "hand":
        grouping = auto_grouping(raw_tools(CATALOG), "github", AUTO_SIZE)
        for style in styles:
            if style.opening in GROUPED:
                auto[style.name] = await measure_style(style, counter, grouping)
                print(f"measured {style.name} with auto groups", file=sys.stderr)
        body += "\n\n" + auto_report(results, auto, grouping)
    print(body)
    if args.steps:
        print(steps_report(results), file=sys.stderr)
        if auto:
            print("with auto groups:\n" + steps_report(auto), file=sys.stderr)
    full = len(styles) == len(STYLES) and args.grouping == "both"
    if full and not PHRASED and not args.dry_run:
        write_section(RESULTS, BEGIN, END, "## Tasks: what an agent reads per style\n\n" + body)


if __name__ == "__main__":
    asyncio.run(main())
