"""What a ``Session`` works with and answers besides its own state: the ``ToolSet`` it
reads (``ToolsetParts``), the results of listing groups and revealing tools, and a group
change's plan. Orchestration: imports the core and ``toolset.dispatch``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from toolgate.activation import (
    Action,
    ChangeResult,
    GroupError,
)
from toolgate.catalog import Tool
from toolgate.events import EventBus
from toolgate.policy import TrustLadder
from toolgate.state.base import SessionState
from toolgate.toolset.dispatch import (
    CallingToolset,
)
from toolgate.view import View


class ToolsetParts(CallingToolset, Protocol):
    """What a session reads of its ``ToolSet`` (``toolgate.toolset.toolset``), named here
    so the session's module does not import the one that builds sessions; its
    ``ToolsetHost`` adds the one method that returns a ``Session``."""

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
    #: the tools of ``refused`` a budget kept hidden (the others: an exclusion set)
    over_budget: tuple[str, ...] = ()

    @property
    def visible_changed(self) -> bool:
        return self.before.visible_names != self.after.visible_names


@dataclass
class ChangePlan:
    """A group-change request planned over one state (``Session._plan``)."""

    state: SessionState
    result: ChangeResult | None
    #: group -> the hooks its change ran, in order (first plan only)
    ran: dict[str, tuple[tuple[str, Action], ...]] = field(default_factory=dict)
    #: group -> the groups its step turned off
    steps: dict[str, tuple[str, ...]] = field(default_factory=dict)
    failed: dict[str, GroupError] = field(default_factory=dict)
    #: groups whose hooks ran in the first plan and that this plan refuses
    undo: list[str] = field(default_factory=list)


def conflict(group: str) -> GroupError:
    return GroupError(
        group,
        "conflict",
        f"Group {group!r} was changed by another request at the same time; nothing was "
        "changed for it: look at the groups again and retry",
    )


def group_infos(view: View) -> list[GroupInfo]:
    """The groups ``view``'s principal may see, as ``list_groups`` shows them.
    ``tool_count`` counts the tools it may run: a tool hidden by an access rule is, to
    it, indistinguishable from a tool that does not exist; a parent out of its scope
    is not named."""
    cat = view.ctx.catalog
    return [
        GroupInfo(
            g.name,
            g.title,
            g.description,
            v.active,
            view.ctx.parent(g.name),
            sum(1 for t in cat.tools_in(g.name) if view.is_accessible(t)),
        )
        for v in view.groups
        if v.visible and (g := v.group) is not None
    ]
