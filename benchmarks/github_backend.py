"""An MCP backend that offers GitHub's MCP catalog (117 tools) exactly as published.

Every definition from ``../shared/data/catalogs/github-mcp-server.json`` is listed
unchanged (descriptions, schemas, annotations, icons, ``_meta``); a call answers with a
one-line text naming the tool and its arguments. The task benchmark puts ``toolgate
serve`` in front of it. Run: ``python benchmarks/github_backend.py`` (stdio).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

CATALOG = Path(__file__).resolve().parents[2] / "shared" / "data" / "catalogs"
TOOLS = [
    mt.Tool.model_validate(raw)
    for raw in json.loads((CATALOG / "github-mcp-server.json").read_text("utf-8"))
]
NAMES = {t.name for t in TOOLS}


async def list_tools(
    ctx: ServerRequestContext, params: mt.PaginatedRequestParams | None
) -> mt.ListToolsResult:
    return mt.ListToolsResult(tools=TOOLS)


async def call_tool(
    ctx: ServerRequestContext, params: mt.CallToolRequestParams
) -> mt.CallToolResult:
    if params.name not in NAMES:
        raise MCPError(code=mt.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
    args = json.dumps(params.arguments or {}, sort_keys=True)
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=f"{params.name} {args}")])


async def main() -> None:
    server: Server[Any] = Server(
        "github", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
