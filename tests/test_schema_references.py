"""Required arguments read through a schema's references (``toolgate.catalog.arguments``).

The official SDK writes a pydantic model or an enum argument as ``{"$ref": "#/$defs/X"}``;
FastMCP writes the same tool inline. A shortened listing and an argument error name each
required argument's type either way: in process for every form of reference, and
through the SDK binding with real clients on both protocol eras.
"""

from __future__ import annotations

import enum
from typing import Any

import fastmcp
import pytest
from fastmcp.client.transports import StreamableHttpTransport
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

from _fixtures.mcp_servers import serve_http
from toolgate import Group, Tool, ToolSet
from toolgate.catalog.arguments import required_schema, required_sentence
from toolgate.lowlevel import bind
from toolgate.strategies import DeliveryConfig
from toolgate.strategies.detail import index_entry

ERAS = pytest.mark.parametrize("mode", ["legacy", "auto"])  # 2025-11-25; 2026-07-28


class Colour(enum.StrEnum):
    red = "red"
    green = "green"


class Address(BaseModel):
    street: str
    city: str


def ship(to: Address, colour: Colour, parcels: list[Address], note: str | None) -> str:
    """Ship parcels to an address."""
    return f"shipped {len(parcels)} to {to.city} in {colour.value}"


async def schema_of(server: MCPServer[Any] | fastmcp.FastMCP[Any]) -> dict[str, Any]:
    server.add_tool(ship) if isinstance(server, fastmcp.FastMCP) else server.tool()(ship)
    (tool,) = await server.list_tools()
    schema = getattr(tool, "input_schema", None) or getattr(tool, "parameters", None)
    assert isinstance(schema, dict)
    return schema


SHIP_REQUIRED = {
    "type": "object",
    "properties": {
        "to": {"type": "object"},
        "colour": {"type": "string", "enum": ["red", "green"]},
        "parcels": {"type": "array", "items": {"type": "object"}},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["to", "colour", "parcels", "note"],
}
SHIP_SENTENCE = (
    "Required arguments: to (object), colour (string: red, green), parcels (array of "
    "object), note (string or null)."
)


# -- in process: every form of reference --------------------------------------------------------
async def test_the_sdks_references_and_fastmcps_inline_schema_read_the_same() -> None:
    sdk = await schema_of(MCPServer("sdk"))
    inline = await schema_of(fastmcp.FastMCP("fastmcp"))
    assert "$defs" in sdk and "$defs" not in inline  # the two forms, as each writes them
    for schema in (sdk, inline):
        assert required_schema(schema) == SHIP_REQUIRED
        assert required_sentence(schema) == SHIP_SENTENCE


@pytest.mark.parametrize(
    ("argument", "root", "kept"),
    [
        ({"$ref": "#/definitions/N"}, {"definitions": {"N": {"type": "integer"}}}, "integer"),
        ({"allOf": [{"$ref": "#/$defs/N"}]}, {"$defs": {"N": {"type": "number"}}}, "number"),
        ({"$ref": "#/$defs/a~1b"}, {"$defs": {"a/b": {"type": "boolean"}}}, "boolean"),
        (
            {"$ref": "#/$defs/A"},
            {"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"type": "string"}}},
            "string",
        ),
        ({"$ref": "#/items/0"}, {"items": [{"type": "array"}]}, "array"),
        ({"const": "v1"}, {}, "always v1"),
        ({"enum": [1, 2, 3]}, {}, "one of 1, 2, 3"),
        ({"type": ["string", "null"]}, {}, "string or null"),
        (
            {"oneOf": [{"$ref": "#/$defs/N"}, {"type": "integer"}]},
            {"$defs": {"N": {"type": "integer"}}},
            "integer",
        ),
    ],
    ids=[
        "definitions",
        "allOf of one",
        "escaped pointer",
        "a reference to a reference",
        "into a list",
        "const",
        "enum without a type",
        "a list of types",
        "alternatives of one type said once",
    ],
)
def test_an_argument_s_type_is_read_through_its_reference(
    argument: dict[str, Any], root: dict[str, Any], kept: str
) -> None:
    schema = {**root, "properties": {"x": argument}, "required": ["x"]}
    assert required_sentence(schema) == f"Required arguments: x ({kept})."


@pytest.mark.parametrize(
    ("argument", "root"),
    [
        ({"$ref": "#/$defs/A"}, {"$defs": {"A": {"$ref": "#/$defs/A"}}}),
        ({"$ref": "#/$defs/Missing"}, {"$defs": {}}),
        ({"$ref": "https://example.com/schema.json"}, {}),
        ({"$ref": 7}, {}),
        (
            {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]},
            {"$defs": {"A": {"$ref": "#/$defs/A"}}},
        ),
    ],
    ids=["a cycle", "leading nowhere", "outside the document", "not text", "a cycle inside anyOf"],
)
def test_a_reference_that_names_no_schema_leaves_the_argument_untyped(
    argument: dict[str, Any], root: dict[str, Any]
) -> None:
    schema = {**root, "properties": {"x": argument}, "required": ["x"]}
    assert required_schema(schema) == {
        "type": "object",
        "properties": {"x": {}},
        "required": ["x"],
    }
    assert required_sentence(schema) == "Required arguments: x."


def test_required_names_are_read_once_each_and_as_text() -> None:
    schema = {"properties": {"1": {"type": "integer"}}, "required": [1, "1", "gone"]}
    assert required_schema(schema)["required"] == ["1", "gone"]
    assert required_sentence(schema) == "Required arguments: 1 (integer), gone."
    assert required_sentence({"required": "abc"}) == "It has no required arguments."


# -- through the SDK binding, real clients ---------------------------------------------------------
@pytest.fixture
async def shipping_url() -> Any:
    """A low-level SDK server whose ``ship`` tool has the schema the SDK wrote for it,
    in the group ``shipping``."""
    schema = await schema_of(MCPServer("schema-source"))
    toolset = ToolSet("shop")
    toolset.add_group(Group("shipping", "Send parcels."))
    toolset.add_tool(
        Tool(
            "ship",
            "Ship parcels to an address.",
            handler=lambda args, ctx: "shipped",
            input_schema=schema,
            groups=("shipping",),
        )
    )
    binding = bind(Server("shop", version="1"), toolset, DeliveryConfig(strategy="auto"))
    async with serve_http(binding.streamable_http_app()) as url:
        yield url


def client(url: str, mode: str) -> fastmcp.Client[Any]:
    return fastmcp.Client(StreamableHttpTransport(url), mode=mode)


async def test_a_relisted_tool_with_references_shows_each_required_arguments_type(
    shipping_url: str,
) -> None:
    async with client(shipping_url, "legacy") as c:
        await c.call_tool("enable_tools", {"groups": ["shipping"]})
        listed = {t.name: t for t in await c.list_tools()}
    assert listed["ship"].input_schema == SHIP_REQUIRED


@ERAS
async def test_a_call_missing_arguments_names_their_types_through_references(
    shipping_url: str, mode: str
) -> None:
    async with client(shipping_url, mode) as c:
        if mode == "legacy":
            await c.call_tool("enable_tools", {"groups": ["shipping"]})
        result = await c.call_tool_mcp("ship", {"colour": "red"})
    assert result.is_error is True
    text = result.content[0].text
    assert "'to' is a required property" in text
    assert SHIP_SENTENCE in text
    assert text.endswith('Call describe_tools with {"tools": ["ship"]} for its full definition.')


def test_a_compact_index_reads_required_names_the_same_way() -> None:
    tool = Tool("t", "Do it.", input_schema={"type": "object", "required": ["a", "a", 2]})
    assert index_entry(tool) == "t(a, 2): Do it."
