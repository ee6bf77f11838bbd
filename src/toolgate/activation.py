"""Activation planning: what enabling or disabling one group would do, read off the view.

Pure functions of a ``View`` and the session state it was computed for: the order a
request applies in (parents first), and per group either the refusal or the state after
the change with the groups it turns off, in hook order. Hooks, budgets, events and the
store write stay with ``toolgate.toolset.Session``. Orchestration: imports the core only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from toolgate.catalog import Tool
from toolgate.errors import (
    GroupNotFound,
    InvalidArguments,
    ParentInactive,
    ToolgateError,
    json_type,
)
from toolgate.state.base import SessionState
from toolgate.view import ReasonKind, View

Action = Literal["activate", "deactivate"]


@dataclass(frozen=True)
class GroupError:
    group: str
    code: str
    message: str

    @classmethod
    def of(cls, group: str, exc: ToolgateError) -> GroupError:
        return cls(group, exc.code, exc.message)

    def to_dict(self) -> dict[str, str]:
        return {"group": self.group, "code": self.code, "message": self.message}


@dataclass(frozen=True)
class ChangeResult:
    """The outcome of an activate or deactivate request, group by group."""

    action: Action
    changed: tuple[str, ...]  # groups the request itself enabled / disabled
    also_disabled: tuple[str, ...]  # turned off by exclusion or cascade
    errors: tuple[GroupError, ...]
    before: View
    after: View

    @property
    def visible_changed(self) -> bool:
        return self.before.visible_names != self.after.visible_names

    @property
    def newly_visible(self) -> tuple[Tool, ...]:
        return tuple(t for t in self.after.visible if t.name not in self.before.visible_names)

    @property
    def newly_hidden(self) -> tuple[str, ...]:
        return tuple(sorted(self.before.visible_names - self.after.visible_names))

    @property
    def active_groups(self) -> tuple[str, ...]:
        return tuple(sorted(self.after.ctx.state.active))


@dataclass(frozen=True)
class Step:
    """One group's change, to apply if its hooks succeed: the state after it, and the
    groups it turns off (exclusion peers or descendants), in the order their
    ``on_deactivate`` hooks run (``hooks``)."""

    group: str
    state: SessionState
    off: tuple[str, ...]

    def hooks(self, action: Action) -> tuple[tuple[str, Action], ...]:
        """The hooks this step runs, in order. Activating: the group's own
        ``on_activate`` first, then the displaced peers' ``on_deactivate`` (the likely
        failure, provisioning, then leaves the peers untouched). Deactivating: the
        descendants' ``on_deactivate``, children first, then the group's own. Should one
        fail, the hooks before it are undone by their opposite hook, last first."""
        teardown: Action = "deactivate"
        off = tuple((d, teardown) for d in self.off)
        if action == "activate":
            return ((self.group, "activate"), *off)
        return (*off, (self.group, "deactivate"))


def group_names(names: Any) -> list[str]:
    """``names`` as a list of group names; ``InvalidArguments`` for anything else (a
    single name given as a string is not read letter by letter)."""
    listed = isinstance(names, Sequence | set | frozenset) and not isinstance(names, str)
    return _names(names if listed else None, names, "group", '["issues"]')


def tool_names(names: Any) -> list[str]:
    """``names`` as a list of tool names (``Session.reveal``, ``Session.mark``): any
    iterable of strings but a string or a mapping, by the same rule as ``group_names``."""
    listed = isinstance(names, Iterable) and not isinstance(names, str | bytes | Mapping)
    return _names(list(names) if listed else None, names, "tool", '["search_issues"]')


def _names(listed: Any, given: Any, kind: str, like: str) -> list[str]:
    """``listed`` (``given`` read as a collection, None when it is none) as names of
    ``kind``, or the ``InvalidArguments`` naming what ``given`` was."""
    if listed is None:
        got = f"the string {given!r}" if isinstance(given, str) else json_type(given)
        raise InvalidArguments(
            f"{kind}s must be a list of {kind} names, like {like}, not {got[:80]}"
        )
    wrong = [n for n in listed if not isinstance(n, str)]
    if wrong:
        raise InvalidArguments(
            f"{kind}s must be a list of {kind} names (strings), not a list holding "
            f"{json_type(wrong[0])}"
        )
    return list(listed)


def requested(view: View, names: Sequence[str]) -> tuple[list[str], list[GroupError]]:
    """The groups a request names that the principal sees, in the order given except
    that a group named with its ancestor comes after it (parents first), and an error
    for each it does not see (unknown and out of scope look the same). The order given
    decides between exclusion peers: the first named is tried first."""
    seen, errors = [], []
    for n in dict.fromkeys(names):
        if view.group(n).visible:
            seen.append(n)
        else:
            errors.append(GroupError.of(n, GroupNotFound(n)))
    named, ordered = set(seen), dict[str, None]()
    for n in seen:
        for a in reversed(view.ctx.catalog.ancestors(n)):
            if a in named:
                ordered.setdefault(a)
        ordered.setdefault(n)
    return list(ordered), errors


def activate_step(
    view: View, state: SessionState, name: str, named: Sequence[str], *, stateless: bool = False
) -> Step | GroupError:
    """Activating visible ``name`` in ``state`` (``view`` is its view; a cached view may
    hold an older copy of the state, so the next state is built from ``state``).
    ``named``: the groups this request leaves on before ``name``: those it enabled and
    those it named that were on already (not those it tried and failed). One of them in
    ``name``'s exclusion set, or under a member of it, refuses ``name`` (the first
    named stays), so a request never enables a group and turns it off.
    ``stateless``: nothing is recorded, so a refusal never says "enable the parent first"."""
    cat = view.ctx.catalog
    peers = cat.exclusion_peers(name)
    # ``name`` or an ancestor it may know of excludes a group held, or one above it
    for g in (name, *view.ctx.ancestors(name)):
        for peer in sorted(cat.exclusion_peers(g)):
            hit = next((d for d in (peer, *cat.descendants(peer)) if d in named), None)
            if hit is None:
                continue
            inside = "" if g == name else f"{name!r} is in {g!r}, which "
            why = (
                f"{inside or f'{name!r} '}is mutually exclusive with {peer!r}"
                + ("" if hit == peer else f", which {hit!r} is in")
                if inside or hit != peer
                else "they are mutually exclusive"
            )
            return GroupError(
                name,
                "mutually_exclusive",
                f"Cannot enable group {name!r} together with {hit!r} in one request: {why}",
            )
    verdict = view.group(name)
    if verdict.enabled:
        return GroupError(name, "already_active", f"Group {name!r} is already enabled")
    if verdict.reason.kind is ReasonKind.PARENT_INACTIVE:
        assert verdict.reason.group is not None
        return GroupError.of(name, ParentInactive(name, verdict.reason.group, stateless=stateless))
    off: list[str] = []
    for peer in sorted(peers & state.active):
        off += [d for d in cat.descendants(peer) if d in state.active] + [peer]
    return Step(name, replace(state, active=(state.active - set(off)) | {name}), tuple(off))


def deactivate_step(
    view: View, state: SessionState, name: str, cascaded: Sequence[str]
) -> Step | GroupError | None:
    """Deactivating visible ``name`` and its enabled descendants (children first) in
    ``state``; None when this request already turned it off with an ancestor. A group
    that is off but has tools search revealed is closed too: the step changes no group,
    and ``unreveal`` then forgets those tools (the one way to take back a reveal)."""
    if name not in state.active:
        if name in cascaded:
            return None
        cat = view.ctx.catalog
        if any(name in t.groups for n in state.revealed if (t := cat.tool(n)) is not None):
            return Step(name, state, ())
        return GroupError(name, "not_active", f"Group {name!r} is not enabled")
    cat = view.ctx.catalog
    below = [d for d in cat.descendants(name) if d in state.active]
    below.sort(key=lambda d: -cat.depth(d))
    return Step(name, replace(state, active=state.active - {name, *below}), tuple(below))


def exclusion_problem(view: View, tool: Tool) -> str | None:
    """Why a reveal may not show ``tool`` in ``view``: every group of it is kept off by
    an enabled exclusion peer (``RuleContext.excluded``), so showing it would put it
    beside the group that excludes it. Names only groups the principal may know of."""
    ctx = view.ctx
    if not ctx.excluded(tool):
        return None
    groups = [g for g in tool.groups if view.group(g).visible]
    if not groups:  # an accessible tool is in a group it may know of; never say more
        return "it is mutually exclusive with an enabled group"
    peers = sorted({p for g in tool.groups if (p := ctx.excluded_by(g)) and view.group(p).visible})
    by = f"enabled group {', '.join(map(repr, peers))}" if peers else "an enabled group"
    return (
        f"its group {' or '.join(map(repr, groups))} is mutually exclusive with {by}; "
        f"enable {groups[0]!r} (which turns {by.removeprefix('enabled ')} off) to use it"
    )


def unreveal(view: View, turned_off: Iterable[str]) -> SessionState:
    """``view``'s state (the one a group change left) without the revealed tools it may
    no longer show: those in a group ``turned_off`` with none of their groups still
    effectively active, and those every group of which an enabled exclusion peer keeps
    off. A reveal lasts until its tool's group is closed or displaced, no longer."""
    ctx, off = view.ctx, frozenset(turned_off)
    state, cat = ctx.state, ctx.catalog
    gone = set()
    for n in state.revealed:
        tool = cat.tool(n)
        if tool is None or not tool.groups:
            continue
        closed = not off.isdisjoint(tool.groups) and ctx.effective.isdisjoint(tool.groups)
        if closed or ctx.excluded(tool):
            gone.add(n)
    return replace(state, revealed=state.revealed - gone) if gone else state
