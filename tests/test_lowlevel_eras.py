"""toolgate.lowlevel across protocol eras: 2026-07-28 (stateless) beside the legacy one.

On 2026-07-28 ``auto`` serves the ``catalog`` strategy: tools/list never changes
with activation, grouped tools stay callable, and state is keyed by an
authenticated principal only. Real clients, in memory, over stdio and over HTTP.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import fastmcp
import mcp_types as mt
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from mcp import Client

from _fixtures.gateway import sha256
from _fixtures.mcp_servers import Notes, serve_http
from servers.lowlevel_demo import build_server
from toolgate import Principal
from toolgate.identity import BearerTokens

SERVER_SCRIPT = str(Path(__file__).parent / "servers" / "lowlevel_demo.py")
CATALOG_LIST = [
    "call_tool",
    "describe_tools",
    "enable_tools",
    "get_group",
    "list_groups",
    "ping",
    "whoami",
    "wipe",
]


async def test_on_2026_a_confirm_policy_is_refused_without_asking() -> None:
    server, _ = build_server()
    asked: list[str] = []

    async def callback(context: Any, params: Any) -> mt.ElicitResult:
        asked.append("asked")
        return mt.ElicitResult(action="accept", content={"confirm": True})

    async with Client(server, mode="auto", elicitation_callback=callback) as client:
        result = await client.call_tool("wipe", {})
    assert (result.is_error, asked) == (True, [])
    assert result.structured_content is not None
    assert result.structured_content["code"] == "confirmation_refused"


async def test_one_http_server_serves_legacy_and_2026_clients_side_by_side() -> None:
    tokens = BearerTokens({sha256("tok-dev"): Principal(id="dev")})
    _, binding = build_server(identity=tokens)
    notes = Notes()
    async with serve_http(binding.streamable_http_app()) as url:
        old = StreamableHttpTransport(url, auth="tok-dev")
        async with fastmcp.Client(old, mode="legacy", message_handler=notes) as client:
            await client.call_tool_mcp("enable_tools", {"groups": ["issues"]})
            assert await notes.settled() == ["notifications/tools/list_changed"]
            legacy_list = [t.name for t in await client.list_tools()]
        new = StreamableHttpTransport(url, auth="tok-dev")
        async with fastmcp.Client(new, message_handler=notes) as client:
            await client.call_tool_mcp("enable_tools", {"groups": ["issues"]})
            assert await notes.settled() == []
            modern_list = [t.name for t in await client.list_tools()]
            me = await client.call_tool_mcp("whoami", {})
    assert "list_issues" in legacy_list
    assert modern_list == CATALOG_LIST
    # 2026-07-28 has no sessions: an authenticated principal keys the state
    assert me.structured_content is not None
    assert me.structured_content["session"] == "principal:dev"


async def test_on_2026_an_unauthenticated_caller_gets_an_ephemeral_session() -> None:
    server, _ = build_server()
    async with Client(server, mode="auto") as client:
        me = await client.call_tool("whoami", {})
    assert me.structured_content == {
        "id": "local",
        "trust": "declared",
        "scope": ["*"],
        "session": None,
    }


async def test_a_stdio_server_serves_a_2026_fastmcp_client_the_catalog() -> None:
    stdio = StdioTransport(sys.executable, [SERVER_SCRIPT, "stdio"])
    async with fastmcp.Client(stdio) as fm:
        assert fm.protocol_version == "2026-07-28"
        assert [t.name for t in await fm.list_tools()] == CATALOG_LIST
        ran = await fm.call_tool_mcp("fork_repo", {})
    assert ran.structured_content == {"tool": "fork_repo", "args": {}}
