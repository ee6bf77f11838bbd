"""``toolgate serve`` end to end: the real command in front of two real backend processes.

Over stdio (``mcp.ClientSession``) and streamable HTTP (``fastmcp.Client``, raw HTTP):
disclosure across backends, a backend's ``tools/list_changed`` followed, a backend killed
and reconnected while the other keeps serving, DNS-rebinding protection, bearer tokens
mapped to principals whose scope and trust shape the list, and events in a JSONL file.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from _fixtures.gateway import (
    ALICE_TOKEN,
    BOB_TOKEN,
    FAST_RECONNECT,
    INIT,
    MCP_HEADERS,
    HttpGateway,
    gateway_config,
    toolgate_argv,
)
from _fixtures.mcp_servers import text, tool_names
from toolgate.gateway.config.model import parse_config
from toolgate.gateway.serve import Gateway


class Notifications:
    def __init__(self) -> None:
        self.methods: list[str] = []
        self.event = asyncio.Event()

    async def __call__(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if isinstance(method, str):
            self.methods.append(method)
            self.event.set()


@asynccontextmanager
async def stdio_gateway(
    config: Path, handler: Notifications | None = None
) -> AsyncIterator[ClientSession]:
    argv = toolgate_argv()
    env = {k: v for k, v in os.environ.items() if k.startswith(("TOOLGATE", "PATH", "HOME"))}
    params = StdioServerParameters(
        command=argv[0], args=[*argv[1:], "serve", str(config)], env={**env, **FAST_RECONNECT}
    )
    with (config.parent / "stderr.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, message_handler=handler) as session,
        ):
            await session.initialize()
            yield session


async def eventually(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await check()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


META = ["call_tool", "describe_tools", "disable_tools", "enable_tools", "list_groups"]


# -- stdio -------------------------------------------------------------------------------


async def test_stdio_gateway_discloses_both_backends_runs_their_tools_and_hides_gated_ones(
    tmp_path: Path,
) -> None:
    async with stdio_gateway(gateway_config(tmp_path)) as session:
        assert await tool_names(session) == sorted([*META, "crash", "grow"])
        enabled = await session.call_tool("enable_tools", {"groups": ["notes", "math"]})
        assert enabled.structured_content is not None
        assert enabled.structured_content["enabled"] == ["notes", "math"]  # the order given
        assert await tool_names(session) == sorted(
            [*META, "crash", "grow", "add", "echo", "multiply", "note_add", "note_list"]
        )
        added = await session.call_tool("add", {"a": 2, "b": 40})
        assert (added.is_error, text(added)) == (False, "42")
        note = await session.call_tool("note_add", {"text": "buy milk"})
        assert note.structured_content == {"id": 1}
        listed = await session.call_tool("note_list", {})
        assert listed.structured_content == {"notes": ["buy milk"]}
        # note_delete needs trust "verified"; the stdio principal is "declared"
        with pytest.raises(MCPError) as err:
            await session.call_tool("note_delete", {"id": 1})
        assert (err.value.error.code, err.value.error.message) == (
            -32602,
            "Unknown tool: note_delete",
        )
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    executed = [(e["tool"], e["outcome"]) for e in events if e["type"] == "tool.executed"]
    assert executed == [
        ("add", "success"),
        ("note_add", "success"),
        ("note_list", "success"),
        ("note_delete", "blocked"),
    ]
    assert sorted(e["group"] for e in events if e["type"] == "group.activated") == [
        "math",
        "notes",
    ]


async def test_backend_list_changed_is_followed_and_the_session_notified(tmp_path: Path) -> None:
    heard = Notifications()
    async with stdio_gateway(gateway_config(tmp_path), heard) as session:
        await session.call_tool("enable_tools", {"groups": ["notes"]})
        heard.methods.clear()
        grown = await session.call_tool("grow", {})
        assert text(grown) == "note_count added"

        async def has_count() -> bool:
            return "note_count" in await tool_names(session)

        await eventually(has_count)
        assert "notifications/tools/list_changed" in heard.methods
        counted = await session.call_tool("note_count", {})
        assert (counted.is_error, counted.structured_content) == (False, {"count": 0})


async def test_killed_backend_answers_with_a_clear_error_and_comes_back(tmp_path: Path) -> None:
    config = gateway_config(tmp_path)
    down = tmp_path / "notes.down"
    async with stdio_gateway(config) as session:
        await session.call_tool("enable_tools", {"groups": ["notes", "math"]})
        down.touch()  # the restarted notes server refuses to start while this exists
        crashed = await session.call_tool("crash", {})
        assert crashed.is_error is True
        log = tmp_path / "stderr.log"

        async def refused_to_restart() -> bool:
            return "backend notes: could not start" in log.read_text()

        await eventually(refused_to_restart)
        failed = await session.call_tool("note_list", {})
        assert failed.is_error is True
        assert failed.structured_content is not None
        assert failed.structured_content["code"] == "backend_unavailable"
        assert failed.structured_content["backend"] == "notes"
        assert failed.structured_content["reconnecting"] is True
        assert "Backend 'notes' is unavailable" in text(failed)
        assert "reconnecting" in text(failed)
        still = await session.call_tool("multiply", {"a": 6, "b": 7})
        assert (still.is_error, text(still)) == (False, "42")
        down.unlink()

        async def back() -> bool:
            result = await session.call_tool("note_list", {})
            return not result.is_error

        await eventually(back)
    lines = log.read_text()
    assert "backend notes: connection lost" in lines
    assert "reconnecting in 0.2s" in lines
    assert "backend notes: up, 5 tools" in lines


# -- HTTP --------------------------------------------------------------------------------


def client(gateway: HttpGateway, token: str | None) -> Client[Any]:
    transport = StreamableHttpTransport(gateway.url, auth=token)
    return Client(transport, mode="legacy")


async def test_http_gateway_refuses_a_missing_bearer_token_with_401(
    http_gateway: HttpGateway,
) -> None:
    async with httpx.AsyncClient() as http:
        response = await http.post(http_gateway.url, json=INIT, headers=MCP_HEADERS)
    assert response.status_code == 401


async def test_http_gateway_refuses_an_unknown_bearer_token_with_401(
    http_gateway: HttpGateway,
) -> None:
    headers = {**MCP_HEADERS, "Authorization": "Bearer not-a-known-token"}
    async with httpx.AsyncClient() as http:
        response = await http.post(http_gateway.url, json=INIT, headers=headers)
    assert response.status_code == 401


async def test_http_gateway_rejects_a_foreign_host_header(http_gateway: HttpGateway) -> None:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {BOB_TOKEN}", "Host": "evil.example"}
    async with httpx.AsyncClient() as http:
        response = await http.post(http_gateway.url, json=INIT, headers=headers)
    assert (response.status_code, response.text) == (421, "Invalid Host header")


async def test_http_gateway_rejects_a_foreign_origin_header(http_gateway: HttpGateway) -> None:
    headers = {
        **MCP_HEADERS,
        "Authorization": f"Bearer {BOB_TOKEN}",
        "Origin": "http://evil.example",
    }
    async with httpx.AsyncClient() as http:
        response = await http.post(http_gateway.url, json=INIT, headers=headers)
    assert (response.status_code, response.text) == (403, "Invalid Origin header")


async def test_http_gateway_accepts_a_local_origin(http_gateway: HttpGateway) -> None:
    headers = {
        **MCP_HEADERS,
        "Authorization": f"Bearer {BOB_TOKEN}",
        "Origin": f"http://127.0.0.1:{http_gateway.port}",
    }
    async with httpx.AsyncClient() as http:
        response = await http.post(http_gateway.url, json=INIT, headers=headers)
    assert response.status_code == 200


async def test_bearer_principal_scope_limits_the_list_and_trust_unlocks_a_tool(
    http_gateway: HttpGateway,
) -> None:
    async with client(http_gateway, ALICE_TOKEN) as alice:
        # scope ["notes"]: root tools (group "default") and math are out of scope
        assert sorted(t.name for t in await alice.list_tools()) == META
        groups = await alice.call_tool("list_groups", {})
        assert [g["name"] for g in groups.structured_content["groups"]] == ["notes"]
        await alice.call_tool("enable_tools", {"groups": ["notes"]})
        assert sorted(t.name for t in await alice.list_tools()) == sorted(
            [*META, "note_add", "note_delete", "note_list"]
        )
        deleted = await alice.call_tool("note_delete", {"id": 1})
        assert deleted.structured_content == {"deleted": 1}


async def test_bearer_principal_with_declared_trust_never_sees_the_gated_tool(
    http_gateway: HttpGateway,
) -> None:
    async with client(http_gateway, BOB_TOKEN) as bob:
        assert sorted(t.name for t in await bob.list_tools()) == sorted([*META, "crash", "grow"])
        await bob.call_tool("enable_tools", {"groups": ["notes", "math"]})
        listed = sorted(t.name for t in await bob.list_tools())
        assert "note_delete" not in listed
        assert "multiply" in listed
        with pytest.raises(MCPError) as err:
            await bob.call_tool_mcp("note_delete", {"id": 1})
        assert err.value.error.message == "Unknown tool: note_delete"
        product = await bob.call_tool("multiply", {"a": 3, "b": 5})
        assert product.data == 15


async def test_sessions_over_http_are_isolated(http_gateway: HttpGateway) -> None:
    async with client(http_gateway, BOB_TOKEN) as first, client(http_gateway, BOB_TOKEN) as other:
        await first.call_tool("enable_tools", {"groups": ["math"]})
        assert "add" in [t.name for t in await first.list_tools()]
        assert "add" not in [t.name for t in await other.list_tools()]


def test_serve_refuses_a_broken_config_with_exit_code_1(tmp_path: Path) -> None:
    import subprocess

    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {}, "toolgate": {"stratgy": "auto"}}')
    done = subprocess.run(
        [*toolgate_argv(), "serve", str(bad)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.strip() == (
        f"toolgate: {bad.resolve()}: toolgate.stratgy: unknown key; did you mean 'strategy'?"
    )


# -- search -------------------------------------------------------------------------------


async def test_search_strategy_finds_backend_tools_and_runs_them_through_call_tool(
    tmp_path: Path, shared_backends: dict[str, Any]
) -> None:
    config = gateway_config(tmp_path, servers=shared_backends, strategy="search")
    async with stdio_gateway(config) as session:
        assert await tool_names(session) == sorted(
            [
                "call_tool",
                "crash",
                "describe_tools",
                "grow",
                "list_groups",
                "search_tools",
                "search_tools_regex",
            ]
        )
        found = await session.call_tool("search_tools", {"query": "multiply", "limit": 1})
        assert found.structured_content is not None
        assert [r["name"] for r in found.structured_content["results"]] == ["multiply"]
        assert found.structured_content["results"][0]["tool"]["inputSchema"]["required"] == [
            "a",
            "b",
        ]
        ran = await session.call_tool(
            "call_tool", {"name": "multiply", "arguments": {"a": 6, "b": 7}}
        )
        assert (ran.is_error, text(ran)) == (False, "42")
        # the trust-gated tool stays out of reach of the declared stdio principal
        hidden = await session.call_tool("search_tools_regex", {"pattern": "^note_delete$"})
        assert hidden.structured_content is not None
        assert hidden.structured_content["results"] == []


async def test_search_flag_adds_search_tools_that_reveal_results_in_the_session(
    tmp_path: Path, shared_backends: dict[str, Any]
) -> None:
    heard = Notifications()
    config = gateway_config(tmp_path, servers=shared_backends, search=True)
    async with stdio_gateway(config, heard) as session:
        assert await tool_names(session) == sorted(
            [*META, "crash", "grow", "search_tools", "search_tools_regex"]
        )
        found = await session.call_tool("search_tools", {"query": "echo text", "limit": 1})
        assert found.structured_content is not None
        assert found.structured_content["revealed"] == ["echo"]
        await eventually(lambda: _true("notifications/tools/list_changed" in heard.methods))
        assert "echo" in await tool_names(session)
        echoed = await session.call_tool("echo", {"text": "hi"})
        assert (echoed.is_error, text(echoed)) == (False, "hi")


async def _true(value: bool) -> bool:
    return value


async def test_renamed_meta_tools_are_served_under_their_configured_names(
    tmp_path: Path, shared_backends: dict[str, Any]
) -> None:
    names = {"enable_tools": "open_groups", "list_groups": "groups"}
    config = gateway_config(tmp_path, servers=shared_backends, meta_tool_names=names)
    async with stdio_gateway(config) as session:
        assert await tool_names(session) == sorted(
            [
                "call_tool",
                "crash",
                "describe_tools",
                "disable_tools",
                "groups",
                "grow",
                "open_groups",
            ]
        )
        opened = await session.call_tool("open_groups", {"groups": ["math"]})
        assert opened.structured_content is not None
        assert opened.structured_content["enabled"] == ["math"]
        assert "add" in await tool_names(session)


async def test_the_http_app_mounts_each_of_the_gateways_apps_in_order() -> None:
    cfg = parse_config({"mcpServers": {}, "toolgate": {"dashboard": {"enabled": False}}})

    def status(gateway: Gateway, host: str, allowed: Sequence[str]) -> Sequence[BaseRoute]:
        async def page(request: Request) -> Response:
            return PlainTextResponse(f"{host} {len(gateway.toolset.catalog.tools)}")

        return [Route("/status", page), Route("/webmcp.js", page)]

    gateway = Gateway(cfg)
    gateway.apps = (*Gateway.apps, status)  # WebMCP's script is mounted first: it wins
    try:
        async with gateway.running():
            app = gateway.http_app(host="127.0.0.1")
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
                assert (await http.get("/status")).text == "127.0.0.1 0"
                script = await http.get("/webmcp.js")
                assert "document.modelContext" in script.text
                assert (await http.get("/dashboard/")).status_code == 404  # not enabled
    finally:
        await gateway.close()
