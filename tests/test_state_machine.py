"""Invariants by property: a hypothesis state machine registers and unregisters tools,
activates and deactivates groups (with exclusion sets and failing hooks) for principals of
different trust, class and scope, and after every step checks DESIGN §9's guarantees.
Core only; kept small (60 examples x 30 steps) so the suite stays fast."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    rule,
)

from toolgate import (
    ALWAYS,
    BY_GROUP,
    CallContext,
    Group,
    HookContext,
    Policy,
    Principal,
    RegistrationError,
    Tool,
    ToolHidden,
    ToolNotFound,
    ToolSet,
)
from toolgate.paging import paginate

# a three-level tree, a second tree and two leaves
PARENTS: dict[str, str | None] = {
    "a": None,
    "a1": "a",
    "a1x": "a1",
    "a2": "a",
    "b": None,
    "b1": "b",
    "c": None,
    "d": None,
}
GROUPS = sorted(PARENTS)
LADDER = ("detected", "declared", "verified", "linked")
PRINCIPALS = {
    "admin": Principal(id="admin", trust="linked", scope=("*",)),
    "reader": Principal(id="reader", trust="detected", scope=("a", "default")),
    "agent": Principal(id="agent", trust="verified", agent_class="webmcp", scope=("b", "c", "a1")),
    "nobody": Principal(id="nobody", trust="declared", scope=()),
}
# two sessions share the admin principal, to check isolation between sessions
SESSIONS = {
    "admin-1": "admin",
    "admin-2": "admin",
    "reader": "reader",
    "agent": "agent",
    "nobody": "nobody",
}
TOOL_NAMES = [f"t{i}" for i in range(9)]
POLICIES = [
    Policy(),
    Policy(min_trust="verified"),
    Policy(allowed_classes=("webmcp",)),
    Policy(decision="deny"),
]


def ancestors(group: str) -> list[str]:
    out = []
    parent = PARENTS[group]
    while parent is not None:
        out.append(parent)
        parent = PARENTS[parent]
    return out


def group_in_scope(group: str, p: Principal) -> bool:
    return "*" in p.scope or any(g in p.scope for g in [group, *ancestors(group)])


def may_access(tool: Tool, p: Principal) -> bool:
    """An independent statement of access rules 1-5 (scope, trust, class, authz)."""
    groups = tool.groups or ("default",)
    in_scope = "*" in p.scope or any(
        g in p.scope or (g in PARENTS and group_in_scope(g, p)) for g in groups
    )
    pol = tool.policy
    trust_ok = pol.min_trust is None or LADDER.index(p.trust) >= LADDER.index(pol.min_trust)
    class_ok = not pol.allowed_classes or p.agent_class in pol.allowed_classes
    return in_scope and trust_ok and class_ok and pol.decision != "deny"


def group_visible(group: str, p: Principal, tools: Iterable[Tool]) -> bool:
    """A group the principal may know of: in scope, and holding (in it or below it) no
    tools at all or one it may use; a group of tools it may not use does not exist to it."""
    below = [t for t in tools if any(g == group or group in ancestors(g) for g in t.groups)]
    return group_in_scope(group, p) and (not below or any(may_access(t, p) for t in below))


def trivial(args: Mapping[str, Any], ctx: CallContext) -> str:
    return f"ran {ctx.tool}"


group_names = st.sampled_from([*GROUPS, "zz", "default"])
session_keys = st.sampled_from(sorted(SESSIONS))


class DisclosureMachine(RuleBasedStateMachine):
    registered = Bundle("registered")

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.failing: set[tuple[str, str]] = set()  # (group, "activate" | "deactivate")
        self.ts = ToolSet()

        def hook(ctx: HookContext) -> None:
            if (ctx.group, ctx.action) in self.failing:
                raise RuntimeError(f"{ctx.action} hook of {ctx.group} fails")

        self.ts.add_groups(
            [Group(g, parent=p, on_activate=hook, on_deactivate=hook) for g, p in PARENTS.items()]
        )
        self.ts.add_tool(Tool("root_tool", handler=trivial))
        self.sessions = {k: self.ts.session(k, PRINCIPALS[p]) for k, p in SESSIONS.items()}

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        self.loop.close()

    def states(self) -> dict[str, frozenset[str]]:
        async def read() -> dict[str, frozenset[str]]:
            return {k: (await s.state()).active for k, s in self.sessions.items()}

        return dict(self.run(read()))

    # -- set-up ------------------------------------------------------------------------------
    @initialize(
        pairs=st.lists(
            st.tuples(st.sampled_from(GROUPS), st.sampled_from(GROUPS)), min_size=1, max_size=3
        )
    )
    def exclusion_sets(self, pairs: list[tuple[str, str]]) -> None:
        for x, y in pairs:
            related = x == y or x in ancestors(y) or y in ancestors(x)
            if related:
                continue
            self.ts.exclusive(x, y)

    # -- registration ------------------------------------------------------------------------
    @rule(
        target=registered,
        name=st.sampled_from(TOOL_NAMES),
        groups=st.lists(st.sampled_from(GROUPS), max_size=2, unique=True),
        policy=st.sampled_from(POLICIES),
        always=st.booleans(),
    )
    def register(self, name: str, groups: list[str], policy: Policy, always: bool) -> str:
        tool = Tool(
            name,
            f"{name} tool.",
            handler=trivial,
            groups=tuple(groups),
            policy=policy,
            visibility=ALWAYS if always else BY_GROUP,
        )
        version = self.ts.catalog.version
        if name in self.ts.catalog.tools:
            try:
                self.ts.add_tool(tool)
            except RegistrationError:
                assert self.ts.catalog.version == version  # refused: nothing changed
            else:
                raise AssertionError("a duplicate tool was registered")
        else:
            self.ts.add_tool(tool)
            assert self.ts.catalog.tools[name] is tool
        return name

    @rule(name=st.sampled_from(TOOL_NAMES))
    def register_in_an_unknown_group_changes_nothing(self, name: str) -> None:
        before = (self.ts.catalog.version, dict(self.ts.catalog.tools))
        try:
            self.ts.add_tools([Tool(f"{name}_new", handler=trivial), Tool(name, groups=("zz",))])
        except RegistrationError:
            pass
        else:
            raise AssertionError("a tool in an unknown group was registered")
        assert (self.ts.catalog.version, dict(self.ts.catalog.tools)) == before

    @rule(name=consumes(registered))
    def unregister(self, name: str) -> None:
        if name in self.ts.catalog.tools:
            self.ts.remove_tool(name)
        assert name not in self.ts.catalog.tools

    # -- hooks -------------------------------------------------------------------------------
    @rule(group=st.sampled_from(GROUPS), action=st.sampled_from(["activate", "deactivate"]))
    def toggle_failing_hook(self, group: str, action: str) -> None:
        self.failing ^= {(group, action)}

    # -- activation --------------------------------------------------------------------------
    def check_change(self, key: str, names: list[str], action: str) -> None:
        session = self.sessions[key]
        before = self.states()
        result = self.run(getattr(session, action)(names))
        after = self.states()
        # other sessions never see this session's change
        for other in self.sessions:
            if other != key:
                assert after[other] == before[other], f"{key}'s {action} leaked into {other}"
        old, new = before[key], after[key]
        if not result.changed and not result.also_disabled:
            assert new == old, "a request that changed nothing changed the state"
        for err in result.errors:
            if err.group in GROUPS and err.group not in result.also_disabled:
                assert (err.group in old) == (err.group in new), f"failed {err} changed state"
        if action == "activate":
            assert new == (old - set(result.also_disabled)) | set(result.changed)
            for g in result.changed:
                assert (g, "activate") not in self.failing
        else:
            assert new == old - set(result.changed) - set(result.also_disabled)
            for g in result.changed:
                assert (g, "deactivate") not in self.failing
        assert result.visible_changed == (result.before.visible_names != result.after.visible_names)

    @rule(key=session_keys, names=st.lists(group_names, min_size=1, max_size=3))
    def activate(self, key: str, names: list[str]) -> None:
        self.check_change(key, names, "activate")

    @rule(key=session_keys, group=st.sampled_from(GROUPS), reverse=st.booleans())
    def activate_with_ancestors(self, key: str, group: str, reverse: bool) -> None:
        chain = [*reversed(ancestors(group)), group]
        self.check_change(key, chain[::-1] if reverse else chain, "activate")

    @rule(key=session_keys, names=st.lists(group_names, min_size=1, max_size=2))
    def deactivate(self, key: str, names: list[str]) -> None:
        self.check_change(key, names, "deactivate")

    # -- listing -----------------------------------------------------------------------------
    @rule(key=session_keys, page_size=st.integers(min_value=1, max_value=5))
    def pages_concatenate_to_the_full_list(self, key: str, page_size: int) -> None:
        visible = self.run(self.sessions[key].list_tools())
        got: list[str] = []
        cursor = None
        while True:
            page = paginate(visible, lambda t: t.name, cursor, page_size)
            assert len(page.items) <= page_size
            got.extend(t.name for t in page.items)
            cursor = page.next_cursor
            if cursor is None:
                break
        assert got == [t.name for t in visible]

    # -- invariants --------------------------------------------------------------------------
    @invariant()
    def disclosure_guarantees_hold_in_every_session(self) -> None:
        self.run(self.check_sessions())

    async def check_sessions(self) -> None:
        for key, session in self.sessions.items():
            p = session.principal
            active = (await session.state()).active
            # hierarchy, exclusion and scope
            for g in active:
                parent = PARENTS[g]
                # a parent out of the principal's scope is transparent: always on to it
                assert parent is None or parent in active or not group_in_scope(parent, p), (
                    f"{g} active without {parent}"
                )
                assert group_in_scope(g, p), f"{key} activated out-of-scope {g}"
            for ex in self.ts.catalog.exclusions:
                assert len(ex & active) <= 1, f"{sorted(ex & active)} active together"
            infos = await session.list_groups()
            tools = self.ts.catalog.tools.values()
            known = [g for g in GROUPS if group_visible(g, p, tools)]
            assert [g.name for g in infos] == known
            assert {g.name for g in infos if g.active} == set(active) & set(known)
            # visible is sorted, accessible, and exactly what dispatches
            view = await session.view()
            visible = [t.name for t in view.visible]
            assert visible == sorted(visible)
            assert [s.name for s in view.explain() if s.visible] == visible
            for name in [*self.ts.catalog.sorted_names(), "ghost"]:
                tool = self.ts.catalog.tool(name)
                accessible = tool is not None and may_access(tool, p)
                if name in visible:
                    assert accessible, f"{key} was shown {name} it may not access"
                    out = await session.call(name)
                    assert out.result.text_content == f"ran {name}"
                    continue
                try:
                    await session.call(name)
                except ToolNotFound:
                    pass
                except ToolHidden:
                    assert accessible, f"{key} was hinted about inaccessible {name}"
                else:
                    raise AssertionError(f"{key} ran hidden tool {name}")
                if not accessible:
                    assert view.surfacing(name).is_unknown_to_principal


DisclosureMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_disclosure_invariants_hold_after_every_step = DisclosureMachine.TestCase


def test_a_principal_with_empty_scope_can_activate_nothing() -> None:
    machine = DisclosureMachine()
    try:
        result = machine.run(machine.sessions["nobody"].activate(GROUPS))
        assert result.changed == ()
        assert {e.code for e in result.errors} == {"group_not_found"}
        assert machine.run(machine.sessions["nobody"].list_tools()) == ()
    finally:
        machine.teardown()
