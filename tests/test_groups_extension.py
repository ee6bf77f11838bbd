"""The io.modelcontextprotocol/groups extension over streamable HTTP, both protocol eras,
served through FastMCP's ServerExtension and the SDK's lowlevel Server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import fastmcp
import mcp_types as mt
import pytest
import pytest_asyncio
from fastmcp.client.transports import StreamableHttpTransport
from mcp import Client as SDKClient
from mcp.client.extension import advertise
from mcp.server import MCPServer, Server
from mcp.shared.exceptions import MCPError

from _fixtures.mcp_servers import serve, tool_names
from toolgate.catalog import ALWAYS, Group, Tool
from toolgate.client import GroupsClientExtension
from toolgate.client.extension import (
    RAW,
    GetGroupParams,
    GetGroupRequest,
    ListGroupsParams,
    ListGroupsRequest,
)
from toolgate.errors import RegistrationError, ToolgateError
from toolgate.fastmcp import GroupsServerExtension
from toolgate.groups_extension import GroupsExtension, bind_groups
from toolgate.identity import Caller
from toolgate.lowlevel import bind
from toolgate.policy import Principal
from toolgate.request import request_facts
from toolgate.strategies import Delivery, DeliveryConfig
from toolgate.toolset import ToolSet
from toolgate.wire import call_result, raise_or_result, tool_models

EXT = "io.modelcontextprotocol/groups"
OBJ = {"type": "object", "properties": {"q": {"type": "string"}}}
PRINCIPALS = {
    "bob": Principal(id="bob", scope=("default", "issues", "pull_requests")),
    "labeller": Principal(id="labeller", scope=("issue_labels",)),
}
MODES = ["legacy", "auto"]  # 2025-11-25 with initialize; 2026-07-28 stateless
pytestmark = pytest.mark.asyncio(loop_scope="module")


# -- a server ---------------------------------------------------------------------------
def echo(arguments: Mapping[str, Any], ctx: Any) -> dict[str, Any]:
    return {"tool": ctx.tool, "arguments": dict(arguments)}


def build_toolset(page_size: int = 100) -> ToolSet:
    ts = ToolSet("test", page_size=page_size)
    ts.add_groups(
        [
            Group("issues", "Work with issues.", title="Issues", instructions="Search first."),
            Group("issue_labels", "Label issues.", parent="issues"),
            Group("pull_requests", "Review and merge pull requests."),
            Group("admin", "Repository administration."),
        ]
    )
    ts.add_tools(
        [
            Tool("ping", "Check the server.", echo),
            Tool("whoami", "Who you are.", echo, groups=("issues",), visibility=ALWAYS),
            Tool("create_issue", "Open an issue.", echo, OBJ, groups=("issues",)),
            Tool("list_issues", "List issues.", echo, groups=("issues",)),
            Tool("search", "Search issues and PRs.", echo, OBJ, groups=("issues", "pull_requests")),
            Tool("add_label", "Label an issue.", echo, groups=("issue_labels",)),
            Tool("merge_pr", "Merge a PR.", echo, groups=("pull_requests",)),
            Tool("delete_repo", "Delete a repository.", echo, groups=("admin",)),
        ]
    )
    return ts


def identity(caller: Caller) -> Principal | None:
    name = caller.headers.get("x-principal")
    return PRINCIPALS.get(name) if name else None


def serve_tools(lowlevel: Any, delivery: Delivery) -> None:
    """A minimal tools/list + tools/call adapter over ``delivery`` (SDK middleware)."""

    async def middleware(ctx: Any, call_next: Any) -> Any:
        if ctx.request_id is None or ctx.method not in ("tools/list", "tools/call"):
            return await call_next(ctx)
        strategy, request = (await request_facts(ctx, identity)).request(delivery)
        params = ctx.params or {}
        if ctx.method == "tools/list":
            try:
                page = await delivery.list_tools(strategy, request, params.get("cursor"))
            except ToolgateError as exc:
                raise_or_result(exc)
                raise
            return mt.ListToolsResult(tools=tool_models(page.items), next_cursor=page.next_cursor)
        try:
            reply = await delivery.call_tool(
                strategy, request, params["name"], params.get("arguments")
            )
            result = reply.result
        except ToolgateError as exc:
            result = raise_or_result(exc)
        return call_result(result)

    lowlevel.middleware.insert(0, middleware)


def fastmcp_app(delivery: Delivery) -> Any:
    server = fastmcp.FastMCP("groups-test")
    server.add_extension(GroupsServerExtension(delivery, identity=identity))
    serve_tools(server._mcp_server, delivery)
    return server.http_app(path="/mcp")


def lowlevel_app(delivery: Delivery) -> Any:
    async def unused(ctx: Any, params: Any) -> Any:
        raise AssertionError("served by the toolgate middleware")

    server = Server("groups-test", on_list_tools=unused, on_call_tool=unused)
    bind_groups(server, delivery, identity=identity)
    serve_tools(server, delivery)
    return server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")


APPS = {"fastmcp": fastmcp_app, "lowlevel": lowlevel_app}


def connect(
    url: str,
    mode: str,
    *,
    declare: bool = True,
    principal: str | None = None,
    extension: Any = None,
) -> fastmcp.Client[Any]:
    headers = {"x-principal": principal} if principal else None
    extensions = [extension or GroupsClientExtension()] if declare else []
    # verify=False: plain loopback HTTP, and it skips loading a CA bundle per client
    transport = StreamableHttpTransport(url, headers=headers, verify=False)
    return fastmcp.Client(transport, mode=mode, extensions=extensions)


GROUPS_ONLY = DeliveryConfig(strategy="groups")
CATALOG_FALLBACK = DeliveryConfig(strategy="groups", groups_fallback="catalog")
SERVERS = {  # name: (app builder, page size, delivery config)
    "fastmcp": (fastmcp_app, 100, None),
    "lowlevel": (lowlevel_app, 100, None),
    "paged": (fastmcp_app, 2, None),
    "groups-fastmcp": (fastmcp_app, 100, GROUPS_ONLY),
    "groups-lowlevel": (lowlevel_app, 100, GROUPS_ONLY),
    "catalog": (fastmcp_app, 100, CATALOG_FALLBACK),
}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def servers() -> AsyncIterator[dict[str, tuple[str, ToolSet]]]:
    """One running server per configuration for the module: ``{name: (url, toolset)}``.
    Tests that change a catalog start their own."""
    async with contextlib.AsyncExitStack() as stack:
        out = {}
        for name, (make, page_size, config) in SERVERS.items():
            ts = build_toolset(page_size)
            out[name] = (await stack.enter_async_context(serve(make(Delivery(ts, config)))), ts)
        yield out


@pytest.fixture
def urls(servers: dict[str, tuple[str, ToolSet]]) -> dict[str, str]:
    return {name: url for name, (url, _) in servers.items()}


async def groups_list(client: Any, cursor: str | None = None) -> dict[str, Any]:
    req = ListGroupsRequest(params=ListGroupsParams(cursor=cursor))
    return dict(await client.session.send_request(req, RAW))


async def groups_get(client: Any, name: str) -> dict[str, Any]:
    req = GetGroupRequest(params=GetGroupParams(name=name))
    return dict(await client.session.send_request(req, RAW))


def without_envelope(result: Mapping[str, Any]) -> dict[str, Any]:
    """The 2026-07-28 runner stamps ``resultType`` and ``_meta.serverInfo`` on results."""
    return {k: v for k, v in result.items() if k not in ("resultType", "_meta")}


def wire(ts: ToolSet, name: str) -> dict[str, Any]:
    tool = ts.catalog.tool(name)
    assert tool is not None
    return tool.wire()


# -- groups/list --------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_groups_list_pages_with_an_opaque_cursor(urls: dict[str, str], mode: str) -> None:
    async with connect(urls["paged"], mode) as c:
        first = await groups_list(c)
        second = await groups_list(c, first["nextCursor"])
        with pytest.raises(MCPError) as bad:
            await groups_list(c, "not-a-cursor")
    assert [g["name"] for g in first["groups"]] == ["admin", "issues"]
    assert [g["name"] for g in second["groups"]] == ["pull-requests"]
    assert "nextCursor" not in second
    assert bad.value.error.code == -32602


@pytest.mark.parametrize("mode", MODES)
async def test_a_groups_list_cursor_is_no_tools_list_cursor(
    urls: dict[str, str], mode: str
) -> None:
    """A cursor names the list that issued it: one from ``groups/list`` is refused by
    ``tools/list`` (-32602), not read as a place in it."""
    async with connect(urls["paged"], mode) as c:
        first = await groups_list(c)
        with pytest.raises(MCPError) as bad:
            await c.list_tools_mcp(cursor=first["nextCursor"])
    assert bad.value.error.code == -32602


# -- groups/get ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_groups_get_omits_instructions_a_group_does_not_have(
    urls: dict[str, str], mode: str
) -> None:
    ts = build_toolset()
    async with connect(urls["lowlevel"], mode) as c:
        result = without_envelope(await groups_get(c, "pull-requests"))
    assert result == {
        "contents": {"tools": [wire(ts, "merge_pr"), wire(ts, "search")], "groups": []}
    }


@pytest.mark.parametrize("mode", MODES)
async def test_nested_groups_are_disclosed_one_level_at_a_time(
    urls: dict[str, str], mode: str
) -> None:
    ts = build_toolset()
    async with connect(urls["fastmcp"], mode) as c:
        parent = await groups_get(c, "issues")
        child = without_envelope(await groups_get(c, "issue-labels"))
    assert "add_label" not in [t["name"] for t in parent["contents"]["tools"]]
    assert child == {"contents": {"tools": [wire(ts, "add_label")], "groups": []}}


async def test_group_cycles_are_rejected_at_registration() -> None:
    ts = ToolSet()
    with pytest.raises(RegistrationError, match=r"Group cycle: a -> b -> a"):
        ts.add_groups([Group("a", "A", parent="b"), Group("b", "B", parent="a")])
    assert dict(ts.catalog.groups) == {}


async def test_groups_colliding_on_the_wire_are_rejected_at_registration() -> None:
    ts = ToolSet()
    ts.add_group(Group("pull_requests", "PRs"))
    with pytest.raises(RegistrationError, match="both are 'pull-requests'"):
        ts.add_group(Group("pull-requests", "PRs again"))


# -- placement ----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_shared_by_two_groups_has_one_identical_definition(
    urls: dict[str, str], mode: str
) -> None:
    async with connect(urls["fastmcp"], mode) as c:
        issues = (await groups_get(c, "issues"))["contents"]["tools"]
        prs = (await groups_get(c, "pull-requests"))["contents"]["tools"]
    shared = [t for t in issues if t["name"] == "search"]
    assert shared == [t for t in prs if t["name"] == "search"]
    assert len(shared) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_scoped_tools_are_called_directly_without_fetching_their_group(
    urls: dict[str, str], mode: str
) -> None:
    async with connect(urls["lowlevel"], mode) as c:
        result = await c.call_tool("merge_pr", {})
    assert result.structured_content == {"tool": "merge_pr", "arguments": {}}


# -- clients without the extension --------------------------------------------------------
@pytest.mark.parametrize("framework", sorted(APPS))
@pytest.mark.parametrize("mode", MODES)
async def test_clients_without_the_extension_get_the_flattened_list(
    urls: dict[str, str], framework: str, mode: str
) -> None:
    url = urls[f"groups-{framework}"]
    async with connect(url, mode, declare=False) as plain:
        flat = await tool_names(plain)
        with pytest.raises(MCPError) as err:
            await groups_list(plain)
    async with connect(url, mode) as declared:
        scoped = await tool_names(declared)
    assert flat == [
        "add_label",
        "create_issue",
        "delete_repo",
        "list_issues",
        "merge_pr",
        "ping",
        "search",
        "whoami",
    ]
    assert scoped == ["ping", "whoami"]
    assert err.value.error.code == -32601


@pytest.mark.parametrize("mode", MODES)
async def test_the_catalog_fallback_lists_meta_tools_for_clients_without_the_extension(
    urls: dict[str, str], mode: str
) -> None:
    async with connect(urls["catalog"], mode, declare=False) as plain:
        names = await tool_names(plain)
        opened = await plain.call_tool("get_group", {"name": "pull_requests"})
    assert names == [
        "call_tool",
        "describe_tools",
        "enable_tools",
        "get_group",
        "list_groups",
        "ping",
        "whoami",
    ]
    assert opened.structured_content["tools"] == [
        "merge_pr(): Merge a PR.",
        "search(): Search issues and PRs.",
    ]


# -- scope ----------------------------------------------------------------------------------
@pytest.mark.parametrize("framework", sorted(APPS))
@pytest.mark.parametrize("mode", MODES)
async def test_groups_outside_the_principals_scope_are_neither_listed_nor_fetched(
    urls: dict[str, str], framework: str, mode: str
) -> None:
    async with connect(urls[framework], mode, principal="bob") as c:
        listed = [g["name"] for g in (await groups_list(c))["groups"]]
        with pytest.raises(MCPError) as err:
            await groups_get(c, "admin")
        with pytest.raises(MCPError) as call_err:
            await c.call_tool_mcp("delete_repo", {})
    assert listed == ["issues", "pull-requests"]
    assert (err.value.error.code, err.value.error.message) == (-32002, "Unknown group: admin")
    assert (call_err.value.error.code, call_err.value.error.message) == (
        -32602,
        "Unknown tool: delete_repo",
    )


@pytest.mark.parametrize("mode", MODES)
async def test_a_scope_naming_only_a_child_group_lists_that_child_at_top_level(
    urls: dict[str, str], mode: str
) -> None:
    ts = build_toolset()
    async with connect(urls["fastmcp"], mode, principal="labeller") as c:
        listed = without_envelope(await groups_list(c))
        child = without_envelope(await groups_get(c, "issue-labels"))
        with pytest.raises(MCPError) as err:
            await groups_get(c, "issues")
        top = await tool_names(c)
    assert listed == {"groups": [{"name": "issue-labels", "description": "Label issues."}]}
    assert child == {"contents": {"tools": [wire(ts, "add_label")], "groups": []}}
    assert err.value.error.code == -32002
    assert top == []


# -- statelessness ------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_groups_get_twice_gives_the_same_result_and_writes_no_state(
    servers: dict[str, tuple[str, ToolSet]], mode: str
) -> None:
    url, ts = servers["fastmcp"]
    async with connect(url, mode) as c:
        first = await groups_get(c, "issues")
        second = await groups_get(c, "issues")
        listed = [await groups_list(c), await groups_list(c)]
        session_id = c.transport.get_session_id()
    assert first == second
    assert listed[0] == listed[1]
    if session_id is not None:  # legacy: the transport session exists, but holds nothing
        assert (await ts.store.load(session_id)).version == 0


# -- notifications/groups/list_changed ----------------------------------------------------
async def test_registering_a_group_at_run_time_notifies_extension_clients() -> None:
    ts = build_toolset()
    received: list[str] = []
    changed = asyncio.Event()

    async def on_changed() -> None:
        received.append("groups/list_changed")
        changed.set()

    extension = GroupsClientExtension(on_list_changed=on_changed)
    async with (
        serve(fastmcp_app(Delivery(ts))) as url,
        connect(url, "legacy", extension=extension) as c,
    ):
        await groups_list(c)
        ts.add_tool(Tool("close_issue", "Close an issue.", echo, groups=("issues",)))
        await asyncio.sleep(0.3)
        assert received == []  # a tool inside a group does not change groups/list
        ts.add_group(Group("gists", "Share snippets."))
        await asyncio.wait_for(changed.wait(), 5)
        after = [g["name"] for g in (await groups_list(c))["groups"]]
    assert received == ["groups/list_changed"]
    assert after == ["admin", "gists", "issues", "pull-requests"]


async def test_a_group_outside_the_scope_does_not_notify_the_principal() -> None:
    ts = build_toolset()
    received: list[str] = []

    async def on_changed() -> None:
        received.append("groups/list_changed")

    extension = GroupsClientExtension(on_list_changed=on_changed)
    async with (
        serve(lowlevel_app(Delivery(ts))) as url,
        connect(url, "legacy", principal="bob", extension=extension) as c,
    ):
        await groups_list(c)
        ts.add_group(Group("billing", "Invoices."))
        await asyncio.sleep(0.3)
    assert received == []


# -- the SDK's MCPServer ------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_mcpserver_serves_the_extension_through_its_extension_api(mode: str) -> None:
    ext = GroupsExtension(Delivery(build_toolset()))
    server = MCPServer("groups-test", extensions=[ext], middleware=[ext.legacy_advert])
    async with SDKClient(server, mode=mode, extensions=[advertise(EXT)]) as c:
        caps = c.session.server_capabilities
        listed = await groups_list(c)
    assert caps is not None
    assert (caps.extensions or {})[EXT] == {"listChanged": True}
    assert [g["name"] for g in listed["groups"]] == ["admin", "issues", "pull-requests"]


# -- with toolgate's own SDK adapter ------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_the_lowlevel_adapter_and_the_extension_share_one_request_resolution(
    mode: str,
) -> None:
    server = Server("adapted")
    binding = bind(server, build_toolset())
    bind_groups(server, binding.delivery, facts=binding.facts)
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    async with serve(app) as url, connect(url, mode) as c:
        top = await tool_names(c)
        opened = await groups_get(c, "pull-requests")
    assert top == ["ping", "whoami"]
    assert [t["name"] for t in opened["contents"]["tools"]] == ["merge_pr", "search"]
