"""Progressive disclosure on a FastMCP 4 server: ``ToolgateMiddleware(toolset).attach(mcp)``.

``middleware`` holds the FastMCP hooks, ``importer`` brings FastMCP's own tools into the
catalog, ``confirm`` asks the human on protocol 2026-07-28, ``groups`` serves the groups
extension, and ``wags`` is the drop-in for wags' ``GroupsMiddleware``. Adapter layer:
the only package that imports ``fastmcp``, with the demo's backends (the gateway never loads it).
"""

from toolgate.declare import in_group
from toolgate.fastmcp.confirm import RoundTripConfirmer
from toolgate.fastmcp.groups import GroupsServerExtension
from toolgate.fastmcp.importer import FastMCPTools, from_fastmcp_result, to_fastmcp_result
from toolgate.fastmcp.middleware import FASTMCP_CONTEXT, ToolgateMiddleware, caller_of
from toolgate.fastmcp.wags import (
    DisableToolsResult,
    EnableToolsResult,
    GroupDefinition,
    GroupsMiddleware,
)

__all__ = [
    "FASTMCP_CONTEXT",
    "DisableToolsResult",
    "EnableToolsResult",
    "FastMCPTools",
    "GroupDefinition",
    "GroupsMiddleware",
    "GroupsServerExtension",
    "RoundTripConfirmer",
    "ToolgateMiddleware",
    "caller_of",
    "from_fastmcp_result",
    "in_group",
    "to_fastmcp_result",
]
