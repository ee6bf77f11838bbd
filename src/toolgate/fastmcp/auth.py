"""FastMCP's per-tool authorization (``@mcp.tool(auth=require_scopes(...))``) in the view.

FastMCP hides a tool whose ``auth`` check refuses the request's token; toolgate lists,
searches and describes from its own catalog, so for each request the adapter asks
FastMCP which of its guarded tools this caller is not given, and the view hides them
as it hides a tool out of the principal's reach (``FASTMCP_AUTH``, an access rule).
Adapter layer: imports ``fastmcp``'s tools' attributes only, and the core.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from toolgate.catalog import Tool
from toolgate.policy import Principal
from toolgate.view import Reason, ReasonKind, Rule, RuleContext

if TYPE_CHECKING:
    from fastmcp import FastMCP

#: ``Principal.attributes`` key: the FastMCP tools whose ``auth`` refuses this request
UNAUTHORIZED = "fastmcp.unauthorized"


def _refused_by_fastmcp(tool: Tool, ctx: RuleContext) -> Reason | None:
    refused = ctx.principal.attributes.get(UNAUTHORIZED, ())
    return Reason(ReasonKind.AUTHZ_DENY) if tool.name in refused else None


#: the access rule a ``ToolgateMiddleware`` adds to its toolset's rules
FASTMCP_AUTH = Rule("fastmcp-auth", True, _refused_by_fastmcp)


async def refused_tools(server: FastMCP[Any], guarded: Iterable[str]) -> tuple[str, ...]:
    """Those of ``guarded`` (FastMCP tools with an ``auth`` check) that FastMCP does not
    give the request being served: its own lookup decides (the token's checks; none
    over stdio, which FastMCP trusts)."""
    return tuple(sorted([name for name in guarded if await server.get_tool(name) is None]))


def refusing(principal: Principal, refused: tuple[str, ...]) -> Principal:
    """``principal`` with the FastMCP tools refused to it, for ``FASTMCP_AUTH``."""
    if not refused and UNAUTHORIZED not in principal.attributes:
        return principal
    return replace(principal, attributes={**principal.attributes, UNAUTHORIZED: refused})
