"""toolgate.lowlevel on the SDK's low-level Server and MCPServer: what only this adapter
does (MCPServer adoption, add-on resources, bearer identities, stdio and HTTP). The
scenarios every adapter meets are in test_adapter_spec.py.

Real clients only (mcp.Client, mcp.ClientSession, fastmcp.Client) in memory, over a
stdio subprocess and over streamable HTTP; the server is tests/servers/lowlevel_demo.py.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import fastmcp
import httpx2
import mcp_types as mt
import pytest
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer, Server
from mcp.shared.exceptions import MCPError

from _fixtures.gateway import sha256
from _fixtures.mcp_servers import Notes, serve_http, tool_names
from _fixtures.spec import WRONG_ADAPTER_ARGUMENTS
from servers.lowlevel_demo import build_server, build_toolset
from toolgate import ConfigError, Principal, RegistrationError, ToolSet
from toolgate.identity import BearerTokens, ClaimsIdentity
from toolgate.lowlevel import bind
from toolgate.strategies import Addon, DeliveryConfig, Request

SERVER_SCRIPT = str(Path(__file__).parent / "servers" / "lowlevel_demo.py")
MENU_LIST = [
    "call_tool",
    "describe_tools",
    "disable_tools",
    "enable_tools",
    "list_groups",
    "ping",
    "whoami",
    "wipe",
]


def legacy(server: Any, notes: Notes | None = None, **options: Any) -> Client:
    return Client(server, mode="legacy", message_handler=notes, **options)


# -- MCPServer -------------------------------------------------------------------------


async def test_an_mcpserver_serves_the_toolset_and_adopts_its_own_tools_as_root_tools() -> None:
    server, _ = build_server(kind="mcpserver")
    notes = Notes()
    async with legacy(server, notes) as client:
        assert client.session.server_capabilities is not None
        assert client.session.server_capabilities.tools == mt.ToolsCapability(list_changed=True)
        assert await tool_names(client.session) == sorted([*MENU_LIST, "add"])
        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert (added.is_error, added.structured_content) == (False, {"result": 5})
        await client.call_tool("enable_tools", {"groups": ["code"]})
        assert await notes.settled() == ["notifications/tools/list_changed"]
        assert "get_file" in await tool_names(client.session)


async def test_fastmcp_client_drives_an_mcpserver_binding() -> None:
    server, _ = build_server(kind="mcpserver")
    assert isinstance(server, MCPServer)
    async with fastmcp.Client(server, mode="legacy") as fm:
        result = await fm.call_tool("enable_tools", {"groups": ["issues"]})
        assert result.structured_content is not None
        assert result.structured_content["enabled"] == ["issues"]
        assert "list_issues" in [t.name for t in await fm.list_tools()]


# -- add-on resources ------------------------------------------------------------------


class Hello(Addon):
    async def list_resources(self, request: Request) -> list[dict[str, Any]]:
        return [{"uri": "toolgate://hello", "name": "hello"}]

    async def read_resource(self, request: Request, uri: str) -> str | None:
        return '{"hello": "world"}' if uri == "toolgate://hello" else None


async def test_add_on_resources_are_listed_and_read_and_others_are_not_found() -> None:
    server: Server[Any] = Server("resources")
    bind(server, build_toolset(), DeliveryConfig(), identity=BearerTokens({}), addons=[Hello()])
    async with legacy(server) as client:
        listed = await client.session.list_resources()
        read = await client.session.read_resource("toolgate://hello")
        with pytest.raises(MCPError) as err:
            await client.session.read_resource("toolgate://nope")
    assert [str(r.uri) for r in listed.resources] == ["toolgate://hello"]
    assert read.contents[0].text == '{"hello": "world"}'  # type: ignore[union-attr]
    assert (err.value.error.code, err.value.error.message) == (
        -32002,
        "Resource not found: toolgate://nope",
    )


# -- identity --------------------------------------------------------------------------


def test_binding_without_an_identity_resolver_warns_at_start_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolgate.lowlevel"):
        bind(Server("anon"), build_toolset())
    assert [r.getMessage() for r in caplog.records] == [
        "toolgate: no identity resolver configured for server 'anon': every request gets "
        "the default principal 'local', and on protocol 2026-07-28 no session state is kept"
    ]


def test_bearer_tokens_refuse_a_plain_token_in_configuration() -> None:
    with pytest.raises(ConfigError) as err:
        BearerTokens({"s3cret-token": Principal(id="ci")})
    assert err.value.message == (
        "bearer tokens are configured by the lower-case hex SHA-256 of the token, not the "
        "token itself; got a key of length 12"
    )


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (
            lambda: BearerTokens({sha256("tok"): {"id": "ci"}}),  # type: ignore[dict-item]
            f"bearer token {sha256('tok')[:12]}...: its principal must be a Principal, "
            "got dict {'id': 'ci'}",
        ),
        (
            lambda: BearerTokens(["tok"]),  # type: ignore[arg-type]
            "bearer tokens must be a mapping of token SHA-256 to Principal, got list ['tok']",
        ),
        (
            lambda: BearerTokens({}, anonymous="guest"),  # type: ignore[arg-type]
            "anonymous must be a Principal or None, got str 'guest'",
        ),
        (
            lambda: ClaimsIdentity(default="anonymous"),  # type: ignore[arg-type]
            "default must be a Principal or None, got str 'anonymous'",
        ),
        (
            lambda: ClaimsIdentity(trust_claim=["trust"]),  # type: ignore[arg-type]
            "trust_claim must be a claim name or None, got list ['trust']",
        ),
    ],
)
def test_an_identity_built_from_values_of_the_wrong_kind_is_refused(
    make: Any, problem: str
) -> None:
    with pytest.raises(ConfigError) as err:
        make()
    assert err.value.message == problem


TOKENS = BearerTokens(
    {
        sha256("tok-ci"): Principal(id="ci-bot", trust="verified", scope=("code",)),
        sha256("tok-dev"): Principal(id="dev", trust="declared", scope=("*",)),
    }
)


async def test_bearer_identities_over_http_decide_scope_and_trust() -> None:
    _, binding = build_server(identity=TOKENS)
    async with serve_http(binding.streamable_http_app()) as url:
        ci = StreamableHttpTransport(url, auth="tok-ci")
        async with fastmcp.Client(ci, mode="legacy") as client:
            await client.call_tool_mcp("enable_tools", {"groups": ["code", "repos"]})
            listed = [t.name for t in await client.list_tools()]
            deleted = await client.call_tool_mcp("delete_repo", {})
            with pytest.raises(MCPError) as out_of_scope:
                await client.call_tool_mcp("list_issues", {})
        dev = StreamableHttpTransport(url, auth="tok-dev")
        async with fastmcp.Client(dev, mode="legacy") as client:
            await client.call_tool_mcp("enable_tools", {"groups": ["code", "repos"]})
            with pytest.raises(MCPError) as too_low:
                await client.call_tool_mcp("delete_repo", {})
            me = await client.call_tool_mcp("whoami", {})
            session_id = client.transport.get_session_id()
    # ci-bot's scope names only "code": no root tools, no issues
    assert listed == [
        "call_tool",
        "delete_repo",
        "describe_tools",
        "disable_tools",
        "enable_tools",
        "fork_repo",
        "get_file",
        "list_groups",
    ]
    assert (deleted.is_error, deleted.structured_content) == (
        False,
        {"tool": "delete_repo", "args": {}},
    )
    assert out_of_scope.value.error.message == "Unknown tool: list_issues"
    assert too_low.value.error.message == "Unknown tool: delete_repo"
    assert me.structured_content == {
        "id": "dev",
        "trust": "declared",
        "scope": ["*"],
        "session": session_id,
    }


async def test_an_unknown_bearer_token_is_refused_with_http_401() -> None:
    _, binding = build_server(identity=TOKENS)
    async with serve_http(binding.streamable_http_app()) as url, httpx2.AsyncClient() as http:
        response = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={
                "Authorization": "Bearer tok-stolen",
                "Accept": "application/json, text/event-stream",
            },
        )
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_token"


async def test_an_unknown_bearer_token_is_a_json_rpc_error_when_anonymous_callers_are_allowed() -> (
    None
):
    anonymous = Principal(id="guest", trust="detected", scope=("default",))
    tokens = BearerTokens({sha256("tok-dev"): Principal(id="dev")}, anonymous=anonymous)
    _, binding = build_server(identity=tokens)
    async with serve_http(binding.streamable_http_app()) as url:
        async with fastmcp.Client(StreamableHttpTransport(url), mode="legacy") as guest:
            me = await guest.call_tool_mcp("whoami", {})
        with pytest.raises(MCPError) as err:
            stolen = StreamableHttpTransport(url, auth="tok-stolen")
            async with fastmcp.Client(stolen, mode="legacy") as client:
                await client.list_tools()
    assert me.structured_content is not None
    assert (me.structured_content["id"], me.structured_content["trust"]) == ("guest", "detected")
    assert (err.value.error.code, err.value.error.message, err.value.error.data) == (
        -32600,
        "Unauthorized: unknown bearer token",
        {"code": "unauthenticated"},
    )


# -- transports ------------------------------------------------------------------------


async def test_mcp_client_session_over_streamable_http_gets_list_changed_on_its_stream() -> None:
    _, binding = build_server(identity=TOKENS)
    notes = Notes()
    headers = {"Authorization": "Bearer tok-dev"}
    async with (
        serve_http(binding.streamable_http_app()) as url,
        httpx2.AsyncClient(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, message_handler=notes) as session,
    ):
        await session.initialize()
        await session.call_tool("enable_tools", {"groups": ["issues"]})
        assert await notes.settled() == ["notifications/tools/list_changed"]
        assert "list_issues" in await tool_names(session)


async def test_a_stdio_server_serves_mcp_client_session_and_fastmcp_client() -> None:
    params = StdioServerParameters(command=sys.executable, args=[SERVER_SCRIPT, "stdio"])
    notes = Notes()
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, message_handler=notes) as session,
    ):
        await session.initialize()
        assert await tool_names(session) == MENU_LIST
        await session.call_tool("enable_tools", {"groups": ["code", "repos"]})
        assert await notes.settled() == ["notifications/tools/list_changed"]
        # the script's identity is a verified operator: delete_repo is in reach
        deleted = await session.call_tool("delete_repo", {})
        assert deleted.structured_content == {"tool": "delete_repo", "args": {}}
    stdio = StdioTransport(sys.executable, [SERVER_SCRIPT, "stdio", "auto", "activators", "3"])
    async with fastmcp.Client(stdio, mode="legacy", message_handler=notes) as fm:
        assert len(await fm.list_tools()) == 12  # every activator, enable_tools, describe_tools
        me = await fm.call_tool_mcp("whoami", {})
    assert me.structured_content is not None
    assert me.structured_content["id"] == "local-admin"
    assert str(me.structured_content["session"]).startswith("conn:")


@pytest.mark.parametrize(
    ("arguments", "problem"),
    WRONG_ADAPTER_ARGUMENTS,
)
def test_binding_with_an_argument_of_the_wrong_kind_is_refused_before_the_server_changes(
    arguments: dict[str, Any], problem: str
) -> None:
    server = MCPServer("notes")

    @server.tool()
    def ping() -> str:
        return "pong"

    toolset = build_toolset()
    before = (toolset.catalog.version, dict(toolset.catalog.tools))
    with pytest.raises(ConfigError) as err:
        bind(server, **{"toolset": toolset, **arguments})
    assert err.value.message == problem
    assert (toolset.catalog.version, dict(toolset.catalog.tools)) == before


def test_a_bind_refused_for_a_meta_tool_name_an_adopted_tool_has_leaves_no_tool_behind() -> None:
    server = MCPServer("notes")

    @server.tool()
    def enable_tools() -> str:  # the menu's meta-tool name
        return "mine"

    @server.tool()
    def ping() -> str:
        return "pong"

    toolset = ToolSet()
    with pytest.raises(RegistrationError, match="Meta-tool name 'enable_tools'"):
        bind(server, toolset, DeliveryConfig(strategy="list_changed"), identity=BearerTokens({}))
    assert dict(toolset.catalog.tools) == {}  # neither enable_tools nor ping was kept
