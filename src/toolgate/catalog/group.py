"""A group's spec: a named set of tools an agent can enable, and its hooks.

``check_group_name`` is the name rule registration applies. Model layer: imports
``toolgate.policy`` and ``toolgate.errors`` only, never MCP.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from toolgate.errors import MAX_GROUP_NAME, RegistrationError
from toolgate.policy import Principal

GROUP_NAME = re.compile(r"^[a-z0-9]+([_-][a-z0-9]+)*$")


HookResult = Awaitable[None] | None


@dataclass(frozen=True)
class HookContext:
    group: str
    session_key: str | None
    principal: Principal
    action: str  # "activate" | "deactivate"


Hook = Callable[[HookContext], HookResult]


@dataclass(frozen=True)
class Group:
    """A named set of tools an agent can enable; optionally nested under ``parent``."""

    name: str
    description: str = ""
    title: str | None = None
    parent: str | None = None
    instructions: str | None = None
    show_deactivator: bool = True
    on_activate: Hook | None = None
    on_deactivate: Hook | None = None

    @property
    def wire_name(self) -> str:
        return self.name.replace("_", "-")


def check_group_name(name: str) -> None:
    if not isinstance(name, str) or len(name) > MAX_GROUP_NAME or not GROUP_NAME.match(name):
        raise RegistrationError(
            f"Invalid group name {name!r}: use lowercase letters and digits, words joined "
            f"by single '_' or '-', at most {MAX_GROUP_NAME} characters",
            name=name,
        )
