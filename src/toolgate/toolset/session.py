"""``Session``: one client's handle on a ``ToolSet``: its state, its list, its changes.

Group changes are planned over the view (``toolgate.activation``) and applied in one
store mutation with budgets, hooks and events; a call goes to ``toolset.dispatch``.
Orchestration: imports the core and ``toolset.dispatch``; reads its ``ToolSet`` through
``ToolsetHost``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

from toolgate.activation import (
    Action,
    ChangeResult,
    GroupError,
    Step,
    activate_step,
    deactivate_step,
    group_names,
    requested,
    tool_names,
)
from toolgate.catalog import Group, Handler, HookContext, Tool
from toolgate.errors import BudgetExceeded, ConfigError, HookFailed
from toolgate.events import EventBus
from toolgate.policy import Confirmer, Principal, TrustLadder
from toolgate.state.base import EMPTY, SessionState
from toolgate.toolset.dispatch import CallingToolset, CallOutcome, dispatch, maybe_await
from toolgate.view import Surfacing, View


class ToolsetHost(CallingToolset, Protocol):
    """What a session reads of its ``ToolSet`` (``toolgate.toolset.toolset``), named here
    so this module does not import the one that builds sessions."""

    @property
    def events(self) -> EventBus: ...
    @property
    def ladder(self) -> TrustLadder: ...
    @property
    def initial_groups(self) -> tuple[str, ...]: ...
    @property
    def has_budget(self) -> bool: ...
    def validate(self) -> None: ...
    def budget_problem(
        self, view: View, before: View | None = None, change: str = "the activation"
    ) -> str | None: ...
    def initial_state(self) -> SessionState: ...
    def tool_tokens(self, tool: Tool) -> int: ...
    def estimate(self, view: View) -> dict[str, Any]: ...
    def session(
        self,
        key: str | None,
        principal: Principal | None = None,
        *,
        all_groups: bool = False,
        trial: bool = False,
    ) -> Session: ...


R = TypeVar("R")


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


class Session:
    """One client's view of a ``ToolSet``: its state, its list, its calls."""

    def __init__(
        self,
        toolset: ToolsetHost,
        key: str | None,
        principal: Principal,
        *,
        all_groups: bool = False,
        trial: bool = False,
    ) -> None:
        if key is not None and not isinstance(key, str):
            raise ConfigError(
                f"A session key must be a string or None, got {type(key).__name__}", key="session"
            )
        if not isinstance(principal, Principal):
            raise ConfigError(
                f"A session's principal must be a Principal, got {type(principal).__name__} "
                f"{principal!r:.80}",
                key="principal",
            )
        toolset.ladder.check(principal.trust)
        self.toolset = toolset
        self.key = key
        self.principal = principal
        self.all_groups = all_groups
        if trial and key is not None:
            raise ConfigError(
                "A trial session records nothing: its key must be None", key="session"
            )
        #: a trial of what a change would show: no events, no hooks, nothing stored
        self.trial = trial

    @property
    def ephemeral(self) -> bool:
        return self.key is None

    def _emit(self, type_: str, **data: Any) -> None:
        if self.trial:
            return  # nothing happened to tell of
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
        if hook is None or self.trial:  # a trial activates nothing: a hook's effects are real
            return
        await maybe_await(hook(HookContext(group.name, self.key, self.principal, action)))

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
        names = group_names(names)  # before the store is touched: bad input changes nothing

        async def change(state: SessionState) -> tuple[SessionState, ChangeResult]:
            before = ts.view(self.principal, state)
            pending, errors = requested(before, names)
            done: list[str]
            off: list[str]
            current, done, off = state, [], []  # off: displaced or cascaded groups
            for i, n in enumerate(pending):
                now = ts.view(self.principal, current)
                step: Step | GroupError | None
                if action == "activate":
                    step = activate_step(now, current, n, pending[:i], stateless=self.ephemeral)
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
            problem = ts.budget_problem(ts.view(self.principal, step.state), now)
            if problem is not None:
                self._emit("budget.exceeded", group=n, detail=problem)
                return GroupError(n, BudgetExceeded.code, f"Cannot enable group {n!r}: {problem}")
        groups = ts.catalog.groups
        try:
            for d in step.off:
                await self._run_hook(groups[d], "deactivate")
            await self._run_hook(groups[n], action)
        except Exception as exc:
            return GroupError.of(n, HookFailed(n, action, exc))
        return step

    def _emit_surfaced(self, before: View, after: View) -> None:
        if not self.toolset.events.active or self.trial:
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
        d, r = frozenset(tool_names(described)), frozenset(tool_names(revealed))

        async def change(state: SessionState) -> tuple[SessionState, tuple[View, View]]:
            new = replace(state, described=state.described | d, revealed=state.revealed | r)
            return new, (ts.view(self.principal, state), ts.view(self.principal, new))

        before, after = await self._mutate(change)
        self._emit_surfaced(before, after)
        return before, after

    async def reveal(self, names: Iterable[str]) -> RevealResult:
        """Show tools whatever their groups (search results), in the order given, as far
        as the budgets allow: a tool that would exceed one stays hidden and is reported
        in ``refused`` (and as a ``budget.exceeded`` event). Access rules still apply."""
        ts = self.toolset
        requested = list(dict.fromkeys(tool_names(names)))  # before the store is touched

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
                    problem = ts.budget_problem(
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

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        confirmer: Confirmer | None = None,
        extras: Mapping[str, Any] | None = None,
        handler: Handler | None = None,
    ) -> CallOutcome:
        """Run a visible tool (``toolgate.toolset.dispatch``). Access and discovery rules
        come from the view; then the describe-before-call gate, argument validation, the
        rate limit and confirmation. A successful call may move the session to its next
        stage."""
        return await dispatch(self, name, arguments, confirmer, extras, handler)
