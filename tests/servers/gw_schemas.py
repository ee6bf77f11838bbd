"""A backend whose tools have legal JSON Schemas that are hard to read, for the tests of
lists that never mislead: required arguments only under a root ``allOf``, a reference to
an anchor, an array of enum values, a number with ``multipleOf``, a value type that
refers to itself through six alternatives, and a strict object.

Each call answers what it was given (``ran NAME ARGUMENTS``), so a test sees whether a
call reached the backend. Run: ``python tests/servers/gw_schemas.py`` (stdio).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as mt
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

SCHEMAS: dict[str, dict[str, Any]] = {
    "allof_args": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "allOf": [{"required": ["a"]}, {"required": ["b"]}],
    },
    "anchor_arg": {
        "type": "object",
        "properties": {"x": {"$ref": "#num"}},
        "required": ["x"],
        "$defs": {"N": {"$anchor": "num", "type": "number"}},
    },
    "pick_colours": {
        "type": "object",
        "properties": {"colours": {"type": "array", "items": {"$ref": "#/$defs/Colour"}}},
        "required": ["colours"],
        "$defs": {"Colour": {"type": "string", "enum": ["red", "green"]}},
    },
    "pay": {
        "type": "object",
        "properties": {"amount": {"type": "number", "multipleOf": 0.01}},
        "required": ["amount"],
    },
    # six ways to refer to itself: read naively, each level multiplies the walk by six
    "nested": {
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/A"}},
        "required": ["x"],
        "$defs": {"A": {"anyOf": [*[{"$ref": "#/$defs/A"}] * 6, {"type": "null"}]}},
    },
    "strict_add": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
}
TOOLS = [
    mt.Tool(name=n, description=f"Try {n}. Its schema is the point.", input_schema=s)
    for n, s in SCHEMAS.items()
]


async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> mt.ListToolsResult:
    return mt.ListToolsResult(tools=list(TOOLS))


async def call_tool(
    ctx: ServerRequestContext[Any], params: mt.CallToolRequestParams
) -> mt.CallToolResult:
    text = f"ran {params.name} {json.dumps(params.arguments, sort_keys=True)}"
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)])


async def main() -> None:
    server = Server("schemas", version="1", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
