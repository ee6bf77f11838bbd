"""The specification every adapter meets: the same scenarios, word for word, for the SDK
low-level binding, the FastMCP middleware and the gateway in front of a real backend.

The catalog and the three servers are in ``tests/_fixtures/spec.py``; clients are real
(``mcp.Client`` / ``fastmcp.Client`` and their ``mcp.ClientSession``), in memory, on the
legacy protocol and on 2026-07-28 where a scenario holds on both. What only one adapter
does stays in its own file (test_lowlevel_*.py, test_fastmcp_*.py, test_gateway_*.py).
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as mt
import pytest
from mcp.shared.exceptions import MCPError

from _fixtures.mcp_servers import raw_request, structured, text, tool_names, tool_pages
from _fixtures.spec import (
    BY_NAME,
    ERAS,
    GROUPS_EXTENSION,
    ICON,
    META,
    Adapter,
    ClientKind,
    Era,
    Human,
    Wire,
)
from toolgate import Principal
from toolgate.client.extension import (
    GetGroupParams,
    GetGroupRequest,
    ListGroupsParams,
    ListGroupsRequest,
)

ROOT = ["cart_add", "ping", "status", "wipe"]
META_TOOLS = ["call_tool", "describe_tools", "list_groups"]  # describe_tools: second level
MENU = sorted([*ROOT, *META_TOOLS, "disable_tools", "enable_tools"])
CATALOG = sorted([*ROOT, *META_TOOLS, "enable_tools", "get_group"])
LISTED = {"legacy": MENU, "2026": CATALOG}
LIST_CHANGED = ["notifications/tools/list_changed"]
GET_FILE = BY_NAME["get_file"].wire()
GET_FILE_LINE = "get_file(path): Get a file."  # the compact index's line for it


def error_of(caught: pytest.ExceptionInfo[MCPError], name: str) -> str:
    """The JSON-RPC error object as the client received it, with ``name`` blanked out."""
    return caught.value.error.model_dump_json().replace(name, "<tool>")


async def listed_tool(wire: Wire, name: str) -> dict[str, Any]:
    page = await wire.session.list_tools()
    [tool] = [t for t in page.tools if t.name == name]
    return tool.model_dump(by_alias=True, exclude_none=True, mode="json")


# -- listing --------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_the_list_is_the_root_tools_and_the_eras_meta_tools(
    adapter: Adapter, era: Era
) -> None:
    async with adapter.connect(era) as wire:
        assert await tool_names(wire.client) == LISTED[era]
        if era == "legacy":
            assert wire.session.server_capabilities is not None
            assert wire.session.server_capabilities.tools == mt.ToolsCapability(list_changed=True)


@pytest.mark.parametrize("era", ERAS)
async def test_tools_list_keeps_the_icons_and_meta_of_catalog_and_host_tools(
    adapter: Adapter, era: Era
) -> None:
    async with adapter.connect(era) as wire:
        # the host's own tool (MCPServer / FastMCP decorator / backend tool)
        status = await listed_tool(wire, "status")
        # a catalog tool in full, once the era shows it: enabled (legacy) or get_group
        if wire.legacy:
            opened = await wire.call("enable_tools", {"groups": ["code"], "detail": "full"})
            [get_file] = structured(opened)["tools"]
        else:
            group = await wire.call("get_group", {"name": "code", "detail": "full"})
            [get_file] = structured(group)["tools"]
    assert status["icons"] == [ICON]
    assert META.items() <= status["_meta"].items()  # FastMCP adds keys of its own
    assert get_file == GET_FILE


@pytest.mark.parametrize("era", ERAS)
async def test_real_clients_walk_every_page_and_a_bad_cursor_is_invalid_params(
    adapter: Adapter, era: Era
) -> None:
    async with adapter.serve(page_size=3) as served:
        async with served.connect(era) as wire:
            pages = await tool_pages(wire.session)
            walked = await tool_names(wire.client)  # fastmcp.Client walks cursors itself
            with pytest.raises(MCPError) as bad:
                await wire.session.list_tools(params=mt.PaginatedRequestParams(cursor="bogus"))
        # the other client library walks the same pages
        other: ClientKind = "sdk" if adapter.name == "fastmcp" else "fastmcp"
        async with served.connect(era, client=other) as wire:
            other_pages = await tool_pages(wire.session)
            other_walked = await tool_names(wire.client)
    expected = LISTED[era]
    assert pages == other_pages == [expected[0:3], expected[3:6], expected[6:]]
    assert walked == other_walked == expected
    assert (bad.value.error.code, bad.value.error.message) == (-32602, "Invalid cursor: 'bogus'")


# -- activation through the menu (legacy protocol) ------------------------------------------


async def test_enable_tools_returns_the_wags_fields_the_new_definitions_and_notifies(
    adapter: Adapter,
) -> None:
    async with adapter.connect() as wire:
        result = await wire.call("enable_tools", {"groups": ["code"]})
        notified = await wire.notes.settled()
        listed = await tool_names(wire.client)
        called = await wire.call("get_file", {"path": "README"})
    assert result.is_error is False
    # the model reads the text: the same answer, less the names its index repeats
    assert json.loads(text(result)) == {
        k: v for k, v in structured(result).items() if k != "available_tools"
    }
    assert structured(result) == {
        "enabled": ["code"],
        "enabled_groups": ["code"],
        "available_tools": ["cart_add", "get_file", "ping", "status", "wipe"],
        "available_groups": ["repos"],
        "errors": [],
        "tools": [GET_FILE_LINE],
    }
    assert notified == LIST_CHANGED
    assert listed == sorted([*MENU, "get_file"])
    assert (called.is_error, called.structured_content) == (
        False,
        {"tool": "get_file", "args": {"path": "README"}},
    )


async def test_disable_tools_returns_exactly_the_wags_fields_and_notifies(
    adapter: Adapter,
) -> None:
    async with adapter.connect() as wire:
        await wire.call("enable_tools", {"groups": ["code", "issues"]})
        await wire.notes.settled()
        result = await wire.call("disable_tools", {"groups": ["issues"]})
        notified = await wire.notes.settled()
        listed = await tool_names(wire.client)
    assert result.is_error is False
    assert result.structured_content == {
        "disabled": ["issues"],
        "enabled_groups": ["code"],
        "available_tools": ["cart_add", "get_file", "ping", "status", "wipe"],
        "errors": [],
    }
    assert notified == LIST_CHANGED
    assert listed == sorted([*MENU, "get_file"])


async def test_a_child_group_needs_its_parent_and_disabling_the_parent_cascades(
    adapter: Adapter,
) -> None:
    async with adapter.connect() as wire:
        refused = await wire.call("enable_tools", {"groups": ["repos"]})
        assert await wire.notes.settled() == []
        both = await wire.call("enable_tools", {"groups": ["repos", "code"]})
        with_child = await tool_names(wire.client)
        off = await wire.call("disable_tools", {"groups": ["code"]})
        after = await tool_names(wire.client)
        again = await wire.call("enable_tools", {"groups": ["code"]})
    assert refused.is_error is True
    assert structured(refused)["errors"] == [
        "Cannot enable group 'repos': its parent group 'code' is not enabled. "
        "Enable 'code' first, or both in one request."
    ]
    assert structured(both)["enabled"] == ["code", "repos"]
    assert {"fork_repo", "get_file"} <= set(with_child)
    assert "delete_repo" not in with_child  # trust "verified" needed; the caller is "declared"
    assert structured(off)["enabled_groups"] == []
    assert after == MENU
    # re-enabling the parent does not bring the child back
    assert structured(again)["enabled_groups"] == ["code"]


async def test_enabling_one_of_an_exclusion_set_disables_the_other(adapter: Adapter) -> None:
    async with adapter.connect() as wire:
        await wire.call("enable_tools", {"groups": ["read_mode"]})
        assert "read_notes" in await tool_names(wire.client)
        swap = await wire.call("enable_tools", {"groups": ["write_mode"]})
        listed = await tool_names(wire.client)
        notified = await wire.notes.settled()
    assert structured(swap)["enabled_groups"] == ["write_mode"]
    assert ("write_notes" in listed, "read_notes" in listed) == (True, False)
    assert notified == LIST_CHANGED * 2


BAD_ENABLE_INPUT: list[tuple[dict[str, Any], str]] = [
    ({"groups": "issues"}, "'groups' must be a list of group names, like [\"issues\"], not string"),
    ({"groups": []}, "'groups' must name at least one group"),
    ({"groups": [f"g{i}" for i in range(10_000)]}, "'groups' names 10000 groups; at most 64"),
    ({}, "Missing required argument 'groups': a list of group names"),
    ({"groups": ["issues"], "extra": 1}, "Unexpected argument(s): 'extra'; expected 'groups' and"),
]


async def test_bad_meta_tool_input_is_a_clear_tool_error_and_changes_nothing(
    adapter: Adapter,
) -> None:
    async with adapter.connect() as wire:
        results = [await wire.call("enable_tools", arguments) for arguments, _ in BAD_ENABLE_INPUT]
        unknown = [await wire.call("enable_tools", {"groups": [g]}) for g in ("zzz", "ïssues")]
        notified = await wire.notes.settled()
        listed = await tool_names(wire.client)
    for result, (_, error) in zip(results, BAD_ENABLE_INPUT, strict=True):
        assert result.is_error is True
        assert structured(result)["error"].startswith(error)
    assert [(r.is_error, structured(r)["errors"]) for r in unknown] == [
        (True, ["Unknown group: zzz"]),
        (True, ["Unknown group: ïssues"]),
    ]
    assert notified == []
    assert listed == MENU


async def test_list_changed_is_sent_when_the_list_changes_and_only_then(
    adapter: Adapter,
) -> None:
    async with adapter.connect() as wire:
        await wire.call("enable_tools", {"groups": ["issues"]})
        assert await wire.notes.settled() == LIST_CHANGED
        again = await wire.call("enable_tools", {"groups": ["issues"]})
        await wire.call("ping")
        await wire.call("list_groups")
        await wire.call("enable_tools", {"groups": ["nope"]})
        assert await wire.notes.settled() == []
    assert again.is_error is True
    assert structured(again)["enabled"] == []
    assert structured(again)["errors"] == ["Group 'issues' is already enabled"]


async def test_sessions_never_see_each_others_activation(adapter: Adapter) -> None:
    async with adapter.serve() as served, served.connect() as one, served.connect() as two:
        await one.call("enable_tools", {"groups": ["issues"]})
        assert "list_issues" in await tool_names(one.client)
        assert await tool_names(two.client) == MENU
        assert await two.notes.settled() == []


async def test_activators_style_lists_one_activator_per_group_and_swaps_it(
    adapter: Adapter,
) -> None:
    async with adapter.connect(meta_tools="activators") as wire:
        before = await tool_names(wire.client)
        result = await wire.call("code.activate")
        notified = await wire.notes.settled()
        after = await tool_names(wire.client)
    assert before == sorted(
        [
            *ROOT,
            *META_TOOLS,
            "enable_tools",  # opens several groups in one call
            # every group's activator, the nested repos too (tmcp): no re-list needed
            "code.activate",
            "issues.activate",
            "read_mode.activate",
            "repos.activate",
            "write_mode.activate",
        ]
    )
    assert structured(result)["enabled"] == ["code"]
    assert notified == LIST_CHANGED
    assert [n for n in after if n.startswith(("code.", "repos.", "get_"))] == [
        "code.activate",
        "code.deactivate",
        "get_file",
        "repos.activate",
    ]


# -- the 2026-07-28 era: the catalog strategy --------------------------------------------------


async def test_on_2026_the_list_never_changes_and_grouped_tools_still_run(
    adapter: Adapter,
) -> None:
    async with adapter.connect("2026") as wire:
        enabled = await wire.call("enable_tools", {"groups": ["code"]})
        listed = await tool_names(wire.client)
        direct = await wire.call("get_file", {"path": "a.txt"})
        dispatched = await wire.call("call_tool", {"name": "fork_repo", "arguments": {}})
        notified = await wire.notes.settled()
    assert structured(enabled)["enabled"] == ["code"]
    assert structured(enabled)["tools"] == [GET_FILE_LINE]
    assert listed == CATALOG
    assert direct.structured_content == {"tool": "get_file", "args": {"path": "a.txt"}}
    assert dispatched.structured_content == {"tool": "fork_repo", "args": {}}
    assert notified == []


async def test_on_2026_get_group_returns_instructions_tools_and_child_groups(
    adapter: Adapter,
) -> None:
    async with adapter.connect("2026") as wire:
        code = await wire.call("get_group", {"name": "code"})
        issues = await wire.call("get_group", {"name": "issues"})
        missing = await wire.call("get_group", {"name": "nope"})
    assert code.structured_content == {
        "name": "code",
        "description": "Code and repositories",
        "tools": [GET_FILE_LINE],
        "groups": [{"name": "repos", "description": "Repository admin"}],
    }
    assert structured(issues)["instructions"] == "Search before you file."
    assert (missing.is_error, missing.structured_content) == (
        True,
        {"error": "Unknown group: nope", "code": "group_not_found"},
    )


# -- what is hidden, and why ------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_hidden_by_access_is_indistinguishable_from_an_unknown_tool(
    adapter: Adapter, era: Era
) -> None:
    async with adapter.connect(era) as wire:  # the caller is "declared"; delete_repo: "verified"
        await wire.call("enable_tools", {"groups": ["code", "repos"]})
        with pytest.raises(MCPError) as guarded:
            await wire.call("delete_repo")
        with pytest.raises(MCPError) as unknown:
            await wire.call("no_such_tool")
        dispatched_guarded = await wire.call("call_tool", {"name": "delete_repo"})
        dispatched_unknown = await wire.call("call_tool", {"name": "no_such_tool"})
    assert (guarded.value.error.code, guarded.value.error.message, guarded.value.error.data) == (
        -32602,
        "Unknown tool: delete_repo",
        None,
    )
    assert error_of(guarded, "delete_repo") == error_of(unknown, "no_such_tool")
    assert dispatched_guarded.is_error is True
    assert text(dispatched_guarded).replace("delete_repo", "X") == text(dispatched_unknown).replace(
        "no_such_tool", "X"
    )


INTERN = Principal(id="intern", trust="declared", scope=("default", "code"))


@pytest.mark.parametrize("era", ERAS)
async def test_groups_and_tools_outside_the_principals_scope_do_not_exist_for_it(
    adapter: Adapter, era: Era
) -> None:
    async with adapter.connect(era, principal=INTERN) as wire:
        groups = await wire.call("list_groups")
        enabled = await wire.call("enable_tools", {"groups": ["issues"]})
        with pytest.raises(MCPError) as out_of_scope:
            await wire.call("list_issues")
        with pytest.raises(MCPError) as unknown:
            await wire.call("no_such_tool")
    # a child group is in scope when an ancestor is named
    assert [g["name"] for g in structured(groups)["groups"]] == ["code", "repos"]
    assert structured(enabled)["errors"] == ["Unknown group: issues"]
    assert error_of(out_of_scope, "list_issues") == error_of(unknown, "no_such_tool")


async def test_calling_a_tool_of_an_inactive_group_gets_a_hint_naming_the_group(
    adapter: Adapter,
) -> None:
    async with adapter.connect() as wire:
        result = await wire.call("fork_repo")
    assert result.is_error is True
    assert result.structured_content == {
        "error": "Tool 'fork_repo' is not enabled. Enable group 'repos' first "
        "(and its parents ['code']), then call it again.",
        "code": "tool_hidden",
        "tool": "fork_repo",
        "reason": "group-inactive:repos",
        "groups": ["repos"],
        "enable": ["code", "repos"],
    }


async def test_opaque_hidden_tool_errors_answer_exactly_like_an_unknown_tool(
    adapter: Adapter,
) -> None:
    async with adapter.connect(hidden_tool_errors="opaque") as wire:
        with pytest.raises(MCPError) as hidden:
            await wire.call("fork_repo")
        with pytest.raises(MCPError) as unknown:
            await wire.call("no_such_tool")
    assert (hidden.value.error.code, hidden.value.error.message) == (
        -32602,
        "Unknown tool: fork_repo",
    )
    assert error_of(hidden, "fork_repo") == error_of(unknown, "no_such_tool")


async def test_the_call_tool_dispatcher_runs_enabled_tools_and_explains_hidden_ones(
    adapter: Adapter,
) -> None:
    async with adapter.connect() as wire:
        hidden = await wire.call("call_tool", {"name": "list_issues"})
        await wire.call("enable_tools", {"groups": ["issues"]})
        ran = await wire.call("call_tool", {"name": "list_issues", "arguments": {}})
        host = await wire.call("call_tool", {"name": "status", "arguments": {}})
        direct = await wire.call("status")
    assert hidden.is_error is True
    assert structured(hidden)["code"] == "tool_hidden"
    assert "Enable group 'issues' first" in structured(hidden)["error"]
    assert (ran.is_error, ran.structured_content) == (False, {"tool": "list_issues", "args": {}})
    assert (
        (host.is_error, text(host)) == (direct.is_error, text(direct)) == (False, "all systems go")
    )


# -- confirmation through elicitation (legacy protocol) ------------------------------------


async def test_a_confirm_policy_asks_the_human_and_runs_only_on_accept(adapter: Adapter) -> None:
    yes, no = Human("accept"), Human("decline")
    async with adapter.serve() as served:
        async with served.connect(human=yes) as wire:
            accepted = await wire.call("wipe", {"scope": "all"})
        async with served.connect(human=no) as wire:
            declined = await wire.call("wipe")
        async with served.connect() as wire:
            unsupported = await wire.call("wipe")
    assert yes.asked == ["Allow 'local' to run 'wipe' with {'scope': 'all'}?"]
    assert (accepted.is_error, accepted.structured_content) == (
        False,
        {"tool": "wipe", "args": {"scope": "all"}},
    )
    assert len(no.asked) == 1
    assert (declined.is_error, declined.structured_content) == (
        True,
        {
            "error": "The user declined to run 'wipe'. Nothing was run.",
            "code": "confirmation_refused",
            "tool": "wipe",
        },
    )
    assert (unsupported.is_error, unsupported.structured_content) == (
        True,
        {
            "error": "Tool 'wipe' needs a human's confirmation, and this client cannot ask "
            "for it (no elicitation support). Nothing was run.",
            "code": "confirmation_refused",
            "tool": "wipe",
        },
    )


# -- stages -------------------------------------------------------------------------------------


async def test_a_stage_locked_tool_names_its_stage_and_opens_after_the_transition(
    adapter: Adapter,
) -> None:
    async with adapter.connect() as wire:
        locked = await wire.call("checkout")
        assert "checkout" not in await tool_names(wire.client)
        moved = await wire.call("cart_add")
        notified = await wire.notes.settled()
        listed = await tool_names(wire.client)
        paid = await wire.call("checkout")
    assert locked.is_error is True
    assert locked.structured_content == {
        "error": "Tool 'checkout' is only available in stage 'checkout'; this session is in "
        "stage 'browse'.",
        "code": "tool_hidden",
        "tool": "checkout",
        "reason": "stage-locked:checkout",
        "stages": ["checkout"],
        "current_stage": "browse",
    }
    assert moved.is_error is False
    assert notified == LIST_CHANGED
    assert listed == sorted([*MENU, "checkout"])
    assert paid.structured_content == {"tool": "checkout", "args": {}}


# -- lazy descriptions ---------------------------------------------------------------------------

URI = "resource:///tool_descriptions"


#: a description answer, keyed by the tool's name: what a model reads of it, less the name
AS_THE_MODEL_READS_PING = {
    "description": BY_NAME["ping"].description,
    "inputSchema": dict(BY_NAME["ping"].schema),
}


async def test_lazy_a_tool_must_be_described_before_it_is_called(adapter: Adapter) -> None:
    async with adapter.serve(lazy=True) as served:
        async with served.connect() as wire, served.connect() as other_session:
            listed = await tool_names(wire.client)
            before = await wire.call("ping")
            described = await wire.call("describe_tools", {"tools": ["ping"]})
            after = await wire.call("ping")
            other_tool = await wire.call("cart_add")
            other_session_ping = await other_session.call("ping")
        async with served.connect() as wire:
            await wire.session.read_resource(f"{URI}?tools=cart_add")
            read_first = await wire.call("cart_add")
    assert listed == MENU
    assert before.is_error is True
    assert structured(before)["code"] == "TOOL_DESCRIPTION_REQUIRED"
    assert structured(before)["resource_uri"] == f"{URI}?tools=ping"
    assert structured(before)["describe_call"] == {
        "name": "describe_tools",
        "arguments": {"tools": ["ping"]},
    }
    assert described.structured_content == {"ping": AS_THE_MODEL_READS_PING}
    assert (after.is_error, after.structured_content) == (False, {"tool": "ping", "args": {}})
    # the authorization is per tool and per session
    assert structured(other_tool)["code"] == "TOOL_DESCRIPTION_REQUIRED"
    assert structured(other_session_ping)["code"] == "TOOL_DESCRIPTION_REQUIRED"
    assert (read_first.is_error, read_first.structured_content) == (
        False,
        {"tool": "cart_add", "args": {}},
    )


async def test_lazy_on_2026_an_anonymous_caller_meets_no_gate(adapter: Adapter) -> None:
    async with adapter.connect("2026", lazy=True) as wire:
        ran = await wire.call("ping")
        read = await wire.session.read_resource(f"{URI}?tools=ping")
    [content] = read.contents
    assert isinstance(content, mt.TextResourceContents)
    assert (ran.is_error, ran.structured_content) == (False, {"tool": "ping", "args": {}})
    assert json.loads(content.text) == {"ping": AS_THE_MODEL_READS_PING}


# -- the io.modelcontextprotocol/groups extension ------------------------------------------------


async def groups_request(wire: Wire, request: ListGroupsRequest | GetGroupRequest) -> Any:
    result = await raw_request(wire.session, request)
    return {k: v for k, v in result.items() if k not in ("resultType", "_meta")}


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_declaring_the_groups_extension_gets_groups(
    adapter: Adapter, era: Era
) -> None:
    async with adapter.connect(era, groups=True) as wire:
        capabilities = wire.session.server_capabilities
        listed = await groups_request(wire, ListGroupsRequest(params=ListGroupsParams()))
        code = await groups_request(wire, GetGroupRequest(params=GetGroupParams(name="code")))
        issues = await groups_request(wire, GetGroupRequest(params=GetGroupParams(name="issues")))
        missing: dict[str, tuple[int, str]] = {}
        for name in ("nope", "read_mode"):  # read_mode is the catalog's name, not the wire's
            with pytest.raises(MCPError) as err:
                await groups_request(wire, GetGroupRequest(params=GetGroupParams(name=name)))
            missing[name] = (err.value.error.code, err.value.error.message)
        top = await tool_names(wire.client)
        ran = await wire.call("fork_repo")
    assert capabilities is not None
    assert (capabilities.extensions or {})[GROUPS_EXTENSION] == {"listChanged": True}
    assert listed == {
        "groups": [
            {"name": "code", "description": "Code and repositories"},
            {"name": "issues", "title": "Issues", "description": "Issue tracker"},
            {"name": "read-mode", "description": "Read-only notes"},
            {"name": "write-mode", "description": "Writable notes"},
        ]
    }
    assert code == {
        "contents": {
            "tools": [GET_FILE],
            "groups": [{"name": "repos", "description": "Repository admin"}],
        }
    }
    assert issues == {
        "instructions": "Search before you file.",
        "contents": {"tools": [BY_NAME["list_issues"].wire()], "groups": []},
    }
    # read_mode: no group has that name on the wire ('_' is written '-'): invalid params
    assert missing == {
        "nope": (-32002, "Unknown group: nope"),
        "read_mode": (
            -32602,
            "Invalid 'name': a group's name on the extension wire is lowercase letters "
            "and digits, words joined by single '-'",
        ),
    }
    assert top == ROOT  # grouped tools live only in their groups
    assert ran.structured_content == {"tool": "fork_repo", "args": {}}


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_without_the_extension_gets_no_groups_methods(
    adapter: Adapter, era: Era
) -> None:
    async with adapter.connect(era) as wire:
        with pytest.raises(MCPError) as err:
            await groups_request(wire, ListGroupsRequest(params=ListGroupsParams()))
    assert err.value.error.code == mt.METHOD_NOT_FOUND
