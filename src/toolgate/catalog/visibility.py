"""When a tool shows regardless of its groups: ``Always``, ``ByGroup`` (the default), ``When``.

A ``When`` predicate reads a ``StateSnapshot``, never the store. Model layer: imports
``toolgate.policy`` only, never MCP.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from toolgate.policy import Principal


@dataclass(frozen=True)
class StateSnapshot:
    """Read-only state a ``When`` predicate sees. Predicates must be pure in it."""

    active_groups: frozenset[str]
    stage: str
    principal: Principal

    def is_group_active(self, name: str) -> bool:
        return name in self.active_groups


@dataclass(frozen=True)
class Always:
    """Visible whatever groups are active (still subject to access and stage rules)."""


@dataclass(frozen=True)
class ByGroup:
    """Visible when any of the tool's groups is effectively active (the default)."""


@dataclass(frozen=True)
class When:
    """Visible when ``predicate(snapshot)`` is true."""

    predicate: Callable[[StateSnapshot], bool]


Visibility = Always | ByGroup | When
ALWAYS = Always()
BY_GROUP = ByGroup()
