"""A group's spec: a named set of tools an agent can enable, and its hooks.

``check_group_name`` is the name rule registration applies, ``check_group_fields`` the
shape of the other fields. Model layer: imports
``toolgate.policy`` and ``toolgate.errors`` only, never MCP.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from toolgate.errors import MAX_GROUP_NAME, RegistrationError, described
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


def check_group_fields(group: Group) -> None:
    """Refuse a field of the wrong kind at registration, naming the group and the
    field: a hook that is not callable would otherwise fail only when an agent enables
    the group, and a description that is not text when the groups are listed."""
    for label, text, optional in (
        ("description", group.description, False),
        ("title", group.title, True),
        ("instructions", group.instructions, True),
        ("parent", group.parent, True),
    ):
        if not isinstance(text, str) and not (optional and text is None):
            raise RegistrationError(
                f"Group {group.name!r}: {label} must be text"
                f"{' or None' if optional else ''}, got {described(text)}",
                name=group.name,
            )
    for label, hook in (("on_activate", group.on_activate), ("on_deactivate", group.on_deactivate)):
        if hook is not None and not callable(hook):
            raise RegistrationError(
                f"Group {group.name!r}: {label} must be a function taking a HookContext, "
                f"got {described(hook)}",
                name=group.name,
            )
