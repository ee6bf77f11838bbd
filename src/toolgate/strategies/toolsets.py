"""Views per request: the tools of the groups a request names, no session needed.

A client names groups with the ``X-MCP-Toolsets: a,b`` header or ``?toolsets=a,b`` on
the endpoint (the GitHub MCP server's convention); ``tools/list`` is then the root tools
plus those groups' tools (their child groups' too), within the principal's scope. It
varies with the request only, as protocol 2026-07-28 allows. Delivery layer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolgate.catalog import Catalog, Tool
from toolgate.errors import UnknownToolsets
from toolgate.strategies.base import MetaTool, Reply, Request, Strategy, ToolHandler
from toolgate.view import View

MAX_TOOLSETS = 64


def parse_toolsets(values: Iterable[str]) -> tuple[str, ...] | None:
    """Group names from header or query values (comma-separated, blanks ignored, each
    once); ``None`` when none is named, so the request is served as usual."""
    names: list[str] = []
    for value in values:
        names += [n.strip() for n in value.split(",") if n.strip()]
    return tuple(dict.fromkeys(names)) or None


def catalog_names(catalog: Catalog, names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` as the catalog names its groups: a group may be named as the catalog
    does (``pull_requests``) or as the groups extension does (``pull-requests``, what
    ``groups/list`` answers a request with); a name of neither kind stays as it is."""
    if all(n in catalog.groups for n in names):
        return names
    wire = {g.wire_name: g.name for g in catalog.groups.values()}
    return tuple(n if n in catalog.groups else wire.get(n, n) for n in names)


def toolset_groups(view: View, names: tuple[str, ...]) -> frozenset[str]:
    """The named groups (``catalog_names``) and their descendants. Raises
    ``UnknownToolsets`` for a name that is unknown or out of the principal's scope (the
    same error for both)."""
    catalog = view.ctx.catalog
    names = catalog_names(catalog, names)
    verdicts = [view.group(n) for n in names]
    unknown = [v.name for v in verdicts if not v.visible]
    if unknown or len(names) > MAX_TOOLSETS:
        known = [g.name for g in view.groups if g.visible]
        raise UnknownToolsets(unknown or [f"{len(names)} names (at most {MAX_TOOLSETS})"], known)
    return frozenset(n for v in verdicts for n in (v.name, *catalog.descendants(v.name)))


class ToolsetsStrategy(Strategy):
    """Lists the root tools and the named groups' tools; no meta-tools. Any accessible
    tool runs when called, as in ``catalog`` (discovery gating is not access control)."""

    name = "toolsets"
    open_groups = True

    def listed_meta(self, request: Request, view: View) -> list[MetaTool]:
        # the request named what it wants: nothing to open or search. Where an add-on
        # lists tools shortened (lazy descriptions), the tool they point to is listed
        describe = self.meta_tool(self.names.describe_tools)
        return [describe] if describe is not None else []

    def listed(self, request: Request, view: View) -> Sequence[Tool]:
        wanted = toolset_groups(view, request.toolsets or ())
        return [t for t in view.visible if not t.groups or wanted.intersection(t.groups)]

    async def call_tool(
        self,
        request: Request,
        name: str,
        arguments: Mapping[str, Any] | None,
        handler: ToolHandler | None = None,
    ) -> Reply:
        # a malformed view is an error on every request that carries it, not only lists
        toolset_groups(await request.session.view(), request.toolsets or ())
        return await super().call_tool(request, name, arguments, handler)
