"""Lean disclosure: an agent pays for the tools its task uses, not for whole groups.

Two levels of detail (a compact index when a group opens or a search answers, full
definitions through ``describe_tools`` or ``detail="full"``), groups named in the stable
meta-tool descriptions, a list_changed refresh at the summary level, and views per
request (``toolsets``). Through ``Delivery``, where every strategy is served; the wire
paths (headers, query parameters, both eras, real clients) are in
``test_lean_wire.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from toolgate import CallContext, Group, Policy, Principal, Tool, ToolSet
from toolgate.errors import UnknownToolsets
from toolgate.strategies import Delivery, DeliveryConfig, parse_toolsets
from toolgate.strategies.detail import index_entry

LEGACY = "2025-11-25"
STATELESS = "2026-07-28"
REPO = {
    "type": "object",
    "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}},
    "required": ["owner", "repo"],
}
ISSUE = {
    "type": "object",
    "properties": {"repo": {"type": "string"}, "number": {"type": "integer"}},
    "required": ["repo", "number"],
}
MEMBER = Principal("member", scope=("default", "issues", "repos"))


def echo(name: str) -> Any:
    def run(args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
        return {"tool": name, "args": dict(args)}

    return run


def build() -> ToolSet:
    ts = ToolSet("lean")
    ts.add_groups(
        [
            Group("issues", "Issues: read, write and label. Everything about issues."),
            Group("labels", "Label issues.", parent="issues"),
            Group("repos", "Repositories: files and branches."),
            Group("secrets", "Repository secrets."),
        ]
    )
    ts.add_tools(
        [
            Tool("ping", "Check the server. Answers pong.", handler=echo("ping")),
            Tool(
                "issue_read",
                "Read an issue. Returns its title, body and state.",
                handler=echo("issue_read"),
                input_schema=ISSUE,
                groups=("issues",),
                annotations={"readOnlyHint": True},
            ),
            Tool("issue_close", "Close an issue.", echo("issue_close"), ISSUE, groups=("issues",)),
            Tool("label_add", "Add a label.", echo("label_add"), ISSUE, groups=("labels",)),
            Tool("file_get", "Get a file. Any path.", echo("file_get"), REPO, groups=("repos",)),
            Tool(
                "repo_delete",
                "Delete a repository.",
                echo("repo_delete"),
                REPO,
                groups=("repos",),
                policy=Policy(min_trust="verified"),
            ),
            Tool("secret_set", "Set a secret.", echo("secret_set"), REPO, groups=("secrets",)),
        ]
    )
    return ts


async def call(
    delivery: Delivery,
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    key: str | None = "s1",
    principal: Principal | None = MEMBER,
    protocol: str = LEGACY,
    toolsets: tuple[str, ...] | None = None,
) -> Any:
    strategy, request = delivery.request(
        session_key=key, principal=principal, protocol=protocol, toolsets=toolsets
    )
    return await delivery.call_tool(strategy, request, name, arguments or {})


async def listed(
    delivery: Delivery,
    *,
    key: str | None = "s1",
    principal: Principal | None = MEMBER,
    protocol: str = LEGACY,
    toolsets: tuple[str, ...] | None = None,
) -> dict[str, dict[str, Any]]:
    strategy, request = delivery.request(
        session_key=key, principal=principal, protocol=protocol, toolsets=toolsets
    )
    page = await delivery.list_tools(strategy, request)
    return {str(w["name"]): dict(w) for w in page.items}


# -- two levels of detail --------------------------------------------------------------------
def test_an_index_entry_is_one_line_with_the_required_arguments() -> None:
    tool = build().catalog.tools["issue_read"]
    assert index_entry(tool) == "issue_read(repo, number): Read an issue."
    assert index_entry(build().catalog.tools["ping"]) == "ping(): Check the server."


async def test_enable_tools_answers_with_a_compact_index_by_default() -> None:
    delivery = Delivery(build(), DeliveryConfig(strategy="list_changed"))
    reply = await call(delivery, "enable_tools", {"groups": ["issues"]})
    data = reply.result.structured
    assert data["tools"] == [
        "issue_close(repo, number): Close an issue.",
        "issue_read(repo, number): Read an issue.",
    ]
    assert data["enabled"] == ["issues"] and reply.list_changed


@pytest.mark.parametrize(
    ("detail", "expected"),
    [
        ("names", ["issue_close", "issue_read"]),
        ("full", ["issue_close", "issue_read"]),
    ],
)
async def test_enable_tools_detail_gives_names_or_full_definitions(
    detail: str, expected: list[str]
) -> None:
    ts = build()
    delivery = Delivery(ts, DeliveryConfig(strategy="list_changed"))
    reply = await call(delivery, "enable_tools", {"groups": ["issues"], "detail": detail})
    tools = reply.result.structured["tools"]
    if detail == "names":
        assert tools == expected
    else:
        assert tools == [ts.catalog.tools[n].wire() for n in expected]


async def test_a_bad_detail_is_a_clear_error_and_enables_nothing() -> None:
    delivery = Delivery(build(), DeliveryConfig(strategy="list_changed"))
    reply = await call(delivery, "enable_tools", {"groups": ["issues"], "detail": "all"})
    assert reply.result.is_error
    assert reply.result.structured == {
        "error": "'detail' must be one of 'names', 'summary', 'full', not 'all'"
    }
    assert "issue_read" not in await listed(delivery)


async def test_describe_tools_gives_full_definitions_in_every_on_demand_strategy() -> None:
    ts = build()
    for strategy in ("list_changed", "catalog", "search"):
        delivery = Delivery(ts, DeliveryConfig(strategy=strategy))
        if strategy == "list_changed":
            await call(delivery, "enable_tools", {"groups": ["issues"]}, key=strategy)
        reply = await call(delivery, "describe_tools", {"tools": ["issue_read"]}, key=strategy)
        described = reply.result.structured["issue_read"]
        assert described["inputSchema"] == ISSUE, strategy
        assert described["description"] == "Read an issue. Returns its title, body and state."
        assert "annotations" not in described  # what a model reads: hosts keep the hints
        assert "describe_tools" in await listed(delivery, key=strategy), strategy


async def test_describe_tools_is_not_offered_where_every_tool_is_listed_in_full() -> None:
    ts = build()
    for strategy in ("flat", "groups"):
        assert "describe_tools" not in await listed(Delivery(ts, DeliveryConfig(strategy=strategy)))


async def test_describing_a_tool_of_a_closed_group_gets_the_hint_calling_it_would() -> None:
    delivery = Delivery(build(), DeliveryConfig(strategy="list_changed"))
    reply = await call(delivery, "describe_tools", {"tools": ["issue_read", "repo_delete"]})
    data = reply.result.structured
    assert reply.result.is_error
    assert data["issue_read"]["code"] == "tool_hidden"
    assert "issues" in data["issue_read"]["error"]
    # access-hidden reads exactly like a tool that does not exist
    missing = (await call(delivery, "describe_tools", {"tools": ["nope"]})).result.structured
    assert data["repo_delete"]["error"].replace("repo_delete", "X") == missing["nope"][
        "error"
    ].replace("nope", "X")


async def test_without_lazy_descriptions_a_tool_runs_without_describing_it() -> None:
    delivery = Delivery(build(), DeliveryConfig(strategy="catalog"))
    reply = await call(delivery, "issue_read", {"repo": "r", "number": 1})
    assert not reply.result.is_error
    assert reply.result.structured == {"tool": "issue_read", "args": {"repo": "r", "number": 1}}


async def test_get_group_is_compact_by_default_and_groups_get_stays_full() -> None:
    ts = build()
    delivery = Delivery(ts, DeliveryConfig(strategy="catalog"))
    compact = (await call(delivery, "get_group", {"name": "issues"})).result.structured
    assert compact["tools"] == [
        "issue_close(repo, number): Close an issue.",
        "issue_read(repo, number): Read an issue.",
    ]
    full = (await call(delivery, "get_group", {"name": "issues", "detail": "full"})).result
    assert full.structured["tools"][1] == ts.catalog.tools["issue_read"].wire()
    groups = Delivery(ts, DeliveryConfig(strategy="groups")).strategies["groups"]
    strategy, request = Delivery(ts, DeliveryConfig(strategy="groups")).request(
        session_key=None,
        principal=MEMBER,
        protocol=LEGACY,
        extensions=frozenset({"io.modelcontextprotocol/groups"}),
    )
    assert strategy.name == groups.name
    data = await strategy.groups_get(request, "issues")  # type: ignore[attr-defined]
    assert data["contents"]["tools"][1] == ts.catalog.tools["issue_read"].wire()


async def test_the_catalog_alias_opens_several_groups_in_one_call_and_records_nothing() -> None:
    delivery = Delivery(build(), DeliveryConfig(strategy="catalog"))
    data = (await call(delivery, "enable_tools", {"groups": ["issues", "repos"]})).result
    assert data.structured["tools"] == [
        "file_get(owner, repo): Get a file.",
        "issue_close(repo, number): Close an issue.",
        "issue_read(repo, number): Read an issue.",
    ]
    assert "issue_read" not in await listed(delivery)


async def test_activators_style_also_opens_several_groups_with_enable_tools() -> None:
    delivery = Delivery(build(), DeliveryConfig(strategy="list_changed", meta_tools="activators"))
    before = await listed(delivery)
    assert {"issues.activate", "repos.activate", "enable_tools", "describe_tools"} <= set(before)
    assert "disable_tools" not in before
    reply = await call(delivery, "enable_tools", {"groups": ["issues", "repos"]})
    assert reply.result.structured["enabled"] == ["issues", "repos"]
    one = await call(delivery, "labels.activate", {}, key="s2")
    assert one.result.is_error  # its parent is not enabled in session s2
    activated = await call(delivery, "issues.activate", {}, key="s3")
    assert "issue_read(repo, number): Read an issue." in activated.result.structured["tools"]


# -- the groups, named up front --------------------------------------------------------------
async def test_opening_meta_tools_name_the_principals_groups_and_no_others() -> None:
    delivery = Delivery(build(), DeliveryConfig(strategy="list_changed"))
    description = (await listed(delivery))["enable_tools"]["description"]
    assert description.endswith(
        "Groups: issues (Issues: read, write and label); labels (Label issues; inside "
        "issues); repos (Repositories: files and branches)."
    )
    assert "secrets" not in description  # out of scope reads as nonexistent
    admin = Principal("admin")
    everyone = (await listed(delivery, principal=admin))["enable_tools"]["description"]
    assert "secrets (Repository secrets)" in everyone


async def test_what_every_group_description_opens_with_is_said_once_not_per_group() -> None:
    ts = ToolSet("one-server")
    ts.add_groups(
        [
            Group("issue", "github: list, read, search; fields (read-only)"),
            Group("issue-write", "github: create, update; comment", parent="issue"),
            Group("release", "github: get, list; tag (read-only)"),
        ]
    )
    ts.add_tools(
        Tool(n, f"{n}.", groups=(g,), handler=echo(n))
        for n, g in (("issue_read", "issue"), ("issue_write", "issue-write"), ("get", "release"))
    )
    admin = Principal("admin")
    menu = Delivery(ts, DeliveryConfig(strategy="list_changed"))
    note = (await listed(menu, principal=admin))["enable_tools"]["description"]
    assert note.endswith(
        "Groups (github): issue (list, read, search); issue-write (create, update; inside "
        "issue); release (get, list)."
    )
    style = DeliveryConfig(strategy="list_changed", meta_tools="activators")
    tools = await listed(Delivery(ts, style), principal=admin)
    assert tools["issue.activate"]["description"] == "list, read, search"
    assert tools["issue-write.activate"]["description"] == "create, update (inside issue)"
    # one group's lead is no boilerplate: it stays
    ts.add_groups([Group("notes", "notion: read, write")])
    tools = await listed(Delivery(ts, style), principal=admin)
    assert tools["issue.activate"]["description"] == "github: list, read, search"


async def test_meta_tool_descriptions_do_not_change_with_what_is_active() -> None:
    for strategy in ("list_changed", "catalog"):
        delivery = Delivery(build(), DeliveryConfig(strategy=strategy))
        before = await listed(delivery)
        await call(delivery, "enable_tools", {"groups": ["issues"]})
        after = await listed(delivery)
        for name in ("enable_tools", "get_group", "list_groups", "call_tool", "describe_tools"):
            if name in before:
                assert after[name]["description"] == before[name]["description"], name


# -- a list_changed refresh at the summary level ------------------------------------------------
async def test_a_refreshed_list_shows_opened_groups_at_the_summary_level() -> None:
    delivery = Delivery(build(), DeliveryConfig(strategy="list_changed"))
    await call(delivery, "enable_tools", {"groups": ["issues"]})
    tools = await listed(delivery)
    assert tools["issue_read"] == {  # annotations (and an output schema) stay
        "name": "issue_read",
        "description": "Read an issue. Full definition: describe_tools.",
        "inputSchema": {
            "type": "object",
            "properties": {"repo": {"type": "string"}, "number": {"type": "integer"}},
            "required": ["repo", "number"],
        },
        "annotations": {"readOnlyHint": True},
    }
    assert tools["ping"]["description"] == "Check the server. Answers pong."  # root: full


async def test_grouped_list_full_keeps_whole_definitions_after_a_refresh() -> None:
    ts = build()
    delivery = Delivery(ts, DeliveryConfig(strategy="list_changed", grouped_list="full"))
    await call(delivery, "enable_tools", {"groups": ["issues"]})
    assert (await listed(delivery))["issue_read"] == ts.catalog.tools["issue_read"].wire()


def test_a_bad_grouped_list_setting_is_a_config_error() -> None:
    from toolgate.errors import ConfigError

    with pytest.raises(ConfigError, match="grouped_list must be 'summary' or 'full'"):
        DeliveryConfig(grouped_list="lazy")


# -- search: the best in full, the rest in one line --------------------------------------
async def test_search_gives_the_best_matches_in_full_and_the_rest_in_one_line() -> None:
    ts = build()
    delivery = Delivery(ts, DeliveryConfig(strategy="search", search_full_results=1))
    reply = await call(delivery, "search_tools", {"query": "issue", "limit": 3})
    data = reply.result.structured
    assert [r["name"] for r in data["results"]] == [data["results"][0]["name"]]
    assert data["results"][0]["tool"] == ts.catalog.tools[data["results"][0]["name"]].wire()
    assert all("(" in line and "): " in line for line in data["more"])
    names = await call(delivery, "search_tools", {"query": "issue", "detail": "names"})
    assert all(set(r) == {"name", "score"} for r in names.result.structured["results"])
    full = await call(delivery, "search_tools", {"query": "issue", "limit": 3, "detail": "full"})
    assert "more" not in full.result.structured
    assert all("tool" in r for r in full.result.structured["results"])


# -- views per request ---------------------------------------------------------------------
def test_toolsets_are_parsed_from_header_or_query_values() -> None:
    assert parse_toolsets(["issues, repos", "issues"]) == ("issues", "repos")
    assert parse_toolsets([" , "]) is None
    assert parse_toolsets([]) is None


@pytest.mark.parametrize("protocol", [LEGACY, STATELESS])
async def test_a_request_naming_toolsets_lists_just_those_groups(protocol: str) -> None:
    delivery = Delivery(build(), DeliveryConfig(strategy="list_changed"))
    tools = await listed(delivery, protocol=protocol, toolsets=("issues",), key=None)
    # root tools, the group and its child group; no meta-tools; the access rules hold
    assert sorted(tools) == ["issue_close", "issue_read", "label_add", "ping"]
    repos = await listed(delivery, protocol=protocol, toolsets=("repos",), key=None)
    assert sorted(repos) == ["file_get", "ping"]  # repo_delete needs trust "verified"


async def test_unknown_and_out_of_scope_toolsets_get_the_same_clear_error() -> None:
    delivery = Delivery(build(), DeliveryConfig(strategy="catalog"))
    errors = []
    for name in ("secrets", "nonesuch"):
        with pytest.raises(UnknownToolsets) as caught:
            await listed(delivery, toolsets=(name,))
        errors.append(caught.value.message.replace(name, "X"))
    assert (
        errors[0] == errors[1] == ("Unknown toolset(s): X. Known toolsets: issues, labels, repos")
    )
    with pytest.raises(UnknownToolsets):
        await call(delivery, "ping", toolsets=("nonesuch",))
    with pytest.raises(UnknownToolsets) as flood:  # the caller's text is never echoed whole
        await listed(delivery, toolsets=tuple(f"{i}{'x' * 500}" for i in range(12)))
    assert len(flood.value.message) < 1000
    assert flood.value.message.endswith("and 2 more. Known toolsets: issues, labels, repos")


async def test_a_toolsets_request_needs_no_session_and_records_nothing() -> None:
    delivery = Delivery(build(), DeliveryConfig(strategy="list_changed"))
    reply = await call(delivery, "issue_read", {"repo": "r", "number": 2}, toolsets=("issues",))
    assert not reply.result.is_error and not reply.list_changed
    assert "issue_read" not in await listed(delivery)  # the session "s1" opened nothing
