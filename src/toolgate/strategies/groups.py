"""``groups``: the ``io.modelcontextprotocol/groups`` extension, as plain dicts.

For a client that declared the extension, ``tools/list`` carries only top-level tools
(exclusive placement), ``groups/list`` pages the principal's top-level groups and
``groups/get`` returns one group's instructions, tools and child groups. Stateless and
idempotent: nothing here writes session state. Delivery layer: no MCP imports.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from toolgate.catalog import Always, Group, Tool
from toolgate.catalog.group import GROUP_NAME
from toolgate.errors import GroupNotFound, InvalidParams
from toolgate.paging import paginate
from toolgate.policy import Principal
from toolgate.state.base import EMPTY
from toolgate.strategies.arguments import group_name_problem
from toolgate.strategies.base import Addon, MetaNames, Request, Strategy, emit_selection
from toolgate.strategies.catalog import group_contents
from toolgate.strategies.toolsets import catalog_names, toolset_groups
from toolgate.toolset import ToolSet

GROUPS_LIST_CHANGED = "notifications/groups/list_changed"
LISTING_CACHE_SIZE = 256


def is_scoped(tool: Tool) -> bool:
    """Whether an extension client finds ``tool`` in groups (not in ``tools/list``).

    A grouped tool is scoped unless its visibility is ``Always``: that says "core",
    so it stays top-level and is left out of every group's contents.
    """
    return bool(tool.groups) and not isinstance(tool.visibility, Always)


def wire_name_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a group's name on the extension wire, or None: a group
    name (``GROUP_NAME``) with its ``_`` written ``-`` (``Group.wire_name``)."""
    problem = group_name_problem(value)
    if problem is not None:
        return problem
    if "_" in value or not GROUP_NAME.match(value):
        return (
            "a group's name on the extension wire is lowercase letters and digits, "
            "words joined by single '-'"
        )
    return None


def group_wire(group: Group) -> dict[str, Any]:
    """The draft's ``Group`` object: ``{name, title?, description}`` (wire name)."""
    out: dict[str, Any] = {"name": group.wire_name}
    if group.title is not None:
        out["title"] = group.title
    out["description"] = group.description
    return out


class GroupsStrategy(Strategy):
    """Serve the groups extension from the view: scoped tools only through ``groups/get``.

    Every group counts as active (``open_groups``): the extension's activation is the
    client's business, and discovery gating is not access control.
    """

    name = "groups"
    open_groups = True

    def __init__(
        self,
        toolset: ToolSet,
        *,
        names: MetaNames | None = None,
        addons: Sequence[Addon] = (),
        page_size: int | None = None,
    ) -> None:
        super().__init__(toolset, names=names, addons=addons)
        self.page_size = page_size
        # keyed on the declared extensions too: a listing is never served to a client
        # that declared a different capability set than the one it was built for
        self._listings: OrderedDict[tuple[Any, ...], tuple[dict[str, Any], ...]] = OrderedDict()
        self._wire_index: tuple[int, dict[str, str]] = (-1, {})

    # -- tools/list --------------------------------------------------------------------
    async def list_tools(self, request: Request) -> list[dict[str, Any]]:
        """Meta-tools of add-ons and the visible top-level tools, name-sorted."""
        view = await request.session.view()
        out = [m.wire() for m in self.listed_meta(request, view)]
        for tool in view.visible:
            if is_scoped(tool):
                continue
            wire = tool.wire()
            for addon in self.addons:
                wire = addon.transform(wire, tool, request)
            out.append(wire)
        out.sort(key=lambda w: w["name"])
        return out

    # -- groups/list -------------------------------------------------------------------
    def top_level(self, principal: Principal) -> list[Group]:
        """In-scope groups whose parent the principal cannot see (or that have none).

        A scope naming only a child group makes that child top-level for this
        principal, so every group in scope is reachable from ``groups/list``.
        """
        view = self.toolset.view(principal, EMPTY)  # scope does not depend on state
        seen = {g.name: g.group for g in view.groups if g.visible and g.group}
        return sorted((g for g in seen.values() if g.parent not in seen), key=lambda g: g.wire_name)

    def listing(
        self, principal: Principal, extensions: frozenset[str]
    ) -> tuple[dict[str, Any], ...]:
        """Every top-level ``Group`` object ``principal`` may see, by wire name."""
        key = (self.toolset.catalog.version, principal.key, extensions)
        cached = self._listings.get(key)
        if cached is not None:
            self._listings.move_to_end(key)
            return cached
        items = tuple(group_wire(g) for g in self.top_level(principal))
        self._listings[key] = items
        if len(self._listings) > LISTING_CACHE_SIZE:
            self._listings.popitem(last=False)
        return items

    def named_listing(self, principal: Principal, names: tuple[str, ...]) -> list[dict[str, Any]]:
        """The ``Group`` objects of a request that names toolsets: the named groups the
        principal may see, less those inside another named one (nesting is navigation).
        Raises ``UnknownToolsets`` as that request's ``tools/list`` does."""
        view = self.toolset.view(principal, EMPTY)  # scope does not depend on state
        toolset_groups(view, names)
        cat = self.toolset.catalog
        named = set(catalog_names(cat, names))
        top = [cat.groups[n] for n in named if named.isdisjoint(cat.ancestors(n))]
        return [group_wire(g) for g in sorted(top, key=lambda g: g.wire_name)]

    def groups_list(self, request: Request, cursor: str | None = None) -> dict[str, Any]:
        """The ``groups/list`` result: ``{"groups": [...], "nextCursor"?: str}``; for a
        request that names toolsets, those groups (:meth:`named_listing`).

        Raises ``InvalidCursor`` for a cursor this server did not issue.
        """
        size = self.page_size or self.toolset.page_size
        principal = request.session.principal
        items: Sequence[Mapping[str, Any]] = (
            self.named_listing(principal, request.toolsets)
            if request.toolsets
            else self.listing(principal, request.extensions)
        )
        page = paginate(items, lambda g: str(g["name"]), cursor, size, kind="groups")
        out: dict[str, Any] = {"groups": [dict(g) for g in page.items]}
        if page.next_cursor is not None:
            out["nextCursor"] = page.next_cursor
        return out

    def fingerprint(self, principal: Principal, extensions: frozenset[str]) -> str:
        """A digest of everything ``groups/list`` shows ``principal`` (all pages)."""
        text = json.dumps(
            self.listing(principal, extensions), sort_keys=True, separators=(",", ":")
        )
        return hashlib.sha256(text.encode()).hexdigest()

    # -- groups/get --------------------------------------------------------------------
    def resolve(self, wire_name: str) -> str | None:
        """The catalog name of the group called ``wire_name`` on the extension wire."""
        cat = self.toolset.catalog
        version, index = self._wire_index
        if version != cat.version:
            index = {g.wire_name: g.name for g in cat.groups.values()}
            self._wire_index = (cat.version, index)
        return index.get(wire_name)

    async def groups_get(self, request: Request, name: str) -> dict[str, Any]:
        """The ``groups/get`` result: ``{"instructions"?: str, "contents": {"tools",
        "groups"}}`` with complete definitions of the scoped tools the principal may run.

        Raises ``GroupNotFound`` for an unknown group and for one out of scope alike,
        ``InvalidParams`` for a name no group can have on the wire
        (``wire_name_problem``: empty, too long, not ``^[a-z0-9]+(-[a-z0-9]+)*$``), and for a
        request that names toolsets, ``UnknownToolsets`` as that request's
        ``tools/list`` does (a view narrows lists, not navigation, but it must be valid).
        """
        problem = wire_name_problem(name)
        if problem is not None:
            raise InvalidParams("name", problem)
        session = request.session
        if request.toolsets:
            # scope does not depend on state: the initial view answers it
            toolset_groups(self.toolset.view(session.principal, EMPTY), request.toolsets)
        internal = self.resolve(name)
        if internal is None:
            raise GroupNotFound(name)
        view = await session.view()
        try:
            data = group_contents(view, internal)
        except GroupNotFound:
            raise GroupNotFound(name) from None
        cat = self.toolset.catalog
        tools = [w for w in data["tools"] if is_scoped(cat.tools[w["name"]])]
        children = sorted(
            (group_wire(cat.groups[c["name"]]) for c in data["groups"]), key=lambda g: g["name"]
        )
        out: dict[str, Any] = {}
        if "instructions" in data:
            out["instructions"] = data["instructions"]
        out["contents"] = {"tools": tools, "groups": children}
        # a host hands the tools to its model and the instructions with them
        emit_selection(request, "group", self, tools, answer=out)
        return out
