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
from pydantic import BaseModel, TypeAdapter, ValidationError

from _fixtures.mcp_servers import serve_http
from toolgate import Group, Tool, ToolSet
from toolgate.catalog import arguments
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


# -- schemas that are hard to read -----------------------------------------------------------------
@pytest.mark.parametrize(
    "schema",
    [
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
            "allOf": [{"required": ["a"]}, {"required": ["b"]}],
        },
        {
            "$ref": "#/$defs/Args",
            "$defs": {
                "Args": {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                    "required": ["a", "b"],
                }
            },
        },
        {
            "type": "object",
            "required": ["a"],
            "allOf": [
                {"properties": {"a": {"type": "integer"}}},
                {"allOf": [{"properties": {"b": {"type": "string"}}, "required": ["b", "a"]}]},
            ],
        },
    ],
    ids=["required under allOf", "the root a reference", "properties under nested allOf"],
)
def test_arguments_the_root_requires_through_allof_or_a_reference_are_named(
    schema: dict[str, Any],
) -> None:
    assert required_schema(schema) == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "required": ["a", "b"],
    }
    assert required_sentence(schema) == "Required arguments: a (integer), b (string)."
    assert index_entry(Tool("t", "Do it.", input_schema=schema)) == "t(a, b): Do it."


@pytest.mark.parametrize(
    ("conditional", "sentence"),
    [
        (
            {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
            "Its arguments are required depending on the values given (see its input schema).",
        ),
        (
            {
                "required": ["a"],
                "if": {"properties": {"a": {"const": 1}}},
                "then": {"required": ["b"]},
            },
            "Required arguments: a (integer). Others are required depending on the values "
            "given (see its input schema).",
        ),
        (
            {"dependentRequired": {"a": ["b"]}},
            "Its arguments are required depending on the values given (see its input schema).",
        ),
    ],
    ids=["anyOf", "if-then", "dependentRequired"],
)
def test_a_schema_that_requires_arguments_only_in_some_cases_is_listed_whole(
    conditional: dict[str, Any], sentence: str
) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        **conditional,
    }
    assert required_schema(schema) == schema  # a cut would hide what it requires
    assert required_sentence(schema) == sentence
    assert "no required arguments" not in required_sentence(schema)


@pytest.mark.parametrize(
    ("argument", "root", "kept"),
    [
        ({"$ref": "#num"}, {"$defs": {"N": {"$anchor": "num", "type": "number"}}}, "number"),
        ({"$ref": "#/$defs/a%20b"}, {"$defs": {"a b": {"type": "boolean"}}}, "boolean"),
        (
            {"type": "array", "items": {"$ref": "#/$defs/C"}},
            {"$defs": {"C": {"type": "string", "enum": ["red", "green"]}}},
            "array of string: red, green",
        ),
        ({"type": "array", "items": {"enum": ["r", "g"]}}, {}, "array, each one of r, g"),
        (
            {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
            {},
            "array of string or integer",
        ),
        ({"enum": [True, False, None]}, {}, "one of true, false, null"),
        ({"const": None}, {}, "always null"),
        ({"type": "string", "const": "v1"}, {}, "string: v1"),
        ({"anyOf": [{"const": "a"}, {"const": "b"}]}, {}, "one of a, b"),
        ({"enum": [f"v{i}" for i in range(12)]}, {}, "string"),
        ({"enum": ["a", *range(11)]}, {}, "string or integer"),
        (
            {"allOf": [{"$ref": "#/$defs/N"}, {"description": "how many"}]},
            {"$defs": {"N": {"type": "integer"}}},
            "integer",
        ),
        (
            {"$ref": "#/$defs/J"},
            {
                "$defs": {
                    "J": {
                        "anyOf": [
                            {"type": "string"},
                            {"type": "null"},
                            {"type": "array", "items": {"$ref": "#/$defs/J"}},
                        ]
                    }
                }
            },
            "string or null or array",
        ),
    ],
    ids=[
        "an anchor",
        "a percent-escaped pointer",
        "an array of an enum",
        "an array of values without a type",
        "an array of alternatives",
        "values said in JSON's words",
        "a null const",
        "a typed const",
        "consts as alternatives (Literal)",
        "too many values to list, typed by them",
        "too many values of two types",
        "allOf of a reference and a note",
        "a value type inside itself is read once",
    ],
)
def test_hard_argument_schemas_are_read_as_a_caller_writes_them(
    argument: dict[str, Any], root: dict[str, Any], kept: str
) -> None:
    schema = {**root, "properties": {"x": argument}, "required": ["x"]}
    assert required_sentence(schema) == f"Required arguments: x ({kept})."


def test_a_schema_of_alternatives_referring_to_each_other_is_read_in_bounded_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nine levels of six references each: read naively, 6**9 (ten million) steps for one
    argument. The reading stops at a reference it is already inside and at a budget of
    nodes, so the steps stay within ``NODE_BUDGET`` per argument."""
    defs: dict[str, Any] = {
        f"L{i}": {"anyOf": [*[{"$ref": f"#/$defs/L{i + 1}"}] * 6, {"type": "null"}]}
        for i in range(9)
    }
    defs["L9"] = {"type": "string"}
    schema = {
        "$defs": defs,
        "properties": {"x": {"$ref": "#/$defs/L0"}, "y": {"$ref": "#/$defs/L0"}},
        "required": ["x", "y"],
    }
    steps = 0
    real = arguments.resolve

    def counted(node: Any, root: Any) -> Any:
        nonlocal steps
        steps += 1
        return real(node, root)

    monkeypatch.setattr(arguments, "resolve", counted)
    required_schema(schema)
    assert 0 < steps <= 2 * arguments.NODE_BUDGET + 8  # two arguments, and the root's reading


@pytest.mark.parametrize(
    "value",
    [
        "1_000",
        "1__0",
        "_1",
        " 5 ",
        "5.0",
        "+5",
        "1e3",
        "0x10",
        "1_000.0",
        "yes",
        " yes ",
        "On",
        " 1",
        "t",
        "",
    ],
)
def test_what_lax_reading_lets_through_is_what_pydantic_reads(value: str) -> None:
    for kind, json_type in ((int, "integer"), (bool, "boolean")):
        try:
            TypeAdapter(kind).validate_python(value)
            reads = True
        except ValidationError:
            reads = False
        assert arguments.lax_reads(value, json_type) is reads, (value, json_type)
