"""toolgate.fastmcp on a FastMCP 4 server, in memory: what only this adapter does (tools
from FastMCP's decorators, run-time registration, FastMCP sessions). The scenarios every
adapter meets are in test_adapter_spec.py.

Real clients only (fastmcp.Client, mcp.ClientSession) against
tests/servers/fastmcp_github.py, whose tools come from FastMCP's decorators and from
toolgate in one catalog. Other eras and transports: test_fastmcp_eras.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as mt
import pytest
from fastmcp import Client, Context, FastMCP
from mcp.shared.exceptions import MCPError

from _fixtures.mcp_servers import Notes, text, tool_names
from _fixtures.spec import WRONG_ADAPTER_ARGUMENTS
from servers.fastmcp_github import build
from toolgate import ConfigError, Group, Tool, ToolSet
from toolgate.fastmcp import ToolgateMiddleware
from toolgate.state.memory import MemoryStore
from toolgate.strategies import DeliveryConfig

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


@asynccontextmanager
async def legacy(mcp: FastMCP[Any], **options: Any) -> AsyncIterator[tuple[Client[Any], Notes]]:
    notes = Notes()
    async with Client(mcp, mode="legacy", message_handler=notes, **options) as client:
        yield client, notes


@pytest.fixture
def github() -> FastMCP[Any]:
    mcp, _ = build()
    return mcp


async def test_fastmcp_tools_keep_their_fastmcp_definition_in_the_catalog(github: Any) -> None:
    plain = FastMCP("plain")

    @plain.tool
    def ping() -> str:
        """Check that the server answers."""
        return "pong"

    async with Client(plain, mode="legacy") as c:
        [expected] = await c.list_tools()
    async with legacy(github) as (client, _):
        [listed] = [t for t in await client.list_tools() if t.name == "ping"]
    assert listed.model_dump(exclude_none=True) == expected.model_dump(exclude_none=True)


async def test_fastmcp_runs_an_enabled_fastmcp_tool_with_context_and_output_schema(
    github: Any,
) -> None:
    async with legacy(github) as (client, _):
        await client.call_tool_mcp("enable_tools", {"groups": ["code"]})
        result = await client.call_tool_mcp("get_file", {"path": "README.md"})
        assert result.is_error is False
        assert text(result).startswith("contents of README.md (FastMCP session ")
        assert result.structured_content == {"result": text(result)}


async def test_a_child_group_needs_its_parent_and_disabling_the_parent_cascades(
    github: Any,
) -> None:
    async with legacy(github) as (client, notes):
        refused = await client.call_tool_mcp("enable_tools", {"groups": ["repos"]})
        assert refused.is_error is True
        assert refused.structured_content is not None
        assert refused.structured_content["errors"] == [
            "Cannot enable group 'repos': its parent group 'code' is not enabled. "
            "Enable 'code' first, or both in one request."
        ]
        assert await notes.settled() == []
        both = await client.call_tool_mcp("enable_tools", {"groups": ["branches", "repos", "code"]})
        assert both.structured_content is not None
        assert both.structured_content["enabled"] == ["code", "repos", "branches"]
        assert "create_repository" in await tool_names(client)
        assert "delete_branch" in await tool_names(client)
        off = await client.call_tool_mcp("disable_tools", {"groups": ["code"]})
        assert off.structured_content is not None
        assert off.structured_content["enabled_groups"] == []
        assert await tool_names(client) == LEGACY_LIST


async def test_call_tool_runs_visible_tools_of_either_origin(github: Any) -> None:
    async with legacy(github) as (client, _):
        await client.call_tool_mcp("enable_tools", {"groups": ["issues", "read_mode"]})
        fastmcp_tool = await client.call_tool_mcp(
            "call_tool", {"name": "create_issue", "arguments": {"title": "bug"}}
        )
        assert (fastmcp_tool.is_error, text(fastmcp_tool)) == (False, "opened 'bug'")
        native = await client.call_tool_mcp(
            "call_tool", {"name": "read_db", "arguments": {"query": "q"}}
        )
        assert (native.is_error, text(native)) == (False, "rows for q")
        hidden = await client.call_tool_mcp(
            "call_tool", {"name": "delete_branch", "arguments": {"branch": "b"}}
        )
        assert hidden.is_error is True
        assert "Enable group 'branches' first" in text(hidden)


async def test_two_in_memory_clients_are_two_sessions(github: Any) -> None:
    async with legacy(github) as (one, _), legacy(github) as (two, _):
        await one.call_tool_mcp("enable_tools", {"groups": ["issues"]})
        assert "list_issues" in await tool_names(one)
        assert await tool_names(two) == LEGACY_LIST
        a = (await one.call_tool_mcp("whoami", {})).structured_content
        b = (await two.call_tool_mcp("whoami", {})).structured_content
        assert a is not None and b is not None
        assert a["session"] != b["session"]


async def test_the_session_key_is_fastmcps_session_id() -> None:
    mcp, _ = build()

    @mcp.tool
    def fastmcp_session(ctx: Context) -> str:
        return ctx.session_id

    async with legacy(mcp) as (client, _):
        whoami = (await client.call_tool_mcp("whoami", {})).structured_content
        fastmcp_id = text(await client.call_tool_mcp("fastmcp_session", {}))
        assert whoami is not None and whoami["session"] == fastmcp_id


async def test_a_tool_registered_at_run_time_notifies_sessions_that_see_it() -> None:
    mcp, middleware = build()
    async with legacy(mcp) as (root_viewer, notes_a), legacy(mcp) as (other, notes_b):
        await tool_names(root_viewer)
        await tool_names(other)
        middleware.toolset.add_tool(Tool("status", "Server status.", handler=lambda a, c: "ok"))
        assert await notes_a.settled() == ["notifications/tools/list_changed"]
        assert await notes_b.settled() == ["notifications/tools/list_changed"]
        assert "status" in await tool_names(root_viewer)
        # a tool in a group nobody enabled changes no one's list
        middleware.toolset.add_tool(
            Tool("label", "Label an issue.", handler=lambda a, c: "ok", groups=("issues",))
        )
        assert await notes_a.settled() == []
        await other.call_tool_mcp("enable_tools", {"groups": ["issues"]})
        await notes_b.settled()
        await tool_names(other)
        middleware.toolset.remove_tool("label")
        assert await notes_a.settled() == []
        assert await notes_b.settled() == ["notifications/tools/list_changed"]


async def test_a_fastmcp_tool_added_at_run_time_is_imported_and_announced() -> None:
    mcp, _ = build()
    async with legacy(mcp) as (client, notes):
        await tool_names(client)

        @mcp.tool
        def late() -> str:
            """Registered after start-up."""
            return "late"

        assert await notes.settled() == ["notifications/tools/list_changed"]
        assert "late" in await tool_names(client)
        assert text(await client.call_tool_mcp("late", {})) == "late"
        mcp.local_provider.remove_tool("late")
        assert await notes.settled() == ["notifications/tools/list_changed"]
        assert "late" not in await tool_names(client)


async def test_a_fastmcp_tool_named_like_a_meta_tool_is_a_registration_error() -> None:
    from toolgate import RegistrationError

    mcp = FastMCP("clash")

    @mcp.tool
    def enable_tools() -> str:
        return "mine"

    middleware = ToolgateMiddleware(ToolSet()).attach(mcp)
    with pytest.raises(RegistrationError, match="reserved for the meta-tool"):
        await middleware.sync()


class FlakyStore(MemoryStore):
    broken = False

    async def get(self, key: str) -> Any:
        if self.broken:
            raise ConnectionError("store down")
        return await super().get(key)


async def test_a_store_failure_is_a_retryable_json_rpc_error_and_runs_nothing() -> None:
    store = FlakyStore()
    mcp, _ = build(store=store)
    async with legacy(mcp) as (client, _):
        await client.call_tool_mcp("enable_tools", {"groups": ["issues"]})
        store.broken = True
        for call in (
            lambda: client.list_tools_mcp(),
            lambda: client.call_tool_mcp("list_issues", {}),
        ):
            with pytest.raises(MCPError) as caught:
                await call()
            assert caught.value.error.code == -32603
            assert caught.value.error.message == "Session store unavailable: store down"
            assert caught.value.error.data == {"code": "store_unavailable", "retryable": True}
        store.broken = False
        assert "list_issues" in await tool_names(client)


async def test_confirm_policy_asks_the_human_through_elicitation() -> None:
    mcp, _ = build()
    asked: list[str] = []

    async def yes(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append(message)
        return {"confirm": True}

    async def no(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return mt.ElicitResult(action="decline")

    async with legacy(mcp, elicitation_handler=yes) as (client, _):
        result = await client.call_tool_mcp("drop_table", {"table": "users"})
        assert (result.is_error, text(result)) == (False, "dropped users")
        assert asked == ["Allow 'local' to run 'drop_table' with {'table': 'users'}?"]
    async with legacy(mcp, elicitation_handler=no) as (client, _):
        result = await client.call_tool_mcp("drop_table", {"table": "users"})
        assert result.is_error is True
        assert result.structured_content == {
            "error": "The user declined to run 'drop_table'. Nothing was run.",
            "code": "confirmation_refused",
            "tool": "drop_table",
        }
    async with legacy(mcp) as (client, _):
        result = await client.call_tool_mcp("drop_table", {"table": "users"})
        assert result.is_error is True
        assert result.structured_content is not None
        assert result.structured_content["error"] == (
            "Tool 'drop_table' needs a human's confirmation, and this client cannot ask for "
            "it (no elicitation support). Nothing was run."
        )


async def test_server_code_calling_its_own_tool_is_not_gated() -> None:
    mcp, _ = build()
    result = await mcp.call_tool("create_repository", {"name": "internal"})
    assert result.structured_content == {"created": "internal"}


async def test_add_middleware_alone_binds_at_the_first_request() -> None:
    mcp = FastMCP("late-bound")
    ts = ToolSet(page_size=2)
    ts.add_group(Group("extra", "Extra tools"))

    @mcp.tool(tags={"extra"})
    def bonus() -> str:
        return "bonus"

    mcp.add_middleware(ToolgateMiddleware(ts, DeliveryConfig(strategy="list_changed")))
    async with legacy(mcp) as (client, _):
        assert await tool_names(client) == [
            "call_tool",
            "describe_tools",
            "disable_tools",
            "enable_tools",
            "list_groups",
        ]
        page = await client.list_tools_mcp()
        assert page.next_cursor is not None  # toolgate's own page size from now on
        await client.call_tool_mcp("enable_tools", {"groups": ["extra"]})
        assert text(await client.call_tool_mcp("bonus", {})) == "bonus"


async def test_a_closed_session_leaves_the_notification_registry() -> None:
    mcp, middleware = build()
    async with legacy(mcp) as (client, _):
        await tool_names(client)
        assert middleware.live_sessions == 1
    await asyncio.sleep(0.05)
    assert middleware.live_sessions == 0


@pytest.mark.parametrize(
    ("arguments", "problem"),
    WRONG_ADAPTER_ARGUMENTS,
)
def test_a_middleware_made_with_an_argument_of_the_wrong_kind_is_refused(
    arguments: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError) as err:
        ToolgateMiddleware(**{"toolset": ToolSet(), **arguments})
    assert err.value.message == problem


def test_attaching_the_middleware_to_something_that_is_not_a_fastmcp_server_is_refused() -> None:
    middleware = ToolgateMiddleware(ToolSet())
    with pytest.raises(TypeError) as err:
        middleware.attach("notes")  # type: ignore[arg-type]
    assert str(err.value) == "attach() takes a FastMCP server, not str"


def repos_server() -> tuple[FastMCP[Any], ToolSet]:
    """A FastMCP server with one tool, ``create_repo``, and a toolset with a group
    ``repos`` for it."""
    mcp: FastMCP[Any] = FastMCP("repos")

    @mcp.tool
    def create_repo(name: str) -> str:
        """Create a repository."""
        return f"created {name}"

    toolset = ToolSet()
    toolset.add_group(Group("repos", "Repositories"))
    return mcp, toolset


async def test_tool_groups_put_a_fastmcp_tool_into_a_group_the_client_must_enable() -> None:
    mcp, toolset = repos_server()
    ToolgateMiddleware(toolset, tool_groups={"create_repo": ["repos"]}).attach(mcp)
    async with legacy(mcp) as (client, _):
        before = await tool_names(client)
        await client.call_tool("enable_tools", {"groups": ["repos"]})
        after = await tool_names(client)
    assert "create_repo" not in before
    assert "create_repo" in after


async def test_tool_groups_naming_no_tool_of_the_server_is_a_warning_with_the_close_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    mcp, toolset = repos_server()
    middleware = ToolgateMiddleware(toolset, tool_groups={"create_rpeo": ["repos"]})
    middleware.attach(mcp)
    with caplog.at_level(logging.WARNING, logger="toolgate.fastmcp"):
        async with legacy(mcp) as (client, _):
            assert "create_repo" in await tool_names(client)  # not in the group it meant
            await client.call_tool("enable_tools", {"groups": ["repos"]})  # a second list
    logged = [r.getMessage() for r in caplog.records if r.name == "toolgate.fastmcp"]
    warned = [m for m in logged if m.startswith("tool_groups")]  # once, for two lists
    assert warned == [
        "tool_groups names 'create_rpeo', which is not a tool of this FastMCP server; "
        "did you mean 'create_repo'?"
    ]


@pytest.mark.parametrize(
    ("tool_groups", "problem"),
    [
        (
            {"create_repo": "repos"},
            "tool_groups['create_repo'] must be a list of group names, like ['repos'], "
            "not the string 'repos'",
        ),
        (
            ["create_repo"],
            "tool_groups must map tool names to lists of group names, got list ['create_repo']",
        ),
        (
            {"create_repo": [1]},
            "tool_groups['create_repo'] must be a list of group names, got list [1]",
        ),
    ],
)
def test_tool_groups_of_the_wrong_kind_are_refused_before_the_toolset_changes(
    tool_groups: Any, problem: str
) -> None:
    toolset = ToolSet()
    toolset.add_group(Group("repos", "Repositories"))
    with pytest.raises(ConfigError) as err:
        ToolgateMiddleware(toolset, tool_groups=tool_groups)
    assert err.value.message == problem
    # no meta-tool name was reserved: a tool may still take one
    toolset.add_tool(Tool("enable_tools", "A tool of the server's own.", handler=lambda a, c: "ok"))


@pytest.mark.parametrize("activators", ["reachable", "always"])
async def test_an_activator_that_changes_only_the_activators_listed_notifies(
    activators: str,
) -> None:
    """Opening ``code``, which holds no tool but the group ``repos``: no tool appears,
    yet the list gains ``code.deactivate`` (and ``repos.activate`` where only reachable
    activators are listed), so the client is told to list again."""
    mcp = FastMCP("activators")
    toolset = ToolSet()
    toolset.add_groups([Group("code", "Code"), Group("repos", "Repositories", parent="code")])
    toolset.add_tool(Tool("create_repo", "Create.", handler=lambda a, c: "ok", groups=("repos",)))
    config = DeliveryConfig(strategy="list_changed", meta_tools="activators", activators=activators)
    ToolgateMiddleware(toolset, config).attach(mcp)
    async with legacy(mcp) as (client, notes):
        before = set(await tool_names(client))
        await client.call_tool("code.activate", {})
        assert await notes.settled() == ["notifications/tools/list_changed"]
        after = set(await tool_names(client))
        assert after - before >= {"code.deactivate"}
        assert "create_repo" not in after
        await client.call_tool("code.deactivate", {})
        assert await notes.settled() == ["notifications/tools/list_changed"]
        assert set(await tool_names(client)) == before
