"""toolgate: progressive tool disclosure for MCP servers and agents.

The package root re-exports the core: catalog model, declarations, policies, flow,
``ToolSet`` and ``Session``. MCP adapters live in ``toolgate.fastmcp`` and
``toolgate.lowlevel``; the gateway in ``toolgate.gateway``.

A name is imported when it is first read (``toolgate.ToolSet``), not with the package:
a process that needs one module (a backend ending through ``toolgate.exiting``, the
CLI printing its version) does not pay for the whole core.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolgate.activation import ChangeResult
    from toolgate.catalog import (
        ALWAYS,
        BY_GROUP,
        Always,
        ByGroup,
        CallContext,
        Catalog,
        Group,
        HookContext,
        StateSnapshot,
        Tool,
        ToolDoc,
        ToolResult,
        When,
    )
    from toolgate.declare import group, in_group, subgroup, tool
    from toolgate.errors import (
        BudgetExceeded,
        ConfigError,
        ConfirmationRefused,
        DescriptionRequired,
        GroupNotFound,
        InvalidArguments,
        InvalidCursor,
        ParentInactive,
        RateLimited,
        RegistrationError,
        StoreUnavailable,
        ToolgateError,
        ToolHidden,
        ToolNotFound,
    )
    from toolgate.events import Event, EventBus, JsonlSink, LoggingSink, Sink
    from toolgate.flow import Flow, Stage, Transition
    from toolgate.policy import ConfirmRequest, Policy, Principal, RateLimit, TrustLadder
    from toolgate.state import MemoryStore, SessionState, StateStore, open_store
    from toolgate.tokens import TokenCounter
    from toolgate.toolset import CallOutcome, GroupInfo, Session, ToolSet
    from toolgate.view import GroupSurfacing, Reason, ReasonKind, Rule, Surfacing, View

__version__ = "0.1.0"

#: each re-exported name and the module that defines it
_EXPORTS = {
    "ChangeResult": "toolgate.activation",
    "ALWAYS": "toolgate.catalog",
    "BY_GROUP": "toolgate.catalog",
    "Always": "toolgate.catalog",
    "ByGroup": "toolgate.catalog",
    "CallContext": "toolgate.catalog",
    "Catalog": "toolgate.catalog",
    "Group": "toolgate.catalog",
    "HookContext": "toolgate.catalog",
    "StateSnapshot": "toolgate.catalog",
    "Tool": "toolgate.catalog",
    "ToolDoc": "toolgate.catalog",
    "ToolResult": "toolgate.catalog",
    "When": "toolgate.catalog",
    "group": "toolgate.declare",
    "in_group": "toolgate.declare",
    "subgroup": "toolgate.declare",
    "tool": "toolgate.declare",
    "BudgetExceeded": "toolgate.errors",
    "ConfigError": "toolgate.errors",
    "ConfirmationRefused": "toolgate.errors",
    "DescriptionRequired": "toolgate.errors",
    "GroupNotFound": "toolgate.errors",
    "InvalidArguments": "toolgate.errors",
    "InvalidCursor": "toolgate.errors",
    "ParentInactive": "toolgate.errors",
    "RateLimited": "toolgate.errors",
    "RegistrationError": "toolgate.errors",
    "StoreUnavailable": "toolgate.errors",
    "ToolgateError": "toolgate.errors",
    "ToolHidden": "toolgate.errors",
    "ToolNotFound": "toolgate.errors",
    "Event": "toolgate.events",
    "EventBus": "toolgate.events",
    "JsonlSink": "toolgate.events",
    "LoggingSink": "toolgate.events",
    "Sink": "toolgate.events",
    "Flow": "toolgate.flow",
    "Stage": "toolgate.flow",
    "Transition": "toolgate.flow",
    "ConfirmRequest": "toolgate.policy",
    "Policy": "toolgate.policy",
    "Principal": "toolgate.policy",
    "RateLimit": "toolgate.policy",
    "TrustLadder": "toolgate.policy",
    "MemoryStore": "toolgate.state",
    "SessionState": "toolgate.state",
    "StateStore": "toolgate.state",
    "open_store": "toolgate.state",
    "TokenCounter": "toolgate.tokens",
    "CallOutcome": "toolgate.toolset",
    "GroupInfo": "toolgate.toolset",
    "Session": "toolgate.toolset",
    "ToolSet": "toolgate.toolset",
    "GroupSurfacing": "toolgate.view",
    "Reason": "toolgate.view",
    "ReasonKind": "toolgate.view",
    "Rule": "toolgate.view",
    "Surfacing": "toolgate.view",
    "View": "toolgate.view",
}

__all__ = [
    "ALWAYS",
    "BY_GROUP",
    "Always",
    "BudgetExceeded",
    "ByGroup",
    "CallContext",
    "CallOutcome",
    "Catalog",
    "ChangeResult",
    "ConfigError",
    "ConfirmRequest",
    "ConfirmationRefused",
    "DescriptionRequired",
    "Event",
    "EventBus",
    "Flow",
    "Group",
    "GroupInfo",
    "GroupNotFound",
    "GroupSurfacing",
    "HookContext",
    "InvalidArguments",
    "InvalidCursor",
    "JsonlSink",
    "LoggingSink",
    "MemoryStore",
    "ParentInactive",
    "Policy",
    "Principal",
    "RateLimit",
    "RateLimited",
    "Reason",
    "ReasonKind",
    "RegistrationError",
    "Rule",
    "Session",
    "SessionState",
    "Sink",
    "Stage",
    "StateSnapshot",
    "StateStore",
    "StoreUnavailable",
    "Surfacing",
    "TokenCounter",
    "Tool",
    "ToolDoc",
    "ToolHidden",
    "ToolNotFound",
    "ToolResult",
    "ToolSet",
    "ToolgateError",
    "Transition",
    "TrustLadder",
    "View",
    "When",
    "__version__",
    "group",
    "in_group",
    "open_store",
    "subgroup",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'toolgate' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # read once; later reads are plain attribute lookups
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
