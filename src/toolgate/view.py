"""The one surfacing pipeline: which tools a principal sees in a session state, and why.

``compute_view`` is a pure function of (catalog, principal, state); its rules run in
DESIGN §4's order and the first that fails is the recorded reason. Listing, dispatch
checks, ``explain``, budgets and search all read a ``View``; nothing re-implements a
rule. Views are cached by (catalog version, principal, state content). Core.
"""

from __future__ import annotations

import base64
import binascii
import bisect
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from toolgate.catalog import ByGroup, Catalog, StateSnapshot, Tool, When
from toolgate.errors import InvalidCursor
from toolgate.policy import Principal, TrustLadder
from toolgate.state.base import SessionState

VISIBLE = "visible"
UNKNOWN = "unknown"


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


@dataclass(frozen=True)
class Rule:
    """One step of the pipeline: ``check`` returns a reason when the tool fails it.

    ``access`` rules decide what a principal may use at all; a tool failing one is
    indistinguishable from an unknown tool. The others decide discovery and flow.
    """

    name: str
    access: bool
    check: Callable[[Tool, RuleContext], str | None]


def _scope(tool: Tool, ctx: RuleContext) -> str | None:
    return None if ctx.catalog.in_scope(tool, ctx.principal) else "out-of-scope"


def _trust(tool: Tool, ctx: RuleContext) -> str | None:
    need = tool.policy.min_trust
    if need is None:
        return None
    have = ctx.principal.trust
    if ctx.ladder.rank(have) < ctx.ladder.rank(need):
        return f"trust-too-low:{have}<{need}"
    return None


def _agent_class(tool: Tool, ctx: RuleContext) -> str | None:
    allowed = tool.policy.allowed_classes
    if allowed and ctx.principal.agent_class not in allowed:
        return f"class-not-allowed:{ctx.principal.agent_class or 'none'}"
    return None


def _authz(tool: Tool, ctx: RuleContext) -> str | None:
    return "authz-deny" if tool.policy.decision == "deny" else None


def _stage(tool: Tool, ctx: RuleContext) -> str | None:
    if ctx.catalog.flow.allows(tool.stages, ctx.stage):
        return None
    return "stage-locked:" + ",".join(sorted(tool.stages or ()))


def _group(tool: Tool, ctx: RuleContext) -> str | None:
    if not tool.groups or not isinstance(tool.visibility, ByGroup):
        return None
    if tool.name in ctx.state.revealed:
        return None
    if any(g in ctx.effective for g in tool.groups):
        return None
    return f"group-inactive:{tool.groups[0]}"


def _predicate(tool: Tool, ctx: RuleContext) -> str | None:
    if isinstance(tool.visibility, When) and not tool.visibility.predicate(ctx.snapshot):
        return "predicate-false"
    return None


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
    reason: str
    access_denied: bool = False

    @property
    def is_unknown_to_principal(self) -> bool:
        """Unknown or refused by an access rule: the two must look the same."""
        return self.tool is None or self.access_denied


def effective_groups(catalog: Catalog, active: frozenset[str]) -> frozenset[str]:
    """Groups that are active and whose every ancestor is active."""
    out = set()
    groups = catalog.groups
    for g in active:
        if g not in groups:
            continue
        parent = groups[g].parent
        ok = True
        while parent is not None:
            if parent not in active:
                ok = False
                break
            parent = groups[parent].parent
        if ok:
            out.add(g)
    return frozenset(out)


class View:
    """The surfacing of every tool for one (catalog version, principal, state)."""

    def __init__(self, ctx: RuleContext, rules: Sequence[Rule] = DEFAULT_RULES) -> None:
        self.ctx = ctx
        self.rules = tuple(rules)
        self.catalog_version = ctx.catalog.version

    def _judge(self, tool: Tool) -> Surfacing:
        for rule in self.rules:
            reason = rule.check(tool, self.ctx)
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
            if all(r.check(t, self.ctx) is None for r in access_rules):
                out.append(t)
        return out

    def is_accessible(self, name: str) -> bool:
        tool = self.ctx.catalog.tool(name)
        if tool is None:
            return False
        return all(r.check(tool, self.ctx) is None for r in self.rules if r.access)

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
        effective=effective_groups(catalog, state.active),
    )
    return View(ctx, rules)


@dataclass
class ViewCache:
    """LRU of views keyed by (catalog version, principal, state content)."""

    maxsize: int = 2048
    _entries: OrderedDict[tuple[Any, ...], View] = field(default_factory=OrderedDict)
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
        self._entries[key] = view
        if len(self._entries) > self.maxsize:
            self._entries.popitem(last=False)
        return view

    def clear(self) -> None:
        self._entries.clear()


T = TypeVar("T")


@dataclass(frozen=True)
class Page:
    items: tuple[Any, ...]
    next_cursor: str | None


def encode_cursor(after: str) -> str:
    return base64.urlsafe_b64encode(f"after:{after}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    try:
        if not isinstance(cursor, str) or len(cursor) > 1024:
            raise ValueError
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidCursor(str(cursor)) from None
    if not raw.startswith("after:"):
        raise InvalidCursor(cursor)
    return raw.removeprefix("after:")


def paginate(
    items: Sequence[T], key: Callable[[T], str], cursor: str | None, page_size: int
) -> Page:
    """A page of name-sorted ``items`` after ``cursor``. Cursors name the last item
    seen, so a list that changes between pages neither repeats nor skips survivors."""
    start = 0
    if cursor is not None:
        after = decode_cursor(cursor)
        start = bisect.bisect_right([key(i) for i in items], after)
    chunk = tuple(items[start : start + page_size])
    more = start + page_size < len(items)
    return Page(chunk, encode_cursor(key(chunk[-1])) if more and chunk else None)
