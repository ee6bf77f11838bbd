"""The groups extension's wire shapes pinned with plain JSON-RPC over HTTP (``httpx``, no
MCP client): initialize declaring the extension, then groups/list, groups/get, tools/list."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from _fixtures.mcp_servers import serve
from test_groups_extension import build_toolset, fastmcp_app, lowlevel_app
from toolgate.strategies import Delivery

EXT = "io.modelcontextprotocol/groups"
LEGACY = "2025-11-25"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
pytestmark = pytest.mark.asyncio(loop_scope="module")


class RawSession:
    """JSON-RPC over streamable HTTP by hand; keeps each response's exact bytes."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http, self.url = http, url
        self.headers = dict(ACCEPT)
        self.raw: list[bytes] = []
        self.initialized: dict[str, Any] = {}

    async def post(self, message: dict[str, Any]) -> dict[str, Any] | None:
        response = await self.http.post(self.url, json=message, headers=self.headers)
        response.raise_for_status()
        if "id" not in message:
            return None
        body = response.content
        if response.headers["content-type"].startswith("text/event-stream"):
            lines = [ln for ln in body.splitlines() if ln.startswith(b"data:")]
            body = lines[-1].removeprefix(b"data:").strip()
        self.raw.append(body)
        data: dict[str, Any] = json.loads(body)
        return data

    async def initialize(self) -> dict[str, Any]:
        """``initialize`` declaring the extension, then ``notifications/initialized``."""
        message = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY,
                "capabilities": {"extensions": {EXT: {}}},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        }
        response = await self.http.post(self.url, json=message, headers=self.headers)
        self.headers["mcp-session-id"] = response.headers["mcp-session-id"]
        self.headers["mcp-protocol-version"] = LEGACY
        text = response.text
        data: dict[str, Any] = json.loads(text.split("data:", 1)[1] if "data:" in text else text)
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return data

    async def call(self, id_: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        reply = await self.post({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
        assert reply is not None
        return reply


@pytest_asyncio.fixture(loop_scope="module", scope="module", params=["fastmcp", "lowlevel"])
async def raw(request: pytest.FixtureRequest) -> AsyncIterator[RawSession]:
    make = fastmcp_app if request.param == "fastmcp" else lowlevel_app
    async with serve(make(Delivery(build_toolset()))) as url, httpx.AsyncClient() as http:
        session = RawSession(http, url)
        session.initialized = await session.initialize()
        yield session


async def test_initialize_result_advertises_the_extension_on_the_legacy_protocol(
    raw: RawSession,
) -> None:
    assert raw.initialized["result"]["capabilities"]["extensions"][EXT] == {"listChanged": True}


async def test_groups_list_is_exactly_the_drafts_shape(raw: RawSession) -> None:
    reply = await raw.call(1, "groups/list", {})
    assert reply == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "groups": [
                {"name": "admin", "description": "Repository administration."},
                {"name": "issues", "title": "Issues", "description": "Work with issues."},
                {"name": "pull-requests", "description": "Review and merge pull requests."},
            ]
        },
    }


async def test_groups_get_is_exactly_the_drafts_shape(raw: RawSession) -> None:
    reply = await raw.call(2, "groups/get", {"name": "pull-requests"})
    assert reply == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {
            "contents": {
                "tools": [
                    {
                        "name": "merge_pr",
                        "description": "Merge a PR.",
                        "inputSchema": {"type": "object", "properties": {}},
                    },
                    {
                        "name": "search",
                        "description": "Search issues and PRs.",
                        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
                    },
                ],
                "groups": [],
            }
        },
    }


async def test_groups_get_answers_the_same_bytes_twice(raw: RawSession) -> None:
    await raw.call(3, "groups/get", {"name": "issues"})
    await raw.call(3, "groups/get", {"name": "issues"})
    assert raw.raw[-1] == raw.raw[-2]


async def test_groups_get_of_an_unknown_group_is_error_32002(raw: RawSession) -> None:
    reply = await raw.call(4, "groups/get", {"name": "nope"})
    assert reply == {
        "jsonrpc": "2.0",
        "id": 4,
        "error": {
            "code": -32002,
            "message": "Unknown group: nope",
            "data": {"code": "group_not_found", "group": "nope"},
        },
    }


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "a group name cannot be empty"),
        ("g" * 1000, "group names are at most 64 characters; got one of 1000"),
    ],
    ids=["empty", "1000 characters"],
)
async def test_groups_get_of_a_name_no_group_can_have_is_invalid_params(
    raw: RawSession, name: str, problem: str
) -> None:
    reply = await raw.call(6, "groups/get", {"name": name})
    assert reply == {
        "jsonrpc": "2.0",
        "id": 6,
        "error": {
            "code": -32602,
            "message": f"Invalid 'name': {problem}",
            "data": {"code": "invalid_params", "field": "name"},
        },
    }


async def test_tools_list_holds_only_top_level_tools(raw: RawSession) -> None:
    reply = await raw.call(5, "tools/list", {})
    assert [t["name"] for t in reply["result"]["tools"]] == ["ping", "whoami"]
