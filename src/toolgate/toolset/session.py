"""``Session``: one client's handle on a ``ToolSet``: its state, its list, its changes.

Group changes are planned over the view (``toolgate.activation``) and applied in one
store mutation with budgets, hooks and events; a call goes to ``toolset.dispatch``.
Orchestration: imports the core and ``toolset.dispatch``; reads its ``ToolSet`` through
``ToolsetHost``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol, TypeVar

from toolgate.activation import (
    Action,
    ChangeResult,
    GroupError,
    Step,
    activate_step,
    deactivate_step,
    exclusion_problem,
    group_names,
    requested,
    tool_names,
    unreveal,
)
from toolgate.catalog import Group, Handler, HookContext, Tool
from toolgate.errors import BudgetExceeded, ConfigError, HookFailed
from toolgate.policy import Confirmer, Principal
from toolgate.state.base import EMPTY, SessionState
from toolgate.toolset.dispatch import (
    CallOutcome,
    StageMove,
    dispatch,
    maybe_await,
)
from toolgate.toolset.outcomes import (
    ChangePlan,
    GroupInfo,
    RevealResult,
    ToolsetParts,
    conflict,
    group_infos,
)
from toolgate.view import Surfacing, View


class ToolsetHost(ToolsetParts, Protocol):
    """What a session reads of its ``ToolSet``, and the sessions it makes."""

    def session(
        self,
        key: str | None,
        principal: Principal | None = None,
        *,
        all_groups: bool = False,
        trial: bool = False,
    ) -> Session: ...


R = TypeVar("R")
logger = logging.getLogger("toolgate.session")


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
        """The groups ``view``'s principal may see, as ``list_groups`` shows them."""
        return group_infos(view)

    def available_groups(self, view: View) -> list[str]:
        """Activatable child groups (the wags menu's ``available_groups``); a group whose
        parent is out of the principal's scope is, to it, not a child."""
        return [v.name for v in view.groups if v.activatable and view.ctx.parent(v.name)]

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
        """Plan each group over the view of the state so far (``toolgate.activation``),
        check the budget and run its hooks, once; then write the planned state in one
        store mutation. Hooks never run inside the store's retried compare-and-set: when
        another writer (a replica) changed the session meanwhile, the request is planned
        again on the fresh state without hooks; a group whose step is unchanged is
        applied, one whose step changed is refused and its hooks undone."""
        ts = self.toolset
        names = group_names(names)  # before the store is touched: bad input changes nothing
        if self.key is None:
            plan = await self._plan(action, names, self._fresh(EMPTY))
            return self._report(action, plan.result)
        # the first read plans and runs the hooks, once, under the store's per-key lock; a
        # retry (another writer came first) plans again, hooks not run (``_plan``'s first)
        firsts: list[tuple[SessionState, ChangePlan]] = []

        async def change(state: SessionState) -> tuple[SessionState, ChangePlan]:
            state = self._fresh(state)
            if not firsts:
                firsts.append((state, await self._plan(action, names, state)))
            start, first = firsts[0]
            if state == start:  # nobody wrote since: the plan stands
                return first.state, first
            return (plan := await self._plan(action, names, state, first)).state, plan

        try:
            final: ChangePlan = await ts.store.mutate(self.key, change, baseline=self._fresh)
        except BaseException:
            # nothing was written: what the hooks did is undone, last first
            for _, first in firsts:
                await self._undo([h for ran in first.ran.values() for h in ran])
            raise
        first = firsts[0][1]
        for group in reversed(final.undo):
            await self._undo(first.ran[group])
        return self._report(action, final.result)

    async def _plan(
        self,
        action: Action,
        names: Sequence[str],
        state: SessionState,
        first: ChangePlan | None = None,
    ) -> ChangePlan:
        """The request applied to ``state`` group by group. With no ``first`` plan, the
        budget is checked and hooks run as each group is reached. Re-planned after a
        concurrent write (``first``): no hook runs; a group ``first`` changed is applied
        if its step is the same, else refused and listed in ``undo``; a group ``first``
        did not change keeps its outcome."""
        ts = self.toolset
        before = ts.view(self.principal, state)
        pending, errors = requested(before, names)
        current, done, off = state, list[str](), list[str]()  # off: displaced or cascaded
        held = list[str]()  # groups the request leaves on: enabled by it, or already on
        plan = ChangePlan(state, None)
        for n in pending:
            now = ts.view(self.principal, current)
            step: Step | GroupError | None
            if action == "activate":
                step = activate_step(now, current, n, held, stateless=self.ephemeral)
            else:
                step = deactivate_step(now, current, n, off)
            if isinstance(step, Step):
                step = self._budget(action, step, now, emit=first is None) or step
            if first is None:
                if isinstance(step, Step):
                    step = await self._try(action, step, plan)
            elif n not in first.ran:
                if isinstance(step, Step):  # not changed at first: no hook ran for it
                    step = first.failed.get(n) or conflict(n)
            elif not isinstance(step, GroupError) and (step is None or step.off != first.steps[n]):
                plan.undo.append(n)
                step = conflict(n)
            elif isinstance(step, GroupError):
                plan.undo.append(n)
            if isinstance(step, GroupError):
                errors.append(step)
                plan.failed[n] = step
                if step.code == "already_active":
                    held.append(n)
            elif step is not None:
                current = step.state
                done.append(n)
                held.append(n)
                off.extend(step.off)
                plan.steps[n] = step.off
        after = ts.view(self.principal, current)
        pruned = unreveal(after, [*done, *off] if action == "deactivate" else off)
        if pruned is not after.ctx.state:
            current, after = pruned, ts.view(self.principal, pruned)
        plan.state = current
        plan.result = ChangeResult(action, tuple(done), tuple(off), tuple(errors), before, after)
        return plan

    def _report(self, action: Action, result: ChangeResult | None) -> ChangeResult:
        assert result is not None
        for g in result.changed:
            self._emit(f"group.{action}d", group=g)
        cause = "exclusion" if action == "activate" else "cascade"
        for g in result.also_disabled:
            self._emit("group.deactivated", group=g, cause=cause)
        self._emit_surfaced(result.before, result.after)
        return result

    def _budget(self, action: Action, step: Step, now: View, *, emit: bool) -> GroupError | None:
        """The refusal of ``step`` when it would take the view over a budget."""
        ts, n = self.toolset, step.group
        if action != "activate" or not ts.has_budget:
            return None
        problem = ts.budget_problem(ts.view(self.principal, step.state), now)
        if problem is None:
            return None
        if emit:
            self._emit("budget.exceeded", group=n, detail=problem)
        return GroupError(n, BudgetExceeded.code, f"Cannot enable group {n!r}: {problem}")

    async def _try(self, action: Action, step: Step, plan: ChangePlan) -> Step | GroupError:
        """``step`` if its hooks succeed (``Step.hooks`` says in which order), recorded in
        ``plan.ran``; else the error, the hooks that had run undone, and nothing changes."""
        hooks, ran = step.hooks(action), list[tuple[str, Action]]()
        for group, act in hooks:
            try:
                await self._run_hook(self.toolset.catalog.groups[group], act)
            except Exception as exc:
                await self._undo(ran)
                # named for the group asked for (a displaced peer may be one the
                # principal does not know of), as HookFailed says
                return GroupError.of(step.group, HookFailed(step.group, action, exc))
            ran.append((group, act))
        plan.ran[step.group] = tuple(ran)
        return step

    async def _undo(self, ran: Sequence[tuple[str, Action]]) -> None:
        """Undo hooks that ran for a change that did not happen: each one's opposite
        hook, last first. A failing undo is logged; the others still run."""
        groups = self.toolset.catalog.groups
        for group, act in reversed(ran):
            opposite: Action = "deactivate" if act == "activate" else "activate"
            try:
                if group in groups:
                    await self._run_hook(groups[group], opposite)
            except Exception as exc:
                logger.warning(
                    "group %r: undoing its %s hook, its %s hook raised %s: %s",
                    group,
                    act,
                    opposite,
                    type(exc).__name__,
                    f"{exc}"[:200],
                )

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
        in ``refused`` (and as a ``budget.exceeded`` event). Access rules still apply,
        and so do exclusion sets: a tool whose every group an enabled exclusion peer
        keeps off stays hidden, reported in ``refused``, as does one a reveal would not
        show (locked to another stage, a predicate, an unknown name): only what shows is
        recorded. A revealed tool stays shown until a group change closes or displaces
        its groups (``activation.unreveal``)."""
        ts = self.toolset
        requested = list(dict.fromkeys(tool_names(names)))  # before the store is touched

        async def change(state: SessionState) -> tuple[SessionState, RevealResult]:
            current = state
            revealed: list[str] = []
            refused: list[tuple[str, str]] = []
            over: list[str] = []
            for n in requested:
                if n in current.revealed:
                    continue
                now = ts.view(self.principal, current)
                tool = ts.catalog.tool(n)
                if tool is not None and now.is_accessible(n):
                    # a reveal never gets around an exclusion set (activation would
                    # turn the excluding group off; a reveal turns nothing off)
                    problem = exclusion_problem(now, tool)
                    if problem is not None:
                        refused.append((n, problem))
                        continue
                trial = replace(current, revealed=current.revealed | {n})
                shown = ts.view(self.principal, trial)
                if not shown.is_visible(n):
                    # a reveal lifts the group gate only: a tool still hidden (by its
                    # stage, a predicate, access, or none of that name) is not recorded,
                    # or it would appear later, unannounced and past the budget's check.
                    # Said as a call of it would be answered (hint or opaque)
                    refused.append((n, ts.hidden_error(shown.surfacing(n), shown).message))
                    continue
                if ts.has_budget:
                    problem = ts.budget_problem(shown, now, f"revealing {n!r}")
                    if problem is not None:
                        refused.append((n, problem))
                        over.append(n)
                        continue
                current = trial
                revealed.append(n)
            before, after = ts.view(self.principal, state), ts.view(self.principal, current)
            return current, RevealResult(
                tuple(revealed), tuple(refused), before, after, tuple(over)
            )

        result: RevealResult = await self._mutate(change)
        for n, problem in result.refused:
            if n in result.over_budget:
                self._emit("budget.exceeded", tool=n, detail=problem)
        self._emit_surfaced(result.before, result.after)
        return result

    async def set_stage(self, stage: str, *, trigger: str | None = None) -> bool:
        """Move the session to ``stage``; returns whether its visible set changed. A move
        that would show a tool over ``max_tools`` / ``max_tokens`` changes nothing and
        raises ``BudgetExceeded`` (and a ``budget.exceeded`` event)."""
        flow = self.toolset.catalog.flow
        flow.check(stage, where="set_stage")

        async def change(
            state: SessionState,
        ) -> tuple[SessionState, tuple[StageMove, tuple[View, View] | None]]:
            return self._stage_step(state, flow.current(state.stage), stage)

        move, views = await self._mutate(change)
        self._tell_move(move, views, trigger)
        if move.refused is not None:
            raise BudgetExceeded(f"Cannot move to stage {stage!r}: {move.refused}", stage=stage)
        return move.visible_changed

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

    # -- stages ----------------------------------------------------------------------
    async def advance(self, tool: Tool) -> StageMove:
        """Take the transition a successful call of ``tool`` leads to, worked out from the
        stage the session is in when the move is written (a concurrent call may have
        moved it since this one started): that stage's own transition on ``tool``, else
        the tool's ``next_stage`` where the tool is available. A move that would show a
        tool over a budget is refused: ``refused`` says why, and nothing changes."""
        flow = self.toolset.catalog.flow

        async def change(
            state: SessionState,
        ) -> tuple[SessionState, tuple[StageMove, tuple[View, View] | None]]:
            old = flow.current(state.stage)
            nxt = flow.next_stage(old, tool.name, None)
            if nxt is None and flow.allows(tool.stages, old):
                nxt = tool.next_stage
            if nxt is None or nxt == old:
                return state, (StageMove(old), None)
            flow.check(nxt, where=f"the next_stage of tool {tool.name!r}")
            return self._stage_step(state, old, nxt)

        move, views = await self._mutate(change)
        self._tell_move(move, views, tool.name)
        return move

    def _stage_step(
        self, state: SessionState, old: str, stage: str
    ) -> tuple[SessionState, tuple[StageMove, tuple[View, View] | None]]:
        """``state`` moved from ``old`` to ``stage``, or left as it is when the move would
        show a new tool and leave the view over a budget (a move that only hides tools
        is never refused: it cannot make an overflow worse)."""
        ts = self.toolset
        new = replace(state, stage=stage)
        before, after = ts.view(self.principal, state), ts.view(self.principal, new)
        if ts.has_budget and not after.visible_names <= before.visible_names:
            problem = ts.budget_problem(after, before, f"the move to stage {stage!r}")
            if problem is not None:
                return state, (StageMove(old, stage, refused=problem), None)
        changed = before.visible_names != after.visible_names
        return new, (StageMove(old, stage, changed), (before, after))

    def _tell_move(
        self, move: StageMove, views: tuple[View, View] | None, trigger: str | None
    ) -> None:
        if move.refused is not None:
            self._emit("budget.exceeded", stage=move.to, trigger=trigger, detail=move.refused)
        elif move.to is not None and move.to != move.stage_from:
            self._emit(
                "tool.progressed", **{"from": move.stage_from, "to": move.to, "trigger": trigger}
            )
            if views is not None:
                self._emit_surfaced(*views)
