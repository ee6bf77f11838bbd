"""A backend with the tools that the official MCP conformance suite's server scenarios
call (``@modelcontextprotocol/conformance``, the ``tools-call-*`` scenarios and
``json-schema-2020-12``), written from the scenarios' own requirements.

The npm package ships only the suite, not its reference server, so this stands in for it:
``benchmarks/conformance.sh`` runs it behind ``toolgate serve`` (strategy ``flat``) and
points the suite at the gateway. It also serves ``tests/test_gateway_content.py``.

The tools that need the gateway to relay something from the backend to the client
(logging, progress, sampling, elicitation) are implemented too, so the suite reports what
the gateway does with them. Run over stdio (default) or streamable HTTP:
``python tests/servers/conformance_reference.py [--http --port N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import struct
import warnings
import zlib
from typing import Annotated, Any

import mcp.types as mt
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.prompts import Message
from fastmcp.tools import Tool, ToolResult
from pydantic import BaseModel, Field

from toolgate.exiting import quick_exit


def _png_1x1_red() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte + one red pixel
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def _wav_silence() -> bytes:
    rate, samples = 8000, 80  # 10 ms of 8-bit mono silence
    data = b"\x80" * samples
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate, 1, 8)
    return (
        b"RIFF"
        + struct.pack("<I", 4 + 8 + len(fmt) + 8 + len(data))
        + b"WAVE"
        + b"fmt "
        + struct.pack("<I", len(fmt))
        + fmt
        + b"data"
        + struct.pack("<I", len(data))
        + data
    )


PNG_B64 = base64.b64encode(_png_1x1_red()).decode()
WAV_B64 = base64.b64encode(_wav_silence()).decode()
SIMPLE_TEXT = "This is a simple text response for testing."
EMBEDDED_TEXT = "This is an embedded resource content."
MIXED_JSON = '{"test":"data","value":123}'
ERROR_TEXT = "This tool intentionally returns an error for testing"
SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"

# dereference_schemas=False: serve json_schema_2020_12_tool's $defs/$ref as written.
mcp = FastMCP("conformance-reference", dereference_schemas=False)


@mcp.tool
def test_simple_text() -> ToolResult:
    """Returns one text block."""
    return ToolResult(content=[mt.TextContent(type="text", text=SIMPLE_TEXT)])


@mcp.tool
def test_image_content() -> ToolResult:
    """Returns one image block (a 1x1 red PNG)."""
    return ToolResult(content=[mt.ImageContent(type="image", data=PNG_B64, mimeType="image/png")])


@mcp.tool
def test_audio_content() -> ToolResult:
    """Returns one audio block (10 ms of WAV silence)."""
    return ToolResult(content=[mt.AudioContent(type="audio", data=WAV_B64, mimeType="audio/wav")])


@mcp.tool
def test_embedded_resource() -> ToolResult:
    """Returns one embedded text resource."""
    resource = mt.TextResourceContents(
        uri="test://embedded-resource",
        mimeType="text/plain",
        text=EMBEDDED_TEXT,
    )
    return ToolResult(content=[mt.EmbeddedResource(type="resource", resource=resource)])


@mcp.tool
def test_multiple_content_types() -> ToolResult:
    """Returns a text, an image and an embedded resource block."""
    resource = mt.TextResourceContents(
        uri="test://mixed-content-resource",
        mimeType="application/json",
        text=MIXED_JSON,
    )
    return ToolResult(
        content=[
            mt.TextContent(type="text", text="Multiple content types test:"),
            mt.ImageContent(type="image", data=PNG_B64, mimeType="image/png"),
            mt.EmbeddedResource(type="resource", resource=resource),
        ]
    )


@mcp.tool
def test_error_handling() -> str:
    """Always fails (a tool error: isError true)."""
    raise ToolError(ERROR_TEXT)


@mcp.tool
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three info log notifications while it runs."""
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@mcp.tool
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50, 100 of 100 when the request carries a progress token."""
    for step, value in enumerate((0, 50, 100)):
        if step:
            await asyncio.sleep(0.05)
        await ctx.report_progress(value, 100)
    return "Tool with progress executed successfully"


@mcp.tool
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client to sample an LLM completion of ``prompt``."""
    message = mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text=prompt))
    with warnings.catch_warnings():  # sampling is deprecated as of 2026-07-28 (SEP-2577)
        warnings.simplefilter("ignore")
        # on the tools/call's own stream: the client may not have opened its GET stream yet
        reply = await ctx.session.create_message(
            [message], max_tokens=100, related_request_id=ctx.request_id
        )
    return f"LLM response: {getattr(reply.content, 'text', reply.content)}"


class _UserInfo(BaseModel):
    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


@mcp.tool
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the client for a username and an email."""
    answer = await ctx.elicit(message, response_type=_UserInfo)
    return f"User response: action={answer.action}, content={getattr(answer, 'data', None)}"


_SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {
            "type": "string",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "default": True},
    },
}

_SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


async def _elicit_raw(ctx: Context, message: str, schema: dict[str, Any]) -> str:
    # on the tools/call's own stream: the client may not have opened its GET stream yet
    answer = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    return f"Elicitation completed: action={answer.action}, content={answer.content}"


@mcp.tool
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicits a form whose fields carry default values (SEP-1034)."""
    return await _elicit_raw(ctx, "Please review and update the form fields", _SEP1034_SCHEMA)


@mcp.tool
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicits a form with the five enum variants of SEP-1330."""
    return await _elicit_raw(ctx, "Please select options from the enum fields", _SEP1330_SCHEMA)


# -- resources (resources-* scenarios) ----------------------------------------------------
STATIC_TEXT = "This is the content of the static text resource."
WATCHED = "test://watched-resource"
#: the URIs some session subscribed to (resources/subscribe, resources/unsubscribe)
subscribed: set[str] = set()


@mcp.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return STATIC_TEXT


@mcp.resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a 1x1 red PNG)."""
    return _png_1x1_red()


@mcp.resource("test://template/{id}/data", name="template-data", mime_type="application/json")
def template_data(id: str) -> str:
    """A resource template: the id is substituted into the content."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@mcp.resource(WATCHED, name="watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content."


async def _subscribe(ctx: Any, params: mt.SubscribeRequestParams) -> mt.EmptyResult:
    subscribed.add(str(params.uri))
    return mt.EmptyResult()


async def _unsubscribe(ctx: Any, params: mt.UnsubscribeRequestParams) -> mt.EmptyResult:
    subscribed.discard(str(params.uri))
    return mt.EmptyResult()


mcp._mcp_server.add_request_handler("resources/subscribe", mt.SubscribeRequestParams, _subscribe)
mcp._mcp_server.add_request_handler(
    "resources/unsubscribe", mt.UnsubscribeRequestParams, _unsubscribe
)


# -- prompts (prompts-* scenarios) and completion (completion-complete) ------------------
@mcp.prompt
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@mcp.prompt
def test_prompt_with_arguments(
    arg1: Annotated[str, Field(description="First test argument")],
    arg2: Annotated[str, Field(description="Second test argument")],
) -> str:
    """A prompt with two required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@mcp.prompt
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, Field(description="URI of the resource to embed")],
) -> list[Message]:
    """A prompt that embeds a resource."""
    resource = mt.TextResourceContents(
        uri=resourceUri, mimeType="text/plain", text="Embedded resource content for testing."
    )
    return [
        Message(mt.EmbeddedResource(type="resource", resource=resource)),
        Message("Please process the embedded resource above."),
    ]


@mcp.prompt
def test_prompt_with_image() -> list[Message]:
    """A prompt with an image."""
    return [
        Message(mt.ImageContent(type="image", data=PNG_B64, mimeType="image/png")),
        Message("Please analyze the image above."),
    ]


COMPLETIONS = ("paris", "park", "party", "test", "testing")


@mcp.completion
def complete(ref: Any, argument: mt.CompletionArgument, context: Any = None) -> list[str]:
    """Values of the argument being completed that start with what was typed."""
    return [v for v in COMPLETIONS if v.startswith(argument.value)]


class _Json2020Tool(Tool):
    """A tool whose input schema uses JSON Schema 2020-12 keywords verbatim."""

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(content=[mt.TextContent(type="text", text=f"received {arguments}")])


mcp.add_tool(
    _Json2020Tool(
        name="json_schema_2020_12_tool",
        description="Tool with JSON Schema 2020-12 features",
        parameters={
            "$schema": SCHEMA_2020_12,
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    )
)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    ns = parser.parse_args()
    if ns.http:
        mcp.run(
            transport="http",
            host="127.0.0.1",
            port=ns.port,
            show_banner=False,
            log_level="warning",
            # a local server refuses foreign Host/Origin headers (DNS rebinding)
            host_origin_protection=True,
        )
    else:
        mcp.run(transport="stdio", show_banner=False)
        quick_exit()  # end without collecting the heap (toolgate.exiting)
