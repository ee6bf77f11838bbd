"""A state-machine property over the adapters: whatever a client does, each adapter's
``tools/list`` (through a real MCP client) is exactly ``Session.list_tools`` of the core
for the same principal and session state, and every call ends as the core says.

For each adapter of ``tests/_fixtures/spec.py`` and each protocol era, hypothesis drives
enable / disable / call steps (stage transitions and hidden tools included) against the
served catalog and, beside it, against a core ``Session`` on a ``ToolSet`` built from the
same catalog. On 2026-07-28 the core's answer is an ephemeral session (nothing is
recorded; calls see every group: the catalog strategy). Small on purpose: few examples of
few steps, so the whole property stays within seconds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import hypothesis.strategies as st
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from mcp.shared.exceptions import MCPError

from _fixtures.driven import Driven
from _fixtures.mcp_servers import structured, tool_names
from _fixtures.spec import (
    ADAPTERS,
    BY_NAME,
    DEFAULT_PRINCIPAL,
    ERAS,
    GROUPS,
    STATUS,
    STATUS_TEXT,
    Adapter,
    AdapterName,
    Era,
    Wire,
    spec_toolset,
)
from toolgate import Principal, Session, Tool, ToolHidden, ToolNotFound, ToolSet
from toolgate.strategies.detail import summary_wire

T = TypeVar("T")
STEP_TIMEOUT = 60.0  # seconds one step's requests may take before the example fails
META_TOOLS = {
    "call_tool",
    "describe_tools",
    "disable_tools",
    "enable_tools",
    "get_group",
    "list_groups",
}
PRINCIPALS = [
    DEFAULT_PRINCIPAL,
    Principal(id="admin", trust="verified", scope=("*",)),
    Principal(id="intern", trust="declared", scope=("default", "code")),
]
group_lists = st.lists(st.sampled_from([*GROUPS, "zz"]), min_size=1, max_size=3)
# ``wipe`` asks a human (elicitation): its scenario is in test_adapter_spec.py
tool_choices = st.sampled_from([*(n for n in BY_NAME if n != "wipe"), "ghost"])


def shadow_toolset(principal: Principal) -> ToolSet:
    """The same catalog for the core alone, with the host's own ``status`` tool."""
    ts = spec_toolset(principal=principal)
    ts.add_tool(Tool(STATUS.name, STATUS.description, handler=lambda arguments, ctx: STATUS_TEXT))
    return ts


class AdapterMachine(RuleBasedStateMachine):
    adapter: AdapterName = "lowlevel"
    era: Era = "legacy"

    def __init__(self) -> None:
        super().__init__()
        self.connection: Driven[Wire] | None = None

    @property
    def legacy(self) -> bool:
        return self.era == "legacy"

    @initialize(principal=st.sampled_from(PRINCIPALS))
    def connect(self, principal: Principal) -> None:
        adapter, era = Adapter(self.adapter), self.era
        self.connection = Driven(lambda: adapter.connect(era, principal=principal))
        self.toolset = shadow_toolset(principal)
        key = "shadow" if self.legacy else None  # 2026-07-28: nothing is recorded
        self.session: Session = self.toolset.session(key, principal)
        # what a call is checked against: catalog delivery opens every group to calls
        self.caller: Session = (
            self.session if self.legacy else self.toolset.session(None, principal, all_groups=True)
        )

    def teardown(self) -> None:
        if self.connection is not None:
            self.connection.close()

    def on_wire(self, work: Callable[[Wire], Awaitable[T]]) -> T:
        connection = self.connection
        assert connection is not None
        return connection.run(work, timeout=STEP_TIMEOUT)

    def in_core(self, work: Awaitable[T]) -> T:
        assert self.connection is not None
        return self.connection.loop.run_until_complete(work)

    # -- steps ---------------------------------------------------------------------------
    @rule(groups=group_lists)
    def enable(self, groups: list[str]) -> None:
        result = self.on_wire(lambda w: w.call("enable_tools", {"groups": groups}))
        if self.legacy:
            change = self.in_core(self.session.activate(groups))
            assert structured(result)["enabled"] == list(change.changed)
            assert result.is_error == (not change.changed and bool(change.errors))

    @precondition(lambda self: self.legacy)  # 2026-07-28's catalog has no disable_tools
    @rule(groups=group_lists)
    def disable(self, groups: list[str]) -> None:
        result = self.on_wire(lambda w: w.call("disable_tools", {"groups": groups}))
        change = self.in_core(self.session.deactivate(groups))
        # every group it turned off: the named ones, then the children that fell with them
        assert structured(result)["disabled"] == [*change.changed, *change.also_disabled]

    @rule(name=tool_choices)
    def call(self, name: str) -> None:
        arguments = dict(BY_NAME[name].arguments) if name in BY_NAME else {}

        async def on_wire(w: Wire) -> Any:
            try:
                return await w.call(name, arguments)
            except MCPError as exc:
                return exc

        got = self.on_wire(on_wire)
        try:
            outcome = self.in_core(self.caller.call(name, arguments))
        except ToolNotFound:
            assert isinstance(got, MCPError), f"{name}: the core says unknown, got {got}"
            assert (got.error.code, got.error.message) == (-32602, f"Unknown tool: {name}")
        except ToolHidden as hidden:
            assert not isinstance(got, MCPError), f"{name}: the core hints, got {got}"
            assert got.is_error is True
            assert structured(got)["reason"] == hidden.details["reason"]
        else:
            assert not isinstance(got, MCPError), f"{name}: the core ran it, got {got}"
            assert got.is_error is False, f"{name}: the core ran it, the adapter refused"
            if name != STATUS.name:
                assert got.structured_content == outcome.result.structured

    # -- the property ------------------------------------------------------------------------
    @invariant()
    def tools_list_is_the_sessions_list(self) -> None:
        if self.connection is None:
            return
        listed = self.on_wire(lambda w: w.session.list_tools())
        names = self.on_wire(lambda w: tool_names(w.client))  # every page, this client's way
        expected = self.in_core(self.session.list_tools())
        tools = [t for t in listed.tools if t.name not in META_TOOLS]
        assert [n for n in names if n not in META_TOOLS] == [t.name for t in expected]
        assert [t.name for t in tools] == [t.name for t in expected]
        for tool, core in zip(tools, expected, strict=True):
            if tool.name != STATUS.name:  # the host's own tool: its schema is the host's
                # a refreshed list shows opened groups' tools at the summary level
                wire = (
                    summary_wire(core.wire(), core, minimal=False) if core.groups else core.wire()
                )
                assert tool.model_dump(by_alias=True, exclude_none=True) == wire


def machine(adapter: AdapterName, era: Era) -> type[AdapterMachine]:
    class Machine(AdapterMachine):
        pass

    Machine.adapter, Machine.era = adapter, era
    Machine.__name__ = f"{adapter.title()}{era.title()}Machine"
    Machine.TestCase.settings = settings(
        max_examples=6,
        stateful_step_count=8,
        deadline=None,
        # a failing run is reported as found: shrinking real servers would take minutes
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=[HealthCheck.too_slow],
    )
    return Machine


for _adapter in ADAPTERS:
    for _era in ERAS:
        globals()[f"test_tools_list_equals_the_sessions_list_{_adapter}_{_era}"] = machine(
            _adapter, _era
        ).TestCase
