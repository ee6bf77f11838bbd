"""Tool icons survive every path: the catalog's wire form, the gateway, the FastMCP
adapter, an SDK ``MCPServer``'s own tools; only lazy descriptions' ``minimal`` list
leaves them for the full definition."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import fastmcp
from mcp import Client
from mcp.server import MCPServer
from mcp_types import Icon

from toolgate import Tool, ToolSet
from toolgate.catalog import CallContext, Handler
from toolgate.fastmcp import ToolgateMiddleware
from toolgate.gateway.config.build import BackendTool, build_toolset
from toolgate.gateway.config.model import parse_config
from toolgate.lowlevel import bind
from toolgate.strategies import Delivery, DeliveryConfig
from toolgate.strategies.base import LEGACY, Request
from toolgate.strategies.lazy import LazyDescriptions

ICON = {"src": "data:image/png;base64,iVBORw0KGgo=", "mimeType": "image/png", "theme": "light"}


def test_a_tools_icons_are_part_of_its_wire_definition() -> None:
    tool = Tool("fork", "Fork a repository.", icons=(ICON,))
    assert tool.wire()["icons"] == [ICON]
    assert "icons" not in Tool("star", "Star a repository.").wire()


def test_the_gateway_keeps_a_backends_icons() -> None:
    cfg = parse_config({"mcpServers": {"gh": {"command": "unused"}}})
    listed = {
        "gh": [
            {
                "name": "fork",
                "description": "Fork a repository.",
                "inputSchema": {"type": "object", "properties": {}},
                "icons": [ICON],
            }
        ]
    }

    def handler_for(tool: BackendTool) -> Handler:
        def unused(arguments: Mapping[str, Any], ctx: CallContext) -> None:
            raise AssertionError("listing never runs a tool")

        return unused

    toolset, report = build_toolset(cfg, listed, handler_for)
    assert report.errors == []
    assert toolset.catalog.tools["fork"].wire()["icons"] == [ICON]


async def test_minimal_lazy_lists_drop_icons_and_full_lists_keep_them() -> None:
    cases: list[tuple[Literal["full", "minimal"], Any]] = [("full", [ICON]), ("minimal", None)]
    for schema, expected in cases:
        toolset = ToolSet()
        toolset.add_tool(Tool("fork", "Fork a repository. Long text.", icons=(ICON,)))
        lazy = LazyDescriptions(toolset, schema=schema)
        delivery = Delivery(toolset, DeliveryConfig(strategy="flat"), addons=[lazy])
        strategy, request = delivery.request(session_key="s", protocol=LEGACY)
        assert isinstance(request, Request)
        listed = {w["name"]: w for w in (await delivery.list_tools(strategy, request)).items}
        assert listed["fork"].get("icons") == expected


async def test_the_fastmcp_adapter_lists_a_fastmcp_tools_icons() -> None:
    server = fastmcp.FastMCP("icons")

    @server.tool(icons=[Icon(**ICON)])
    def fork(repo: str) -> str:
        """Fork a repository."""
        return repo

    ToolgateMiddleware(ToolSet()).attach(server)
    async with fastmcp.Client(server, mode="legacy") as client:
        tools: dict[str, Any] = {t.name: t for t in await client.list_tools()}
    icons = tools["fork"].icons
    assert [i.model_dump(by_alias=True, exclude_none=True) for i in icons] == [ICON]


async def test_an_mcpserver_binding_lists_its_own_tools_icons_and_meta() -> None:
    server = MCPServer("icons")

    @server.tool(icons=[Icon(**ICON)], meta={"ui": {"color": "green"}})
    def fork(repo: str) -> str:
        """Fork a repository."""
        return repo

    bind(server, ToolSet())
    async with Client(server, mode="legacy") as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    fork_tool = listed["fork"]
    assert [i.model_dump(by_alias=True, exclude_none=True) for i in fork_tool.icons or []] == [ICON]
    assert fork_tool.meta == {"ui": {"color": "green"}}
