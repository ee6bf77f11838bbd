"""The one surfacing pipeline: which tools and groups a principal sees, and why.

``compute_view`` is a pure function of (catalog, principal, state), its rules in DESIGN
§4's order; listing, dispatch, activation, ``explain``, budgets and search all read a
``View`` and re-implement no rule. Views are cached. Core: imports catalog, policy, state,
and ``reasons`` (how verdicts are said, re-exported here).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from toolgate.catalog import ByGroup, Catalog, Group, StateSnapshot, Tool, When
from toolgate.policy import Principal, TrustLadder
from toolgate.reasons import (
    ACTIVATABLE,
    ACTIVE,
    NOTHING_USABLE,
    OUT_OF_SCOPE,
    UNKNOWN,
    VISIBLE,
)
from toolgate.reasons import (
    Reason as Reason,  # said here, decided here: the view's public names
)
from toolgate.reasons import (
    ReasonKind as ReasonKind,
)
from toolgate.state.base import SessionState

logger = logging.getLogger("toolgate.view")


def in_scope(catalog: Catalog, principal: Principal, group: str) -> bool:
    """Scope (DESIGN §4): a group is in scope when it or an ancestor is named, and
    ``"*"`` names every group; ungrouped tools count as group ``"default"``."""
    scope = principal.scope
    if principal.all_scope or group in scope:
        return True
    return group in catalog.groups and any(a in scope for a in catalog.ancestors(group))


@dataclass(frozen=True)
class RuleContext:
    """Everything a rule may read, fixed for one view."""

    catalog: Catalog
    principal: Principal
    ladder: TrustLadder
    state: SessionState
    stage: str
    effective: frozenset[str]

    @cached_property
    def snapshot(self) -> StateSnapshot:
        return StateSnapshot(self.effective, self.stage, self.principal)

    def ancestors(self, group: str) -> list[str]:
        """``group``'s ancestors the principal may know of, nearest first. An ancestor
        out of its scope (a scope naming only a child group) is transparent: always
        active to it, and never named to it (DESIGN §9, hidden-by-access is unknown).
        Scope reaches down, so those are the top of the chain."""
        return [
            a for a in self.catalog.ancestors(group) if in_scope(self.catalog, self.principal, a)
        ]

    def parent(self, group: str) -> str | None:
        """``group``'s parent as the principal sees it: None when out of its scope."""
        parent = self.catalog.groups[group].parent
        if parent is None or not in_scope(self.catalog, self.principal, parent):
            return None
        return parent

    def excluded_by(self, group: str) -> str | None:
        """The enabled group that keeps ``group`` off by an exclusion set: a peer of
        ``group`` or of one of its ancestors; None when there is none."""
        cat, active = self.catalog, self.state.active
        for g in (group, *cat.ancestors(group)):
            peers = sorted(cat.exclusion_peers(g) & active)
            if peers:
                return peers[0]
        return None

    def excluded(self, tool: Tool) -> bool:
        """Every group of ``tool`` is kept off by an enabled exclusion peer: a reveal
        may not show it (it would put a peer's tool beside the group excluding it)."""
        groups = [g for g in tool.groups if g in self.catalog.groups]
        return bool(groups) and all(self.excluded_by(g) is not None for g in groups)


@dataclass(frozen=True)
class Rule:
    """One step of the pipeline: ``check`` returns a reason when the tool fails it.

    ``access`` rules decide what a principal may use at all; a tool failing one is
    indistinguishable from an unknown tool. The others decide discovery and flow.
    """

    name: str
    access: bool
    check: Callable[[Tool, RuleContext], Reason | str | None]  # a str: ReasonKind.CUSTOM

    def judge(self, tool: Tool, ctx: RuleContext) -> Reason | None:
        reason = self.check(tool, ctx)
        return Reason(ReasonKind.CUSTOM, text=reason) if isinstance(reason, str) else reason


def tool_in_scope(catalog: Catalog, principal: Principal, tool: Tool) -> bool:
    """Scope for a tool: one of its groups (``"default"`` when it has none) is in scope."""
    return principal.all_scope or any(in_scope(catalog, principal, g) for g in tool.scope_groups)


def _scope(tool: Tool, ctx: RuleContext) -> Reason | None:
    return None if tool_in_scope(ctx.catalog, ctx.principal, tool) else OUT_OF_SCOPE


def _trust(tool: Tool, ctx: RuleContext) -> Reason | None:
    need = tool.policy.min_trust
    if need is None:
        return None
    have = ctx.principal.trust
    if ctx.ladder.rank(have) < ctx.ladder.rank(need):
        return Reason(ReasonKind.TRUST_TOO_LOW, have=have, need=need)
    return None


def _agent_class(tool: Tool, ctx: RuleContext) -> Reason | None:
    allowed = tool.policy.allowed_classes
    if allowed and ctx.principal.agent_class not in allowed:
        return Reason(ReasonKind.CLASS_NOT_ALLOWED, have=ctx.principal.agent_class or "none")
    return None


def _authz(tool: Tool, ctx: RuleContext) -> Reason | None:
    return Reason(ReasonKind.AUTHZ_DENY) if tool.policy.decision == "deny" else None


def _stage(tool: Tool, ctx: RuleContext) -> Reason | None:
    if ctx.catalog.flow.allows(tool.stages, ctx.stage):
        return None
    return Reason(ReasonKind.STAGE_LOCKED, stages=tuple(sorted(tool.stages or ())))


def _group(tool: Tool, ctx: RuleContext) -> Reason | None:
    if not tool.groups or not isinstance(tool.visibility, ByGroup):
        return None
    if any(g in ctx.effective for g in tool.groups):
        return None
    if tool.name in ctx.state.revealed and not ctx.excluded(tool):
        return None
    # the first group the principal may know of (an accessible tool is in one)
    known = (g for g in tool.groups if in_scope(ctx.catalog, ctx.principal, g))
    return Reason(ReasonKind.GROUP_INACTIVE, group=next(known, tool.groups[0]))


def _predicate(tool: Tool, ctx: RuleContext) -> Reason | None:
    if not isinstance(tool.visibility, When):
        return None
    try:
        shown = tool.visibility.predicate(ctx.snapshot)
    except Exception as exc:
        # fail closed, as on a store failure: one tool's broken predicate hides that
        # tool, and neither breaks every listing nor shows what it was meant to gate
        logger.warning(
            "tool %r: its When predicate raised %s: %s; the tool stays hidden",
            tool.name,
            type(exc).__name__,
            f"{exc}"[:200],
        )
        shown = False
    return None if shown else Reason(ReasonKind.PREDICATE_FALSE)


DEFAULT_RULES: tuple[Rule, ...] = (
    Rule("out-of-scope", True, _scope),
    Rule("trust", True, _trust),
    Rule("class", True, _agent_class),
    Rule("authz", True, _authz),
    Rule("stage", False, _stage),
    Rule("group", False, _group),
    Rule("predicate", False, _predicate),
)


@dataclass(frozen=True)
class Surfacing:
    """A tool and the pipeline's verdict on it: visible, or the first failing reason."""

    name: str
    tool: Tool | None
    visible: bool
    reason: Reason
    access_denied: bool = False

    @property
    def is_unknown_to_principal(self) -> bool:
        """Unknown or refused by an access rule: the two must look the same."""
        return self.tool is None or self.access_denied


@dataclass(frozen=True)
class GroupSurfacing:
    """A group and the view's verdict on it. The rules run in this order and the first
    that decides is ``reason``: ``unknown`` → ``out-of-scope`` → ``nothing-usable`` (it
    or a group below it holds tools, and the principal may use none of them) →
    ``active`` (effectively active) → ``parent-inactive:<parent>`` → ``activatable``."""

    name: str
    group: Group | None
    reason: Reason
    enabled: bool = False  # in the session's active set, effectively active or not

    @property
    def visible(self) -> bool:
        """The principal may know of it: list it, open it, name it in a request."""
        return self.reason.kind not in HIDDEN_GROUP

    @property
    def active(self) -> bool:
        """Effectively active: enabled, and so is every ancestor."""
        return self.reason.kind is ReasonKind.ACTIVE

    @property
    def activatable(self) -> bool:
        """Not enabled, and its parent (if any) is effectively active."""
        return self.reason.kind is ReasonKind.ACTIVATABLE


#: a group's verdicts that make it, to the principal, a group that does not exist
HIDDEN_GROUP = frozenset({ReasonKind.UNKNOWN, ReasonKind.OUT_OF_SCOPE, ReasonKind.NOTHING_USABLE})


@dataclass(frozen=True)
class GroupReach:
    """Which groups hold tools, in them or in a group below them (``holding``), and which
    hold one that passes every access rule (``usable``). A group in ``holding`` but not
    in ``usable`` offers the principal nothing: to it, the group does not exist, as its
    tools do not (a group that holds no tools at all, a container or one of prompts, is
    decided by scope alone). Access rules never read session state, so one reach serves
    every view of a (catalog version, principal)."""

    holding: frozenset[str]
    usable: frozenset[str]
    #: the groups the usable tools are in themselves (their ancestors left out)
    direct: frozenset[str] = frozenset()


def group_reach(ctx: RuleContext, rules: Sequence[Rule]) -> GroupReach:
    cat = ctx.catalog
    access = [r for r in rules if r.access]
    holding: set[str] = set()
    usable: set[str] = set()
    direct: set[str] = set()
    for name in cat.sorted_names():
        tool = cat.tools[name]
        if not tool.groups:
            continue
        below = {a for g in tool.groups if g in cat.groups for a in (g, *cat.ancestors(g))}
        holding |= below
        if not set(tool.groups) <= direct and all(r.judge(tool, ctx) is None for r in access):
            usable |= below
            direct.update(tool.groups)
    return GroupReach(frozenset(holding), frozenset(usable), frozenset(direct))


def effective_groups(
    catalog: Catalog, active: frozenset[str], principal: Principal | None = None
) -> frozenset[str]:
    """Groups that are active and whose every ancestor is active. For ``principal``,
    an ancestor out of its scope counts as active: a scope that names only a child
    group makes that child usable on its own (``RuleContext.ancestors``)."""
    out = set()
    groups = catalog.groups
    for g in active:
        if g not in groups:
            continue
        parent = groups[g].parent
        ok = True
        while parent is not None:
            if parent not in active and (principal is None or in_scope(catalog, principal, parent)):
                ok = False
                break
            parent = groups[parent].parent
        if ok:
            out.add(g)
    return frozenset(out)


class View:
    """The surfacing of every tool for one (catalog version, principal, state)."""

    def __init__(
        self,
        ctx: RuleContext,
        rules: Sequence[Rule] = DEFAULT_RULES,
        reach: GroupReach | None = None,
    ) -> None:
        self.ctx = ctx
        # access rules first, whatever order they were given in: a tool an access rule
        # refuses reads as unknown even when a discovery rule (its group is closed)
        # would also hide it
        self.rules = tuple(sorted(rules, key=lambda rule: not rule.access))
        self.catalog_version = ctx.catalog.version
        if reach is not None:
            self.__dict__["reach"] = reach

    @cached_property
    def reach(self) -> GroupReach:
        """Which groups hold tools the principal may use (``GroupReach``)."""
        return group_reach(self.ctx, self.rules)

    def _judge(self, tool: Tool) -> Surfacing:
        for rule in self.rules:
            reason = rule.judge(tool, self.ctx)
            if reason is not None:
                return Surfacing(tool.name, tool, False, reason, access_denied=rule.access)
        return Surfacing(tool.name, tool, True, VISIBLE)

    def surfacing(self, name: str) -> Surfacing:
        """The verdict on one tool name (``unknown`` when the catalog has no such tool)."""
        tool = self.ctx.catalog.tool(name)
        if tool is None:
            return Surfacing(name, None, False, UNKNOWN)
        # a listed view already knows its visible tools: dispatch need not re-run the rules
        if "visible" in self.__dict__ and name in self.visible_names:
            return Surfacing(name, tool, True, VISIBLE)
        return self._judge(tool)

    @cached_property
    def visible(self) -> tuple[Tool, ...]:
        """Visible tools, name-sorted. Only candidates that can pass the group rule are
        judged: tools of effectively active groups, revealed tools and ungated tools;
        every other tool fails the group rule (or an earlier one) by construction."""
        cat = self.ctx.catalog
        names: set[str] = set(cat.ungated())
        for g in self.ctx.effective:
            names.update(cat.tools_in(g))
        names.update(n for n in self.ctx.state.revealed if n in cat.tools)
        out = []
        for name in sorted(names):
            s = self._judge(cat.tools[name])
            if s.visible:
                out.append(s.tool)
        return tuple(t for t in out if t is not None)

    @cached_property
    def visible_names(self) -> frozenset[str]:
        return frozenset(t.name for t in self.visible)

    def is_visible(self, name: str) -> bool:
        return name in self.visible_names

    def explain(self) -> list[Surfacing]:
        """Every tool's verdict, name-sorted; access-hidden tools are included (this is
        the operator's view; adapters filter what a principal may be told)."""
        cat = self.ctx.catalog
        return [self._judge(cat.tools[n]) for n in cat.sorted_names()]

    def accessible(self) -> list[Tool]:
        """Tools that pass every access rule (what search and catalog strategies may show)."""
        access_rules = [r for r in self.rules if r.access]
        cat = self.ctx.catalog
        out = []
        for n in cat.sorted_names():
            t = cat.tools[n]
            if all(r.judge(t, self.ctx) is None for r in access_rules):
                out.append(t)
        return out

    def is_accessible(self, name: str) -> bool:
        tool = self.ctx.catalog.tool(name)
        if tool is None:
            return False
        return all(r.judge(tool, self.ctx) is None for r in self.rules if r.access)

    def group(self, name: str) -> GroupSurfacing:
        """The verdict on one group (``unknown`` when the catalog has no such group)."""
        ctx = self.ctx
        g = ctx.catalog.groups.get(name)
        if g is None:
            return GroupSurfacing(name, None, UNKNOWN)
        enabled = name in ctx.state.active
        if not in_scope(ctx.catalog, ctx.principal, name):
            return GroupSurfacing(name, g, OUT_OF_SCOPE, enabled)
        reach = self.reach
        if name in reach.holding and name not in reach.usable:
            return GroupSurfacing(name, g, NOTHING_USABLE, enabled)
        if name in ctx.effective:
            return GroupSurfacing(name, g, ACTIVE, enabled)
        parent = ctx.parent(name)  # an out-of-scope parent is transparent
        if parent is not None and parent not in ctx.effective:
            return GroupSurfacing(
                name, g, Reason(ReasonKind.PARENT_INACTIVE, group=parent), enabled
            )
        return GroupSurfacing(name, g, ACTIVATABLE, enabled)  # not enabled: it would be active

    @cached_property
    def unseen_groups(self) -> frozenset[str]:
        """Groups the principal may not know of that hold a tool it may use (beside a
        group it may know of): a text drawn from them must not reach it (search)."""
        return frozenset(g for g in self.reach.direct if not self.group(g).visible)

    @cached_property
    def groups(self) -> tuple[GroupSurfacing, ...]:
        """Every catalog group's verdict, name-sorted (filter on ``visible``)."""
        return tuple(self.group(n) for n in sorted(self.ctx.catalog.groups))

    def grouped(self) -> dict[str, list[str]]:
        """Visible tools bucketed by group (``default`` for root tools), sorted."""
        buckets: dict[str, list[str]] = {}
        for t in self.visible:
            for g in t.scope_groups:
                buckets.setdefault(g, []).append(t.name)
        return {g: sorted(v) for g, v in sorted(buckets.items())}


def compute_view(
    catalog: Catalog,
    principal: Principal,
    state: SessionState,
    *,
    ladder: TrustLadder | None = None,
    rules: Sequence[Rule] = DEFAULT_RULES,
) -> View:
    """The pure pipeline. ``View`` evaluates lazily, so callers pay for what they read."""
    ctx = RuleContext(
        catalog=catalog,
        principal=principal,
        ladder=ladder or TrustLadder(),
        state=state,
        stage=catalog.flow.current(state.stage),
        effective=effective_groups(catalog, state.active, principal),
    )
    return View(ctx, rules)


@dataclass
class ViewCache:
    """LRU of views keyed by (catalog version, principal, state content)."""

    maxsize: int = 2048
    _entries: OrderedDict[tuple[Any, ...], View] = field(default_factory=OrderedDict)
    #: (catalog version, principal) -> its ``GroupReach``, shared by its views of every state
    _reaches: OrderedDict[tuple[Any, ...], GroupReach] = field(default_factory=OrderedDict)
    hits: int = 0
    misses: int = 0

    def get(
        self,
        catalog: Catalog,
        principal: Principal,
        state: SessionState,
        ladder: TrustLadder,
        rules: Sequence[Rule],
    ) -> View:
        key = (catalog.version, principal.key, state.content_key)
        view = self._entries.get(key)
        if view is not None:
            self._entries.move_to_end(key)
            self.hits += 1
            return view
        self.misses += 1
        view = compute_view(catalog, principal, state, ladder=ladder, rules=rules)
        reach_key = key[:2]
        reach = self._reaches.get(reach_key)
        if reach is None:
            reach = self._reaches[reach_key] = view.reach
            if len(self._reaches) > self.maxsize:
                self._reaches.popitem(last=False)
        else:
            view.__dict__["reach"] = reach
        self._entries[key] = view
        if len(self._entries) > self.maxsize:
            self._entries.popitem(last=False)
        return view

    def clear(self) -> None:
        self._entries.clear()
        self._reaches.clear()
