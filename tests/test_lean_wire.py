"""Lean disclosure on the wire, with real clients on both protocol eras.

A client that never re-lists reaches every tool through the compact index and
``describe_tools``; a request names its own view with ``X-MCP-Toolsets`` or
``?toolsets=`` on the official SDK binding, the FastMCP middleware and the gateway;
a bad view is a clear ``-32602``; the lists say honestly how long they may be cached.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import fastmcp
import pytest
from fastmcp.client.transports import StreamableHttpTransport
from mcp.shared.exceptions import MCPError

from _fixtures.gateway import HttpGateway, gateway_config, toolgate_argv
from _fixtures.mcp_servers import serve_http
from servers import fastmcp_github
from servers.lowlevel_demo import build_server

ERAS = pytest.mark.parametrize("mode", ["legacy", "auto"])


def client(url: str, mode: str, headers: dict[str, str] | None = None) -> fastmcp.Client[Any]:
    transport = StreamableHttpTransport(url, headers=headers or {})
    return fastmcp.Client(transport, mode=mode)


@asynccontextmanager
async def lowlevel_url() -> AsyncIterator[str]:
    _, binding = build_server()
    async with serve_http(binding.streamable_http_app()) as url:
        yield url


@asynccontextmanager
async def fastmcp_url() -> AsyncIterator[str]:
    server, _ = fastmcp_github.build()
    async with serve_http(server.http_app(path="/mcp")) as url:
        yield url


async def names(c: fastmcp.Client[Any]) -> list[str]:
    return sorted(t.name for t in await c.list_tools())


# -- a client that never re-lists ---------------------------------------------------------
@ERAS
async def test_a_refresh_ignoring_client_reaches_a_grouped_tool_in_two_calls(mode: str) -> None:
    async with lowlevel_url() as url, client(url, mode) as c:
        opened = await c.call_tool("enable_tools", {"groups": ["issues"]})
        index = opened.structured_content["tools"]
        assert "list_issues(): List issues." in index
        described = await c.call_tool("describe_tools", {"tools": ["list_issues"]})
        full = json.loads(described.content[0].text)["list_issues"]
        assert full["description"] == "List issues."
        assert "inputSchema" in full
        ran = await c.call_tool("list_issues", {})  # directly: no re-list needed
        assert ran.structured_content == {"tool": "list_issues", "args": {}}


# -- views per request -----------------------------------------------------------------------
VIEW = ["create_issue", "list_issues", "ping", "whoami", "wipe"]


@ERAS
async def test_the_sdk_binding_serves_a_view_named_by_header_or_query(mode: str) -> None:
    async with lowlevel_url() as url:
        async with client(url, mode, {"X-MCP-Toolsets": "issues"}) as c:
            by_header = await names(c)
            ran = await c.call_tool("list_issues", {})
        async with client(f"{url}?toolsets=issues", mode) as c:
            by_query = await names(c)
        async with client(url, mode) as c:
            plain = await names(c)
    assert by_header == by_query == VIEW
    assert ran.structured_content == {"tool": "list_issues", "args": {}}
    assert "enable_tools" in plain and "list_issues" not in plain


@ERAS
async def test_an_unknown_toolset_is_invalid_params_naming_the_known_ones(mode: str) -> None:
    async with lowlevel_url() as url, client(url, mode, {"X-MCP-Toolsets": "nope"}) as c:
        with pytest.raises(MCPError) as caught:
            await c.list_tools()
    assert caught.value.error.code == -32602
    assert caught.value.error.message == (
        "Unknown toolset(s): nope. Known toolsets: code, issues, read_mode, repos, write_mode"
    )


@ERAS
async def test_the_fastmcp_middleware_serves_a_view_named_by_header(mode: str) -> None:
    async with fastmcp_url() as url, client(url, mode, {"X-MCP-Toolsets": "code"}) as c:
        tools = await names(c)
        ran = await c.call_tool("get_file", {"path": "a.txt"})
    assert "get_file" in tools and "enable_tools" not in tools
    assert "contents of a.txt" in ran.content[0].text


async def test_a_2026_list_says_it_is_private_and_not_to_be_cached() -> None:
    async with lowlevel_url() as url, client(url, "auto", {"X-MCP-Toolsets": "issues"}) as c:
        result = await c.list_tools_mcp()
    assert (result.ttl_ms, result.cache_scope) == (0, "private")


@pytest.fixture(scope="module")
def view_gateway(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("view-gateway")
    cfg = gateway_config(tmp)
    gateway = HttpGateway([*toolgate_argv(), "serve", str(cfg)], Path(tmp) / "gateway.log")
    gateway.start()
    yield gateway
    gateway.stop()


@ERAS
async def test_the_gateway_serves_a_view_named_by_header_or_query(
    view_gateway: HttpGateway, mode: str
) -> None:
    async with client(view_gateway.url, mode, {"X-MCP-Toolsets": "math"}) as c:
        by_header = await names(c)
        added = await c.call_tool("add", {"a": 2, "b": 3})
    async with client(f"{view_gateway.url}?toolsets=math", mode) as c:
        by_query = await names(c)
    assert by_header == by_query
    assert {"add", "multiply", "echo"} <= set(by_header)
    assert not {"note_add", "enable_tools"} & set(by_header)
    assert added.content[0].text == "5"
