"""toolgate.fastmcp across protocol eras and transports: 2026-07-28 in memory, stdio
subprocesses, streamable HTTP with bearer-token identity, and session isolation under load.

Real clients only (fastmcp.Client in ``mode="legacy"`` and its default 2026-07-28 mode,
mcp.ClientSession); the server is tests/servers/fastmcp_github.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

import mcp_types as mt
import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from _fixtures.mcp_servers import (
    Notes,
    python,
    serve_http,
    server_script,
    stdio_env,
    structured,
    text,
    tool_names,
)
from servers.fastmcp_github import build
from toolgate import CallContext, Group, Principal, Tool, ToolSet
from toolgate.catalog import Handler
from toolgate.fastmcp import ToolgateMiddleware
from toolgate.identity import ClaimsIdentity
from toolgate.strategies import DeliveryConfig

CATALOG_LIST = [
    "call_tool",
    "describe_tools",
    "drop_table",
    "enable_tools",
    "get_group",
    "list_groups",
    "ping",
    "whoami",
]
LEGACY_LIST = [
    "call_tool",
    "describe_tools",
    "disable_tools",
    "drop_table",
    "enable_tools",
    "list_groups",
    "ping",
    "whoami",
]


# -- 2026-07-28 in memory ------------------------------------------------------------------


async def test_on_2026_get_group_returns_instructions_tools_and_child_groups() -> None:
    mcp, _ = build()
    async with Client(mcp) as client:
        group = await client.call_tool_mcp("get_group", {"name": "repos", "detail": "full"})
        index = await client.call_tool_mcp("get_group", {"name": "repos"})
        missing = await client.call_tool_mcp("get_group", {"name": "nope"})
    assert index.structured_content is not None
    assert index.structured_content["tools"] == ["create_repository(name): Create a repository."]
    assert group.structured_content is not None
    assert group.structured_content["name"] == "repos"
    assert group.structured_content["description"] == "Repositories"
    assert [t["name"] for t in group.structured_content["tools"]] == ["create_repository"]
    assert group.structured_content["tools"][0]["outputSchema"] == {
        "type": "object",
        "additionalProperties": {"type": "string"},
    }
    assert group.structured_content["groups"] == [{"name": "branches", "description": "Branches"}]
    assert (missing.is_error, missing.structured_content) == (
        True,
        {"error": "Unknown group: nope", "code": "group_not_found"},
    )


async def test_on_2026_confirm_uses_a_multi_round_trip_elicitation() -> None:
    mcp, _ = build()
    asked: list[str] = []

    async def yes(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append(message)
        return {"confirm": True}

    async def no(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return mt.ElicitResult(action="decline")

    async with Client(mcp, elicitation_handler=yes) as client:
        accepted = await client.call_tool_mcp("drop_table", {"table": "t"})
    async with Client(mcp, elicitation_handler=no) as client:
        declined = await client.call_tool_mcp("drop_table", {"table": "t"})
    async with Client(mcp) as client:
        unsupported = await client.call_tool_mcp("drop_table", {"table": "t"})
    assert (accepted.is_error, text(accepted)) == (False, "dropped t")
    assert asked == ["Allow 'local' to run 'drop_table' with {'table': 't'}?"]
    assert declined.is_error is True
    assert declined.structured_content is not None
    assert declined.structured_content["error"] == (
        "The user declined to run 'drop_table'. Nothing was run."
    )
    assert unsupported.is_error is True
    assert unsupported.structured_content is not None
    assert unsupported.structured_content["code"] == "confirmation_refused"
    assert "cannot ask for it (no elicitation support)" in unsupported.structured_content["error"]


# -- stdio ---------------------------------------------------------------------------------


async def test_stdio_legacy_client_pages_enables_and_is_notified() -> None:
    transport = StdioTransport(python(), [server_script("fastmcp_github")], env=stdio_env())
    notes = Notes()
    async with Client(transport, mode="legacy", message_handler=notes) as client:
        first = await client.list_tools_mcp()
        assert [t.name for t in first.tools] == LEGACY_LIST[:4]
        assert await tool_names(client) == LEGACY_LIST
        await client.call_tool_mcp("enable_tools", {"groups": ["issues"]})
        assert await notes.settled() == ["notifications/tools/list_changed"]
        issues = await client.call_tool_mcp("list_issues", {})
        assert issues.structured_content == {"result": ["#1 bug", "#2 feature"]}
        with pytest.raises(MCPError) as caught:
            await client.call_tool_mcp("ghost", {})
        assert (caught.value.error.code, caught.value.error.message) == (
            -32602,
            "Unknown tool: ghost",
        )


async def discover_once_started(session: ClientSession, attempts: int = 6) -> None:
    """``server/discover``, asked again while it times out. The SDK gives the probe a
    fixed 10 s, and over stdio that counts the server's start: about 1.3 s alone, but
    past 10 s once on a 2-core CI machine running four test files. The unanswered probe
    is not cancelled; the server answers it late and the next one in turn."""
    for attempt in range(attempts):
        try:
            await session.discover()
            return
        except MCPError as exc:
            if exc.error.code != mt.REQUEST_TIMEOUT or attempt == attempts - 1:
                raise


async def test_stdio_2026_sdk_client_session_gets_the_catalog() -> None:
    params = StdioServerParameters(
        command=python(), args=[server_script("fastmcp_github")], env=stdio_env()
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await discover_once_started(session)
        assert session.protocol_version == "2026-07-28"
        seen: list[str] = []
        cursor = None
        while True:
            p = mt.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=p)
            seen += [t.name for t in page.tools]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == CATALOG_LIST
        result = await session.call_tool("create_issue", {"title": "t"})
        assert result.structured_content == {"result": "opened 't'"}


# -- streamable HTTP with bearer tokens -----------------------------------------------------

TOKENS: dict[str, dict[str, Any]] = {
    "tok-admin": {"client_id": "ops", "sub": "alice", "trust": "verified", "scope": "*"},
    "tok-intern": {
        "client_id": "ops",
        "sub": "bob",
        "trust": "declared",
        "scope": "default issues admin",
        "agent_class": "webmcp",
    },
    "tok-forged": {"client_id": "ops", "sub": "eve", "trust": "root", "scope": ["default"]},
}
IDENTITY = ClaimsIdentity(
    id_claim="sub",
    trust_claim="trust",
    scope_claim="scope",
    class_claim="agent_class",
    default=Principal(id="anonymous", scope=("default",)),
)


def authed() -> FastMCP[Any]:
    mcp, _ = build(auth=StaticTokenVerifier(tokens=TOKENS), identity=IDENTITY)
    return mcp


async def whoami(url: str, token: str, mode: str = "legacy") -> dict[str, Any]:
    async with Client(StreamableHttpTransport(url, auth=token), mode=mode) as client:
        result = await client.call_tool_mcp("whoami", {})
    return structured(result)


async def test_bearer_token_claims_map_to_principals_with_their_scope_and_trust() -> None:
    async with serve_http(authed().http_app()) as url:
        admin = await whoami(url, "tok-admin")
        intern = await whoami(url, "tok-intern")
        with pytest.raises(MCPError) as forged:
            await whoami(url, "tok-forged")
        modern = await whoami(url, "tok-intern", mode="auto")
    assert {k: admin[k] for k in ("id", "trust", "scope")} == {
        "id": "alice",
        "trust": "verified",
        "scope": ["*"],
    }
    assert {k: intern[k] for k in ("id", "trust", "scope", "agent_class")} == {
        "id": "bob",
        "trust": "declared",
        "scope": ["default", "issues", "admin"],
        "agent_class": "webmcp",
    }
    # an unknown trust level is refused, never silently mapped to the lowest one
    assert forged.value.error.message == (
        "The token's 'trust' claim 'root' names no trust level "
        "(known: detected, declared, verified, linked)"
    )
    assert modern["session"] == "principal:bob"  # 2026: the principal keys the state


async def test_over_http_a_low_trust_principal_cannot_tell_a_guarded_tool_from_none() -> None:
    async with serve_http(authed().http_app()) as url:
        results: dict[str, Any] = {}
        for token in ("tok-admin", "tok-intern"):
            async with Client(StreamableHttpTransport(url, auth=token), mode="legacy") as client:
                await client.call_tool_mcp("enable_tools", {"groups": ["admin"]})
                try:
                    results[token] = text(await client.call_tool_mcp("rotate_keys", {}))
                except MCPError as exc:
                    results[token] = (exc.error.code, exc.error.message)
                try:
                    await client.call_tool_mcp("no_such_tool", {})
                except MCPError as exc:
                    results[token + "/unknown"] = (exc.error.code, exc.error.message)
    assert results == {
        "tok-admin": "rotated",
        "tok-admin/unknown": (-32602, "Unknown tool: no_such_tool"),
        "tok-intern": (-32602, "Unknown tool: rotate_keys"),
        "tok-intern/unknown": (-32602, "Unknown tool: no_such_tool"),
    }


async def test_an_http_request_without_a_token_is_refused_by_fastmcp_auth() -> None:
    async with serve_http(authed().http_app()) as url:
        with pytest.raises(MCPError) as caught:
            async with Client(url, mode="legacy") as client:
                await client.list_tools()
    assert (caught.value.error.code, caught.value.error.message) == (
        -32603,
        "Server returned an error response",
    )


async def test_over_http_legacy_sessions_are_notified_and_2026_clients_are_not() -> None:
    mcp, _ = build()
    async with serve_http(mcp.http_app()) as url:
        notes = Notes()
        async with Client(url, mode="legacy", message_handler=notes) as client:
            await client.call_tool_mcp("enable_tools", {"groups": ["code"]})
            assert await notes.settled() == ["notifications/tools/list_changed"]
            assert "get_file" in await tool_names(client)
        async with Client(url, message_handler=notes) as client:
            await client.call_tool_mcp("enable_tools", {"groups": ["code"]})
            assert await notes.settled() == []
            assert await tool_names(client) == CATALOG_LIST


async def test_a_server_without_auth_warns_that_2026_state_cannot_persist(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolgate.fastmcp"):
        build()
    [record] = [r for r in caplog.records if r.name == "toolgate.fastmcp"]
    assert "has no auth" in record.getMessage()
    assert "cannot persist across requests" in record.getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="toolgate.fastmcp"):
        authed()
    assert [r for r in caplog.records if r.name == "toolgate.fastmcp"] == []


# -- isolation under load --------------------------------------------------------------------

GROUPS = 50


def ignoring_arguments(run: Callable[[], str]) -> Handler:
    def handler(arguments: Mapping[str, Any], ctx: CallContext) -> str:
        return run()

    return handler


def crowded() -> FastMCP[Any]:
    """50 groups with one tool each: even groups hold FastMCP tools, odd ones toolgate's."""
    mcp: FastMCP[Any] = FastMCP("crowded")
    ts = ToolSet()
    ts.add_groups(Group(f"g{i:02d}", f"Group {i}") for i in range(GROUPS))

    def answer(name: str) -> Callable[[], str]:
        def run() -> str:
            return f"{name} ran"

        return run

    for i in range(GROUPS):
        name, group = f"t{i:02d}", f"g{i:02d}"
        if i % 2 == 0:
            mcp.tool(answer(name), name=name, tags={group})
        else:
            ts.add_tool(Tool(name, "", handler=ignoring_arguments(answer(name)), groups=(group,)))
    ToolgateMiddleware(ts, DeliveryConfig(strategy="list_changed")).attach(mcp)
    return mcp


async def test_fifty_concurrent_http_sessions_never_see_each_others_tools() -> None:
    meta = ["call_tool", "describe_tools", "disable_tools", "enable_tools", "list_groups"]
    # JSON responses (no SSE stream per request) keep 500 HTTP round trips affordable
    async with serve_http(crowded().http_app(json_response=True)) as url:

        async def agent(i: int) -> list[str]:
            mine, other = f"t{i:02d}", f"t{(i + 1) % GROUPS:02d}"
            problems: list[str] = []
            async with Client(url, mode="legacy") as client:
                await client.call_tool_mcp("enable_tools", {"groups": [f"g{i:02d}"]})
                for round_ in range(4):  # 8 requests: list, call, list, call, ...
                    listed = [t.name for t in (await client.list_tools_mcp()).tools]
                    if listed != sorted([*meta, mine]):
                        problems.append(f"{mine} round {round_} listed {listed}")
                    ran = await client.call_tool_mcp(mine, {})
                    if text(ran) != f"{mine} ran":
                        problems.append(f"{mine} round {round_} ran {text(ran)}")
                hidden = await client.call_tool_mcp(other, {})
                if not hidden.is_error:
                    problems.append(f"{mine} could run {other}")
            return problems

        results = await asyncio.gather(*(agent(i) for i in range(GROUPS)))
    assert [p for r in results for p in r] == []
