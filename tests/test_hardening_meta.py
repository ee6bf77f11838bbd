"""Hardening of the meta-tools and of the session path, through real MCP clients.

A tool that ran reports its result even when the stage change after it cannot be saved
(a retry would repeat its side effect); an out-of-scope group's activator reads exactly
like a made-up one; ``list_groups`` counts only the tools a principal may run; every
group has a listed activator (tmcp), so a client that never re-lists reaches nested
groups; argument errors name the problem in JSON's words and never echo 10 KB back.
The access cases run through every adapter too (``_fixtures.spec``).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any

import pytest
from mcp import Client
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from _fixtures.redis_server import RedisServer
from _fixtures.spec import Adapter
from toolgate import CallContext, Group, Policy, Principal, Tool, ToolSet
from toolgate.errors import GroupNotFound
from toolgate.flow import Flow, Stage, Transition
from toolgate.lowlevel import bind
from toolgate.state import open_store
from toolgate.strategies import DeliveryConfig

#: a Python type name where JSON's word belongs ("a list of names" is English)
PYTHON_TYPE = re.compile(r"\b(NoneType|dict|str|int|float|bool)\b|not list\b")


def echo(name: str) -> Any:
    def run(args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
        return {"tool": name}

    return run


def catalog(**options: Any) -> ToolSet:
    """``code`` (with its child ``repos``) and ``issues``; ``admin`` holds one tool
    anyone may run and two that need ``verified`` trust."""
    ts = ToolSet("hardening", **options)
    ts.add_groups(
        [
            Group("code", "Code and repositories"),
            Group("repos", "Repository admin", parent="code"),
            Group("issues", "Issue tracker"),
            Group("admin", "Administration", show_deactivator=False),
        ]
    )
    verified = Policy(min_trust="verified")
    ts.add_tools(
        [
            Tool("ping", "Answer pong.", handler=echo("ping")),
            Tool("search_code", "Search code.", groups=("code",), handler=echo("search_code")),
            Tool("delete_repo", "Delete a repository.", groups=("repos",), handler=echo("d")),
            Tool("open_issue", "Open an issue.", groups=("issues",), handler=echo("open_issue")),
            Tool("audit_log", "Read the audit log.", groups=("admin",), handler=echo("audit")),
            Tool("ban_user", "Ban a user.", groups=("admin",), policy=verified, handler=echo("b")),
            Tool("wipe_all", "Wipe it all.", groups=("admin",), policy=verified, handler=echo("w")),
        ]
    )
    return ts


def served(ts: ToolSet, principal: Principal | None = None, **config: Any) -> Client:
    server: Server[Any] = Server("hardening")
    bind(
        server,
        ts,
        DeliveryConfig(**config),
        identity=(lambda caller: principal) if principal is not None else None,
    )
    return Client(server, mode="legacy")


def activators(principal: Principal | None = None, **config: Any) -> Client:
    options = {"strategy": "list_changed", "meta_tools": "activators", **config}
    return served(catalog(), principal, **options)


async def listed(client: Client) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


async def result_of(client: Client, name: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
    result = await client.call_tool(name, arguments)
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    return bool(result.is_error), (json.loads(text) if text.startswith("{") else text)


# -- a retry after success would repeat the side effect ------------------------------------


async def test_a_tool_that_ran_reports_its_result_when_its_stage_change_cannot_be_saved(
    redis_server: RedisServer, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    charged: list[int] = []

    def charge(args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
        charged.append(1)
        redis_server.stop()  # the store goes away while the tool runs
        return {"charged": len(charged)}

    flow = Flow(
        initial="cart",
        stages=(Stage("cart", transitions=(Transition("charge", "paid"),)), Stage("paid")),
    )
    ts = ToolSet("shop", store=open_store(redis_url), flow=flow)
    ts.add_tool(Tool("charge", "Charge the card.", handler=charge))
    try:
        async with served(ts) as client:
            assert "charge" in await listed(client)  # (the client validates results by it)
            with caplog.at_level(logging.ERROR, logger="toolgate.toolset"):
                result = await client.call_tool("charge", {})
    finally:
        redis_server.start()
        await ts.close()
    assert not result.is_error
    assert result.structured_content == {"charged": 1}
    assert charged == [1]  # ran once: nothing told the client to try again
    [record] = [r for r in caplog.records if r.name == "toolgate.toolset"]
    assert "'charge' ran, but moving session" in record.getMessage()
    assert "'paid'" in record.getMessage()


# -- access: out of scope reads like nonexistent ------------------------------------------


async def test_an_out_of_scope_groups_activator_reads_exactly_like_a_made_up_one() -> None:
    issues_only = Principal(id="p", scope=("issues",))
    async with activators(issues_only) as client:
        shown = await listed(client)
        assert "issues.activate" in shown
        assert not [n for n in shown if n.startswith(("code.", "repos.", "admin."))]
        answers = []
        for group in ("code", "no_such_group"):
            with pytest.raises(MCPError) as raised:
                await client.call_tool(f"{group}.activate", {})
            error = raised.value.error
            answers.append((error.code, error.message.replace(group, "<g>"), error.data))
        assert answers[0] == answers[1] == (-32602, "Unknown tool: <g>.activate", None)
        # the dispatcher says the same for both
        through = []
        for group in ("code", "no_such_group"):
            is_error, body = await result_of(client, "call_tool", {"name": f"{group}.activate"})
            through.append((is_error, {k: v.replace(group, "<g>") for k, v in body.items()}))
        assert through[0] == through[1]
        assert through[0] == (True, {"error": "Unknown tool: <g>.activate", "code": "unknown_tool"})


async def test_list_groups_counts_only_the_tools_the_principal_may_run() -> None:
    declared = Principal(id="p", trust="declared")
    async with served(catalog(), declared, strategy="list_changed") as client:
        _, body = await result_of(client, "list_groups", {})
    counts = {g["name"]: g["tool_count"] for g in body["groups"]}
    assert counts == {"admin": 1, "code": 1, "issues": 1, "repos": 1}
    linked = Principal(id="q", trust="linked")
    async with served(catalog(), linked, strategy="list_changed") as client:
        _, body = await result_of(client, "list_groups", {})
    assert {g["name"]: g["tool_count"] for g in body["groups"]}["admin"] == 3


# -- tmcp activators: every group has one --------------------------------------------------


async def test_every_group_has_a_listed_activator_so_nested_groups_need_no_relisting() -> None:
    async with activators() as client:
        first = await listed(client)
        assert [n for n in first if n.endswith(".activate")] == [
            "admin.activate",
            "code.activate",
            "issues.activate",
            "repos.activate",
        ]
        assert not [n for n in first if n.endswith(".deactivate")]
        # a child before its parent still fails, naming the parent
        is_error, body = await result_of(client, "repos.activate", {})
        assert is_error and body["enabled"] == []
        assert body["errors"] == [
            "Cannot enable group 'repos': its parent group 'code' is not enabled. Enable "
            "'code' first, or both in one request."
        ]
        # then in order, from the first list alone: no re-listing needed
        assert (await result_of(client, "code.activate", {}))[1]["enabled"] == ["code"]
        is_error, body = await result_of(client, "repos.activate", {})
        assert not is_error and body["enabled"] == ["repos"]
        assert (await client.call_tool("delete_repo", {})).structured_content == {"tool": "d"}
        await result_of(client, "admin.activate", {})
        now = await listed(client)
    # deactivators while a group is on, unless show_deactivator=False
    assert [n for n in now if n.endswith(".deactivate")] == ["code.deactivate", "repos.deactivate"]
    assert [n for n in now if n.endswith(".activate")] == [n for n in first if ".activate" in n]


async def test_activators_reachable_lists_only_those_that_can_succeed_now() -> None:
    async with activators(activators="reachable") as client:
        first = await listed(client)
        assert "repos.activate" not in first and "code.activate" in first
        await client.call_tool("code.activate", {})
        now = await listed(client)
    assert "repos.activate" in now and "code.activate" not in now
    assert "code.deactivate" in now


def test_an_unknown_activators_setting_is_a_config_error() -> None:
    from toolgate import ConfigError

    with pytest.raises(ConfigError, match="activators must be 'always' or 'reachable'"):
        DeliveryConfig(activators="sometimes")


@pytest.mark.parametrize(
    ("setting", "problem"),
    [
        ({"search": "false"}, "search must be True or False, got str 'false'"),
        ({"names": "tools"}, "names must be a MetaNames, got str 'tools'"),
        (
            {"registry": ["read_only"]},
            "registry must be a StrategyRegistry, got list ['read_only']",
        ),
    ],
)
def test_a_delivery_setting_of_the_wrong_kind_is_a_config_error(
    setting: dict[str, Any], problem: str
) -> None:
    from toolgate import ConfigError

    with pytest.raises(ConfigError) as err:
        DeliveryConfig(**setting)
    assert err.value.message == problem


# -- errors that name the problem ----------------------------------------------------------


async def test_an_over_long_group_name_is_refused_with_the_limit_not_echoed() -> None:
    long = "g" * 10_000
    async with activators() as client:
        is_error, body = await result_of(client, "enable_tools", {"groups": [long]})
    assert is_error
    assert body == {
        "error": "'groups' must contain group names: group names are at most 64 characters; "
        "got one of 10000"
    }
    async with served(catalog(), strategy="catalog") as client:
        is_error, body = await result_of(client, "get_group", {"name": long})
    assert is_error
    assert body["error"] == (
        "'name' must be a group name: group names are at most 64 characters; got one of 10000"
    )
    # and wherever a group is looked up by name (groups/get, activation)
    assert GroupNotFound(long).message == (
        "Unknown group: group names are at most 64 characters; this one has 10000"
    )
    assert len(str(GroupNotFound(long).details)) < 200


@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    [
        ("list_groups", {"verbose": True}, "Unexpected argument(s): 'verbose'; list_groups takes "),
        ("code.activate", {"force": True}, "Unexpected argument(s): 'force'; code.activate takes"),
        ("enable_tools", {"groups": ["code"], "mode": 1}, "Unexpected argument(s): 'mode'; "),
        ("call_tool", {"name": "ping", "args": {}}, "Unexpected argument(s): 'args'; "),
        ("describe_tools", {"tools": ["ping"], "x": 1}, "Unexpected argument(s): 'x'; "),
    ],
)
async def test_an_unknown_argument_to_a_meta_tool_is_named(
    tool: str, arguments: dict[str, Any], named: str
) -> None:
    async with activators() as client:
        is_error, body = await result_of(client, tool, arguments)
    assert is_error
    assert body["error"].startswith(named)


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("enable_tools", {"groups": None}, "'groups' must be a list of group names, like "),
        ("enable_tools", {"groups": {"a": 1}}, "not object"),
        ("enable_tools", {"groups": "code"}, "not string"),
        ("enable_tools", {"groups": 3}, "not integer"),
        ("enable_tools", {"groups": [None]}, "a group name is a string, not null"),
        ("enable_tools", {"groups": [["code"]]}, "a group name is a string, not array"),
        ("enable_tools", {"groups": ["code"], "detail": 2.5}, "not number"),
        ("enable_tools", {"groups": ["code"], "detail": False}, "not boolean"),
        ("call_tool", {"name": None}, "not null"),
        ("call_tool", {"name": "ping", "arguments": ["a"]}, "not array"),
        ("describe_tools", {"tools": 7}, "not integer"),
        ("describe_tools", {"tools": [{"name": "ping"}]}, "not object"),
    ],
)
async def test_argument_errors_speak_json_not_python(
    tool: str, arguments: dict[str, Any], expected: str
) -> None:
    async with activators() as client:
        is_error, body = await result_of(client, tool, arguments)
    assert is_error
    message = body["error"] if isinstance(body, dict) and "error" in body else json.dumps(body)
    assert expected in message
    assert not PYTHON_TYPE.search(message), message


async def test_a_null_in_the_groups_list_says_null() -> None:
    async with activators() as client:
        is_error, body = await result_of(client, "enable_tools", {"groups": None})
    assert is_error and body["error"].endswith("not null")


# -- the same through every adapter (SDK server, FastMCP, the gateway) ---------------------


async def test_every_adapter_answers_an_out_of_scope_activator_as_an_unknown_tool(
    adapter: Adapter,
) -> None:
    issues_only = Principal(id="local", trust="declared", scope=("issues", "default"))
    async with adapter.connect(meta_tools="activators", principal=issues_only) as wire:
        listed = [t.name for t in (await wire.session.list_tools()).tools]
        answers = []
        for group in ("code", "no_such_group"):
            with pytest.raises(MCPError) as raised:
                await wire.call(f"{group}.activate")
            error = raised.value.error
            answers.append((error.code, error.message.replace(group, "<g>"), error.data))
    assert [n for n in listed if n.endswith(".activate")] == ["issues.activate"]
    assert answers[0] == answers[1] == (-32602, "Unknown tool: <g>.activate", None)


async def test_every_adapter_counts_a_groups_tools_by_what_the_principal_may_run(
    adapter: Adapter,
) -> None:
    async with adapter.connect() as wire:  # trust "declared": delete_repo needs "verified"
        body = (await wire.call("list_groups")).structured_content
    assert body is not None
    assert {g["name"]: g["tool_count"] for g in body["groups"]}["repos"] == 1
