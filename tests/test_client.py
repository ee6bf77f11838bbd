"""``toolgate.client``: an agent host discovering, fetching and calling grouped tools over
streamable HTTP, with the extension, with toolgate's meta-tools, and against a flat list."""

from __future__ import annotations

import re
from typing import Any

import fastmcp
import httpx2
import mcp_types as mt
import pytest
from fastmcp.client.transports import StreamableHttpTransport
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from _fixtures.mcp_servers import serve
from test_groups_extension import build_toolset, connect, fastmcp_app, serve_tools
from toolgate.client import GroupsClient, ToolNames, session_options
from toolgate.client.extension import GetGroupParams, ListGroupsParams
from toolgate.strategies import Delivery, DeliveryConfig

MODES = ["legacy", "auto"]
OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def plain_app(strategy: str) -> Any:
    """A FastMCP server without the extension, delivering with ``strategy``."""
    server = fastmcp.FastMCP("plain")
    serve_tools(server._mcp_server, Delivery(build_toolset(), DeliveryConfig(strategy=strategy)))
    return server.http_app(path="/mcp")


def plain_client(url: str, mode: str) -> fastmcp.Client[Any]:
    return fastmcp.Client(StreamableHttpTransport(url, verify=False), mode=mode)


# -- with the extension ------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_an_agent_discovers_fetches_and_calls_a_grouped_tool(mode: str) -> None:
    async with serve(fastmcp_app(Delivery(build_toolset()))) as url, connect(url, mode) as c:
        groups = GroupsClient(c)
        assert await groups.start() == "groups"
        listed = await groups.dispatch("list_groups", {})
        opened = await groups.dispatch("get_group", {"name": "issues"})
        called = await groups.dispatch("create_issue", {"q": "crash on start"})
        via_helper = await groups.dispatch(
            "call_tool", {"name": "create_issue", "arguments": {"q": "again"}}
        )
    assert [g["name"] for g in listed["groups"]] == ["admin", "issues", "pull-requests"]
    assert opened == {
        "name": "issues",
        "instructions": "Search first.",
        "tools": [
            {"name": "create_issue", "description": "Open an issue."},
            {"name": "list_issues", "description": "List issues."},
            {"name": "search", "description": "Search issues and PRs."},
        ],
        "groups": [{"name": "issue-labels", "description": "Label issues."}],
    }
    expected = {"tool": "create_issue", "arguments": {"q": "crash on start"}}
    assert called["structuredContent"] == expected
    assert called["isError"] is False
    assert via_helper["structuredContent"]["arguments"] == {"q": "again"}


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_shared_by_several_groups_is_registered_once(mode: str) -> None:
    async with serve(fastmcp_app(Delivery(build_toolset()))) as url, connect(url, mode) as c:
        groups = GroupsClient(c)
        await groups.start()
        fetched = await groups.fetch_tree()
    assert [g.name for g in fetched] == ["admin", "issues", "pull-requests", "issue-labels"]
    assert sorted(groups.tools) == [
        "add_label",
        "create_issue",
        "delete_repo",
        "list_issues",
        "merge_pr",
        "ping",
        "search",
        "whoami",
    ]
    assert groups.tool_groups["search"] == {"issues", "pull-requests"}
    assert [t["function"]["name"] for t in groups.openai_tools()].count("search") == 1
    assert groups.conflicts == []
    assert groups.cycles == []


async def test_a_raw_client_session_declares_the_extension_with_session_options() -> None:
    async with (
        serve(fastmcp_app(Delivery(build_toolset()))) as url,
        httpx2.AsyncClient(verify=False) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, **session_options()) as session,
    ):
        await session.discover()  # 2026-07-28: the declaration rides every request's _meta
        groups = GroupsClient(session)
        mode = await groups.start()
        issue_labels = await groups.get_group("issue-labels")
    assert mode == "groups"
    assert sorted(groups.tools) == ["add_label", "ping", "whoami"]
    assert issue_labels.tools == ("add_label",)


async def test_an_unknown_group_reaches_the_model_as_an_error_it_can_read() -> None:
    async with serve(fastmcp_app(Delivery(build_toolset()))) as url, connect(url, "auto") as c:
        groups = GroupsClient(c)
        await groups.start()
        answer = await groups.dispatch("get_group", {"name": "nope"})
    assert answer == {"error": "Unknown group: nope", "code": -32002}


# -- a foreign server presenting a cycle ---------------------------------------------------
def cyclic_app() -> Any:
    """Groups a -> b -> a and a -> c: what a careless server might send."""
    children = {"a": ["b", "c"], "b": ["a"], "c": []}

    async def groups_list(ctx: Any, params: ListGroupsParams) -> dict[str, Any]:
        return {"groups": [{"name": "a", "description": "A"}]}

    async def groups_get(ctx: Any, params: GetGroupParams) -> dict[str, Any]:
        kids = [{"name": k, "description": k.upper()} for k in children[params.name]]
        return {"contents": {"tools": [], "groups": kids}}

    async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=[])

    server = Server("cyclic", on_list_tools=list_tools)
    server.add_request_handler("groups/list", ListGroupsParams, groups_list)
    server.add_request_handler("groups/get", GetGroupParams, groups_get)
    server.extensions["io.modelcontextprotocol/groups"] = {}
    return server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")


async def test_the_client_stops_on_a_cycle_a_foreign_server_presents() -> None:
    async with serve(cyclic_app()) as url, connect(url, "auto") as c:
        groups = GroupsClient(c)
        await groups.start()
        fetched = await groups.fetch_tree()
    assert [g.name for g in fetched] == ["a", "b", "c"]
    assert groups.cycles == [("a", "b", "a")]


# -- without the extension -----------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_a_server_without_the_extension_is_used_through_its_meta_tools(mode: str) -> None:
    async with serve(plain_app("catalog")) as url, plain_client(url, mode) as c:
        groups = GroupsClient(c)
        assert await groups.start() == "meta"
        listed = await groups.list_groups()
        opened = await groups.get_group("pull_requests")
        result = await groups.call_tool("merge_pr", {})
    assert [g["name"] for g in listed] == ["admin", "issues", "pull_requests"]
    assert opened.tools == ("merge_pr", "search")
    assert result.structured_content == {"tool": "merge_pr", "arguments": {}}
    assert [t["name"] for t in groups.helper_tools()] == ["list_groups", "get_group", "call_tool"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_flat_server_gives_the_agent_its_whole_list_and_no_helpers(mode: str) -> None:
    async with serve(plain_app("flat")) as url, plain_client(url, mode) as c:
        groups = GroupsClient(c)
        assert await groups.start() == "flat"
        with pytest.raises(MCPError):
            await groups.get_group("issues")
    assert groups.helper_tools() == []
    assert len(groups.anthropic_tools()) == 8


# -- exports for LLM APIs ----------------------------------------------------------------
async def test_openai_and_anthropic_exports_have_their_apis_shapes() -> None:
    async with Client(Server("bare")) as client:
        groups = GroupsClient(client, mode="groups")
    groups.tools["repo.create"] = {
        "name": "repo.create",
        "description": "Create a repository.",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
    }
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    assert groups.openai_tools()[-1] == {
        "type": "function",
        "function": {
            "name": "repo_create",
            "description": "Create a repository.",
            "parameters": schema,
        },
    }
    assert groups.anthropic_tools()[-1] == {
        "name": "repo_create",
        "description": "Create a repository.",
        "input_schema": schema,
    }
    assert groups.names.original("repo_create") == "repo.create"


def test_tool_names_are_made_safe_for_llm_apis_and_mapped_back() -> None:
    names = ToolNames(reserved=["call_tool"])
    long = "x." * 60
    safe = {n: names.safe(n) for n in ["a.b", "a_b", "call_tool", long, "ok-name"]}
    assert safe["a.b"] == "a_b"
    assert safe["a_b"].startswith("a_b_") and len(safe["a_b"]) == 12
    assert safe["call_tool"].startswith("call_tool_")
    assert len(safe[long]) == 64
    assert safe["ok-name"] == "ok-name"
    assert all(OPENAI_NAME.match(s) for s in safe.values())
    assert {names.original(s) for s in safe.values()} == set(safe)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_client_that_did_not_declare_the_extension_never_picks_groups_mode(
    mode: str,
) -> None:
    from toolgate import Group, Tool, ToolSet
    from toolgate.client import GroupsClientExtension
    from toolgate.fastmcp import ToolgateMiddleware

    async def ok(arguments: Any, ctx: Any) -> str:
        return "ok"

    server = fastmcp.FastMCP("advertises-groups")
    toolset = ToolSet()
    toolset.add_group(Group("g", "G"))
    toolset.add_tool(Tool("t", "T.", handler=ok, groups=("g",)))
    ToolgateMiddleware(toolset).attach(server)  # advertises the extension by default
    async with fastmcp.Client(server, mode=mode) as plain:
        undeclared = GroupsClient(plain)
        assert await undeclared.start() != "groups"
    async with fastmcp.Client(server, mode=mode, extensions=[GroupsClientExtension()]) as c:
        declared = GroupsClient(c)
        assert await declared.start() == "groups"
        assert [g["name"] for g in await declared.list_groups()] == ["g"]


def test_a_server_handed_to_groups_client_in_place_of_its_client_is_refused() -> None:
    with pytest.raises(TypeError) as err:
        GroupsClient(Server("github"))
    assert str(err.value) == (
        "GroupsClient wraps a connected MCP client (mcp.Client, fastmcp.Client or "
        "mcp.ClientSession), not Server"
    )
