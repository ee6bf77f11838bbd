"""A small MCP backend for the gateway tests, on the SDK's low-level ``Server``.

Notes in memory; ``grow`` adds a tool and sends ``tools/list_changed``; ``crash`` kills
the process. ``--fail-if FILE`` refuses to start while FILE exists (a backend that
cannot come back). Run: ``python tests/servers/gw_notes.py [--fail-if FILE]`` (stdio)
or ``[--http --port N]`` (streamable HTTP).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from toolgate.exiting import quick_exit

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
EMPTY: dict[str, Any] = {"type": "object", "properties": {}}
NOTE_ID = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}

TOOLS = [
    mt.Tool(name="note_add", description="Add a note. Returns its id.", input_schema=TEXT),
    mt.Tool(name="note_list", description="List every note.", input_schema=EMPTY),
    mt.Tool(name="note_delete", description="Delete a note by id.", input_schema=NOTE_ID),
    mt.Tool(name="grow", description="Add the note_count tool to this server.", input_schema=EMPTY),
    mt.Tool(name="crash", description="Stop this server process at once.", input_schema=EMPTY),
]
EXTRA = mt.Tool(name="note_count", description="Count the notes.", input_schema=EMPTY)
NOTES: list[str] = []


def text(value: str, **structured: Any) -> mt.CallToolResult:
    return mt.CallToolResult(
        content=[mt.TextContent(type="text", text=value)], structured_content=structured or None
    )


async def list_tools(
    ctx: ServerRequestContext, params: mt.PaginatedRequestParams | None
) -> mt.ListToolsResult:
    return mt.ListToolsResult(tools=list(TOOLS))


async def call_tool(
    ctx: ServerRequestContext, params: mt.CallToolRequestParams
) -> mt.CallToolResult:
    args = params.arguments or {}
    if params.name == "note_add":
        NOTES.append(str(args["text"]))
        return text(f"note {len(NOTES)} added", id=len(NOTES))
    if params.name == "note_list":
        return text("\n".join(NOTES), notes=list(NOTES))
    if params.name == "note_delete":
        return text(f"note {args['id']} deleted", deleted=args["id"])
    if params.name == "grow":
        if EXTRA not in TOOLS:
            TOOLS.append(EXTRA)
        await ctx.session.send_notification(
            mt.ToolListChangedNotification(), related_request_id=ctx.request_id
        )
        return text("note_count added")
    if params.name == "note_count" and EXTRA in TOOLS:
        return text(str(len(NOTES)), count=len(NOTES))
    if params.name == "crash":
        sys.stdout.flush()
        os._exit(3)
    raise MCPError(code=mt.INVALID_PARAMS, message=f"Unknown tool: {params.name}")


def build() -> Server[Any]:
    return Server("gw-notes", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    server = build()
    async with stdio_server() as (read, write):
        options = server.create_initialization_options(NotificationOptions(tools_changed=True))
        await server.run(read, write, options)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--fail-if", default=None)
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    ns = parser.parse_args()
    if ns.fail_if and Path(ns.fail_if).exists():
        print(f"gw_notes: refusing to start while {ns.fail_if} exists", file=sys.stderr)
        sys.exit(1)
    if ns.http:
        import uvicorn

        uvicorn.run(
            build().streamable_http_app(), host="127.0.0.1", port=ns.port, log_level="warning"
        )
    else:
        anyio.run(main)
        quick_exit()  # end without collecting the heap (toolgate.exiting)
