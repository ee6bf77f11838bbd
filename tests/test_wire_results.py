"""A tool result on the wire (``toolgate.wire.call_result_wire``): what the SDK's kernel
sends for it, on either protocol era, is what it sends for the result model
(``call_result``), blocks of no MCP type included."""

from __future__ import annotations

import pytest
from mcp.server.connection import Connection
from mcp.server.lowlevel import Server
from mcp.server.runner import ServerRunner

from toolgate.catalog import ToolResult
from toolgate.wire import call_result, call_result_wire

RESULTS = [
    ToolResult(
        content=({"type": "text", "text": "hello"},),
        structured={"result": "hello"},
        meta={"fastmcp": {"wrap_result": True}},
    ),
    ToolResult(
        content=(
            {"type": "text", "text": "x", "annotations": {"audience": ["user"]}, "_meta": {"a": 1}},
            {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            {"type": "weird", "x": 1},  # no MCP type: sent as text holding its JSON
            {"type": "text", "text": "y", "unknown_field": 5},
        ),
        is_error=True,
    ),
    ToolResult(
        content=(
            {"type": "resource_link", "uri": "file:///a", "name": "a"},
            {"type": "resource", "resource": {"uri": "file:///b", "text": "t"}},
        ),
        structured={"n": None},
        meta={"k": None},
    ),
    ToolResult(content=()),
]


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("result", RESULTS, ids=["structured", "blocks", "resources", "empty"])
def test_the_wire_form_is_sent_as_the_model_is(version: str, result: ToolResult) -> None:
    runner = ServerRunner(Server("wire"), Connection.from_envelope(version, None, None), None)
    sent = runner._serialize("tools/call", version, call_result_wire(result))
    assert sent == runner._serialize("tools/call", version, call_result(result))
    assert sent["isError"] is result.is_error


def test_a_block_of_no_mcp_type_is_sent_as_text_holding_its_json() -> None:
    wire = call_result_wire(ToolResult(content=({"type": "weird", "x": 1},)))
    assert wire["content"] == [{"type": "text", "text": '{"type": "weird", "x": 1}'}]
