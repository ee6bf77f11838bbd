"""A server's grouped tools as a host discovers, fetches and calls them.

``GroupsDiscovery`` picks the mode (groups extension, catalog meta-tools or flat), pages
the lists, fetches groups and their descendants, and calls tools. Edge: imports
``mcp`` and the client's extension and names, never toolgate's core.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types as mt
from mcp.shared.exceptions import MCPError

from toolgate.client.extension import (
    GROUPS_EXTENSION,
    RAW,
    GetGroupParams,
    GetGroupRequest,
    ListGroupsParams,
    ListGroupsRequest,
)
from toolgate.client.names import HelperNames, ToolNames
from toolgate.sdk_internals import client_extensions

MAX_PAGES = 1000
Mode = Literal["groups", "meta", "flat"]


@dataclass(frozen=True)
class FetchedGroup:
    """One ``groups/get`` (or ``get_group``) answer, with tool and child-group names."""

    name: str
    instructions: str | None
    tools: tuple[str, ...]
    groups: tuple[dict[str, Any], ...]

    def summary(self, names: ToolNames, tools: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        """What the ``get_group`` helper tells the model (tool names made LLM-safe)."""
        out: dict[str, Any] = {"name": self.name}
        if self.instructions is not None:
            out["instructions"] = self.instructions
        out["tools"] = [
            {"name": names.safe(t), "description": str(tools[t].get("description", ""))}
            for t in self.tools
        ]
        out["groups"] = [dict(g) for g in self.groups]
        return out


@dataclass
class GroupsDiscovery:
    """Discover, fetch and call a server's grouped tools: ``groups/list`` and
    ``groups/get`` when both sides speak the extension, toolgate's catalog meta-tools
    when the server offers them, else the flat list. ``GroupsClient`` adds what an
    agent sees."""

    client: Any
    helpers: HelperNames = field(default_factory=HelperNames)
    server_meta: HelperNames = field(default_factory=HelperNames)
    mode: Mode = "flat"
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    tool_groups: dict[str, set[str]] = field(default_factory=dict)
    fetched: dict[str, FetchedGroup] = field(default_factory=dict)
    cycles: list[tuple[str, ...]] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    #: what each group seen in ``groups/list`` or a parent's contents says it is for
    group_descriptions: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.session: Any = getattr(self.client, "session", self.client)
        if not all(
            callable(getattr(self.session, m, None)) for m in ("list_tools", "send_request")
        ):
            # a server passed where its client belongs would fail later, in start()
            raise TypeError(
                "GroupsClient wraps a connected MCP client (mcp.Client, fastmcp.Client or "
                f"mcp.ClientSession), not {type(self.client).__name__}"
            )
        h = self.helpers
        self.names = ToolNames(reserved=(h.list_groups, h.get_group, h.call_tool))
        self.namespaces = ToolNames()  # group names as OpenAI namespace names
        self._top_level: set[str] = set()
        self._server_meta_listed: set[str] = set()

    # -- negotiation ---------------------------------------------------------------------
    @property
    def server_has_extension(self) -> bool:
        caps = getattr(self.session, "server_capabilities", None)
        extensions = getattr(caps, "extensions", None) or {}
        return GROUPS_EXTENSION in extensions

    async def _groups_negotiated(self) -> bool:
        """Both sides speak the extension: the server advertises it and this client
        declared it. When the client's declaration can't be read, one ``groups/list``
        probe decides (a server answers -32601 to clients that did not declare it)."""
        if not self.server_has_extension:
            return False
        declared = client_extensions(self.session)
        if declared is not None:
            return GROUPS_EXTENSION in declared
        try:
            await self.session.send_request(ListGroupsRequest(params=ListGroupsParams()), RAW)
        except MCPError as exc:
            if exc.error.code == mt.METHOD_NOT_FOUND:
                return False
            raise
        return True

    async def start(self) -> Mode:
        """Pick the mode and register the top-level tools. Call again after a
        ``tools/list_changed`` or ``groups/list_changed`` to refresh."""
        listed = await self._list_tools()
        meta = self.server_meta
        meta_names = {meta.list_groups, meta.get_group, meta.call_tool}
        if await self._groups_negotiated():
            self.mode = "groups"
        elif meta_names <= {t["name"] for t in listed}:
            self.mode = "meta"
        else:
            self.mode = "flat"
        self._server_meta_listed = meta_names if self.mode == "meta" else set()
        for wire in listed:
            if wire["name"] not in self._server_meta_listed:
                self._register(wire, group=None)
                self._top_level.add(wire["name"])
        return self.mode

    async def _list_tools(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = mt.PaginatedRequestParams(cursor=cursor) if cursor else None
            result = await self.session.list_tools(params=params)
            out += [
                t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in result.tools
            ]
            cursor = result.next_cursor
            if not cursor:
                break
        return out

    def _register(self, wire: Mapping[str, Any], group: str | None) -> None:
        name = str(wire["name"])
        known = self.tools.get(name)
        if known is None:
            self.tools[name] = dict(wire)
            self.names.safe(name)
        elif known != dict(wire) and name not in self.conflicts:
            # the draft: a shared tool's definition MUST be identical; keep the first
            self.conflicts.append(name)
        if group is not None:
            self.tool_groups.setdefault(name, set()).add(group)

    # -- groups ----------------------------------------------------------------------------
    async def list_groups(self) -> list[dict[str, Any]]:
        """The top-level groups: ``[{name, title?, description}]``."""
        if self.mode == "groups":
            out: list[dict[str, Any]] = []
            cursor: str | None = None
            for _ in range(MAX_PAGES):
                req = ListGroupsRequest(params=ListGroupsParams(cursor=cursor))
                raw = await self.session.send_request(req, RAW)
                out += list(raw.get("groups") or [])
                cursor = raw.get("nextCursor")
                if not cursor:
                    break
            self._describe_groups(out)
            return out
        if self.mode == "meta":
            data = await self._meta_call(self.server_meta.list_groups, {})
            groups = list(data.get("groups") or [])
            names = {g["name"] for g in groups}
            self._describe_groups(groups)
            return [
                {k: g[k] for k in ("name", "title", "description") if g.get(k) is not None}
                for g in groups
                if g.get("parent") is None or g.get("parent") not in names
            ]
        return []

    def _describe_groups(self, groups: Iterable[Mapping[str, Any]]) -> None:
        for g in groups:
            if isinstance(g.get("description"), str):
                self.group_descriptions[str(g["name"])] = g["description"]

    async def get_group(self, name: str) -> FetchedGroup:
        """Fetch one group and register its tools (each once, however many groups
        share it). Raises ``MCPError`` (-32002 for an unknown group)."""
        if self.mode == "groups":
            req = GetGroupRequest(params=GetGroupParams(name=name))
            raw = await self.session.send_request(req, RAW)
            contents = raw.get("contents") or {}
            tools = list(contents.get("tools") or [])
            children = list(contents.get("groups") or [])
            instructions = raw.get("instructions")
        elif self.mode == "meta":
            # the host wants whole definitions to hand to its model or export
            raw = await self._meta_call(
                self.server_meta.get_group, {"name": name, "detail": "full"}
            )
            tools = list(raw.get("tools") or [])
            children = [
                {k: g[k] for k in ("name", "title", "description") if g.get(k) is not None}
                for g in raw.get("groups") or []
            ]
            instructions = raw.get("instructions")
        else:
            raise MCPError(code=-32002, message=f"Unknown group: {name} (server has no groups)")
        for wire in tools:
            self._register(wire, group=name)
        self._describe_groups(children)
        group = FetchedGroup(
            name=name,
            instructions=instructions if isinstance(instructions, str) else None,
            tools=tuple(str(t["name"]) for t in tools),
            groups=tuple(children),
        )
        self.fetched[name] = group
        return group

    async def fetch_tree(self, names: Iterable[str] | None = None) -> list[FetchedGroup]:
        """Fetch ``names`` (default: every top-level group) and their descendants, one
        level at a time (a level's fetches run in parallel). A group reached twice is
        fetched once; a child leading back to a group on its own path is a cycle: it
        is recorded in :attr:`cycles` and not followed."""
        if names is None:
            names = [g["name"] for g in await self.list_groups()]
        level: list[tuple[str, tuple[str, ...]]] = [(n, ()) for n in dict.fromkeys(names)]
        seen: set[str] = set()
        out: list[FetchedGroup] = []
        while level:
            todo = []
            for name, path in level:
                if name not in seen:  # shared by several parents: fetched once
                    seen.add(name)
                    todo.append((name, path))
            fetched = await asyncio.gather(*(self.get_group(n) for n, _ in todo))
            out += fetched
            level = []
            for (name, path), group in zip(todo, fetched, strict=True):
                for child in group.groups:
                    child_name = str(child["name"])
                    if child_name in (*path, name):
                        self.cycles.append((*path, name, child_name))
                    elif child_name not in seen:
                        level.append((child_name, (*path, name)))
        return out

    # -- calls -----------------------------------------------------------------------------
    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Call a tool by its MCP name; returns the ``CallToolResult``. Scoped tools are
        called directly (discovery gating is not access control); a meta-mode tool
        that is not in ``tools/list`` goes through the server's ``call_tool``."""
        args = dict(arguments or {})
        if self.mode == "meta" and name not in self._top_level:
            return await self.session.call_tool(
                self.server_meta.call_tool, {"name": name, "arguments": args}
            )
        return await self.session.call_tool(name, args)

    async def _meta_call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.session.call_tool(tool, arguments)
        data = result.structured_content
        if result.is_error or not isinstance(data, dict):
            text = "".join(getattr(c, "text", "") for c in result.content)
            raise MCPError(code=-32002, message=str((data or {}).get("error") or text))
        return data
