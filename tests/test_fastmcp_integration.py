"""toolgate.fastmcp with add-ons and extensions: lazy descriptions' resources, the
io.modelcontextprotocol/groups extension installed by ``attach``, start-up warnings.

Real clients only: ``fastmcp.Client`` (``mode="legacy"`` and its default 2026-07-28
mode) and ``mcp.ClientSession`` in memory, and one run over streamable HTTP.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import fastmcp
import mcp_types as mt
import pytest
from fastmcp import FastMCP
from fastmcp.client.transports import FastMCPTransport, StreamableHttpTransport
from mcp import ClientSession
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from _fixtures.mcp_servers import raw_request, serve_http
from data.lazy.tracker import COMMENT_SCHEMA, DOCS, tracker_toolset
from toolgate import Group, Tool, ToolSet, in_group
from toolgate.client import GroupsClientExtension
from toolgate.client.extension import (
    GetGroupParams,
    GetGroupRequest,
    ListGroupsParams,
    ListGroupsRequest,
)
from toolgate.errors import Unauthenticated
from toolgate.fastmcp import ToolgateMiddleware
from toolgate.lowlevel import bind
from toolgate.strategies import DeliveryConfig
from toolgate.strategies.base import Addon
from toolgate.strategies.lazy import LazyDescriptions, workflow_text

URI = "resource:///tool_descriptions"
OWN_URI = "data://tracker/readme"
EXT = "io.modelcontextprotocol/groups"
MODES = ["legacy", "auto"]  # 2025-11-25 with initialize; 2026-07-28 stateless
LAZY_WARNING = "Lazy tool descriptions: requests on protocol 2026-07-28 without an authenticated"


# -- servers -----------------------------------------------------------------------------
def lazy_server(identity: Any = None) -> tuple[FastMCP[Any], ToolgateMiddleware]:
    """The tracker catalog with lazy descriptions, plus a resource and a tool of FastMCP's."""
    ts = tracker_toolset()
    server: FastMCP[Any] = FastMCP("tracker")

    @server.resource(OWN_URI, name="readme", mime_type="text/markdown")
    def readme() -> str:
        return "# Tracker"

    @server.tool
    def label_issue(issue_id: int, label: str) -> str:
        """Put a label on an issue. The label must exist."""
        return f"labelled #{issue_id} {label}"

    lazy = LazyDescriptions(ts, docs_dir=DOCS, check_names=False)
    middleware = ToolgateMiddleware(ts, identity=identity, addons=[lazy]).attach(server)
    return server, middleware


def echo(arguments: Mapping[str, Any], ctx: Any) -> dict[str, Any]:
    return {"tool": ctx.tool, "arguments": dict(arguments)}


def groups_server(strategy: str = "auto") -> tuple[FastMCP[Any], ToolgateMiddleware]:
    """Groups from toolgate and a grouped ``@mcp.tool``; the extension comes from attach."""
    ts = ToolSet("groups")
    ts.add_groups(
        [
            Group("issues", "Work with issues.", title="Issues", instructions="Search first."),
            Group("issue_labels", "Label issues.", parent="issues"),
            Group("pull_requests", "Review and merge pull requests."),
        ]
    )
    ts.add_tools(
        [
            Tool("create_issue", "Open an issue.", echo, groups=("issues",)),
            Tool("merge_pr", "Merge a PR.", echo, groups=("pull_requests",)),
            Tool("add_label", "Label an issue.", echo, groups=("issue_labels",)),
        ]
    )
    server: FastMCP[Any] = FastMCP("groups")

    @server.tool
    def ping() -> str:
        """Check the server."""
        return "pong"

    @server.tool
    @in_group("issues")
    def list_issues() -> list[int]:
        """List open issues."""
        return [7]

    middleware = ToolgateMiddleware(ts, DeliveryConfig(strategy=strategy)).attach(server)
    return server, middleware


# -- client helpers ----------------------------------------------------------------------
@asynccontextmanager
async def sdk_session(
    server: FastMCP[Any], mode: str, extensions: dict[str, dict[str, Any]] | None = None
) -> AsyncIterator[ClientSession]:
    """A plain ``mcp.ClientSession`` in memory: ``initialize`` (legacy) or ``discover``."""
    async with FastMCPTransport(server).connect_session(extensions=extensions) as session:
        if mode == "legacy":
            await session.initialize()
        else:
            await session.discover()
        yield session


def text_of(result: mt.ReadResourceResult) -> str:
    [content] = result.contents
    assert isinstance(content, mt.TextResourceContents)
    return content.text


async def read_json(client: fastmcp.Client[Any], uri: str) -> Any:
    result = await client.read_resource_mcp(uri)
    [content] = result.contents
    assert isinstance(content, mt.TextResourceContents)
    assert content.mime_type == "application/json"
    return json.loads(content.text)


async def groups_list(session: ClientSession) -> dict[str, Any]:
    req = ListGroupsRequest(params=ListGroupsParams())
    return await raw_request(session, req)


async def groups_get(session: ClientSession, name: str) -> dict[str, Any]:
    req = GetGroupRequest(params=GetGroupParams(name=name))
    return await raw_request(session, req)


def without_envelope(result: Mapping[str, Any]) -> dict[str, Any]:
    """The 2026-07-28 runner stamps ``resultType`` and ``_meta`` on results."""
    return {k: v for k, v in result.items() if k not in ("resultType", "_meta")}


# -- lazy descriptions: resources/list ---------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_resources_list_shows_the_descriptions_resource_and_fastmcps_own(
    mode: str,
) -> None:
    server, _ = lazy_server()
    async with fastmcp.Client(server, mode=mode) as client:
        resources = {str(r.uri): r for r in await client.list_resources()}
    assert sorted(resources) == [OWN_URI, URI]
    ours = resources[URI]
    assert (ours.name, ours.title, ours.mime_type) == (
        "tool_descriptions",
        "Tool Descriptions - Required for tool use",
        "application/json",
    )
    assert ours.description == workflow_text(URI, "describe_tools")
    assert ours.meta is None  # exactly the add-on's definition, no FastMCP _meta
    assert (resources[OWN_URI].name, resources[OWN_URI].mime_type) == ("readme", "text/markdown")


# -- reading -----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_reading_one_and_two_tools_and_the_bare_uri(mode: str) -> None:
    server, _ = lazy_server()
    async with fastmcp.Client(server, mode=mode) as client:
        one = await read_json(client, f"{URI}?tools=add_comment")
        two = await read_json(client, f"{URI}?tools=whoami,label_issue")
        bare = await read_json(client, URI)
    assert list(one) == ["add_comment"]
    assert one["add_comment"]["inputSchema"] == dict(COMMENT_SCHEMA)
    assert list(two) == ["whoami", "label_issue"]
    assert two["label_issue"]["description"] == "Put a label on an issue. The label must exist."
    # legacy: list_changed, the admin group inactive; 2026-07-28: catalog, every group open
    available = ["add_comment", "label_issue", "search_issues", "whoami"]
    if mode != "legacy":
        available = sorted([*available, "close_issue"])
    assert bare["error"]["code"] == "MISSING_TOOL_SELECTION"
    assert bare["error"]["examples"] == [
        f"{URI}?tools=add_comment",
        f"{URI}?tools=add_comment,{available[1]}",
    ]
    assert bare["error"]["available_tools"] == available


async def test_reading_authorizes_the_tools_for_the_session_fastmcp_client() -> None:
    server, _ = lazy_server()
    async with fastmcp.Client(server, mode="legacy") as client:
        before = await client.call_tool_mcp("add_comment", {"issue_id": 7, "body": "hi"})
        own_before = await client.call_tool_mcp("label_issue", {"issue_id": 7, "label": "bug"})
        await client.read_resource_mcp(f"{URI}?tools=add_comment,label_issue")
        after = await client.call_tool_mcp("add_comment", {"issue_id": 7, "body": "hi"})
        own_after = await client.call_tool_mcp("label_issue", {"issue_id": 7, "label": "bug"})
        other = await client.call_tool_mcp("whoami", {})
    for refused, name in ((before, "add_comment"), (own_before, "label_issue"), (other, "whoami")):
        assert refused.is_error is True
        assert refused.structured_content is not None
        assert refused.structured_content["code"] == "TOOL_DESCRIPTION_REQUIRED"
        assert refused.structured_content["resource_uri"] == f"{URI}?tools={name}"
    assert (after.is_error, after.content[0].text) == (False, "commented on #7")
    assert (own_after.is_error, own_after.content[0].text) == (False, "labelled #7 bug")


async def test_reading_authorizes_the_tool_for_an_sdk_client_session() -> None:
    server, _ = lazy_server()
    async with sdk_session(server, "legacy") as session:
        before = await session.call_tool("whoami", {})
        data = json.loads(text_of(await session.read_resource(f"{URI}?tools=whoami")))
        after = await session.call_tool("whoami", {})
        bare = json.loads(text_of(await session.read_resource(URI)))
    assert before.is_error is True
    assert before.structured_content is not None
    assert before.structured_content["code"] == "TOOL_DESCRIPTION_REQUIRED"
    assert list(data) == ["whoami"]
    assert (after.is_error, after.content[0].text) == (False, "ada")  # type: ignore[union-attr]
    assert bare["error"]["code"] == "MISSING_TOOL_SELECTION"


async def test_authorization_is_per_session() -> None:
    server, _ = lazy_server()
    async with (
        fastmcp.Client(server, mode="legacy") as alice,
        fastmcp.Client(server, mode="legacy") as bob,
    ):
        await alice.read_resource_mcp(f"{URI}?tools=whoami")
        mine = await alice.call_tool_mcp("whoami", {})
        theirs = await bob.call_tool_mcp("whoami", {})
    assert (mine.is_error, theirs.is_error) == (False, True)


@pytest.mark.parametrize("mode", MODES)
async def test_describe_tools_returns_the_resource_json(mode: str) -> None:
    server, _ = lazy_server()
    async with fastmcp.Client(server, mode=mode) as client:
        resource = await client.read_resource_mcp(f"{URI}?tools=search_issues,label_issue,nope")
        described = await client.call_tool_mcp(
            "describe_tools", {"tools": ["search_issues", "label_issue", "nope"]}
        )
    text = text_of(resource)
    assert described.content[0].text == text
    assert described.structured_content == json.loads(text)
    assert json.loads(text)["nope"]["code"] == "unknown_tool"


# -- FastMCP's own resources ---------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_fastmcps_own_resources_still_read_and_unknown_ones_are_not_found(
    mode: str,
) -> None:
    server, _ = lazy_server()
    async with fastmcp.Client(server, mode=mode) as client:
        own = await client.read_resource_mcp(OWN_URI)
        with pytest.raises(MCPError) as missing:
            await client.read_resource_mcp("data://tracker/nope")
    [content] = own.contents
    assert isinstance(content, mt.TextResourceContents)
    assert (content.text, content.mime_type) == ("# Tracker", "text/markdown")
    assert missing.value.error.code == mt.INVALID_PARAMS
    assert "data://tracker/nope" in missing.value.error.message


async def test_a_server_without_add_ons_serves_resources_untouched() -> None:
    server: FastMCP[Any] = FastMCP("plain")

    @server.resource(OWN_URI)
    def readme() -> str:
        return "# Plain"

    ToolgateMiddleware(ToolSet("plain")).attach(server)
    async with fastmcp.Client(server, mode="legacy") as client:
        listed = [str(r.uri) for r in await client.list_resources()]
        read = await client.read_resource_mcp(OWN_URI)
    assert listed == [OWN_URI]
    assert text_of(read) == "# Plain"


@pytest.mark.parametrize("mode", MODES)
async def test_a_toolgate_error_resolving_the_request_is_a_jsonrpc_error(mode: str) -> None:
    async def refuse(caller: Any) -> Any:
        raise Unauthenticated("No token, no descriptions")

    server, _ = lazy_server(identity=refuse)
    async with fastmcp.Client(server, mode=mode) as client:
        with pytest.raises(MCPError) as read:
            await client.read_resource_mcp(f"{URI}?tools=whoami")
        with pytest.raises(MCPError) as listed:
            await client.list_resources()
    for err in (read.value.error, listed.value.error):
        assert (err.code, err.message) == (mt.INVALID_REQUEST, "No token, no descriptions")
        assert err.data == {"code": "unauthenticated"}


# -- the groups extension, installed by attach ----------------------------------------------
def test_attach_installs_the_groups_extension_only_for_strategies_that_serve_it() -> None:
    server, middleware = groups_server("auto")
    assert middleware.groups_extension is not None
    assert server._extensions[EXT] is middleware.groups_extension
    for strategy in ("list_changed", "catalog", "flat"):
        other, mw = groups_server(strategy)
        assert mw.groups_extension is None
        assert EXT not in other._extensions
    middleware.attach(server)  # idempotent
    assert server._extensions[EXT] is middleware.groups_extension


GROUPS_LIST = {
    "groups": [
        {"name": "issues", "title": "Issues", "description": "Work with issues."},
        {"name": "pull-requests", "description": "Review and merge pull requests."},
    ]
}


def issues_group(ts: ToolSet) -> dict[str, Any]:
    tools = [ts.catalog.tool(n) for n in ("create_issue", "list_issues")]
    return {
        "instructions": "Search first.",
        "contents": {
            "tools": [t.wire() for t in tools if t is not None],
            "groups": [{"name": "issue-labels", "description": "Label issues."}],
        },
    }


@pytest.mark.parametrize("mode", MODES)
async def test_a_fastmcp_client_declaring_the_extension_gets_groups(mode: str) -> None:
    server, middleware = groups_server()
    async with fastmcp.Client(server, mode=mode, extensions=[GroupsClientExtension()]) as c:
        caps = c.server_capabilities
        listed = without_envelope(await groups_list(c.session))
        issues = without_envelope(await groups_get(c.session, "issues"))
        with pytest.raises(MCPError) as missing:
            await groups_get(c.session, "nope")
        top = [t.name for t in await c.list_tools()]
        merged = await c.call_tool_mcp("merge_pr", {})
    assert (caps.extensions or {})[EXT] == {"listChanged": True}
    assert listed == GROUPS_LIST
    assert issues == issues_group(middleware.toolset)
    assert (missing.value.error.code, missing.value.error.message) == (
        -32002,
        "Unknown group: nope",
    )
    assert top == ["ping"]  # scoped tools live only in their groups
    assert merged.structured_content == {"tool": "merge_pr", "arguments": {}}


@pytest.mark.parametrize("mode", MODES)
async def test_an_sdk_client_session_declaring_the_extension_gets_groups(mode: str) -> None:
    server, middleware = groups_server()
    async with sdk_session(server, mode, extensions={EXT: {}}) as session:
        listed = without_envelope(await groups_list(session))
        issues = without_envelope(await groups_get(session, "issues"))
        top = [t.name for t in (await session.list_tools()).tools]
    assert listed == GROUPS_LIST
    assert issues == issues_group(middleware.toolset)
    assert top == ["ping"]


# -- start-up warnings ----------------------------------------------------------------------
def test_lazy_without_auth_warns_at_attach(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolgate.fastmcp"):
        lazy_server()
    messages = [r.getMessage() for r in caplog.records if r.name == "toolgate.fastmcp"]
    assert [m for m in messages if LAZY_WARNING in m] == [
        "toolgate: " + LazyDescriptions(tracker_toolset()).startup_warnings()[0]
    ]


def test_lazy_without_auth_warns_at_bind(caplog: pytest.LogCaptureFixture) -> None:
    ts = tracker_toolset()
    lazy = LazyDescriptions(ts, docs_dir=DOCS)
    with caplog.at_level(logging.WARNING, logger="toolgate.lowlevel"):
        bind(Server("tracker"), ts, identity=lambda caller: None, addons=[lazy])
    assert [r.getMessage() for r in caplog.records if r.name == "toolgate.lowlevel"] == [
        "toolgate: " + lazy.startup_warnings()[0]
    ]


def test_an_add_on_has_no_start_up_warnings_by_default() -> None:
    assert Addon().startup_warnings() == []


# -- streamable HTTP --------------------------------------------------------------------------
async def test_over_http_descriptions_authorize_and_groups_are_served() -> None:
    server, _ = lazy_server()
    groups, _ = groups_server()
    async with (
        serve_http(server.http_app(path="/mcp")) as url,
        serve_http(groups.http_app(path="/mcp")) as groups_url,
    ):
        transport = StreamableHttpTransport(url, verify=False)
        async with fastmcp.Client(transport, mode="legacy") as client:
            listed = [str(r.uri) for r in await client.list_resources()]
            before = await client.call_tool_mcp("whoami", {})
            data = await read_json(client, f"{URI}?tools=whoami")
            after = await client.call_tool_mcp("whoami", {})
        extensions = [GroupsClientExtension()]
        for mode in MODES:
            transport = StreamableHttpTransport(groups_url, verify=False)
            async with fastmcp.Client(transport, mode=mode, extensions=extensions) as c:
                assert without_envelope(await groups_list(c.session)) == GROUPS_LIST
                assert [t.name for t in await c.list_tools()] == ["ping"]
    assert sorted(listed) == [OWN_URI, URI]
    assert before.is_error is True
    assert list(data) == ["whoami"]
    assert after.is_error is False
