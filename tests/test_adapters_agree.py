"""The FastMCP adapter and the SDK binding agree where the review of both found them
apart: the groups view only where the extension is served, wire names on
``groups/get``, ``tools/list_changed`` for run-time changes (also a tool redefined under
its name), a FastMCP tool refused by name without wedging later imports, and an
``MCPServer``'s tools registered after ``bind``. Real clients (``fastmcp.Client``,
``mcp.Client``), in memory, on the legacy protocol and on 2026-07-28.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

import fastmcp
import pytest
from fastmcp import FastMCP
from fastmcp.server.extensions import ServerExtension
from mcp import Client
from mcp.server import MCPServer, Server
from mcp.shared.exceptions import MCPError

from _fixtures.mcp_servers import Notes, raw_request, text, tool_names
from toolgate import Group, Tool, ToolSet
from toolgate.client import GroupsClientExtension
from toolgate.client.extension import GetGroupParams, GetGroupRequest
from toolgate.fastmcp import ToolgateMiddleware
from toolgate.groups_extension import bind_groups
from toolgate.lowlevel import bind
from toolgate.strategies.base import GROUPS_EXTENSION

Era = Literal["legacy", "2026"]
ERAS: tuple[Era, ...] = ("legacy", "2026")
MODE = {"legacy": "legacy", "2026": "auto"}
ADAPTERS = ("lowlevel", "fastmcp")
LIST_CHANGED = ["notifications/tools/list_changed"]


def echo(arguments: Any, call: Any) -> str:
    return f"{call.tool} ran"


def toolset() -> ToolSet:
    ts = ToolSet()
    ts.add_groups([Group("issues", "Issue tracking"), Group("issue_labels", parent="issues")])
    ts.add_tool(Tool("ping", "Ping.", echo))
    ts.add_tool(Tool("create_issue", "Open one.", echo, groups=("issues",)))
    return ts


def serve(adapter: str, ts: ToolSet, *, groups: bool = True) -> Any:
    """A server of ``ts``: the SDK binding (with ``bind_groups`` when ``groups``) or
    FastMCP with ``attach``."""
    if adapter == "lowlevel":
        server = Server("ll")
        binding = bind(server, ts)
        if groups:
            bind_groups(server, binding.delivery, facts=binding.facts)
        return server
    mcp: FastMCP[Any] = FastMCP("fm")
    ToolgateMiddleware(ts).attach(mcp)
    return mcp


@asynccontextmanager
async def connect(
    server: Any, era: Era, *, declare: bool = False, notes: Notes | None = None
) -> AsyncIterator[Any]:
    """An ``mcp.Client`` for an SDK server, a ``fastmcp.Client`` for a FastMCP one."""
    extensions = [GroupsClientExtension()] if declare else []
    client: Any
    if isinstance(server, FastMCP):
        client = fastmcp.Client(
            server, mode=MODE[era], extensions=extensions, message_handler=notes
        )
    else:
        client = Client(server, mode=MODE[era], extensions=extensions, message_handler=notes)
    async with client:
        yield client


def session_of(client: Any) -> Any:
    return client.session


def advertised(client: Any) -> dict[str, Any]:
    caps = session_of(client).server_capabilities
    return dict(caps.extensions or {}) if caps is not None else {}


async def call(client: Any, name: str, arguments: dict[str, Any]) -> Any:
    if isinstance(client, fastmcp.Client):
        return await client.call_tool_mcp(name, arguments)
    return await client.call_tool(name, arguments)


async def reach_create_issue(client: Any, era: Era) -> str:
    """Call ``create_issue`` the way a client without the extension finds it."""
    if era == "legacy":
        await call(client, "enable_tools", {"groups": ["issues"]})
        return text(await call(client, "create_issue", {}))
    return text(await call(client, "call_tool", {"name": "create_issue"}))


# -- #1: the groups view only where the extension is served --------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_bind_alone_gives_a_declaring_client_the_view_of_one_that_does_not(
    era: Era,
) -> None:
    ts = toolset()
    server = serve("lowlevel", ts, groups=False)
    async with connect(server, era) as plain:
        expected = await tool_names(plain)
    async with connect(server, era, declare=True) as declaring:
        assert GROUPS_EXTENSION not in advertised(declaring)
        assert await tool_names(declaring) == expected
        assert await reach_create_issue(declaring, era) == "create_issue ran"


@pytest.mark.parametrize("era", ERAS)
async def test_bind_groups_serves_a_declaring_client_the_groups_view(era: Era) -> None:
    server = serve("lowlevel", toolset())
    async with connect(server, era, declare=True) as declaring:
        assert GROUPS_EXTENSION in advertised(declaring)
        assert await tool_names(declaring) == ["ping"]


class ForeignGroups(ServerExtension):
    """Another party's groups extension, installed before toolgate's ``attach``."""

    identifier = GROUPS_EXTENSION


@pytest.mark.parametrize("era", ERAS)
async def test_fastmcp_with_a_foreign_groups_extension_serves_declaring_clients_without_it(
    era: Era,
) -> None:
    ts = toolset()
    mcp: FastMCP[Any] = FastMCP("fm")
    mcp.add_extension(ForeignGroups())
    plain_mcp: FastMCP[Any] = FastMCP("plain")
    ToolgateMiddleware(toolset()).attach(plain_mcp)
    ToolgateMiddleware(ts).attach(mcp)
    async with connect(plain_mcp, era) as plain:
        expected = await tool_names(plain)
    async with connect(mcp, era, declare=True) as declaring:
        assert await tool_names(declaring) == expected
        assert await reach_create_issue(declaring, era) == "create_issue ran"


# -- #6: groups/get refuses a name no group can have on the wire ---------------------------


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("adapter", ADAPTERS)
async def test_groups_get_of_a_name_no_group_can_have_is_invalid_params(
    adapter: str, era: Era
) -> None:
    codes: dict[str, int] = {}
    async with connect(serve(adapter, toolset()), era, declare=True) as client:
        for name in ("Bad Name!", "ISSUES", "issues/../admin", "issue_labels", "nope"):
            request = GetGroupRequest(params=GetGroupParams(name=name))
            with pytest.raises(MCPError) as err:
                await raw_request(session_of(client), request)
            codes[name] = err.value.error.code
        got = await raw_request(
            session_of(client), GetGroupRequest(params=GetGroupParams(name="issue-labels"))
        )
    assert codes == {
        "Bad Name!": -32602,
        "ISSUES": -32602,
        "issues/../admin": -32602,
        "issue_labels": -32602,  # the catalog's name; on the wire it is issue-labels
        "nope": -32002,  # well formed, unknown
    }
    assert got["contents"]["tools"] == []


# -- #2 and #7: tools/list_changed for run-time changes, on both adapters ------------------


@pytest.mark.parametrize("adapter", ADAPTERS)
async def test_a_run_time_catalog_change_notifies_the_sessions_that_listed(adapter: str) -> None:
    ts = toolset()
    notes = Notes()
    async with connect(serve(adapter, ts), "legacy", notes=notes) as client:
        await tool_names(client)
        await notes.settled()
        ts.add_tool(Tool("status", "Status.", echo))
        assert await notes.settled() == LIST_CHANGED
        assert "status" in await tool_names(client)
        ts.add_tool(Tool("label", "Label.", echo, groups=("issues",)))  # nobody sees it
        assert await notes.settled() == []
        ts.remove_tool("status")
        assert await notes.settled() == LIST_CHANGED
        assert "status" not in await tool_names(client)


@pytest.mark.parametrize("adapter", ADAPTERS)
async def test_a_listed_tool_redefined_under_its_name_notifies(adapter: str) -> None:
    ts = toolset()
    notes = Notes()
    async with connect(serve(adapter, ts), "legacy", notes=notes) as client:
        await tool_names(client)
        await notes.settled()
        ts.catalog.update_tool("ping", description="Ping, now with a count.")
        assert await notes.settled() == LIST_CHANGED
        [ping] = [t for t in (await session_of(client).list_tools()).tools if t.name == "ping"]
        assert ping.description == "Ping, now with a count."


async def test_a_fastmcp_tool_redefined_at_run_time_notifies() -> None:
    mcp: FastMCP[Any] = FastMCP("fm")
    ToolgateMiddleware(ToolSet()).attach(mcp)

    def search(query: str) -> str:
        """Search v1."""
        return query

    mcp.tool(search)
    notes = Notes()
    async with connect(mcp, "legacy", notes=notes) as client:
        await tool_names(client)
        await notes.settled()

        def search_v2(query: str, limit: int) -> str:
            """Search v2: now takes a required limit."""
            return query

        mcp.local_provider.remove_tool("search")
        mcp.tool(search_v2, name="search")
        assert await notes.settled() == LIST_CHANGED
        [tool] = [t for t in await client.list_tools() if t.name == "search"]
        assert tool.input_schema["required"] == ["query", "limit"]


# -- #3: a FastMCP tool the catalog refuses, at run time -----------------------------------


def refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("clash", ["enable_tools", "audit"])
async def test_a_colliding_fastmcp_tool_is_refused_by_name_and_later_tools_still_import(
    era: Era, clash: str, caplog: pytest.LogCaptureFixture
) -> None:
    ts = ToolSet()
    ts.add_tool(Tool("audit", "A toolgate tool.", echo))
    mcp: FastMCP[Any] = FastMCP("fm")
    ToolgateMiddleware(ts).attach(mcp)

    def ping() -> str:
        """Ping."""
        return "pong"

    mcp.tool(ping)
    async with connect(mcp, era) as client:
        before = await tool_names(client)

        def clashing() -> str:
            """Takes a name that is not free."""
            return "clash"

        def other() -> str:
            """A perfectly good tool."""
            return "other"

        mcp.tool(clashing, name=clash)
        await asyncio.sleep(0.05)
        assert await tool_names(client) == before
        [message] = refusals(caplog)
        assert f"FastMCP tool {clash!r} is not served" in message
        mcp.tool(other)
        await asyncio.sleep(0.05)
        assert "other" in await tool_names(client)
        assert text(await call(client, "other", {})) == "other"
        assert len(refusals(caplog)) == 1  # a refused definition is logged once


async def test_a_changed_fastmcp_tool_stays_served_when_a_tool_beside_it_is_refused() -> None:
    mcp: FastMCP[Any] = FastMCP("fm")
    ToolgateMiddleware(ToolSet()).attach(mcp)

    def search(query: str) -> str:
        """Search v1."""
        return query

    mcp.tool(search)
    async with connect(mcp, "legacy") as client:
        await tool_names(client)

        def search_v2(query: str) -> str:
            """Search v2."""
            return query

        def enable_tools() -> str:
            """Named like the meta-tool."""
            return "mine"

        # one burst: one import sees the change and the clash together
        mcp.local_provider.remove_tool("search")
        mcp.tool(search_v2, name="search")
        mcp.tool(enable_tools)
        await asyncio.sleep(0.05)
        [tool] = [t for t in await client.list_tools() if t.name == "search"]
        assert tool.description == "Search v2."


async def test_a_failed_background_import_is_logged_and_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    mcp: FastMCP[Any] = FastMCP("fm")
    middleware = ToolgateMiddleware(ToolSet()).attach(mcp)
    async with connect(mcp, "legacy") as client:
        await tool_names(client)
        real = middleware.tools.registered
        failing: list[Callable[[], Any]] = [real]

        async def broken() -> Any:
            if failing:
                failing.clear()
                raise RuntimeError("provider down")
            return await real()

        middleware.tools.registered = broken  # type: ignore[method-assign]

        def late() -> str:
            """Registered while the provider fails once."""
            return "late"

        mcp.tool(late)
        await asyncio.sleep(0.05)
        assert any("provider down" in m for m in refusals(caplog))
        assert "late" in await tool_names(client)  # the next request imports again


# -- #5: an MCPServer's tools registered or removed after bind() ---------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_bind_follows_the_tools_an_mcpserver_registers_after_it(era: Era) -> None:
    server: MCPServer[Any] = MCPServer("srv")

    @server.tool()
    def early() -> str:
        """Registered before bind."""
        return "early"

    bind(server, ToolSet())

    @server.tool()
    def late() -> str:
        """Registered after bind."""
        return "late"

    notes = Notes()
    async with Client(server, mode=MODE[era], message_handler=notes) as client:
        names = await tool_names(client)
        assert {"early", "late"} <= set(names)
        assert text(await client.call_tool("late", {})) == "late"
        await notes.settled()
        server.remove_tool("early")
        if era == "legacy":
            assert await notes.settled() == LIST_CHANGED
        assert "early" not in await tool_names(client)
        with pytest.raises(MCPError):
            await client.call_tool("early", {})


# -- #4: FastMCP's per-session visibility is not followed: said once -----------------------


async def test_fastmcp_session_visibility_is_warned_of_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # a command run in this process earlier may have set the root logger to errors only
    caplog.set_level(logging.WARNING, logger="toolgate.fastmcp")
    mcp: FastMCP[Any] = FastMCP("vis")

    async def lock(ctx: fastmcp.Context) -> str:
        """Hide 'admin_reset' for this session."""
        await ctx.disable_components(names={"admin_reset"})
        return "locked"

    def admin_reset() -> str:
        """Reset everything."""
        return "reset"

    mcp.tool(lock)
    mcp.tool(admin_reset)
    ToolgateMiddleware(ToolSet()).attach(mcp)

    def warnings() -> list[str]:
        return [m for r in caplog.records if "per-session visibility" in (m := r.getMessage())]

    async with connect(mcp, "legacy") as client:  # 2026-07-28 without auth keeps no rules
        await call(client, "admin_reset", {})
        assert warnings() == []
        await call(client, "lock", {})
        await call(client, "lock", {})
        [warning] = warnings()
    assert "ctx.disable_components" in warning
