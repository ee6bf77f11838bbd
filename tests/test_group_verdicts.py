"""Groups by property: for any scope and any set of enabled groups, ``View.group`` agrees
with an independent statement of DESIGN §3/§4, and every caller that shows or acts on
groups (list_groups, the menu's available_groups, tmcp activators, get_group, groups/list,
activation) says exactly what ``View.group`` says. Core and strategies only."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import hypothesis.strategies as st
from hypothesis import given, settings

from toolgate import Group, GroupNotFound, ParentInactive, Principal, ToolSet
from toolgate.state.base import SessionState
from toolgate.strategies import GroupsStrategy, ListChangedStrategy, Request
from toolgate.strategies.catalog import group_contents

PARENTS: dict[str, str | None] = {
    "a": None,
    "a1": "a",
    "a1x": "a1",
    "a2": "a",
    "b": None,
    "b1": "b",
    "quiet": None,  # show_deactivator=False
}
NAMES = [*PARENTS, "zz"]


def chain(group: str) -> list[str]:
    """``group`` and its ancestors."""
    out = [group]
    while (parent := PARENTS[out[-1]]) is not None:
        out.append(parent)
    return out


def oracle(name: str, scope: tuple[str, ...], active: frozenset[str]) -> str:
    if name not in PARENTS:
        return "unknown"

    def seen(group: str) -> bool:
        return "*" in scope or any(g in scope for g in chain(group))

    if not seen(name):
        return "out-of-scope"
    # an ancestor out of scope is transparent: always on, never named
    if all(g in active or not seen(g) for g in chain(name)):
        return "active"
    parent = PARENTS[name]
    if parent is not None and not seen(parent):
        parent = None
    if parent is not None and not all(g in active or not seen(g) for g in chain(parent)):
        return f"parent-inactive:{parent}"
    return "activatable"


def toolset() -> ToolSet:
    ts = ToolSet()
    ts.add_groups(
        Group(g, f"{g} tools", parent=p, show_deactivator=g != "quiet") for g, p in PARENTS.items()
    )
    return ts


async def with_state(ts: ToolSet, principal: Principal, active: frozenset[str]) -> SessionState:
    async def set_active(state: SessionState) -> tuple[SessionState, None]:
        return replace(state, active=active), None

    await ts.store.mutate("s", set_active)
    return await ts.session("s", principal).state()


scopes = st.lists(st.sampled_from([*PARENTS, "*", "default", "zz"]), unique=True, max_size=4)
actives = st.frozensets(st.sampled_from(list(PARENTS)))


@settings(max_examples=80, deadline=None)
@given(scope=scopes, active=actives)
def test_every_caller_shows_groups_as_the_view_decides(
    scope: list[str], active: frozenset[str]
) -> None:
    asyncio.run(check_callers(tuple(scope), active))


async def check_callers(scope: tuple[str, ...], active: frozenset[str]) -> None:
    ts = toolset()
    principal = Principal(scope=scope)
    session = ts.session("s", principal)
    await with_state(ts, principal, active)
    view = await session.view()
    verdict = {n: view.group(n) for n in NAMES}
    assert {n: str(v.reason) for n, v in verdict.items()} == {
        n: oracle(n, scope, active) for n in NAMES
    }
    visible = [n for n in PARENTS if verdict[n].visible]

    infos = await session.list_groups()
    # a parent out of scope is never named: the group reads as top-level
    assert [(g.name, g.active, g.parent) for g in infos] == [
        (n, verdict[n].active, PARENTS[n] if PARENTS[n] in visible else None) for n in visible
    ]
    assert session.available_groups(view) == [
        n for n in visible if verdict[n].activatable and PARENTS[n] in visible
    ]

    # tmcp: every group in scope has its activator; a deactivator while it is enabled
    activators = ListChangedStrategy(ts, style="activators")
    listed = {m.name for m in activators.listed_meta(Request(session), view)}
    assert listed - {"list_groups", "call_tool", "enable_tools"} == {
        f"{n}.activate" for n in visible
    } | {f"{n}.deactivate" for n in visible if verdict[n].enabled and n != "quiet"}
    # "reachable": only what can succeed now
    reachable = ListChangedStrategy(ts, style="activators", activators="reachable")
    listed = {m.name for m in reachable.listed_meta(Request(session), view)}
    assert listed - {"list_groups", "call_tool", "enable_tools"} == {
        f"{n}.activate" for n in visible if verdict[n].activatable
    } | {f"{n}.deactivate" for n in visible if verdict[n].active and n != "quiet"}

    groups = GroupsStrategy(ts)
    assert sorted(g.name for g in groups.top_level(principal)) == [
        n for n in visible if PARENTS[n] not in visible
    ]
    for n in NAMES:
        if not verdict[n].visible:
            try:
                group_contents(view, n)
            except GroupNotFound:
                continue
            raise AssertionError(f"get_group opened {n!r}, which the view hides")
        children = [c["name"] for c in group_contents(view, n)["groups"]]
        assert children == [c for c in visible if PARENTS[c] == n]

    for n in NAMES:
        await with_state(ts, principal, active)
        result = await session.activate([n])
        if not verdict[n].visible:
            expected = GroupNotFound.code
        elif verdict[n].enabled:
            expected = "already_active"
        elif not verdict[n].activatable:
            expected = ParentInactive.code
        else:
            assert result.changed == (n,) and not result.errors
            continue
        assert [(e.group, e.code) for e in result.errors] == [(n, expected)]
