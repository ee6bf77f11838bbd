"""``ToolSet`` and ``Session``: catalog + state + view + events, together.

The orchestration layer. A ``ToolSet`` owns one catalog, one store, one event bus and
the view cache; a ``Session`` is one client's handle on it: activate, deactivate,
list, call. Dispatch asks the view (visible implies dispatchable) and activation is
planned over it (``toolgate.activation``); neither re-decides a rule. Core: no MCP
imports; strategies and adapters sit above it.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from toolgate.activation import (  # ChangeResult, GroupError: re-exported, they lived here
    Action,
    Step,
    activate_step,
    deactivate_step,
    requested,
)
from toolgate.activation import (
    ChangeResult as ChangeResult,
)
from toolgate.activation import (
    GroupError as GroupError,
)
from toolgate.catalog import (
    CallContext,
    Catalog,
    Group,
    HookContext,
    Tool,
    ToolResult,
)
from toolgate.catalog.handler import to_result
from toolgate.errors import (
    BudgetExceeded,
    ConfigError,
    ConfirmationRefused,
    DescriptionRequired,
    RateLimited,
    RegistrationError,
    RelayedError,
    ToolgateError,
    ToolHidden,
    ToolNotFound,
)
from toolgate.events import EventBus
from toolgate.flow import Flow
from toolgate.policy import DEFAULT_TRUST_LEVELS, Confirmer, ConfirmRequest, Principal, TrustLadder
from toolgate.search import SearchIndex, SearchSettings
from toolgate.state.base import EMPTY, SessionState, StateStore
from toolgate.state.memory import MemoryStore
from toolgate.tokens import TokenCounter, default_counter, estimate_tokens, wire_text
from toolgate.view import (
    DEFAULT_RULES,
    ReasonKind,
    Rule,
    Surfacing,
    View,
    ViewCache,
    compute_view,
)

HiddenToolErrors = str  # "hint" | "opaque"
R = TypeVar("R")
logger = logging.getLogger("toolgate.toolset")


@dataclass(frozen=True)
class GroupInfo:
    """A group as ``list_groups`` shows it; ``tool_count`` counts its own tools that
    the principal may run (access rules 1-5 pass)."""

    name: str
    title: str | None
    description: str
    active: bool
    parent: str | None
    tool_count: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "active": self.active,
            "parent": self.parent,
            "tool_count": self.tool_count,
        }


@dataclass(frozen=True)
class CallOutcome:
    """A finished call: its result, and what it changed for the session."""

    result: ToolResult
    stage_from: str | None = None
    stage_to: str | None = None
    visible_changed: bool = False
    #: the tool ran, but its stage change could not be saved (the session stays in
    #: ``stage_from``); the result is still the tool's, never a retryable failure
    state_error: str | None = None

    @property
    def stage_changed(self) -> bool:
        return self.stage_to is not None and self.stage_to != self.stage_from


@dataclass(frozen=True)
class RevealResult:
    """The outcome of revealing tools (search results) for a session.

    ``refused`` pairs a tool with the budget problem that kept it hidden.
    """

    revealed: tuple[str, ...]  # tools recorded as revealed, in the order given
    refused: tuple[tuple[str, str], ...]
    before: View
    after: View

    @property
    def visible_changed(self) -> bool:
        return self.before.visible_names != self.after.visible_names


def plain_description_required(name: str) -> DescriptionRequired:
    return DescriptionRequired(
        f"Tool {name!r} requires fetching its description before use.", tool=name
    )


def _maybe_await(value: Any) -> Awaitable[Any]:
    async def done() -> Any:
        return await value if inspect.isawaitable(value) else value

    return done()


class ToolSet:
    """One catalog served to many sessions.

    >>> ts = ToolSet()
    >>> ts.add_group(Group("files", "File operations"))
    >>> ts.add_tool(Tool("read_file", "Read a file.", groups=("files",)))
    """

    def __init__(
        self,
        name: str = "toolgate",
        *,
        store: StateStore | None = None,
        flow: Flow | None = None,
        trust_levels: Sequence[str] = DEFAULT_TRUST_LEVELS,
        initial_groups: Sequence[str] = (),
        max_tools: int | None = None,
        max_tokens: int | None = None,
        token_counter: TokenCounter | None = None,
        hidden_tool_errors: HiddenToolErrors = "hint",
        page_size: int = 100,
        namespace_tools: bool = False,
        separator: str = ".",
        rules: Sequence[Rule] = DEFAULT_RULES,
        describe_before_call: bool = False,
        default_principal: Principal | None = None,
        events: EventBus | None = None,
        clock: Callable[[], float] = time.time,
        search: SearchSettings | None = None,
    ) -> None:
        if search is not None and not isinstance(search, SearchSettings):
            raise ConfigError(f"search must be a SearchSettings, got {type(search).__name__}")
        if hidden_tool_errors not in ("hint", "opaque"):
            raise ConfigError(
                f"hidden_tool_errors must be 'hint' or 'opaque', got {hidden_tool_errors!r}",
                key="hidden_tool_errors",
            )
        if not isinstance(page_size, int) or page_size < 1:
            raise ConfigError(f"page_size must be a positive integer, got {page_size!r}")
        if separator not in (".", "_", "-"):
            raise ConfigError(f"separator must be '.', '_' or '-', got {separator!r}")
        for label, value in (("max_tools", max_tools), ("max_tokens", max_tokens)):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigError(f"{label} must be a positive integer, got {value!r}", key=label)
        self.name = name
        self.catalog = Catalog(flow)
        self.store: StateStore = store if store is not None else MemoryStore(clock=clock)
        self.ladder = TrustLadder(tuple(trust_levels))
        self.initial_groups = tuple(initial_groups)
        self.max_tools = max_tools
        self.max_tokens = max_tokens
        self.token_counter = token_counter or default_counter()
        self.hidden_tool_errors = hidden_tool_errors
        self.page_size = page_size
        self.namespace_tools = namespace_tools
        self.separator = separator
        self.rules = tuple(rules)
        self.describe_before_call = describe_before_call
        #: builds the describe-before-call error; lazy descriptions replace it to say
        #: exactly where the description is (``toolgate.strategies.lazy``)
        self.description_required: Callable[[str], DescriptionRequired] = plain_description_required
        self.default_principal = default_principal or Principal()
        self.ladder.check(self.default_principal.trust)
        self.events = events or EventBus()
        self.clock = clock
        self.views = ViewCache()
        self._token_cache: dict[str, tuple[Tool, int]] = {}
        self._validated_version = -1
        self._validators: dict[str, tuple[Tool, Any]] = {}
        self.search_settings = search or SearchSettings()
        self._search_index: SearchIndex | None = None

    # -- registration ----------------------------------------------------------------
    def add_group(self, group: Group) -> Group:
        self.catalog.add_group(group)
        return group

    def add_groups(self, groups: Iterable[Group]) -> None:
        self.catalog.add_groups(groups)

    def exclusive(self, *groups: str) -> None:
        """At most one of ``groups`` may be active in a session."""
        self.catalog.add_exclusion(groups)

    def _check_policies(self, tools: Sequence[Tool]) -> None:
        """A policy naming a trust level the ladder lacks is a configuration error
        now, not a crash at the first listing."""
        for t in tools:
            if t.policy.min_trust is not None:
                try:
                    self.ladder.check(t.policy.min_trust)
                except ConfigError as exc:
                    raise ConfigError(
                        f"Tool {t.name!r}: policy min_trust: {exc.message}", key="min_trust"
                    ) from None

    def add_tool(self, tool: Tool) -> Tool:
        self._check_policies([tool])
        self.catalog.add_tool(tool)
        self.events.emit("tool.registered", tool=tool.name, groups=list(tool.groups))
        return tool

    def add_tools(self, tools: Iterable[Tool]) -> None:
        batch = list(tools)
        self._check_policies(batch)
        self.catalog.add_tools(batch)
        for t in batch:
            self.events.emit("tool.registered", tool=t.name, groups=list(t.groups))

    def remove_tool(self, name: str) -> Tool:
        tool = self.catalog.remove_tool(name)
        self.events.emit("tool.unregistered", tool=name)
        return tool

    def remove_group(self, name: str) -> Group:
        return self.catalog.remove_group(name)

    def set_flow(self, flow: Flow) -> None:
        self.catalog.set_flow(flow)

    def tool(self, fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
        """Decorator: register a function as a tool (see ``toolgate.declare.tool``)."""
        from toolgate.declare import tool_from_function

        def register(f: Callable[..., Any]) -> Callable[..., Any]:
            self.add_tool(tool_from_function(f, **options))
            return f

        return register(fn) if fn is not None else register

    def include(self, obj: Any, *, parent: str | None = None) -> None:
        """Register a ``@group`` class instance (with its tools and child groups) or a
        handler object whose methods carry ``@in_group`` / ``@tool`` marks."""
        from toolgate.declare import declarations_of

        groups, tools, exclusions = declarations_of(
            obj, parent=parent, namespace=self.namespace_tools, separator=self.separator
        )
        known = set(self.catalog.groups)
        # all-or-nothing: an exclusion naming a group that will not exist fails before
        # anything is registered
        for ex in exclusions:
            for n in ex:
                if n not in known and all(g.name != n for g in groups):
                    raise RegistrationError(f"Exclusion set names unknown group {n!r}", name=n)
        self.add_groups([g for g in groups if g.name not in known])
        self.add_tools(tools)
        for ex in exclusions:
            self.exclusive(*ex)

    # -- validation of start-up configuration ------------------------------------------
    def validate(self) -> None:
        """Check configuration that spans registrations: initial groups exist, respect
        hierarchy and exclusion sets, and fit the budgets. Raises ``ConfigError``."""
        if self._validated_version == self.catalog.version:
            return
        cat = self.catalog
        seen: set[str] = set()
        for g in self.initial_groups:
            if g not in cat.groups:
                raise ConfigError(f"initial_groups names unknown group {g!r}", key="initial_groups")
            seen.add(g)
        for g in self.initial_groups:
            for a in cat.ancestors(g):
                if a not in seen:
                    raise ConfigError(
                        f"initial group {g!r} needs its parent {a!r} in initial_groups too",
                        key="initial_groups",
                    )
        for ex in cat.exclusions:
            both = sorted(ex & seen)
            if len(both) > 1:
                raise ConfigError(
                    f"initial_groups {both} are mutually exclusive", key="initial_groups"
                )
        widest = Principal(id="*", trust=self.ladder.levels[-1], scope=("*",))
        view = compute_view(cat, widest, self.initial_state(), ladder=self.ladder, rules=self.rules)
        problem = self._budget_problem(view)
        if problem is not None:
            self.events.emit(
                "budget.exceeded", initial_groups=list(self.initial_groups), detail=problem
            )
            raise ConfigError(f"initial_groups exceed the budget: {problem}", key="initial_groups")
        self._validated_version = cat.version

    def initial_state(self) -> SessionState:
        return replace(EMPTY, active=frozenset(self.initial_groups))

    # -- views and tokens --------------------------------------------------------------
    def view(self, principal: Principal, state: SessionState) -> View:
        return self.views.get(self.catalog, principal, state, self.ladder, self.rules)

    def tool_tokens(self, tool: Tool) -> int:
        cached = self._token_cache.get(tool.name)
        if cached is not None and cached[0] is tool:
            return cached[1]
        n = self.token_counter.count(wire_text(tool.wire()))
        self._token_cache[tool.name] = (tool, n)
        return n

    def view_tokens(self, view: View) -> int:
        return sum(self.tool_tokens(t) for t in view.visible)

    @property
    def has_budget(self) -> bool:
        return self.max_tools is not None or self.max_tokens is not None

    def estimate(self, view: View) -> dict[str, Any]:
        """What ``view``'s visible tools cost in tokens, counted as budgets count them
        (``self.token_counter`` over each ``tool.wire()``), per tool and per group
        (root tools as ``"default"``), with outliers (see ``tokens.estimate_tokens``)."""
        tools = view.visible
        return estimate_tokens(
            [t.wire() for t in tools],
            self.token_counter,
            groups_of={t.name: t.scope_groups for t in tools},
        )

    @property
    def search_index(self) -> SearchIndex:
        """The catalog's search index, created on first use; it follows the catalog's
        version, re-analysing only the tools that changed; lexical or hybrid as
        ``search_settings`` say. ``ConfigError`` when the ``search`` extra (or, for
        hybrid, the ``semantic`` extra) is not installed."""
        if self._search_index is None:
            self._search_index = SearchIndex(self.catalog, self.search_settings)
        return self._search_index

    def _budget_problem(
        self, view: View, before: View | None = None, change: str = "the activation"
    ) -> str | None:
        if not self.has_budget:
            return None  # don't compute a view nobody will measure
        count = len(view.visible)
        if self.max_tools is not None and count > self.max_tools:
            have = len(before.visible) if before is not None else 0
            return (
                f"{count} tools would be visible, over max_tools={self.max_tools} "
                f"({change} adds {count - have}; the budget leaves "
                f"{max(self.max_tools - have, 0)})"
            )
        if self.max_tokens is not None:
            tokens = self.view_tokens(view)
            if tokens > self.max_tokens:
                have = self.view_tokens(before) if before is not None else 0
                return (
                    f"{tokens} tokens would be visible ({self.token_counter.name}), over "
                    f"max_tokens={self.max_tokens} ({change} adds {tokens - have}; "
                    f"the budget leaves {max(self.max_tokens - have, 0)})"
                )
        return None

    # -- sessions ----------------------------------------------------------------------
    def session(
        self, key: str | None, principal: Principal | None = None, *, all_groups: bool = False
    ) -> Session:
        """A handle on one session's state. ``key=None`` is an ephemeral session: it
        sees the initial state and records nothing (stateless protocol, catalog mode).
        ``all_groups=True`` treats every group as active (catalog and flat delivery:
        discovery gating is not access control)."""
        return Session(self, key, principal or self.default_principal, all_groups=all_groups)

    async def close(self) -> None:
        await self.store.close()
        self.events.close()

    # -- call helpers ------------------------------------------------------------------
    def validate_arguments(self, tool: Tool, arguments: Mapping[str, Any]) -> str | None:
        """A message describing why ``arguments`` don't fit the tool's input schema."""
        import jsonschema

        cached = self._validators.get(tool.name)
        if cached is None or cached[0] is not tool:
            cls = jsonschema.validators.validator_for(tool.input_schema)
            cached = (tool, cls(tool.input_schema))
            self._validators[tool.name] = cached
        if cached[1].is_valid(arguments):  # the common case: stop at no error, sort nothing
            return None
        errors = sorted(cached[1].iter_errors(arguments), key=lambda e: list(e.path))
        parts = []
        for e in errors[:5]:
            where = "/".join(str(p) for p in e.absolute_path) or "(root)"
            parts.append(f"{where}: {e.message}")
        return f"Invalid arguments for tool {tool.name!r}: " + "; ".join(parts)

    def hidden_error(self, s: Surfacing, stage: str) -> ToolgateError:
        """The error for calling a tool that is not visible (``stage``: the current one)."""
        if s.is_unknown_to_principal or self.hidden_tool_errors == "opaque":
            return ToolNotFound(s.name)
        tool, kind, reason = s.tool, s.reason.kind, str(s.reason)
        assert tool is not None
        if kind is ReasonKind.STAGE_LOCKED:
            need = list(s.reason.stages)
            return ToolHidden(
                f"Tool {s.name!r} is only available in stage {' or '.join(map(repr, need))}; "
                f"this session is in stage {stage!r}.",
                tool=s.name,
                reason=reason,
                stages=need,
                current_stage=stage,
            )
        if kind is ReasonKind.GROUP_INACTIVE:
            chain = min(([*reversed(self.catalog.ancestors(g)), g] for g in tool.groups), key=len)
            return ToolHidden(
                f"Tool {s.name!r} is not enabled. Enable group {chain[-1]!r} first"
                + (f" (and its parents {chain[:-1]})" if len(chain) > 1 else "")
                + ", then call it again.",
                tool=s.name,
                reason=reason,
                groups=list(tool.groups),
                enable=chain,
            )
        return ToolHidden(
            f"Tool {s.name!r} is not available in the current state.", tool=s.name, reason=reason
        )


class Session:
    """One client's view of a ``ToolSet``: its state, its list, its calls."""

    def __init__(
        self, toolset: ToolSet, key: str | None, principal: Principal, *, all_groups: bool = False
    ) -> None:
        self.toolset = toolset
        self.key = key
        self.principal = principal
        self.all_groups = all_groups
        toolset.ladder.check(principal.trust)

    @property
    def ephemeral(self) -> bool:
        return self.key is None

    def _emit(self, type_: str, **data: Any) -> None:
        self.toolset.events.emit(type_, session=self.key, principal=self.principal.id, **data)

    def _fresh(self, state: SessionState) -> SessionState:
        """A brand-new session starts with the initial groups."""
        if state.version == 0:
            ts = self.toolset
            ts.validate()
            return replace(state, active=frozenset(ts.initial_groups))
        return state

    async def state(self) -> SessionState:
        state = EMPTY if self.key is None else await self.toolset.store.load(self.key)
        state = self._fresh(state)
        if self.all_groups:
            state = replace(state, active=frozenset(self.toolset.catalog.groups))
        return state

    async def view(self) -> View:
        return self.toolset.view(self.principal, await self.state())

    async def list_tools(self) -> tuple[Tool, ...]:
        return (await self.view()).visible

    async def estimate_tokens(self) -> dict[str, Any]:
        """The token cost of this session's visible tools now (``ToolSet.estimate``)."""
        return self.toolset.estimate(await self.view())

    async def explain(self) -> list[Surfacing]:
        return (await self.view()).explain()

    async def list_groups(self) -> list[GroupInfo]:
        """Groups in this principal's scope, name-sorted (root is never listed)."""
        view = await self.view()
        return self.group_infos(view)

    def group_infos(self, view: View) -> list[GroupInfo]:
        """``tool_count`` counts the tools this principal may run: a tool hidden by an
        access rule is, to it, indistinguishable from a tool that does not exist."""
        cat = self.toolset.catalog
        return [
            GroupInfo(
                g.name,
                g.title,
                g.description,
                v.active,
                g.parent,
                sum(1 for t in cat.tools_in(g.name) if view.is_accessible(t)),
            )
            for v in view.groups
            if v.visible and (g := v.group) is not None
        ]

    def available_groups(self, view: View) -> list[str]:
        """Activatable child groups (the wags menu's ``available_groups``)."""
        return [
            v.name for v in view.groups if v.activatable and v.group and v.group.parent is not None
        ]

    # -- mutation --------------------------------------------------------------------
    async def _mutate(
        self, change: Callable[[SessionState], Awaitable[tuple[SessionState, R]]]
    ) -> R:
        if self.key is None:
            _, result = await change(self._fresh(EMPTY))
            return result

        async def fresh_change(state: SessionState) -> tuple[SessionState, R]:
            return await change(self._fresh(state))

        # compared against the fresh state: a new session that switches its initial
        # groups off must be written, or it would start over with them on next time
        return await self.toolset.store.mutate(self.key, fresh_change, baseline=self._fresh)

    async def _run_hook(self, group: Group, action: str) -> None:
        hook = group.on_activate if action == "activate" else group.on_deactivate
        if hook is None:
            return
        await _maybe_await(hook(HookContext(group.name, self.key, self.principal, action)))

    async def activate(self, names: Sequence[str]) -> ChangeResult:
        """Enable groups. Parents are applied before children whatever the order given;
        each group succeeds or fails on its own, and failures leave it unchanged.
        Activating a member of an exclusion set turns the other members off."""
        return await self._change_groups("activate", names)

    async def deactivate(self, names: Sequence[str]) -> ChangeResult:
        """Disable groups and, with them, their active descendants."""
        return await self._change_groups("deactivate", names)

    async def _change_groups(self, action: Action, names: Sequence[str]) -> ChangeResult:
        """One atomic store mutation: plan each group over the view of the state so far
        (``toolgate.activation``), check the budget, run its hooks, then apply it."""
        ts = self.toolset

        async def change(state: SessionState) -> tuple[SessionState, ChangeResult]:
            before = ts.view(self.principal, state)
            pending, errors = requested(before, names)
            done: list[str]
            off: list[str]
            current, done, off = state, [], []  # off: displaced or cascaded groups
            for n in pending:
                now = ts.view(self.principal, current)
                step: Step | GroupError | None
                if action == "activate":
                    step = activate_step(now, current, n, done)
                else:
                    step = deactivate_step(now, current, n, off)
                if isinstance(step, Step):
                    step = await self._try(action, step, now)
                if isinstance(step, GroupError):
                    errors.append(step)
                elif step is not None:
                    current = step.state
                    done.append(n)
                    off.extend(step.off)
            after = ts.view(self.principal, current)
            return current, ChangeResult(
                action, tuple(done), tuple(off), tuple(errors), before, after
            )

        result: ChangeResult = await self._mutate(change)
        for g in result.changed:
            self._emit(f"group.{action}d", group=g)
        cause = "exclusion" if action == "activate" else "cascade"
        for g in result.also_disabled:
            self._emit("group.deactivated", group=g, cause=cause)
        self._emit_surfaced(result.before, result.after)
        return result

    async def _try(self, action: Action, step: Step, now: View) -> Step | GroupError:
        """``step`` if it fits the budget and its hooks succeed (hooks of the groups it
        turns off first, then its own); else the error, and nothing changes."""
        ts, n = self.toolset, step.group
        if action == "activate" and ts.has_budget:
            problem = ts._budget_problem(ts.view(self.principal, step.state), now)
            if problem is not None:
                self._emit("budget.exceeded", group=n, detail=problem)
                return GroupError(n, BudgetExceeded.code, f"Cannot enable group {n!r}: {problem}")
        groups = ts.catalog.groups
        try:
            for d in step.off:
                await self._run_hook(groups[d], "deactivate")
            await self._run_hook(groups[n], action)
        except Exception as exc:
            what = "Activation" if action == "activate" else "Deactivation"
            return GroupError(n, "hook_failed", f"{what} hook of group {n!r} failed: {exc}")
        return step

    def _emit_surfaced(self, before: View, after: View) -> None:
        if not self.toolset.events.active:
            return
        for name in sorted(after.visible_names - before.visible_names):
            self._emit("tool.surfaced", tool=name, state="enabled")
        for name in sorted(before.visible_names - after.visible_names):
            self._emit("tool.surfaced", tool=name, state="disabled")

    async def mark(
        self, *, described: Iterable[str] = (), revealed: Iterable[str] = ()
    ) -> tuple[View, View]:
        """Record tools as described (lazy descriptions) or revealed (search results)."""
        ts = self.toolset
        d, r = frozenset(described), frozenset(revealed)

        async def change(state: SessionState) -> tuple[SessionState, tuple[View, View]]:
            new = replace(state, described=state.described | d, revealed=state.revealed | r)
            return new, (ts.view(self.principal, state), ts.view(self.principal, new))

        before, after = await self._mutate(change)
        self._emit_surfaced(before, after)
        return before, after

    async def reveal(self, names: Sequence[str]) -> RevealResult:
        """Show tools whatever their groups (search results), in the order given, as far
        as the budgets allow: a tool that would exceed one stays hidden and is reported
        in ``refused`` (and as a ``budget.exceeded`` event). Access rules still apply."""
        ts = self.toolset
        requested = list(dict.fromkeys(names))

        async def change(state: SessionState) -> tuple[SessionState, RevealResult]:
            current = state
            revealed: list[str] = []
            refused: list[tuple[str, str]] = []
            for n in requested:
                if n in current.revealed:
                    continue
                trial = replace(current, revealed=current.revealed | {n})
                if ts.has_budget:
                    now = ts.view(self.principal, current)
                    problem = ts._budget_problem(
                        ts.view(self.principal, trial), now, f"revealing {n!r}"
                    )
                    if problem is not None:
                        refused.append((n, problem))
                        continue
                current = trial
                revealed.append(n)
            before, after = ts.view(self.principal, state), ts.view(self.principal, current)
            return current, RevealResult(tuple(revealed), tuple(refused), before, after)

        result: RevealResult = await self._mutate(change)
        for n, problem in result.refused:
            self._emit("budget.exceeded", tool=n, detail=problem)
        self._emit_surfaced(result.before, result.after)
        return result

    async def set_stage(self, stage: str, *, trigger: str | None = None) -> bool:
        """Move the session to ``stage``; returns whether its visible set changed."""
        ts = self.toolset
        ts.catalog.flow.check(stage, where="set_stage")

        async def change(state: SessionState) -> tuple[SessionState, tuple[str, View, View]]:
            old = ts.catalog.flow.current(state.stage)
            new = replace(state, stage=stage)
            return new, (old, ts.view(self.principal, state), ts.view(self.principal, new))

        old, before, after = await self._mutate(change)
        if old != stage:
            self._emit("tool.progressed", **{"from": old, "to": stage, "trigger": trigger})
            self._emit_surfaced(before, after)
        return before.visible_names != after.visible_names

    # -- dispatch ----------------------------------------------------------------------
    async def check_call(self, name: str) -> tuple[Tool, View]:
        """The view's verdict for calling ``name`` now; raises the error a client gets."""
        tool, view, _ = await self._check_call(name)
        return tool, view

    async def _check_call(self, name: str) -> tuple[Tool, View, SessionState]:
        state = await self.state()
        view = self.toolset.view(self.principal, state)
        s = view.surfacing(name)
        if not s.visible:
            self._emit("tool.executed", tool=name, outcome="blocked", reason=str(s.reason))
            raise self.toolset.hidden_error(s, view.ctx.stage)
        assert s.tool is not None
        return s.tool, view, state

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        confirmer: Confirmer | None = None,
        extras: Mapping[str, Any] | None = None,
        handler: Callable[[Mapping[str, Any], CallContext], Any] | None = None,
    ) -> CallOutcome:
        """Run a visible tool. Access and discovery rules come from the view; then the
        describe-before-call gate, argument validation, the rate limit and confirmation.
        A successful call may move the session to its next stage."""
        ts = self.toolset
        tool, view, state = await self._check_call(name)
        if (
            ts.describe_before_call
            and self.key is not None
            # the session's own state: a cached view may carry an older ``described``
            and name not in state.described
        ):
            # first: an undescribed call learns where the schema is, spends no rate-limit slot
            self._emit("tool.executed", tool=name, outcome="blocked", reason="description-required")
            raise ts.description_required(name)
        args: Mapping[str, Any] = arguments if arguments is not None else {}
        if not isinstance(args, Mapping):
            return self._refuse_args(name, "Arguments must be a JSON object")
        # arguments first: a malformed call neither spends a rate-limit slot nor asks a human
        problem = ts.validate_arguments(tool, args)
        if problem is not None:
            return self._refuse_args(name, problem)
        policy = tool.policy
        if policy.rate_limit is not None:
            bucket = f"{self.principal.id}\x1f{name}"
            retry = await ts.store.rate_check(
                bucket, policy.rate_limit.max, policy.rate_limit.window_s
            )
            if retry is not None:
                self._emit("tool.executed", tool=name, outcome="blocked", reason="rate-limited")
                raise RateLimited(name, retry)
        if policy.decision == "confirm":
            await self._confirm(tool, args, confirmer)
        run = handler or tool.handler
        if run is None:
            raise RegistrationError(f"Tool {name!r} has no handler", name=name)
        ctx = CallContext(name, self.key, self.principal, extras or {})
        started = time.perf_counter()
        try:
            result = to_result(await _maybe_await(run(args, ctx)))
        except Exception as exc:
            if isinstance(exc, ToolgateError) and not isinstance(exc, RelayedError):
                raise  # a refusal, not a call that ran
            took = time.perf_counter() - started
            self._emit(
                "tool.executed", tool=name, outcome="error", reason=str(exc)[:200], duration_s=took
            )
            if isinstance(exc, RelayedError):
                raise  # it ran elsewhere and failed: the caller hears that server's error
            return CallOutcome(ToolResult.error(f"Tool {name!r} failed: {exc}"))
        took = time.perf_counter() - started
        if result.is_error:
            self._emit(
                "tool.executed",
                tool=name,
                outcome="error",
                reason="tool reported error",
                duration_s=took,
            )
            return CallOutcome(result)
        self._emit("tool.executed", tool=name, outcome="success", duration_s=took)
        stage = view.ctx.stage
        nxt = ts.catalog.flow.next_stage(stage, name, tool.next_stage)
        if nxt is None or nxt == stage:
            return CallOutcome(result)
        try:
            changed = await self.set_stage(nxt, trigger=name)
        except Exception as exc:
            # The tool has run: a failure here must not read as a failed call, or a
            # client's retry would repeat its side effect. Report the result; log this.
            problem = exc.message if isinstance(exc, ToolgateError) else f"{exc}"
            logger.error(
                "tool %r ran, but moving session %r to stage %r failed: %s",
                name,
                self.key,
                nxt,
                problem,
            )
            return CallOutcome(result, stage_from=stage, state_error=problem)
        return CallOutcome(result, stage_from=stage, stage_to=nxt, visible_changed=changed)

    def _refuse_args(self, name: str, message: str) -> CallOutcome:
        self._emit("tool.executed", tool=name, outcome="error", reason="invalid-arguments")
        return CallOutcome(ToolResult.error(message))

    async def _confirm(
        self, tool: Tool, args: Mapping[str, Any], confirmer: Confirmer | None
    ) -> None:
        if confirmer is None:
            self._emit("tool.executed", tool=tool.name, outcome="blocked", reason="no-confirmer")
            raise ConfirmationRefused(
                f"Tool {tool.name!r} needs a human's confirmation, and this client cannot "
                "ask for it (no elicitation support). Nothing was run.",
                tool=tool.name,
            )
        request = ConfirmRequest(
            tool=tool.name,
            arguments=dict(args),
            principal=self.principal,
            message=f"Allow {self.principal.id!r} to run {tool.name!r} with {dict(args)!r}?",
        )
        if not await confirmer.confirm(request):
            self._emit("tool.executed", tool=tool.name, outcome="blocked", reason="declined")
            raise ConfirmationRefused(
                f"The user declined to run {tool.name!r}. Nothing was run.", tool=tool.name
            )
