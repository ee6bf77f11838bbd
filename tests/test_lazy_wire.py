"""Lazy descriptions on the wire: real MCP clients against toolgate's adapters.

``mcp.Client`` and ``fastmcp.Client`` against ``toolgate.lowlevel`` in memory on both
protocol eras, plus streamable HTTP with bearer identities (2026-07-28 keys the
described tools by the authenticated principal); a FastMCP server through
``toolgate.fastmcp`` for the tool paths (its resources forwarding is not there yet).
"""

from __future__ import annotations

import json
from typing import Any

import fastmcp
import mcp_types as mt
import pytest
from fastmcp import FastMCP
from fastmcp.client.transports import FastMCPTransport, StreamableHttpTransport
from mcp import Client
from mcp.server import Server

from _fixtures.gateway import sha256
from _fixtures.mcp_servers import serve_http
from data.lazy.tracker import COMMENT_SCHEMA, DOCS, MALFORMED, tracker_toolset
from toolgate import ConfigError, MemoryStore, Principal
from toolgate.agent import system_prompt
from toolgate.identity import BearerTokens
from toolgate.lowlevel import Binding, bind
from toolgate.strategies.lazy import LazyDescriptions, workflow_text

URI = "resource:///tool_descriptions"
VISIBLE = ["add_comment", "search_issues", "whoami"]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def build(
    *, schema: str = "full", identity: Any = None, clock: Clock | None = None
) -> tuple[Server[Any], Binding]:
    if clock is not None:
        ts = tracker_toolset(store=MemoryStore(idle_ttl=60, clock=clock), clock=clock)
    else:
        ts = tracker_toolset()
    lazy = LazyDescriptions(ts, schema=schema, docs_dir=DOCS)  # type: ignore[arg-type]
    server: Server[Any] = Server("tracker")
    return server, bind(server, ts, identity=identity, addons=[lazy])


def legacy(server: Server[Any]) -> Client:
    return Client(server, mode="legacy")


def shim(server: Server[Any]) -> FastMCPTransport:
    return FastMCPTransport(type("Shim", (), {"_mcp_server": server})())


async def read_json(client: Client, uri: str) -> Any:
    result = await client.read_resource(uri)
    [content] = result.contents
    assert isinstance(content, mt.TextResourceContents)
    assert content.mime_type == "application/json"
    return json.loads(content.text)


async def test_resources_list_shows_the_descriptions_resource() -> None:
    server, _ = build()
    async with legacy(server) as client:
        result = await client.list_resources()
    [resource] = result.resources
    assert (str(resource.uri), resource.name, resource.title, resource.mime_type) == (
        URI,
        "tool_descriptions",
        "Tool Descriptions - Required for tool use",
        "application/json",
    )
    assert resource.description == workflow_text(URI, "describe_tools")


async def test_tools_list_carries_summaries_over_the_wire_in_minimal_mode() -> None:
    server, _ = build(schema="minimal")
    async with legacy(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["add_comment"].description == (
        "Add a comment to an issue. Full definition: describe_tools."
    )
    assert tools["add_comment"].input_schema == {
        "type": "object",
        "properties": {"issue_id": {"type": "integer"}, "body": {"type": "string"}},
        "required": ["issue_id", "body"],
    }
    assert tools["search_issues"].output_schema is None
    assert tools["whoami"].description == "Who am I? Full definition: describe_tools."
    assert "describe_tools" in tools


async def test_reading_one_two_and_zero_tools() -> None:
    server, _ = build()
    async with legacy(server) as client:
        one = await read_json(client, f"{URI}?tools=add_comment")
        two = await read_json(client, f"{URI}?tools=whoami,search_issues")
        zero = await read_json(client, URI)
    assert list(one) == ["add_comment"]
    assert one["add_comment"]["inputSchema"] == dict(COMMENT_SCHEMA)
    assert one["add_comment"]["examples"][0]["explanation"] == "Posts one comment on issue 7."
    assert list(two) == ["whoami", "search_issues"]
    assert two["whoami"]["description"] == (
        "Tell who the current user is. Returns the login and display name."
    )
    assert zero["error"]["code"] == "MISSING_TOOL_SELECTION"
    assert zero["error"]["examples"] == [
        f"{URI}?tools=add_comment",
        f"{URI}?tools=add_comment,search_issues",
    ]
    assert zero["error"]["available_tools"] == VISIBLE


async def test_unknown_and_access_hidden_names_get_per_tool_errors() -> None:
    server, _ = build()
    async with legacy(server) as client:
        data = await read_json(client, f"{URI}?tools=nope,delete_repo,whoami")
    unknown = {"code": "unknown_tool", "available_tools": VISIBLE}
    assert data["nope"] == {"error": "Unknown tool: nope", **unknown}
    assert data["delete_repo"] == {"error": "Unknown tool: delete_repo", **unknown}
    assert data["whoami"]["description"].startswith("Tell who the current user is.")


async def test_describe_tools_returns_the_same_json_as_the_resource() -> None:
    server, _ = build()
    async with legacy(server) as client:
        resource = await client.read_resource(f"{URI}?tools=search_issues,add_comment,nope")
        described = await client.call_tool(
            "describe_tools", {"tools": ["search_issues", "add_comment", "nope"]}
        )
        structured = await client.call_tool("search_issues", {"query": "crash"})
    [content] = resource.contents
    assert isinstance(content, mt.TextResourceContents)
    assert described.content[0].text == content.text  # type: ignore[union-attr]
    assert described.structured_content == json.loads(content.text)
    assert structured.structured_content == {"issues": [7, 9]}


async def test_authorization_expires_after_the_idle_ttl() -> None:
    clock = Clock()
    server, _ = build(clock=clock)
    async with legacy(server) as client:
        await client.read_resource(f"{URI}?tools=whoami")
        clock.now += 30
        fresh = await client.call_tool("whoami", {})
        clock.now += 61
        stale = await client.call_tool("whoami", {})
    assert fresh.is_error is False
    assert stale.is_error is True
    assert stale.structured_content is not None
    assert stale.structured_content["code"] == "TOOL_DESCRIPTION_REQUIRED"


async def test_fastmcp_client_follows_the_whole_workflow() -> None:
    server, _ = build()
    async with fastmcp.Client(shim(server), mode="legacy") as client:
        resources = await client.list_resources()
        blocked = await client.call_tool_mcp("whoami", {})
        text = (await client.read_resource_mcp(f"{URI}?tools=whoami")).contents[0].text
        allowed = await client.call_tool_mcp("whoami", {})
    assert [str(r.uri) for r in resources] == [URI]
    assert blocked.is_error is True
    assert list(json.loads(text)) == ["whoami"]
    assert allowed.is_error is False


async def test_over_http_an_authenticated_principal_keeps_its_authorization() -> None:
    tokens = BearerTokens(
        {sha256("tok-alice"): Principal(id="alice"), sha256("tok-bob"): Principal(id="bob")}
    )
    _, binding = build(identity=tokens)
    async with serve_http(binding.streamable_http_app()) as url:
        alice = StreamableHttpTransport(url, auth="tok-alice")
        async with fastmcp.Client(alice) as client:
            assert client.protocol_version == "2026-07-28"
            before = await client.call_tool_mcp("whoami", {})
            await client.read_resource_mcp(f"{URI}?tools=whoami")
            after = await client.call_tool_mcp("whoami", {})
        async with fastmcp.Client(StreamableHttpTransport(url, auth="tok-alice")) as again:
            later = await again.call_tool_mcp("whoami", {})
        async with fastmcp.Client(StreamableHttpTransport(url, auth="tok-bob")) as bob:
            other = await bob.call_tool_mcp("whoami", {})
    assert [before.is_error, after.is_error, later.is_error, other.is_error] == [
        True,
        False,
        False,
        True,
    ]
    assert before.structured_content is not None
    assert other.structured_content is not None
    assert (
        before.structured_content["code"]
        == other.structured_content["code"]
        == ("TOOL_DESCRIPTION_REQUIRED")
    )


def test_a_malformed_docs_file_stops_the_server_from_starting() -> None:
    with pytest.raises(ConfigError, match=r"add_comment\.json: field 'examples\[0\]\.input'"):
        LazyDescriptions(tracker_toolset(), docs_dir=MALFORMED)


async def test_the_agent_prompt_detects_lazy_descriptions_from_a_real_clients_lists() -> None:
    server, _ = build()
    async with legacy(server) as client:
        tools = (await client.list_tools()).tools
        resources = (await client.list_resources()).resources
    prompt = system_prompt(tools, resources)
    assert (
        "  - add_comment: Add a comment to an issue. Full definition: describe_tools.\n" in prompt
    )
    assert f'   Example: read_resource(resource_uri="{URI}?tools=TOOL_NAME")\n' in prompt


def fastmcp_server(schema: str = "full") -> FastMCP[Any]:
    from toolgate.fastmcp import ToolgateMiddleware

    ts = tracker_toolset()
    lazy = LazyDescriptions(ts, schema=schema, docs_dir=DOCS)  # type: ignore[arg-type]
    server: FastMCP[Any] = FastMCP("tracker")
    ToolgateMiddleware(ts, addons=[lazy]).attach(server)
    return server


async def test_a_fastmcp_server_lists_summaries_and_gates_calls_until_described() -> None:
    server = fastmcp_server("minimal")
    async with fastmcp.Client(server, mode="legacy") as client:
        tools = {t.name: t for t in await client.list_tools()}
        before = await client.call_tool_mcp("add_comment", {"issue_id": 7, "body": "hi"})
        described = await client.call_tool_mcp("describe_tools", {"tools": ["add_comment"]})
        after = await client.call_tool_mcp("add_comment", {"issue_id": 7, "body": "hi"})
    assert tools["add_comment"].description == (
        "Add a comment to an issue. Full definition: describe_tools."
    )
    assert tools["add_comment"].input_schema == {
        "type": "object",
        "properties": {"issue_id": {"type": "integer"}, "body": {"type": "string"}},
        "required": ["issue_id", "body"],
    }
    assert before.is_error is True
    assert before.structured_content is not None
    assert before.structured_content["describe_call"] == {
        "name": "describe_tools",
        "arguments": {"tools": ["add_comment"]},
    }
    assert described.structured_content is not None
    assert described.structured_content["add_comment"]["inputSchema"] == dict(COMMENT_SCHEMA)
    assert (after.is_error, after.content[0].text) == (False, "commented on #7")
