"""The wags seed's ``GroupsMiddleware`` API as a drop-in (toolgate.fastmcp), per session.

The seed's own example is the first test; the rest follow its documentation: hierarchy,
the JSON results field by field, list_changed, the hint for a disabled group's tool and
``max_tools``. Real fastmcp.Client sessions in memory, legacy protocol.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from fastmcp import Client, FastMCP

from _fixtures.mcp_servers import Notes, text, tool_names
from toolgate import ConfigError, declare
from toolgate.fastmcp import (
    DisableToolsResult,
    EnableToolsResult,
    GroupDefinition,
    GroupsMiddleware,
    in_group,
)

META = ["call_tool", "describe_tools", "disable_tools", "enable_tools", "list_groups"]


class GithubHandlers:
    @in_group("issues")
    async def create_issue(self, owner: str, repo: str, title: str) -> str:
        return f"issue {title!r} in {owner}/{repo}"

    @in_group("issues")
    async def list_issues(self, owner: str, repo: str) -> list[str]:
        return [f"{owner}/{repo}#1"]

    @in_group("repos")
    async def create_repository(self, name: str) -> str:
        return f"repository {name}"


@asynccontextmanager
async def connect(mcp: FastMCP[Any]) -> AsyncIterator[tuple[Client[Any], Notes]]:
    notes = Notes()
    async with Client(mcp, mode="legacy", message_handler=notes) as client:
        yield client, notes


def seed_server(**options: Any) -> FastMCP[Any]:
    """The seed's main.py: tools registered on the server, groups from the handlers."""
    mcp = FastMCP("github")
    handlers = GithubHandlers()
    for name in ("create_issue", "list_issues", "create_repository"):
        mcp.tool(getattr(handlers, name), name=name)
    mcp.add_middleware(
        GroupsMiddleware(
            groups={
                "issues": GroupDefinition(description="Issue tracking"),
                "repos": GroupDefinition(description="Repository management"),
            },
            handlers=handlers,
            **options,
        )
    )
    return mcp


def without_tools(d: dict[str, Any] | None) -> dict[str, Any]:
    assert d is not None
    return {k: v for k, v in d.items() if k != "tools"}


async def test_the_seed_example_starts_with_issues_enabled_and_repos_hidden() -> None:
    mcp = seed_server(initial_groups=["issues"], max_tools=10)
    async with connect(mcp) as (client, _):
        assert await tool_names(client) == sorted([*META, "create_issue", "list_issues"])
        result = await client.call_tool_mcp(
            "create_issue", {"owner": "o", "repo": "r", "title": "bug"}
        )
        assert text(result) == "issue 'bug' in o/r"


async def test_enable_tools_answers_exactly_the_seed_json() -> None:
    async with connect(seed_server()) as (client, notes):
        assert await tool_names(client) == META
        result = await client.call_tool_mcp("enable_tools", {"groups": ["issues"]})
        assert without_tools(result.structured_content) == {
            "enabled": ["issues"],
            "enabled_groups": ["issues"],
            "available_tools": ["create_issue", "list_issues"],
            "available_groups": [],
            "errors": [],
        }
        parsed = EnableToolsResult.model_validate(result.structured_content)
        assert parsed.enabled == ["issues"]
        assert await notes.settled() == ["notifications/tools/list_changed"]


async def test_disable_tools_answers_exactly_the_seed_json() -> None:
    async with connect(seed_server(initial_groups=["issues"])) as (client, notes):
        result = await client.call_tool_mcp("disable_tools", {"groups": ["issues"]})
        assert result.structured_content == {
            "disabled": ["issues"],
            "enabled_groups": [],
            "available_tools": [],
            "errors": [],
        }
        assert DisableToolsResult.model_validate(result.structured_content).disabled == ["issues"]
        assert await notes.settled() == ["notifications/tools/list_changed"]
        assert await tool_names(client) == META


def test_the_result_models_have_exactly_the_wags_fields() -> None:
    assert list(EnableToolsResult.model_fields) == [
        "enabled",
        "enabled_groups",
        "available_tools",
        "available_groups",
        "errors",
    ]
    assert list(DisableToolsResult.model_fields) == [
        "disabled",
        "enabled_groups",
        "available_tools",
        "errors",
    ]
    assert in_group is declare.in_group


async def test_unknown_and_already_enabled_groups_are_reported_in_errors() -> None:
    async with connect(seed_server(initial_groups=["issues"])) as (client, notes):
        result = await client.call_tool_mcp("enable_tools", {"groups": ["issues", "wikis"]})
        assert result.is_error is True
        assert without_tools(result.structured_content) == {
            "enabled": [],
            "enabled_groups": ["issues"],
            "available_tools": ["create_issue", "list_issues"],
            "available_groups": [],
            "errors": ["Unknown group: wikis", "Group 'issues' is already enabled"],
        }
        assert await notes.settled() == []


class CodeHandlers:
    @in_group("code")
    def search_code(self, query: str) -> str:
        return f"found {query}"

    @in_group("repos")
    def fork(self, repo: str) -> str:
        return f"forked {repo}"

    @in_group("branches")
    def delete_branch(self, branch: str) -> str:
        return f"deleted {branch}"


def hierarchy_server(**options: Any) -> FastMCP[Any]:
    """The seed's hierarchy; no tools registered up front: they come from the handlers."""
    mcp = FastMCP("code")
    mcp.add_middleware(
        GroupsMiddleware(
            groups={
                "code": GroupDefinition(description="Code management"),
                "repos": GroupDefinition(description="Repositories", parent="code"),
                "branches": GroupDefinition(description="Branches", parent="repos"),
            },
            handlers=CodeHandlers(),
            **options,
        )
    )
    return mcp


async def test_hierarchical_groups_reveal_children_one_level_at_a_time() -> None:
    async with connect(hierarchy_server()) as (client, notes):
        groups = await client.call_tool_mcp("list_groups", {})
        assert groups.structured_content is not None
        assert [
            (g["name"], g["parent"], g["active"]) for g in groups.structured_content["groups"]
        ] == [
            ("branches", "repos", False),
            ("code", None, False),
            ("repos", "code", False),
        ]
        code = await client.call_tool_mcp("enable_tools", {"groups": ["code"]})
        assert without_tools(code.structured_content) == {
            "enabled": ["code"],
            "enabled_groups": ["code"],
            "available_tools": ["search_code"],
            "available_groups": ["repos"],
            "errors": [],
        }
        repos = await client.call_tool_mcp("enable_tools", {"groups": ["repos"]})
        assert without_tools(repos.structured_content) == {
            "enabled": ["repos"],
            "enabled_groups": ["code", "repos"],
            "available_tools": ["fork", "search_code"],
            "available_groups": ["branches"],
            "errors": [],
        }
        await client.call_tool_mcp("enable_tools", {"groups": ["branches"]})
        assert text(await client.call_tool_mcp("delete_branch", {"branch": "b"})) == "deleted b"
        off = await client.call_tool_mcp("disable_tools", {"groups": ["code"]})
        assert off.structured_content == {  # the cascade is named: repos and branches fell
            "disabled": ["code", "branches", "repos"],
            "enabled_groups": [],
            "available_tools": [],
            "errors": [],
        }
        assert await notes.settled() == ["notifications/tools/list_changed"] * 4
        assert await tool_names(client) == META


async def test_calling_a_tool_of_a_disabled_group_gets_a_hint() -> None:
    async with connect(hierarchy_server()) as (client, _):
        result = await client.call_tool_mcp("fork", {"repo": "r"})
        assert result.is_error is True
        assert result.structured_content is not None
        assert result.structured_content["error"] == (
            "Tool 'fork' is not enabled. Enable group 'repos' first (and its parents "
            "['code']), then call it again."
        )
        assert result.structured_content["enable"] == ["code", "repos"]


async def test_max_tools_refuses_an_activation_that_would_overflow() -> None:
    async with connect(seed_server(initial_groups=["issues"], max_tools=2)) as (client, notes):
        result = await client.call_tool_mcp("enable_tools", {"groups": ["repos"]})
        assert result.is_error is True
        assert without_tools(result.structured_content) == {
            "enabled": [],
            "enabled_groups": ["issues"],
            "available_tools": ["create_issue", "list_issues"],
            "available_groups": [],
            "errors": [
                "Cannot enable group 'repos': 3 tools would be visible, over max_tools=2 "
                "(the activation adds 1; the budget leaves 0)"
            ],
        }
        assert await notes.settled() == []


async def test_initial_groups_over_max_tools_are_a_configuration_error() -> None:
    mcp = FastMCP("too-big")
    handlers = GithubHandlers()
    middleware = GroupsMiddleware(
        groups={
            "issues": GroupDefinition(description="Issue tracking"),
            "repos": GroupDefinition(description="Repository management"),
        },
        handlers=handlers,
        initial_groups=["issues"],
        max_tools=1,
    )
    mcp.add_middleware(middleware)
    middleware.attach(mcp)
    with pytest.raises(ConfigError, match="initial_groups exceed the budget: 2 tools"):
        await middleware.sync()


async def test_each_session_has_its_own_groups_unlike_wags() -> None:
    mcp = seed_server()
    async with connect(mcp) as (one, _), connect(mcp) as (two, notes_two):
        await one.call_tool_mcp("enable_tools", {"groups": ["issues"]})
        assert "create_issue" in await tool_names(one)
        assert await tool_names(two) == META
        assert await notes_two.settled() == []
