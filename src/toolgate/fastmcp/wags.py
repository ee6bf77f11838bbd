"""The wags seed's API on toolgate: ``GroupsMiddleware``, ``GroupDefinition`` and the
``enable_tools`` / ``disable_tools`` result models, as a drop-in with per-session state.

Adapter layer: builds on ``toolgate.fastmcp.middleware``; imports ``pydantic`` and below.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from toolgate.catalog import Group
from toolgate.declare import GROUPS_MARK
from toolgate.fastmcp.middleware import ToolgateMiddleware
from toolgate.identity import IdentityFn, IdentityResolver
from toolgate.strategies import DeliveryConfig
from toolgate.toolset import ToolSet


class GroupDefinition(BaseModel):
    """Definition of a tool group (wags)."""

    description: str
    parent: str | None = None


class EnableToolsResult(BaseModel):
    """Structured result from the enable_tools meta-tool (wags)."""

    enabled: list[str]
    enabled_groups: list[str]
    available_tools: list[str]
    available_groups: list[str]
    errors: list[str]


class DisableToolsResult(BaseModel):
    """Structured result from the disable_tools meta-tool (wags)."""

    disabled: list[str]
    enabled_groups: list[str]
    available_tools: list[str]
    errors: list[str]


def _marked_methods(handlers: Any) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for attr in sorted(dir(type(handlers))):
        raw = getattr(type(handlers), attr, None)
        marks = getattr(raw, GROUPS_MARK, None)
        if marks and callable(raw):
            out[attr] = tuple(marks)
    return out


class GroupsMiddleware(ToolgateMiddleware):
    """Drop-in for wags' ``GroupsMiddleware``, with per-session state.

    >>> mcp.add_middleware(GroupsMiddleware(
    ...     groups={"issues": GroupDefinition(description="Issue tracking")},
    ...     handlers=GithubHandlers(), initial_groups=["issues"], max_tools=10))

    The tools of ``handlers`` are the server's tools named like its ``@in_group``
    methods; a method with no such tool is registered on the server from the handler.
    """

    def __init__(
        self,
        groups: Mapping[str, GroupDefinition],
        handlers: Any = None,
        initial_groups: Sequence[str] = (),
        max_tools: int | None = None,
        *,
        identity: IdentityResolver | IdentityFn | None = None,
        toolset: ToolSet | None = None,
    ) -> None:
        ts = toolset or ToolSet(initial_groups=initial_groups, max_tools=max_tools)
        ts.add_groups(Group(name, d.description, parent=d.parent) for name, d in groups.items())
        self.handlers = handlers
        marks = _marked_methods(handlers) if handlers is not None else {}
        super().__init__(
            ts,
            DeliveryConfig(strategy="list_changed", meta_tools="menu"),
            identity=identity,
            tool_groups=marks,
        )

    async def prepare(self) -> None:
        server = self.server
        if server is None or self.handlers is None:
            return
        have = await self.tools.registered()
        for attr in self.tool_groups:
            if attr not in have and self.toolset.catalog.tool(attr) is None:
                server.tool(getattr(self.handlers, attr), name=attr)
