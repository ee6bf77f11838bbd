"""Host side of progressive disclosure: the groups extension from an MCP client.

``GroupsClient`` wraps an ``mcp.ClientSession`` (or an ``mcp.Client`` / ``fastmcp.Client``)
and uses ``groups/list`` / ``groups/get`` when the server advertises them, toolgate's
catalog meta-tools when it offers those, or the flat list; it hands an agent a few
helper tools and exports fetched tools for OpenAI and Anthropic, either as plain tool
lists or for the providers' own tool search (deferred loading). Edge: talks to servers
over ``mcp``, never to toolgate's core.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types as mt
from mcp.client.extension import ClientExtension, NotificationBinding
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

GROUPS_EXTENSION = "io.modelcontextprotocol/groups"
GROUPS_LIST_CHANGED = "notifications/groups/list_changed"
LLM_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_PAGES = 1000
#: The Anthropic Messages API's tool-search tools (``type``, ``name``) and their beta flag.
ANTHROPIC_TOOL_SEARCH: Mapping[str, tuple[str, str]] = {
    "bm25": ("tool_search_tool_bm25_20251119", "tool_search_tool_bm25"),
    "regex": ("tool_search_tool_regex_20251119", "tool_search_tool_regex"),
}
ANTHROPIC_TOOL_SEARCH_BETA = "advanced-tool-use-2025-11-20"
ANTHROPIC_VERSION = "2023-06-01"
ANTHROPIC_MESSAGES_URL = "https://api.anthropic.com/v1/messages"
OPENAI_RESPONSES_URL = "https://api.openai.com/v1/responses"
Mode = Literal["groups", "meta", "flat"]
OnListChanged = Callable[[], Awaitable[None]]
_RAW: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


# -- wire models (client-side envelopes) -------------------------------------------------
class ListGroupsParams(mt.PaginatedRequestParams):
    pass


class GetGroupParams(mt.RequestParams):
    name: str


class ListGroupsRequest(mt.Request[ListGroupsParams, Literal["groups/list"]]):
    method: Literal["groups/list"] = "groups/list"
    params: ListGroupsParams


class GetGroupRequest(mt.Request[GetGroupParams, Literal["groups/get"]]):
    method: Literal["groups/get"] = "groups/get"
    params: GetGroupParams


class GroupsListChangedParams(mt.NotificationParams):
    pass


def _bindings(on_list_changed: OnListChanged | None) -> list[NotificationBinding[Any]]:
    if on_list_changed is None:
        return []
    callback = on_list_changed

    async def handler(_params: GroupsListChangedParams) -> None:
        await callback()

    return [
        NotificationBinding(
            method=GROUPS_LIST_CHANGED, params_type=GroupsListChangedParams, handler=handler
        )
    ]


class GroupsClientExtension(ClientExtension):
    """Declares the extension for ``mcp.Client`` / ``fastmcp.Client(extensions=[...])``
    and delivers ``notifications/groups/list_changed`` to ``on_list_changed``."""

    identifier = GROUPS_EXTENSION

    def __init__(self, on_list_changed: OnListChanged | None = None) -> None:
        self.on_list_changed = on_list_changed

    def notifications(self) -> list[NotificationBinding[Any]]:
        return _bindings(self.on_list_changed)


def session_options(on_list_changed: OnListChanged | None = None) -> dict[str, Any]:
    """Keyword arguments declaring the extension on an ``mcp.ClientSession``."""
    return {
        "extensions": {GROUPS_EXTENSION: {}},
        "notification_bindings": _bindings(on_list_changed),
    }


# -- names the LLM APIs accept ------------------------------------------------------------
class ToolNames:
    """Maps MCP tool names to names OpenAI and Anthropic accept (``^[a-zA-Z0-9_-]{1,64}$``)
    and back. Append-only, so a name never changes meaning mid-conversation: a valid
    name maps to itself unless taken; others become ``_``-joined, and a collision or
    an over-long name gets a short hash of the original."""

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self._safe: dict[str, str] = {}
        self._original: dict[str, str] = {}
        self._reserved = set(reserved)

    def safe(self, name: str) -> str:
        known = self._safe.get(name)
        if known is not None:
            return known
        candidate = re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64] or "tool"
        if candidate in self._original or candidate in self._reserved or len(name) > 64:
            digest = hashlib.sha256(name.encode()).hexdigest()[:8]
            candidate = f"{candidate[:55]}_{digest}"
        self._safe[name] = candidate
        self._original[candidate] = name
        return candidate

    def original(self, safe: str) -> str | None:
        return self._original.get(safe)


# -- fetched groups -------------------------------------------------------------------------
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


@dataclass(frozen=True)
class ProviderRequest:
    """An LLM API request a host sends as it is: ``url``, ``headers`` (without the API
    key, which the host adds) and the JSON ``body``."""

    url: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]


@dataclass(frozen=True)
class HelperNames:
    list_groups: str = "list_groups"
    get_group: str = "get_group"
    call_tool: str = "call_tool"


@dataclass
class GroupsClient:
    """Discover, fetch and call a server's grouped tools on behalf of an agent.

    >>> async with fastmcp.Client(url, extensions=[GroupsClientExtension()]) as c:
    ...     groups = GroupsClient(c); await groups.start()
    ...     await groups.fetch_tree()            # or let the agent call get_group
    ...     groups.openai_tools()
    """

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
        declared = getattr(self.session, "_extensions", None)
        if isinstance(declared, Mapping):
            return GROUPS_EXTENSION in declared
        try:
            await self.session.send_request(ListGroupsRequest(params=ListGroupsParams()), _RAW)
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
                raw = await self.session.send_request(req, _RAW)
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
            raw = await self.session.send_request(req, _RAW)
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

    # -- what an agent sees ----------------------------------------------------------------
    def helper_tools(self) -> list[dict[str, Any]]:
        """The helper tools (MCP wire shape); none in flat mode, where every tool is listed."""
        if self.mode == "flat":
            return []
        h = self.helpers
        name_arg = {"type": "string", "description": "A group name from list_groups."}
        return [
            {
                "name": h.list_groups,
                "description": "List the tool groups of this server: name and what each is for.",
                "inputSchema": {"type": "object", "properties": {}},
            },
            {
                "name": h.get_group,
                "description": "Open a tool group: its instructions, its tools (which you "
                "can then call) and its sub-groups.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"name": name_arg},
                    "required": ["name"],
                },
            },
            {
                "name": h.call_tool,
                "description": "Call a tool from an opened group by name with its arguments.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "The tool's name."},
                        "arguments": {"type": "object", "description": "Its arguments."},
                    },
                    "required": ["name"],
                },
            },
        ]

    def agent_tools(self) -> list[dict[str, Any]]:
        """Helpers, then every registered tool (top-level and fetched), MCP wire shape."""
        return [*self.helper_tools(), *(self.tools[n] for n in sorted(self.tools))]

    def openai_tools(self) -> list[dict[str, Any]]:
        """``[{"type": "function", "function": {"name", "description", "parameters"}}]``."""
        return [
            {
                "type": "function",
                "function": {
                    "name": self._export_name(w["name"]),
                    "description": str(w.get("description") or ""),
                    "parameters": dict(w.get("inputSchema") or {"type": "object"}),
                },
            }
            for w in self.agent_tools()
        ]

    def anthropic_tools(self) -> list[dict[str, Any]]:
        """``[{"name", "description", "input_schema"}]``."""
        return [self._anthropic(w) for w in self.agent_tools()]

    def _export_name(self, name: str) -> str:
        helpers = self.helpers
        is_helper = self.mode != "flat" and name in (
            helpers.list_groups,
            helpers.get_group,
            helpers.call_tool,
        )
        return name if is_helper else self.names.safe(name)

    # -- provider-native tool search -------------------------------------------------------
    def _eager_and_deferred(self) -> tuple[list[dict[str, Any]], list[str]]:
        """Top-level tools (loaded up front) and the fetched groups that hold tools."""
        eager = [self.tools[n] for n in sorted(self._top_level) if n in self.tools]
        groups = [g for g in sorted(self.fetched) if self.fetched[g].tools]
        return eager, groups

    def _deferred_names(self) -> list[str]:
        """Every fetched tool that is not top-level, once, by name."""
        fetched = {t for g in self.fetched.values() for t in g.tools}
        return sorted(fetched - self._top_level)

    def anthropic_tool_search(
        self, search: Literal["bm25", "regex"] = "bm25"
    ) -> list[dict[str, Any]]:
        """``tools`` for the Anthropic Messages API with server-side tool search: the
        search tool, the top-level tools loaded up front, and every fetched group's
        tools with ``defer_loading`` (the model loads the ones its search finds).
        Call :meth:`fetch_tree` first; calls still run through this server, which
        enforces access on each one."""
        kind, name = ANTHROPIC_TOOL_SEARCH[search]
        eager, _ = self._eager_and_deferred()
        out: list[dict[str, Any]] = [{"type": kind, "name": name}]
        out += [self._anthropic(w) for w in eager]
        out += [
            {**self._anthropic(self.tools[n]), "defer_loading": True}
            for n in self._deferred_names()
        ]
        return out

    def anthropic_request(
        self,
        model: str,
        messages: Iterable[Mapping[str, Any]],
        *,
        max_tokens: int = 1024,
        search: Literal["bm25", "regex"] = "bm25",
        **params: Any,
    ) -> ProviderRequest:
        """A Messages API request with tool search over this server's tools (the host
        adds its ``x-api-key`` header and sends ``body`` as JSON to ``url``)."""
        body = {
            "model": model,
            "max_tokens": max_tokens,
            "messages": [dict(m) for m in messages],
            **params,
            "tools": self.anthropic_tool_search(search),
        }
        headers = {
            "anthropic-version": ANTHROPIC_VERSION,
            "anthropic-beta": ANTHROPIC_TOOL_SEARCH_BETA,
            "content-type": "application/json",
        }
        return ProviderRequest(ANTHROPIC_MESSAGES_URL, headers, body)

    def openai_tool_search(self) -> list[dict[str, Any]]:
        """``tools`` for the OpenAI Responses API with ``tool_search``: the top-level
        tools as functions, one ``namespace`` per fetched group (its description, its
        tools with ``defer_loading``; a tool in several groups is in each), and the
        ``tool_search`` tool. Call :meth:`fetch_tree` first."""
        eager, groups = self._eager_and_deferred()
        out: list[dict[str, Any]] = [self._responses_function(w) for w in eager]
        for group in groups:
            members = [t for t in self.fetched[group].tools if t not in self._top_level]
            if not members:
                continue
            out.append(
                {
                    "type": "namespace",
                    "name": self.namespaces.safe(group),
                    "description": self.group_descriptions.get(group) or f"The {group} tools.",
                    "tools": [
                        {**self._responses_function(self.tools[t]), "defer_loading": True}
                        for t in members
                    ],
                }
            )
        out.append({"type": "tool_search"})
        return out

    def openai_request(self, model: str, input: Any, **params: Any) -> ProviderRequest:
        """A Responses API request with tool search over this server's tools (the host
        adds its ``authorization`` header)."""
        body = {"model": model, "input": input, **params, "tools": self.openai_tool_search()}
        return ProviderRequest(OPENAI_RESPONSES_URL, {"content-type": "application/json"}, body)

    def _anthropic(self, wire: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "name": self._export_name(str(wire["name"])),
            "description": str(wire.get("description") or ""),
            "input_schema": dict(wire.get("inputSchema") or {"type": "object"}),
        }

    def _responses_function(self, wire: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "type": "function",
            "name": self._export_name(str(wire["name"])),
            "description": str(wire.get("description") or ""),
            "parameters": dict(wire.get("inputSchema") or {"type": "object"}),
        }

    async def run_openai_call(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """Run a Responses API ``function_call`` output item (``name``, ``arguments`` as
        a JSON string, ``call_id``, optional ``namespace``); the ``function_call_output``
        item to send back."""
        try:
            arguments = json.loads(item.get("arguments") or "{}")
        except json.JSONDecodeError as exc:
            output: Any = {"error": f"The arguments are not JSON: {exc.msg}"}
        else:
            namespace = item.get("namespace")
            output = await self.dispatch(
                str(item.get("name", "")),
                arguments if isinstance(arguments, Mapping) else {},
                namespace=str(namespace) if namespace is not None else None,
            )
        return {
            "type": "function_call_output",
            "call_id": item.get("call_id"),
            "output": json.dumps(output, ensure_ascii=False),
        }

    async def run_anthropic_tool_use(self, block: Mapping[str, Any]) -> dict[str, Any]:
        """Run a Messages API ``tool_use`` content block; the ``tool_result`` block to
        send back (``is_error`` when the tool or the dispatch failed)."""
        output = await self.dispatch(str(block.get("name", "")), block.get("input") or {})
        failed = "error" in output or bool(output.get("isError"))
        return {
            "type": "tool_result",
            "tool_use_id": block.get("id"),
            "content": json.dumps(output, ensure_ascii=False),
            **({"is_error": True} if failed else {}),
        }

    async def dispatch(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        namespace: str | None = None,
    ) -> Any:
        """Run what the model asked for by its exported ``name``: a helper (returns a
        JSON-able dict) or a tool (returns its ``CallToolResult`` as a wire dict).
        ``namespace``: the OpenAI namespace the call names, which must hold the tool.
        Failures come back as ``{"error": ...}`` for the model to read."""
        args = dict(arguments or {})
        h = self.helpers
        if namespace is not None:
            for fetched in sorted(self.fetched):  # the names openai_tool_search gives
                self.namespaces.safe(fetched)
            space = self.namespaces.original(namespace)
            tool = self.names.original(name)
            if space is None or tool is None or space not in self.tool_groups.get(tool, ()):
                return {"error": f"Unknown tool: {name} in namespace {namespace}"}
        try:
            if self.mode != "flat" and name == h.list_groups:
                return {"groups": await self.list_groups()}
            if self.mode != "flat" and name == h.get_group:
                group = await self.get_group(str(args.get("name", "")))
                return group.summary(self.names, self.tools)
            if self.mode != "flat" and name == h.call_tool:
                target = str(args.get("name", ""))
                result = await self.call_tool(
                    self.names.original(target) or target, args.get("arguments") or {}
                )
                return _result_wire(result)
            tool = self.names.original(name)
            if tool is None:
                return {"error": f"Unknown tool: {name}"}
            return _result_wire(await self.call_tool(tool, args))
        except MCPError as exc:
            return {"error": exc.error.message, "code": exc.error.code}


def _result_wire(result: Any) -> dict[str, Any]:
    data: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    return data
