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
    ``on_deactivate`` hooks run, before the group's own hook."""

    group: str
    state: SessionState
    off: tuple[str, ...]


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
    """The groups a request names that the principal sees, parents first, and an
    error for each it does not (unknown and out of scope look the same)."""
    seen, errors = [], []
    for n in dict.fromkeys(names):
        if view.group(n).visible:
            seen.append(n)
        else:
            errors.append(GroupError.of(n, GroupNotFound(n)))
    cat = view.ctx.catalog
    seen.sort(key=lambda n: (cat.depth(n), n))
    return seen, errors


def activate_step(
    view: View, state: SessionState, name: str, named: Sequence[str], *, stateless: bool = False
) -> Step | GroupError:
    """Activating visible ``name`` in ``state`` (``view`` is its view; a cached view may
    hold an older copy of the state, so the next state is built from ``state``).
    ``named``: the groups this request names before ``name``. One of them in ``name``'s
    exclusion set, or under a member of it, refuses ``name`` whatever is active (the
    first named stays), so a request never enables a group and turns it off.
    ``stateless``: nothing is recorded, so a refusal never says "enable the parent first"."""
    cat = view.ctx.catalog
    peers = cat.exclusion_peers(name)
    for peer in sorted(peers):
        if peer in named:
            return GroupError(
                name,
                "mutually_exclusive",
                f"Cannot enable group {name!r} together with {peer!r} in one "
                "request: they are mutually exclusive",
            )
        under = [d for d in cat.descendants(peer) if d in named]
        if under:
            return GroupError(
                name,
                "mutually_exclusive",
                f"Cannot enable group {name!r} together with {under[0]!r} in one request: "
                f"{name!r} is mutually exclusive with {peer!r}, which {under[0]!r} is in",
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
    ``state``; None when this request already turned it off with an ancestor."""
    if name not in state.active:
        if name in cascaded:
            return None
        return GroupError(name, "not_active", f"Group {name!r} is not enabled")
    cat = view.ctx.catalog
    below = [d for d in cat.descendants(name) if d in state.active]
    below.sort(key=lambda d: -cat.depth(d))
    return Step(name, replace(state, active=state.active - {name, *below}), tuple(below))
