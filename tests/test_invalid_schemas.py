"""A tool whose input schema is not valid JSON Schema (from a backend nobody can change)
stays callable: visible implies dispatchable. Its arguments go to the tool unchecked,
one warning names the tool and the problem, and ``toolgate check`` (the build report)
warns too. Core in process; the wire through ``toolgate.lowlevel`` with the SDK's real
client in memory, on both protocol eras.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pytest
from mcp import Client
from mcp.server import Server

from toolgate import CallContext, Tool, ToolSet
from toolgate.gateway.config.build import build_toolset
from toolgate.gateway.config.model import parse_config
from toolgate.lowlevel import bind

NOT_JSON_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "strng"}},
    "required": ["a"],
}
UNRESOLVABLE = {"type": "object", "properties": {"a": {"$ref": "#/$defs/nowhere"}}}


def echo(args: Mapping[str, Any], ctx: CallContext) -> str:
    return f"ran with {dict(args)}"


def toolset() -> ToolSet:
    ts = ToolSet()
    ts.add_tools(
        [
            Tool("odd", "A tool with a misspelt type.", handler=echo, input_schema=NOT_JSON_SCHEMA),
            Tool(
                "dangling", "A tool with a dangling $ref.", handler=echo, input_schema=UNRESOLVABLE
            ),
        ]
    )
    return ts


async def test_a_schema_that_is_not_json_schema_lets_the_call_through_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = toolset().session("s")
    with caplog.at_level(logging.WARNING, logger="toolgate.toolset"):
        first = await s.call("odd", {"a": "x"})
        second = await s.call("odd", {"a": 1})
    assert [first.result.text_content, second.result.text_content] == [
        "ran with {'a': 'x'}",
        "ran with {'a': 1}",
    ]
    assert first.result.is_error is False and first.refused is None
    assert [r.getMessage() for r in caplog.records] == [
        "tool 'odd': its inputSchema is not valid JSON Schema (at properties/a/type: "
        "'strng' is not valid under any of the given schemas); its arguments go to the "
        "tool unchecked"
    ]


async def test_a_schema_that_cannot_be_applied_is_dropped_after_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = toolset().session("s")
    with caplog.at_level(logging.WARNING, logger="toolgate.toolset"):
        for value in ("x", 2):
            out = await s.call("dangling", {"a": value})
            assert out.result.text_content == f"ran with {{'a': {value!r}}}"
    (record,) = caplog.records
    assert record.getMessage().startswith("tool 'dangling': its inputSchema cannot be applied (")


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # 2025-11-25; 2026-07-28
async def test_a_listed_tool_with_a_broken_schema_answers_a_real_client(mode: str) -> None:
    server: Server[Any] = Server("odd-schemas")
    bind(server, toolset())
    async with Client(server, mode=mode) as client:
        listed = [t.name for t in (await client.list_tools()).tools]
        assert "odd" in listed
        result = await client.call_tool("odd", {"a": "x"})
    assert result.is_error is False
    assert [c.text for c in result.content if c.type == "text"] == ["ran with {'a': 'x'}"]


def test_the_build_report_warns_of_a_backend_schema_naming_tool_and_problem() -> None:
    cfg = parse_config(
        {
            "mcpServers": {"w": {"command": "w"}},
            "toolgate": {"groups": {"g": {"description": "G.", "tools": ["w:*"]}}},
        }
    )
    listed = {
        "w": [
            {"name": "bad_schema", "inputSchema": NOT_JSON_SCHEMA},
            {"name": "ok_tool", "inputSchema": {"type": "object"}},
        ]
    }
    toolset, report = build_toolset(cfg, listed, lambda tool: echo)
    assert report.errors == []
    assert report.warnings == [
        "mcpServers.w: tool 'bad_schema' has an inputSchema that is not valid JSON Schema "
        "(at properties/a/type: 'strng' is not valid under any of the given schemas); "
        "toolgate passes its arguments on unchecked"
    ]
    assert toolset is not None and "bad_schema" in toolset.catalog.tools
