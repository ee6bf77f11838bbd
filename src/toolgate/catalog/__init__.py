"""The catalog: every tool, group, exclusion set and the flow, validated and versioned.

``tool`` and ``group`` hold the specs, ``visibility`` what shows a tool whatever its
groups, ``handler`` what a handler gets and returns, ``registry`` the ``Catalog``.
This package exports their public names. Model layer: no MCP imports.
"""

from toolgate.catalog.group import Group, Hook, HookContext
from toolgate.catalog.handler import CallContext, Handler, ToolResult
from toolgate.catalog.registry import Catalog
from toolgate.catalog.tool import DEFAULT_GROUP, Tool, ToolDoc, schema_problem
from toolgate.catalog.visibility import (
    ALWAYS,
    BY_GROUP,
    Always,
    ByGroup,
    StateSnapshot,
    Visibility,
    When,
)

__all__ = [
    "ALWAYS",
    "BY_GROUP",
    "DEFAULT_GROUP",
    "Always",
    "ByGroup",
    "CallContext",
    "Catalog",
    "Group",
    "Handler",
    "Hook",
    "HookContext",
    "StateSnapshot",
    "Tool",
    "ToolDoc",
    "ToolResult",
    "Visibility",
    "When",
    "schema_problem",
]
