"""Budgets and token estimates counted with the real ``o200k_base`` tokenizer.

Every number below is a count of real BPE tokens over a tool's exact MCP wire form
(compact JSON, sorted keys); the vocabulary is ``../shared/data/tokenizers/``. Through
``ToolSet``/``Session``, through ``Delivery``, and through the SDK's real ``mcp.Client``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server import Server

from _fixtures.core import ok
from _fixtures.mcp_servers import Notes
from toolgate import ConfigError, Group, Principal, Tool, ToolSet
from toolgate.events import Event
from toolgate.lowlevel import bind
from toolgate.strategies import Delivery, DeliveryConfig
from toolgate.tokens import TiktokenCounter, wire_text

PATH = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File path, relative to the workspace."}
    },
    "required": ["path"],
}
# o200k tokens of each tool's wire form (asserted in the first test)
COST = {
    "ping": 22,
    "read_file": 48,
    "write_file": 52,
    "list_issues": 29,
    "create_issue": 31,
    "search_everything": 262,
}
O200K = "tiktoken:o200k_base"


@pytest.fixture(scope="module")
def o200k(shared_data: Path) -> TiktokenCounter:
    return TiktokenCounter("o200k_base", shared_data / "tokenizers")


def build(counter: TiktokenCounter, **options: Any) -> ToolSet:
    """``files`` costs 362 tokens, ``issues`` 322: they share ``search_everything`` (262)."""
    ts = ToolSet("budgets", token_counter=counter, **options)
    ts.add_groups([Group("files", "Workspace files"), Group("issues", "Issue tracker")])
    ts.add_tools(
        [
            Tool("ping", "Answer pong.", handler=ok),
            Tool(
                "read_file",
                "Read a text file from the workspace.",
                handler=ok,
                input_schema=PATH,
                groups=("files",),
            ),
            Tool(
                "write_file",
                "Write a text file in the workspace, replacing its content.",
                handler=ok,
                input_schema=PATH,
                groups=("files",),
            ),
            Tool(
                "list_issues",
                "List the open issues of a repository.",
                handler=ok,
                groups=("issues",),
            ),
            Tool(
                "create_issue",
                "Open a new issue with a title and a body.",
                handler=ok,
                groups=("issues",),
            ),
            Tool(
                "search_everything",
                "Search issues, files and pull requests. " * 30,
                handler=ok,
                groups=("issues", "files"),
            ),
        ]
    )
    return ts


class Recorder:
    def __init__(self, ts: ToolSet) -> None:
        self.events: list[Event] = []
        ts.events.subscribe(self.events.append)

    def of(self, type_: str) -> list[tuple[Any, ...]]:
        return [(e.session, e.principal, dict(e.data)) for e in self.events if e.type == type_]


async def visible(ts: ToolSet, key: str = "s") -> list[str]:
    return [t.name for t in await ts.session(key).list_tools()]


def test_budgets_count_o200k_tokens_of_each_tools_exact_wire_form(o200k: TiktokenCounter) -> None:
    ts = build(o200k)
    assert {n: ts.tool_tokens(t) for n, t in ts.catalog.tools.items()} == COST
    ping = ts.catalog.tools["ping"]
    text = wire_text(ping.wire())
    assert text == (
        '{"description":"Answer pong.","inputSchema":{"properties":{},"type":"object"},'
        '"name":"ping"}'
    )
    assert o200k.count(text) == COST["ping"]


async def test_an_activation_over_max_tokens_is_refused_with_what_it_adds_and_what_is_left(
    o200k: TiktokenCounter,
) -> None:
    ts = build(o200k, max_tokens=400)
    s = ts.session("s")
    assert (await s.activate(["files"])).changed == ("files",)  # 22 + 362 = 384 tokens
    result = await s.activate(["issues"])  # adds list_issues and create_issue: 60 tokens
    assert result.changed == ()
    assert [e.to_dict() for e in result.errors] == [
        {
            "group": "issues",
            "code": "budget_exceeded",
            "message": f"Cannot enable group 'issues': 444 tokens would be visible ({O200K}), "
            "over max_tokens=400 (the activation adds 60; the budget leaves 16)",
        }
    ]
    assert result.visible_changed is False
    assert await visible(ts) == ["ping", "read_file", "search_everything", "write_file"]


async def test_a_refused_activation_is_a_budget_exceeded_event(o200k: TiktokenCounter) -> None:
    ts = build(o200k, max_tokens=100)
    log = Recorder(ts)
    await ts.session("s", Principal("alice")).activate(["files"])
    assert log.of("budget.exceeded") == [
        (
            "s",
            "alice",
            {
                "group": "files",
                "detail": f"384 tokens would be visible ({O200K}), over max_tokens=100 "
                "(the activation adds 362; the budget leaves 78)",
            },
        )
    ]
    assert log.of("group.activated") == []
    assert log.of("tool.surfaced") == []


async def test_an_activation_that_exactly_fills_the_budget_is_allowed(
    o200k: TiktokenCounter,
) -> None:
    ts = build(o200k, max_tokens=384)
    result = await ts.session("s").activate(["files"])
    assert (result.changed, result.errors) == (("files",), ())
    assert ts.view_tokens(result.after) == 384


async def test_initial_groups_over_the_budget_are_a_config_error_with_the_numbers(
    o200k: TiktokenCounter,
) -> None:
    ts = build(o200k, initial_groups=["files", "issues"], max_tokens=400)
    log = Recorder(ts)
    with pytest.raises(ConfigError) as err:
        await ts.session("s").list_tools()
    assert err.value.message == (
        f"initial_groups exceed the budget: 444 tokens would be visible ({O200K}), over "
        "max_tokens=400 (the activation adds 444; the budget leaves 400)"
    )
    assert err.value.details == {"key": "initial_groups"}
    assert log.of("budget.exceeded") == [
        (
            None,
            None,
            {
                "initial_groups": ["files", "issues"],
                "detail": f"444 tokens would be visible ({O200K}), over max_tokens=400 "
                "(the activation adds 444; the budget leaves 400)",
            },
        )
    ]


async def test_initial_groups_within_the_budget_start_every_session(
    o200k: TiktokenCounter,
) -> None:
    ts = build(o200k, initial_groups=["files"], max_tokens=400)
    assert await visible(ts) == ["ping", "read_file", "search_everything", "write_file"]


# -- estimates -------------------------------------------------------------------------------


async def test_a_sessions_estimate_counts_its_visible_tools_per_tool_and_group(
    o200k: TiktokenCounter,
) -> None:
    ts = build(o200k)
    s = ts.session("s")
    await s.activate(["files", "issues"])
    estimate = await s.estimate_tokens()
    assert estimate == {
        "total": 444,
        "tokenizer": O200K,
        "per_tool": [
            {"name": "create_issue", "characters": 129, "tokens": 31},
            {"name": "list_issues", "characters": 124, "tokens": 29},
            {"name": "ping", "characters": 92, "tokens": 22},
            {"name": "read_file", "characters": 219, "tokens": 48},
            {"name": "search_everything", "characters": 1293, "tokens": 262},
            {"name": "write_file", "characters": 242, "tokens": 52},
        ],
        # a tool in two groups counts in both; root tools count as "default"
        "per_group": {
            "default": {"tools": 1, "tokens": 22},
            "files": {"tools": 3, "tokens": 362},
            "issues": {"tools": 3, "tokens": 322},
        },
        # more than 3x the median (39.5 tokens)
        "outliers": ["search_everything"],
    }
    assert estimate["total"] == ts.view_tokens(await s.view())


async def test_an_estimate_follows_the_session_and_its_principal(o200k: TiktokenCounter) -> None:
    ts = build(o200k)
    narrow = ts.session("n", Principal("bot", scope=("issues",)))
    await narrow.activate(["issues"])
    estimate = await narrow.estimate_tokens()
    assert [t["name"] for t in estimate["per_tool"]] == [
        "create_issue",
        "list_issues",
        "search_everything",
    ]
    assert (estimate["total"], estimate["outliers"]) == (322, ["search_everything"])
    fresh = await ts.session("other").estimate_tokens()
    assert (fresh["total"], fresh["per_group"]) == (22, {"default": {"tools": 1, "tokens": 22}})


# -- search reveals within the budget ----------------------------------------------------------


async def test_a_search_result_over_the_budget_stays_hidden_and_the_reply_says_why(
    o200k: TiktokenCounter,
) -> None:
    ts = build(o200k, max_tokens=100)
    log = Recorder(ts)
    delivery = Delivery(ts, DeliveryConfig(strategy="list_changed", search=True))
    strategy, request = delivery.request(session_key="s", protocol="2025-11-25")
    reply = await delivery.call_tool(
        strategy, request, "search_tools", {"query": "search issues", "limit": 3, "detail": "full"}
    )
    data = reply.result.structured
    assert data is not None
    assert [r["name"] for r in data["results"]] == [
        "search_everything",
        "list_issues",
        "create_issue",
    ]
    # ranked first, search_everything is measured against ping alone (22 + 262 > 100);
    # the next two fit: 22 + 29 + 31 = 82 tokens
    assert (data["revealed"], reply.list_changed) == (["create_issue", "list_issues"], True)
    detail = (
        f"284 tokens would be visible ({O200K}), over max_tokens=100 "
        "(revealing 'search_everything' adds 262; the budget leaves 78)"
    )
    room = "; disable_tools closes a group, or the tools search showed of one, to make room"
    assert data["errors"] == [f"Cannot show tool 'search_everything': {detail}{room}"]
    assert await visible(ts) == ["create_issue", "list_issues", "ping"]
    assert log.of("budget.exceeded") == [
        ("s", "local", {"tool": "search_everything", "detail": detail})
    ]


# -- end to end ----------------------------------------------------------------------------


async def test_mcp_client_is_refused_an_over_budget_group_with_the_numbers_and_no_notification(
    o200k: TiktokenCounter,
) -> None:
    ts = build(o200k, max_tokens=400)
    server: Server[Any] = Server("budgets")
    bind(server, ts, DeliveryConfig(strategy="list_changed"), identity=lambda caller: None)
    notes = Notes()
    async with Client(server, mode="legacy", message_handler=notes) as client:
        files = await client.call_tool("enable_tools", {"groups": ["files"]})
        assert await notes.settled() == ["notifications/tools/list_changed"]
        issues = await client.call_tool("enable_tools", {"groups": ["issues"]})
        assert await notes.settled() == []
        listed = [t.name for t in (await client.session.list_tools()).tools]
    assert (files.is_error, issues.is_error) == (False, True)
    assert issues.structured_content is not None
    assert issues.structured_content["errors"] == [
        f"Cannot enable group 'issues': 444 tokens would be visible ({O200K}), "
        "over max_tokens=400 (the activation adds 60; the budget leaves 16)"
    ]
    assert listed == [
        "call_tool",
        "describe_tools",
        "disable_tools",
        "enable_tools",
        "list_groups",
        "ping",
        "read_file",
        "search_everything",
        "write_file",
    ]
