"""Scopes that name a child group, group hooks that run once and match the state, and
exclusion sets that reveals and one-request conflicts respect (DESIGN §3, §4, §9).

Library sessions, search through ``Delivery``, FastMCP's real client on both eras, and
two ``ToolSet`` replicas over a real ``redis-server``.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pytest
from fastmcp import Client, FastMCP

from toolgate import Group, HookContext, Principal, Tool, ToolSet
from toolgate.errors import ToolHidden
from toolgate.fastmcp import ToolgateMiddleware
from toolgate.state.redis import RedisStore
from toolgate.strategies import DeliveryConfig
from toolgate.strategies.delivery import Delivery

ANALYST = Principal(id="analyst", scope=("reports", "default"))


def ok(arguments: Any, context: Any) -> str:
    return "ok"


def reporting() -> ToolSet:
    """``reports`` is a child of ``internal``; the analyst's scope names only the child."""
    ts = ToolSet(default_principal=ANALYST)
    ts.add_groups([Group("internal", "Internal"), Group("reports", "Reports", parent="internal")])
    ts.add_tool(Tool("secret_tool", "Secret.", handler=ok, groups=("internal",)))
    ts.add_tool(Tool("report", "Report.", handler=ok, groups=("reports",)))
    return ts


# -- #1: a scope naming only a child group --------------------------------------------


async def test_a_child_group_named_by_scope_is_listed_without_its_hidden_parent() -> None:
    s = reporting().session("s", ANALYST)
    assert [g.to_dict() for g in await s.list_groups()] == [
        {
            "name": "reports",
            "title": None,
            "description": "Reports",
            "active": False,
            "parent": None,
            "tool_count": 1,
        }
    ]


async def test_a_child_group_named_by_scope_can_be_enabled_and_its_tools_run() -> None:
    s = reporting().session("s", ANALYST)
    result = await s.activate(["reports"])
    assert (result.changed, result.errors) == (("reports",), ())
    assert [t.name for t in await s.list_tools()] == ["report"]
    assert (await s.call("report", {})).result.content[0]["text"] == "ok"
    result = await s.deactivate(["reports"])
    assert result.changed == ("reports",)
    assert [t.name for t in await s.list_tools()] == []


async def test_neither_errors_nor_hints_name_a_parent_out_of_scope() -> None:
    s = reporting().session("s", ANALYST)
    with pytest.raises(ToolHidden) as hidden:
        await s.call("report", {})
    assert hidden.value.details["enable"] == ["reports"]
    assert "internal" not in hidden.value.message
    result = await s.activate(["internal", "reports"])
    assert result.changed == ("reports",)
    assert [e.message for e in result.errors] == ["Unknown group: internal"]


@pytest.mark.parametrize("mode", ["legacy", "2026"])
async def test_over_fastmcp_a_child_scope_never_names_the_parent(mode: str) -> None:
    mcp: FastMCP[Any] = FastMCP("reports")
    ToolgateMiddleware(reporting()).attach(mcp)
    said: list[str] = []
    options: dict[str, Any] = {"mode": "legacy"} if mode == "legacy" else {}
    async with Client(mcp, **options) as client:
        # the meta-tools' descriptions name the groups: a parent out of scope is not one
        said.append(json.dumps((await client.list_tools_mcp()).model_dump(mode="json")))
        listed = await client.call_tool_mcp("list_groups", {})
        said.append(json.dumps(listed.structured_content))
        groups = listed.structured_content or {}
        assert [g["parent"] for g in groups["groups"]] == [None]
        if mode == "legacy":
            refused = await client.call_tool_mcp("report", {})
            assert refused.is_error
            said.append(json.dumps(refused.model_dump(mode="json")))
            enabled = await client.call_tool_mcp("enable_tools", {"groups": ["reports"]})
            said.append(json.dumps(enabled.model_dump(mode="json")))
            assert not enabled.is_error
        else:
            opened = await client.call_tool_mcp("get_group", {"name": "reports"})
            said.append(json.dumps(opened.model_dump(mode="json")))
            assert not opened.is_error
        ran = await client.call_tool_mcp("report", {})
        said.append(json.dumps(ran.model_dump(mode="json")))
        assert not ran.is_error
        assert "ok" in json.dumps(ran.model_dump(mode="json"))
    assert not [text for text in said if "internal" in text]


async def test_an_activator_of_a_child_in_scope_never_names_the_parent_out_of_it() -> None:
    mcp: FastMCP[Any] = FastMCP("reports")
    config = DeliveryConfig(strategy="list_changed", meta_tools="activators")
    ToolgateMiddleware(reporting(), config).attach(mcp)
    async with Client(mcp, mode="legacy") as client:
        listed = {t.name: t.description for t in (await client.list_tools_mcp()).tools}
    assert "reports.activate" in listed
    assert not [name for name, text in listed.items() if "internal" in (text or "")]


# -- #8: reveals respect exclusion sets and last only while their groups do ----------------


def databases() -> tuple[ToolSet, Delivery]:
    ts = ToolSet()
    ts.add_groups(
        [Group("read_mode", "Read-only database access"), Group("write_mode", "Read-write access")]
    )
    ts.exclusive("read_mode", "write_mode")
    ts.add_tool(Tool("select_rows", "Select rows from a table.", handler=ok, groups=("read_mode",)))
    ts.add_tool(Tool("drop_table", "Drop a database table.", handler=ok, groups=("write_mode",)))
    return ts, Delivery(ts, DeliveryConfig(strategy="list_changed", search=True))


async def test_search_never_reveals_a_tool_whose_group_an_enabled_peer_excludes() -> None:
    _, delivery = databases()
    state, request = delivery.request(session_key="s", protocol="2025-11-25")
    await delivery.call_tool(state, request, "enable_tools", {"groups": ["read_mode"]})
    found = await delivery.call_tool(state, request, "search_tools", {"query": "drop table"})
    answer = found.result.structured
    assert answer is not None
    assert answer["revealed"] == []
    assert answer["errors"] == [
        "Cannot show tool 'drop_table': its group 'write_mode' is mutually exclusive with "
        "enabled group 'read_mode'; enable 'write_mode' (which turns group 'read_mode' off) "
        "to use it"
    ]
    assert [t.name for t in await request.session.list_tools()] == ["select_rows"]
    with pytest.raises(ToolHidden):
        await request.session.call("drop_table", {})


async def test_disabling_a_revealed_tools_group_hides_the_tool_again() -> None:
    ts, _ = databases()
    ts.add_group(Group("misc", "Misc"))
    ts.add_tool(Tool("note", "Note.", handler=ok, groups=("misc",)))
    session = ts.session("s")
    await session.reveal(["drop_table"])
    # closing a group it is not in keeps it
    await session.activate(["misc"])
    await session.deactivate(["misc"])
    assert [t.name for t in await session.list_tools()] == ["drop_table"]
    await session.activate(["write_mode"])
    await session.deactivate(["write_mode"])
    assert [t.name for t in await session.list_tools()] == []
    assert (await session.state()).revealed == frozenset()


async def test_enabling_an_exclusion_peer_hides_and_forgets_a_revealed_tool() -> None:
    ts, _ = databases()
    session = ts.session("s")
    await session.reveal(["drop_table"])
    result = await session.activate(["read_mode"])
    assert result.newly_hidden == ("drop_table",)
    assert (await session.state()).revealed == frozenset()
    await session.deactivate(["read_mode"])
    assert [t.name for t in await session.list_tools()] == []


async def test_displacing_a_revealed_tools_group_hides_it() -> None:
    ts, _ = databases()
    session = ts.session("s")
    await session.activate(["write_mode"])
    await session.reveal(["drop_table"])
    await session.activate(["read_mode"])
    assert [t.name for t in await session.list_tools()] == ["select_rows"]
    await session.deactivate(["read_mode"])
    assert [t.name for t in await session.list_tools()] == []


async def test_over_fastmcp_legacy_search_cannot_put_a_write_tool_in_a_read_session() -> None:
    ts, _ = databases()
    mcp: FastMCP[Any] = FastMCP("db")
    ToolgateMiddleware(ts, DeliveryConfig(strategy="list_changed", search=True)).attach(mcp)
    async with Client(mcp, mode="legacy") as client:
        await client.call_tool_mcp("enable_tools", {"groups": ["read_mode"]})
        found = await client.call_tool_mcp("search_tools", {"query": "drop table"})
        assert found.structured_content is not None
        assert found.structured_content["revealed"] == []
        listed = [t.name for t in (await client.list_tools_mcp()).tools]
        ran = await client.call_tool_mcp("drop_table", {})
    assert "drop_table" not in listed
    assert ran.is_error


# -- #5: hooks' effects match the state ----------------------------------------------------


def hooked(log: list[str], *, failing: set[str]) -> ToolSet:
    def hook(ctx: HookContext) -> None:
        log.append(f"{ctx.group}.{ctx.action}")
        if f"{ctx.group}.{ctx.action}" in failing:
            raise RuntimeError("provisioning failed")

    ts = ToolSet()
    for name, parent in (("a", None), ("b", None), ("a1", "a")):
        ts.add_group(Group(name, name, parent=parent, on_activate=hook, on_deactivate=hook))
        ts.add_tool(Tool(f"t_{name}", "T.", handler=ok, groups=(name,)))
    ts.exclusive("a", "b")
    return ts


async def test_an_exclusion_activation_whose_own_hook_fails_never_tears_down_the_peer() -> None:
    log: list[str] = []
    s = hooked(log, failing={"b.activate"}).session("s")
    await s.activate(["a"])
    log.clear()
    result = await s.activate(["b"])
    assert [e.message for e in result.errors] == [
        "Activation hook of group 'b' failed: provisioning failed"
    ]
    assert sorted((await s.state()).active) == ["a"]
    assert log == ["b.activate"]  # a's teardown never ran


async def test_a_failing_teardown_of_a_displaced_peer_undoes_the_activation() -> None:
    log: list[str] = []
    s = hooked(log, failing={"a.deactivate"}).session("s")
    await s.activate(["a", "a1"])
    log.clear()
    result = await s.activate(["b"])
    assert [e.code for e in result.errors] == ["hook_failed"]
    assert sorted((await s.state()).active) == ["a", "a1"]
    # b set up, a1 torn down, a's teardown failed: a1 set up again, b torn down
    assert log == ["b.activate", "a1.deactivate", "a.deactivate", "a1.activate", "b.deactivate"]


async def test_a_failing_deactivation_hook_sets_its_torn_down_children_up_again() -> None:
    log: list[str] = []
    s = hooked(log, failing={"a.deactivate"}).session("s")
    await s.activate(["a", "a1"])
    log.clear()
    result = await s.deactivate(["a"])
    assert [e.code for e in result.errors] == ["hook_failed"]
    assert sorted((await s.state()).active) == ["a", "a1"]
    assert log == ["a1.deactivate", "a.deactivate", "a1.activate"]


# -- #4: hooks run once, outside the store's retried compare-and-set ------------------


def replica(url: str, tag: str, runs: Counter[tuple[str, str, str]]) -> ToolSet:
    async def hook(ctx: HookContext) -> None:
        runs[(tag, ctx.group, ctx.action)] += 1
        await asyncio.sleep(0.05)  # both replicas plan on the same stored version

    ts = ToolSet(store=RedisStore(url=url, timeout=10.0))
    for g in ("g1", "g2"):
        ts.add_group(Group(g, g, on_activate=hook, on_deactivate=hook))
        ts.add_tool(Tool(f"t_{g}", "T.", handler=ok, groups=(g,)))
    return ts


async def test_racing_replicas_run_each_activation_hook_once(redis_url: str) -> None:
    runs: Counter[tuple[str, str, str]] = Counter()
    one, two = replica(redis_url, "r1", runs), replica(redis_url, "r2", runs)
    try:
        r1, r2 = await asyncio.gather(
            one.session("shared").activate(["g1"]), two.session("shared").activate(["g2"])
        )
        assert (r1.changed, r2.changed) == (("g1",), ("g2",))
        assert sorted((await one.session("shared").state()).active) == ["g1", "g2"]
        assert dict(runs) == {("r1", "g1", "activate"): 1, ("r2", "g2", "activate"): 1}
    finally:
        await one.close()
        await two.close()


async def test_a_replica_that_loses_a_race_for_one_group_undoes_its_hook(redis_url: str) -> None:
    runs: Counter[tuple[str, str, str]] = Counter()
    one, two = replica(redis_url, "r1", runs), replica(redis_url, "r2", runs)
    try:
        results = await asyncio.gather(
            one.session("shared").activate(["g1"]), two.session("shared").activate(["g1"])
        )
        assert sorted(len(r.changed) for r in results) == [0, 1]
        assert (await one.session("shared").state()).active == frozenset({"g1"})
        set_up = runs[("r1", "g1", "activate")] + runs[("r2", "g1", "activate")]
        torn_down = runs[("r1", "g1", "deactivate")] + runs[("r2", "g1", "deactivate")]
        assert set_up - torn_down == 1  # the hooks' effects match the one activation
    finally:
        await one.close()
        await two.close()


# -- #10: exclusion conflicts in one request follow the order given -------------------


def three() -> ToolSet:
    def boom(ctx: HookContext) -> None:
        raise RuntimeError("x")

    ts = ToolSet()
    ts.add_groups([Group("a", "A"), Group("b", "B", on_activate=boom), Group("c", "C")])
    ts.exclusive("a", "b", "c")
    for g in "abc":
        ts.add_tool(Tool(f"t_{g}", "T.", handler=ok, groups=(g,)))
    return ts


async def test_the_first_named_of_two_exclusion_peers_is_the_one_enabled() -> None:
    result = await three().session("s").activate(["c", "a"])
    assert result.changed == ("c",)
    assert [e.message for e in result.errors] == [
        "Cannot enable group 'a' together with 'c' in one request: they are mutually exclusive"
    ]


async def test_a_peer_that_failed_does_not_block_the_next_one_named() -> None:
    s = three().session("s")
    result = await s.activate(["b", "c"])
    assert result.changed == ("c",)
    assert [e.message for e in result.errors] == ["Activation hook of group 'b' failed: x"]
    assert sorted((await s.state()).active) == ["c"]
