"""``ToolSet`` and ``Session``: catalog + state + view + events, together.

``toolset`` holds the catalog served to many sessions, ``session`` one client's handle
on it, ``dispatch`` a call's path; each asks the view and re-decides no rule.
Orchestration layer: no MCP imports; strategies and adapters sit above it.
"""

from toolgate.toolset.dispatch import CallOutcome
from toolgate.toolset.outcomes import GroupInfo, RevealResult
from toolgate.toolset.session import Session
from toolgate.toolset.toolset import ToolSet

__all__ = ["CallOutcome", "GroupInfo", "RevealResult", "Session", "ToolSet"]
