"""A backend that offers the tools and prompts a JSON file names, for the gateway test of
what an identity may not see (``tests/test_no_path_leaks.py``): the full catalog, or the
catalog without the tools one identity may not use (SDK low-level, stdio).

Run: ``python tests/servers/gw_acl.py CATALOG.json``; the file holds
``{"tools": [{name, description, inputSchema}], "prompts": [name], "resources": [uri]}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from toolgate.exiting import quick_exit


def build(spec: dict[str, Any]) -> Server[Any]:
    tools = [mt.Tool.model_validate(t) for t in spec["tools"]]
    prompts = [mt.Prompt(name=p, description=f"The {p} prompt.") for p in spec["prompts"]]
    resources = [mt.Resource(uri=u, name=u.split("/")[2]) for u in spec["resources"]]
    names = {t.name for t in tools}

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: mt.CallToolRequestParams
    ) -> mt.CallToolResult:
        if params.name not in names:
            raise MCPError(code=mt.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        args = json.dumps(params.arguments or {}, sort_keys=True)
        return mt.CallToolResult(
            content=[mt.TextContent(type="text", text=f"{params.name} ran with {args}")]
        )

    async def list_prompts(
        ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListPromptsResult:
        return mt.ListPromptsResult(prompts=prompts)

    async def get_prompt(
        ctx: ServerRequestContext[Any, Any], params: mt.GetPromptRequestParams
    ) -> mt.GetPromptResult:
        if params.name not in spec["prompts"]:
            raise MCPError(code=mt.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
        text = mt.TextContent(type="text", text=f"Use {params.name}.")
        return mt.GetPromptResult(messages=[mt.PromptMessage(role="user", content=text)])

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourcesResult:
        return mt.ListResourcesResult(resources=resources)

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: mt.ReadResourceRequestParams
    ) -> mt.ReadResourceResult:
        if str(params.uri) not in spec["resources"]:
            raise MCPError(code=-32002, message=f"Resource not found: {params.uri}")
        text = mt.TextResourceContents(uri=params.uri, text=f"About {params.uri}.")
        return mt.ReadResourceResult(contents=[text])

    return Server(
        "gw-acl",
        version="1.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


async def main(path: str) -> None:
    server = build(json.loads(Path(path).read_text()))
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
    quick_exit()  # end without collecting the heap (toolgate.exiting)
