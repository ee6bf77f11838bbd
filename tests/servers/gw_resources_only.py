"""A backend that declares resources but answers no ``resources/templates/list``
(``-32601``), as some servers do; on the SDK's low-level ``Server`` (stdio).

Run: ``python tests/servers/gw_resources_only.py``.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as mt
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from toolgate.exiting import quick_exit

EMPTY: dict[str, Any] = {"type": "object", "properties": {}}


async def list_tools(
    ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams | None
) -> mt.ListToolsResult:
    return mt.ListToolsResult(tools=[mt.Tool(name="motd", input_schema=EMPTY)])


async def call_tool(
    ctx: ServerRequestContext[Any, Any], params: mt.CallToolRequestParams
) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(type="text", text="hello")])


async def list_resources(
    ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams | None
) -> mt.ListResourcesResult:
    return mt.ListResourcesResult(resources=[mt.Resource(uri="motd://today", name="today")])


async def main() -> None:
    server: Server[Any] = Server(
        "gw-resources-only",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
    quick_exit()  # end without collecting the heap (toolgate.exiting)
