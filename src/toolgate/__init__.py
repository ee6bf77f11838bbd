"""toolgate: progressive tool disclosure for MCP servers and agents.

The package root re-exports the core: catalog model, declarations, policies, flow,
``ToolSet`` and ``Session``. MCP adapters live in ``toolgate.fastmcp`` and
``toolgate.lowlevel``; the gateway in ``toolgate.gateway``.
"""

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
