"""Activation: groups switch on and off per session, with hierarchy, exclusion sets,
hooks, budgets and initial groups (DESIGN §3, the tmcp seed's unit tests). Core only."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from _fixtures.core import T, listing, visible_names
from toolgate import (
    ConfigError,
    Group,
    HookContext,
    ParentInactive,
    ToolNotFound,
    ToolSet,
)
from toolgate.errors import InvalidArguments, ToolHidden
from toolgate.tokens import TokenCounter


async def active(session: Any) -> list[str]:
    return [g.name for g in await session.list_groups() if g.active]


def hub() -> ToolSet:
    """The tmcp seed's AutomationHub: root tools plus file_ops and network groups."""
    ts = ToolSet()
    ts.add_groups(
        [
            Group("file_ops", "File operations: read, write, delete, move"),
            Group("network", "Network operations"),
        ]
    )
    ts.add_tools(
        [
            T("ping"),
            T("read_file", "file_ops"),
            T("write_file", "file_ops"),
            T("http_get", "network"),
        ]
    )
    return ts


# -- the tmcp seed's scenarios -------------------------------------------------------------


async def test_progressive_activation_reveals_a_groups_tools() -> None:
    s = hub().session("s")
    assert await visible_names(s) == ["ping"]
    with pytest.raises(ToolHidden) as err:
        await s.call("read_file")
    assert err.value.message == (
        "Tool 'read_file' is not enabled. Enable group 'file_ops' first, then call it again."
    )
    result = await s.activate(["file_ops"])
    assert result.changed == ("file_ops",)
    assert result.errors == ()
    assert result.visible_changed is True
    assert [t.name for t in result.newly_visible] == ["read_file", "write_file"]
    assert await visible_names(s) == ["ping", "read_file", "write_file"]
    assert (await s.call("read_file")).result.text_content == "ok"


async def test_mutual_exclusion_switches_the_other_mode_off() -> None:
    ts = ToolSet()
    ts.add_groups([Group("mode_a", "Mode A"), Group("mode_b", "Mode B")])
    ts.exclusive("mode_a", "mode_b")
    s = ts.session("s")
    await s.activate(["mode_a"])
    assert await active(s) == ["mode_a"]
    result = await s.activate(["mode_b"])
    assert result.changed == ("mode_b",)
    assert result.also_disabled == ("mode_a",)
    assert await active(s) == ["mode_b"]


async def test_hierarchical_groups_need_the_parent_and_fall_with_it() -> None:
    ts = ToolSet()
    ts.add_groups(
        [Group("database", "Database operations"), Group("write", "Write", parent="database")]
    )
    s = ts.session("s")
    result = await s.activate(["write"])
    assert result.changed == ()
    assert [e.to_dict() for e in result.errors] == [
        {
            "group": "write",
            "code": "parent_inactive",
            "message": ParentInactive("write", "database").message,
        }
    ]
    await s.activate(["database"])
    await s.activate(["write"])
    assert await active(s) == ["database", "write"]
    result = await s.deactivate(["database"])
    assert result.changed == ("database",)
    assert result.also_disabled == ("write",)
    assert await active(s) == []
    assert (await s.state()).active == frozenset()


async def test_deactivation_hides_the_groups_tools_again() -> None:
    s = hub().session("s")
    await s.activate(["file_ops"])
    result = await s.deactivate(["file_ops"])
    assert result.changed == ("file_ops",)
    assert result.newly_hidden == ("read_file", "write_file")
    assert await visible_names(s) == ["ping"]
    assert await active(s) == []


async def test_sync_activation_hook_runs_with_its_context() -> None:
    seen: list[HookContext] = []
    ts = ToolSet()
    ts.add_group(Group("file_ops", "File operations", on_activate=seen.append))
    s = ts.session("s1")
    await s.activate(["file_ops"])
    assert [(h.group, h.session_key, h.action, h.principal.id) for h in seen] == [
        ("file_ops", "s1", "activate", "local")
    ]


async def test_async_hooks_run_before_the_change_so_teardown_sees_the_group_active() -> None:
    log: list[str] = []
    ts = ToolSet()

    async def on_activate(ctx: HookContext) -> None:
        await asyncio.sleep(0)
        state = await ts.session(ctx.session_key).state()
        log.append(f"activate:{sorted(state.active)}")

    async def on_deactivate(ctx: HookContext) -> None:
        state = await ts.session(ctx.session_key).state()
        log.append(f"deactivate:{sorted(state.active)}")

    ts.add_group(Group("file_ops", on_activate=on_activate, on_deactivate=on_deactivate))
    s = ts.session("s")
    await s.activate(["file_ops"])
    await s.deactivate(["file_ops"])
    assert log == ["activate:[]", "deactivate:['file_ops']"]


async def test_hidden_deactivator_flag_is_kept_on_the_group() -> None:
    ts = ToolSet()
    ts.add_groups([Group("file_ops", "File operations", show_deactivator=False), Group("network")])
    assert ts.catalog.groups["file_ops"].show_deactivator is False
    assert ts.catalog.groups["network"].show_deactivator is True
    s = ts.session("s")
    assert (await s.activate(["file_ops"])).changed == ("file_ops",)
    assert (await s.deactivate(["file_ops"])).changed == ("file_ops",)


async def test_list_groups_shows_every_group_with_its_state() -> None:
    ts = hub()
    ts.add_group(Group("tcp", "TCP", title="Raw TCP", parent="network"))
    ts.add_tool(T("connect", "tcp"))
    s = ts.session("s")
    await s.activate(["file_ops"])
    assert [g.to_dict() for g in await s.list_groups()] == [
        {
            "name": "file_ops",
            "title": None,
            "description": "File operations: read, write, delete, move",
            "active": True,
            "parent": None,
            "tool_count": 2,
        },
        {
            "name": "network",
            "title": None,
            "description": "Network operations",
            "active": False,
            "parent": None,
            "tool_count": 1,
        },
        {
            "name": "tcp",
            "title": "Raw TCP",
            "description": "TCP",
            "active": False,
            "parent": "network",
            "tool_count": 1,
        },
    ]


async def test_root_group_is_not_listed_and_cannot_be_switched() -> None:
    ts = hub()
    s = ts.session("s")
    assert [g.name for g in await s.list_groups()] == ["file_ops", "network"]
    for request in (s.activate, s.deactivate):
        result = await request(["root"])
        assert [(e.group, e.code, e.message) for e in result.errors] == [
            ("root", "group_not_found", "Unknown group: root")
        ]
    result = await s.deactivate(["default"])
    assert [e.code for e in result.errors] == ["group_not_found"]
    assert await visible_names(s) == ["ping"]


async def test_list_tools_is_sorted_by_name() -> None:
    ts = ToolSet()
    ts.add_tools([T("b_tool"), T("a_tool"), T("B_upper"), T("a.dot")])
    assert await visible_names(ts.session("s")) == ["B_upper", "a.dot", "a_tool", "b_tool"]


async def test_concurrent_activations_of_one_session_end_in_an_exact_state() -> None:
    ts = hub()
    s = ts.session("s")
    results = await asyncio.gather(
        *(s.activate(["file_ops" if i % 2 == 0 else "network"]) for i in range(10))
    )
    enabled = sorted(g for r in results for g in r.changed)
    assert enabled == ["file_ops", "network"]
    codes = sorted(e.code for r in results for e in r.errors)
    assert codes == ["already_active"] * 8
    assert await active(s) == ["file_ops", "network"]
    assert (await s.state()).version == 2


async def test_concurrent_activations_within_an_exclusion_set_leave_exactly_one_active() -> None:
    ts = ToolSet()
    ts.add_groups([Group(f"m{i}") for i in range(5)])
    ts.exclusive(*(f"m{i}" for i in range(5)))
    s = ts.session("s")
    results = await asyncio.gather(*(s.activate([f"m{i}"]) for i in range(5)))
    assert all(r.changed == (f"m{i}",) for i, r in enumerate(results))
    # mutations on one session are serialized: the last request wins
    assert await active(s) == ["m4"]
    displaced = [r.also_disabled for r in results]
    assert displaced == [(), ("m0",), ("m1",), ("m2",), ("m3",)]


# -- failing hooks -----------------------------------------------------------------------


def boom(ctx: HookContext) -> None:
    raise RuntimeError(f"cannot {ctx.action} {ctx.group}")


async def test_failing_activate_hook_leaves_state_unchanged_and_others_succeed() -> None:
    ts = ToolSet()
    ts.add_groups([Group("good"), Group("bad", on_activate=boom)])
    ts.add_tools([T("g", "good"), T("b", "bad")])
    s = ts.session("s")
    result = await s.activate(["bad", "good"])
    assert result.changed == ("good",)
    assert [e.to_dict() for e in result.errors] == [
        {
            "group": "bad",
            "code": "hook_failed",
            "message": "Activation hook of group 'bad' failed: cannot activate bad",
        }
    ]
    assert await active(s) == ["good"]
    assert await visible_names(s) == ["g"]


async def test_failing_async_deactivate_hook_leaves_the_group_active() -> None:
    async def refuse(ctx: HookContext) -> None:
        raise RuntimeError("still busy")

    ts = ToolSet()
    ts.add_groups([Group("stuck", on_deactivate=refuse), Group("free")])
    ts.add_tools([T("s1", "stuck"), T("f1", "free")])
    s = ts.session("s")
    await s.activate(["stuck", "free"])
    before = await s.state()
    result = await s.deactivate(["stuck", "free"])
    assert result.changed == ("free",)
    assert [e.to_dict() for e in result.errors] == [
        {
            "group": "stuck",
            "code": "hook_failed",
            "message": "Deactivation hook of group 'stuck' failed: still busy",
        }
    ]
    assert await active(s) == ["stuck"]
    assert await visible_names(s) == ["s1"]
    assert (await s.state()).version == before.version + 1


async def test_a_failing_hook_alone_writes_nothing() -> None:
    ts = ToolSet()
    ts.add_group(Group("bad", on_activate=boom))
    s = ts.session("s")
    result = await s.activate(["bad"])
    assert result.changed == ()
    assert result.visible_changed is False
    state = await s.state()
    assert (state.active, state.version) == (frozenset(), 0)


async def test_failing_deactivate_hook_of_a_displaced_group_blocks_the_switch() -> None:
    ts = ToolSet()
    ts.add_groups([Group("a", on_deactivate=boom), Group("b")])
    ts.exclusive("a", "b")
    s = ts.session("s")
    await s.activate(["a"])
    result = await s.activate(["b"])
    assert result.changed == ()
    assert [e.code for e in result.errors] == ["hook_failed"]
    assert await active(s) == ["a"]


# -- hierarchy, exclusion, multi-group requests ------------------------------------------


def tree() -> ToolSet:
    ts = ToolSet()
    ts.add_groups(
        [
            Group("db"),
            Group("write", parent="db"),
            Group("admin", parent="write"),
            Group("net"),
        ]
    )
    ts.add_tools([T("query", "db"), T("insert", "write"), T("drop", "admin"), T("get", "net")])
    ts.exclusive("db", "net")
    return ts


async def test_exclusion_displaces_a_group_with_its_descendants() -> None:
    s = tree().session("s")
    await s.activate(["db", "write", "admin"])
    result = await s.activate(["net"])
    assert result.changed == ("net",)
    assert sorted(result.also_disabled) == ["admin", "db", "write"]
    assert result.also_disabled[-1] == "db"
    assert result.newly_hidden == ("drop", "insert", "query")
    assert await active(s) == ["net"]
    assert (await s.state()).active == frozenset({"net"})


async def test_one_request_may_name_the_child_before_the_parent() -> None:
    s = tree().session("s")
    result = await s.activate(["admin", "write", "db"])
    assert result.changed == ("db", "write", "admin")
    assert result.errors == ()
    assert await visible_names(s) == ["drop", "insert", "query"]


async def test_a_grandchild_without_its_chain_is_refused_but_the_rest_applies() -> None:
    s = tree().session("s")
    result = await s.activate(["admin", "db"])
    assert result.changed == ("db",)
    assert [(e.group, e.code) for e in result.errors] == [("admin", "parent_inactive")]
    assert result.errors[0].message == (
        "Cannot enable group 'admin': its parent group 'write' is not enabled. "
        "Enable 'write' first, or both in one request."
    )


async def test_reactivating_the_parent_does_not_bring_the_children_back() -> None:
    s = tree().session("s")
    await s.activate(["db", "write", "admin"])
    await s.deactivate(["db"])
    result = await s.activate(["db"])
    assert result.changed == ("db",)
    assert await active(s) == ["db"]
    assert await visible_names(s) == ["query"]


async def test_deactivating_parent_and_child_together_reports_the_child_as_cascaded() -> None:
    s = tree().session("s")
    await s.activate(["db", "write"])
    result = await s.deactivate(["write", "db"])
    assert result.changed == ("db",)
    assert result.also_disabled == ("write",)
    assert result.errors == ()


async def test_deactivating_an_inactive_group_is_an_error_that_changes_nothing() -> None:
    s = tree().session("s")
    result = await s.deactivate(["db"])
    assert [e.to_dict() for e in result.errors] == [
        {"group": "db", "code": "not_active", "message": "Group 'db' is not enabled"}
    ]
    assert result.visible_changed is False


async def test_two_members_of_an_exclusion_set_in_one_request_keep_the_first() -> None:
    ts = ToolSet()
    ts.add_groups([Group("read_mode"), Group("write_mode")])
    ts.exclusive("read_mode", "write_mode")
    s = ts.session("s")
    result = await s.activate(["read_mode", "write_mode"])
    assert result.changed == ("read_mode",)
    assert result.also_disabled == ()
    assert [e.to_dict() for e in result.errors] == [
        {
            "group": "write_mode",
            "code": "mutually_exclusive",
            "message": "Cannot enable group 'write_mode' together with 'read_mode' in one "
            "request: they are mutually exclusive",
        }
    ]
    assert await active(s) == ["read_mode"]


async def test_two_members_of_an_exclusion_set_follow_the_order_given_whatever_is_on() -> None:
    """The first named stays, whatever is active: named first, an enabled group is kept
    (its peer refused); named second, it is displaced by the first and refused, never
    "already enabled" and off at once."""
    ts = ToolSet()
    ts.add_groups([Group("read_mode"), Group("write_mode")])
    ts.exclusive("read_mode", "write_mode")
    s = ts.session("s")
    await s.activate(["read_mode"])
    version = (await s.state()).version
    result = await s.activate(["read_mode", "write_mode"])
    assert (result.changed, result.also_disabled) == ((), ())
    assert [e.to_dict() for e in result.errors] == [
        {
            "group": "read_mode",
            "code": "already_active",
            "message": "Group 'read_mode' is already enabled",
        },
        {
            "group": "write_mode",
            "code": "mutually_exclusive",
            "message": "Cannot enable group 'write_mode' together with 'read_mode' in one "
            "request: they are mutually exclusive",
        },
    ]
    assert await active(s) == ["read_mode"]
    assert (await s.state()).version == version
    result = await s.activate(["write_mode", "read_mode"])
    assert (result.changed, result.also_disabled) == (("write_mode",), ("read_mode",))
    assert [e.to_dict() for e in result.errors] == [
        {
            "group": "read_mode",
            "code": "mutually_exclusive",
            "message": "Cannot enable group 'read_mode' together with 'write_mode' in one "
            "request: they are mutually exclusive",
        },
    ]
    assert await active(s) == ["write_mode"]


async def test_a_group_whose_peer_holds_one_enabled_in_the_same_request_is_refused() -> None:
    """``deep`` excludes ``other``; one request enables ``other_child`` and ``deep``
    (``other_child`` named first): the first named stays, as for two peers named
    together, and the same request never enables a group and then turns it off."""
    ts = ToolSet()
    ts.add_groups(
        [
            Group("base"),
            Group("mid", parent="base"),
            Group("deep", parent="mid"),
            Group("other"),
            Group("other_child", parent="other"),
        ]
    )
    ts.exclusive("deep", "other")
    s = ts.session("s")
    await s.activate(["base", "mid", "other"])
    result = await s.activate(["other_child", "deep"])
    assert result.changed == ("other_child",)
    assert result.also_disabled == ()
    assert [e.to_dict() for e in result.errors] == [
        {
            "group": "deep",
            "code": "mutually_exclusive",
            "message": "Cannot enable group 'deep' together with 'other_child' in one request: "
            "'deep' is mutually exclusive with 'other', which 'other_child' is in",
        }
    ]
    assert await active(s) == ["base", "mid", "other", "other_child"]
    # on its own, later, it displaces the peer and what is under it, as always
    result = await s.activate(["deep"])
    assert result.changed == ("deep",)
    assert set(result.also_disabled) == {"other", "other_child"}
    assert await active(s) == ["base", "deep", "mid"]


async def test_unknown_groups_are_reported_and_the_known_ones_apply() -> None:
    s = hub().session("s")
    result = await s.activate(["nope", "file_ops", "file_ops"])
    assert result.changed == ("file_ops",)
    assert [e.to_dict() for e in result.errors] == [
        {"group": "nope", "code": "group_not_found", "message": "Unknown group: nope"}
    ]


LIST_OF_NAMES = 'groups must be a list of group names, like ["issues"], not '


@pytest.mark.parametrize(
    ("names", "message"),
    [
        ("file_ops", LIST_OF_NAMES + "the string 'file_ops'"),
        (None, LIST_OF_NAMES + "null"),
        (
            [["file_ops"]],
            "groups must be a list of group names (strings), not a list holding array",
        ),
    ],
)
async def test_groups_not_given_as_a_list_of_names_are_refused_and_change_nothing(
    names: Any, message: str
) -> None:
    s = hub().session("s")
    await s.activate(["network"])
    version = (await s.state()).version
    for change in (s.activate, s.deactivate):
        with pytest.raises(InvalidArguments) as err:
            await change(names)
        assert err.value.message == message
    assert await active(s) == ["network"]
    assert (await s.state()).version == version


TOOL_NAMES = 'tools must be a list of tool names, like ["search_issues"], not '


@pytest.mark.parametrize(
    ("names", "message"),
    [
        ("list_files", TOOL_NAMES + "the string 'list_files'"),
        ({"list_files": 1}, TOOL_NAMES + "object"),
        (7, TOOL_NAMES + "integer"),
        (
            [["list_files"]],
            "tools must be a list of tool names (strings), not a list holding array",
        ),
    ],
)
async def test_tools_to_reveal_or_mark_not_given_as_names_are_refused_and_change_nothing(
    names: Any, message: str
) -> None:
    s = hub().session("s")
    version = (await s.state()).version
    calls = (
        lambda: s.reveal(names),
        lambda: s.mark(revealed=names),
        lambda: s.mark(described=names),
    )
    for call in calls:
        with pytest.raises(InvalidArguments) as err:
            await call()
        assert err.value.message == message
    state = await s.state()
    assert (state.version, state.revealed, state.described) == (version, frozenset(), frozenset())


async def test_tools_to_reveal_may_come_from_any_iterable_of_names() -> None:
    s = hub().session("s")
    await s.reveal(n for n in ["read_file"])
    await s.mark(described={"read_file": 1}.keys())
    state = await s.state()
    assert (state.revealed, state.described) == (frozenset({"read_file"}),) * 2


async def test_a_name_a_reveal_would_not_show_is_refused_as_a_call_of_it_and_not_recorded() -> None:
    s = hub().session("s")
    result = await s.reveal(["list_files", "read_file"])
    assert result.revealed == ("read_file",)
    assert result.refused == (("list_files", "Unknown tool: list_files"),)
    assert (await s.state()).revealed == frozenset({"read_file"})


# -- no change, no signal -------------------------------------------------------------------


async def test_activating_an_active_group_changes_nothing_and_signals_nothing() -> None:
    s = hub().session("s")
    await s.activate(["file_ops"])
    version = (await s.state()).version
    result = await s.activate(["file_ops"])
    assert result.changed == ()
    assert result.visible_changed is False
    assert result.newly_visible == ()
    assert (await s.state()).version == version


async def test_activating_a_group_without_visible_tools_changes_state_but_not_the_list() -> None:
    ts = hub()
    ts.add_group(Group("empty"))
    s = ts.session("s")
    result = await s.activate(["empty"])
    assert result.changed == ("empty",)
    assert result.visible_changed is False
    assert result.active_groups == ("empty",)


# -- sessions --------------------------------------------------------------------------------


async def test_two_sessions_are_isolated() -> None:
    ts = hub()
    a, b = ts.session("a"), ts.session("b")
    await a.activate(["file_ops"])
    await b.activate(["network"])
    assert await visible_names(a) == ["ping", "read_file", "write_file"]
    assert await visible_names(b) == ["http_get", "ping"]
    with pytest.raises(ToolHidden):
        await b.call("read_file")
    await a.deactivate(["file_ops"])
    assert await visible_names(b) == ["http_get", "ping"]


async def test_an_ephemeral_session_records_nothing() -> None:
    ts = hub()
    s = ts.session(None)
    result = await s.activate(["file_ops"])
    assert result.changed == ("file_ops",)
    assert await visible_names(s) == ["ping"]
    assert await listing(ts.store).session_count() == 0


async def test_an_ephemeral_session_asks_for_parent_and_child_in_one_request_never_first() -> None:
    """It records nothing: enabling the parent first would be forgotten."""
    s = tree().session(None)
    result = await s.activate(["write"])
    assert [e.message for e in result.errors] == [
        "Cannot enable group 'write': its parent group 'db' is not enabled. "
        "Name 'db' and 'write' in one request."
    ]
    assert (await s.activate(["write", "db"])).changed == ("db", "write")


# -- budgets ---------------------------------------------------------------------------------


async def test_max_tools_refuses_an_activation_with_the_numbers() -> None:
    ts = ToolSet(max_tools=3)
    ts.add_groups([Group("small"), Group("big")])
    ts.add_tools([T("ping"), T("s1", "small"), T("b1", "big"), T("b2", "big"), T("b3", "big")])
    s = ts.session("s")
    # in the order given: "big" is tried while only ping is visible
    result = await s.activate(["big", "small"])
    assert result.changed == ("small",)
    assert [e.to_dict() for e in result.errors] == [
        {
            "group": "big",
            "code": "budget_exceeded",
            "message": "Cannot enable group 'big': 4 tools would be visible, over max_tools=3 "
            "(the activation adds 3; the budget leaves 2)",
        }
    ]
    assert await visible_names(s) == ["ping", "s1"]


async def test_max_tokens_refuses_an_activation_with_the_numbers() -> None:
    # counted by characters whatever vocabulary the machine holds (best_counter's default)
    ts = ToolSet(max_tokens=60, token_counter=TokenCounter())
    ts.add_group(Group("big"))
    ts.add_tools([T("ping"), T("b1", "big"), T("b2", "big")])
    one = ts.tool_tokens(ts.catalog.tools["ping"])
    assert one == 23  # ceil(90 chars / 4) of the compact wire JSON
    s = ts.session("s")
    result = await s.activate(["big"])
    assert result.changed == ()
    assert result.errors[0].message == (
        "Cannot enable group 'big': 67 tokens would be visible (chars/4), over max_tokens=60 "
        "(the activation adds 44; the budget leaves 37)"
    )
    assert await visible_names(s) == ["ping"]


async def test_a_displacing_activation_is_measured_after_the_displacement() -> None:
    ts = ToolSet(max_tools=2)
    ts.add_groups([Group("a"), Group("b")])
    ts.exclusive("a", "b")
    ts.add_tools([T("a1", "a"), T("a2", "a"), T("b1", "b"), T("b2", "b")])
    s = ts.session("s")
    await s.activate(["a"])
    result = await s.activate(["b"])
    assert (result.changed, result.also_disabled) == (("b",), ("a",))


@pytest.mark.parametrize(
    ("initial", "message"),
    [
        (["nope"], "initial_groups names unknown group 'nope'"),
        (["write"], "initial group 'write' needs its parent 'db' in initial_groups too"),
        (["a", "b"], "initial_groups ['a', 'b'] are mutually exclusive"),
        (
            ["db", "write"],
            "initial_groups exceed the budget: 4 tools would be visible, over max_tools=3 "
            "(the activation adds 4; the budget leaves 3)",
        ),
    ],
)
async def test_bad_initial_groups_are_a_config_error_at_the_first_session(
    initial: list[str], message: str
) -> None:
    ts = ToolSet(initial_groups=initial, max_tools=3)
    ts.add_groups([Group("db"), Group("write", parent="db"), Group("a"), Group("b")])
    ts.exclusive("a", "b")
    ts.add_tools([T("q1", "db"), T("q2", "db"), T("w1", "write"), T("w2", "write")])
    s = ts.session("s")
    with pytest.raises(ConfigError) as err:
        await s.list_tools()
    assert err.value.message == message
    with pytest.raises(ConfigError):
        await s.activate(["a"])


async def test_valid_initial_groups_start_every_session_active() -> None:
    ts = hub()
    ts.initial_groups = ("file_ops",)
    a, b = ts.session("a"), ts.session("b")
    assert await visible_names(a) == ["ping", "read_file", "write_file"]
    await a.deactivate(["file_ops"])
    assert await visible_names(a) == ["ping"]
    assert await visible_names(b) == ["ping", "read_file", "write_file"]


async def test_budget_exceeded_is_not_raised_when_no_budget_is_set() -> None:
    ts = ToolSet()
    ts.add_group(Group("big"))
    ts.add_tools([T(f"t{i}", "big") for i in range(200)])
    s = ts.session("s")
    result = await s.activate(["big"])
    assert result.changed == ("big",)
    assert len(await s.list_tools()) == 200


async def test_calling_a_tool_of_an_inactive_group_in_opaque_mode_is_unknown() -> None:
    ts = hub()
    ts.hidden_tool_errors = "opaque"
    with pytest.raises(ToolNotFound) as err:
        await ts.session("s").call("read_file")
    assert err.value.message == "Unknown tool: read_file"
