"""The simulated host: what the model is offered from the gateway, and running its calls.

``ListHost`` offers ``tools/list`` as an MCP host does (re-listing after
``tools/list_changed`` when the task says the host does); ``GroupsHost`` offers the
groups extension through ``toolgate.client``; ``NativeHost`` hands every group to the
provider's own tool search (``defer_loading``). Each records every call as a
``CallRecord``: refused (by the host or the gateway) or failed. Edge (``toolgate.eval``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types as mt
from mcp import Client
from mcp.shared.exceptions import MCPError

from toolgate.client import GroupsClient, GroupsClientExtension, ToolNames
from toolgate.errors import (
    BudgetExceeded,
    ConfirmationRefused,
    DescriptionRequired,
    GroupNotFound,
    ParentInactive,
    RateLimited,
    ToolHidden,
    ToolNotFound,
    Unauthenticated,
)
from toolgate.eval.offers import HostKind
from toolgate.eval.tasks import CallRecord

#: error results the gateway gives when it refuses a call rather than the tool failing
REFUSALS = frozenset(
    cls.code
    for cls in (
        ToolHidden,
        ToolNotFound,
        RateLimited,
        ConfirmationRefused,
        DescriptionRequired,
        Unauthenticated,
        ParentInactive,
        GroupNotFound,
        BudgetExceeded,
    )
)
#: the dispatcher meta-tool (gateway and ``toolgate.client`` alike): the call it makes
DISPATCHER = "call_tool"
NativeApi = Literal["anthropic", "openai-responses"]


@dataclass(frozen=True)
class Definition:
    """A tool as the model is offered it: its exported name, description and schema."""

    name: str
    description: str
    input_schema: Mapping[str, Any]

    def wire(self) -> dict[str, Any]:
        """Its MCP wire form, as ``toolgate.tokens`` counts it."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": dict(self.input_schema),
        }


@dataclass(frozen=True)
class Offered:
    """What one model turn is offered: the definitions the model reads up front and,
    for the provider's own tool search, the provider's ``tools`` to send as they are."""

    definitions: tuple[Definition, ...]
    native_tools: tuple[Mapping[str, Any], ...] | None = None


@dataclass(frozen=True)
class Outcome:
    """A call's result as the model reads it, and the record of the call."""

    text: str
    record: CallRecord


def result_text(wire: Mapping[str, Any]) -> str:
    """A ``tools/call`` result as a host hands it to a model: its text blocks, other
    blocks as JSON; structured content alone when there is no content."""
    parts = []
    for block in wire.get("content") or []:
        if isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            parts.append(json.dumps(block, ensure_ascii=False, sort_keys=True))
    if not parts and wire.get("structuredContent") is not None:
        parts.append(json.dumps(wire["structuredContent"], ensure_ascii=False, sort_keys=True))
    return "\n".join(parts)


def _refused(wire: Mapping[str, Any]) -> bool:
    data = wire.get("structuredContent")
    return isinstance(data, Mapping) and data.get("code") in REFUSALS


def _target(name: str, arguments: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """The tool a dispatcher call reaches, with its arguments; any other call as it is."""
    if name == DISPATCHER and isinstance(arguments.get("name"), str):
        inner = arguments.get("arguments")
        return str(arguments["name"]), inner if isinstance(inner, Mapping) else {}
    return name, arguments


def _record(
    called: str, tool: str, arguments: Mapping[str, Any], wire: Mapping[str, Any]
) -> CallRecord:
    tool, args = _target(tool, arguments)
    failed = bool(wire.get("isError"))
    refused = failed and _refused(wire)
    return CallRecord(called, tool, dict(args), refused=refused, failed=failed and not refused)


def _rpc_refusal(called: str, tool: str, arguments: Mapping[str, Any], text: str) -> Outcome:
    tool, args = _target(tool, arguments)
    return Outcome(text, CallRecord(called, tool, dict(args), refused=True, failed=False))


class Host:
    """The host's side of one conversation (one MCP session)."""

    kind: HostKind = "list"

    async def offer(self) -> Offered:
        raise NotImplementedError

    async def call(
        self, name: str, arguments: Mapping[str, Any], *, namespace: str | None = None
    ) -> Outcome:
        raise NotImplementedError


class ListHost(Host):
    """``tools/list`` as the model's tools, refreshed on ``list_changed`` when ``relist``."""

    def __init__(self, client: Client, *, relist: bool) -> None:
        self.client = client
        self.relist = relist
        self.names = ToolNames()
        self.listed: dict[str, dict[str, Any]] = {}
        self.stale = True  # nothing listed yet

    def changed(self) -> None:
        self.stale = True

    async def offer(self) -> Offered:
        if self.stale and (self.relist or not self.listed):
            self.stale = False
            tools: list[dict[str, Any]] = []
            cursor: str | None = None
            while True:
                params = mt.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await self.client.session.list_tools(params=params)
                tools += [t.model_dump(by_alias=True, exclude_none=True) for t in page.tools]
                cursor = page.next_cursor
                if not cursor:
                    break
            self.listed = {self.names.safe(t["name"]): t for t in tools}
        return Offered(
            tuple(
                Definition(name, str(t.get("description") or ""), t.get("inputSchema") or {})
                for name, t in self.listed.items()
            )
        )

    async def call(
        self, name: str, arguments: Mapping[str, Any], *, namespace: str | None = None
    ) -> Outcome:
        tool = self.listed.get(name)
        if tool is None:
            text = f"Unknown tool: {name} (not among the tools this host was given)"
            return _rpc_refusal(name, self.names.original(name) or name, arguments, text)
        mcp_name = str(tool["name"])
        try:
            result = await self.client.session.call_tool(mcp_name, dict(arguments))
        except MCPError as exc:
            text = f"Error {exc.error.code}: {exc.error.message}"
            return _rpc_refusal(name, mcp_name, arguments, text)
        wire = result.model_dump(by_alias=True, exclude_none=True, mode="json")
        return Outcome(result_text(wire), _record(name, mcp_name, arguments, wire))


class GroupsHost(Host):
    """``toolgate.client``'s helpers and the tools of the groups the model opened; with
    ``native``, every group fetched up front and handed to the provider's tool search."""

    def __init__(self, groups: GroupsClient, *, native: NativeApi | None = None) -> None:
        self.groups = groups
        self.native = native
        self.relist = False
        self.stale = False
        self.kind = "native" if native else "groups"

    def changed(self) -> None:
        self.stale = True

    async def offer(self) -> Offered:
        if self.stale and self.relist:
            self.stale = False
            await self.groups.start()
        if self.native is None:
            return Offered(tuple(_definitions(self.groups.openai_tools())))
        if self.native == "anthropic":
            tools = self.groups.anthropic_tool_search()
            eager = [
                Definition(t["name"], t["description"], t["input_schema"])
                for t in tools
                if "input_schema" in t and not t.get("defer_loading")
            ]
        else:
            tools = self.groups.openai_tool_search()
            eager = [
                Definition(t["name"], t["description"], t["parameters"])
                for t in tools
                if t.get("type") == "function"
            ]
        return Offered(tuple(eager), native_tools=tuple(tools))

    async def call(
        self, name: str, arguments: Mapping[str, Any], *, namespace: str | None = None
    ) -> Outcome:
        output = await self.groups.dispatch(name, arguments, namespace=namespace)
        h = self.groups.helpers
        if name in (h.list_groups, h.get_group):
            tool = name
        else:
            tool = self.groups.names.original(name) or name
            if name == h.call_tool:
                tool = DISPATCHER
        if isinstance(output, Mapping) and "content" in output:  # a tool's result
            args = arguments
            if tool == DISPATCHER:
                inner = str(arguments.get("name", ""))
                args = {**arguments, "name": self.groups.names.original(inner) or inner}
            return Outcome(result_text(output), _record(name, tool, args, output))
        text = json.dumps(output, ensure_ascii=False)
        if isinstance(output, Mapping) and "error" in output:
            return _rpc_refusal(name, tool, arguments, text)
        return Outcome(text, CallRecord(name, tool, dict(arguments), refused=False, failed=False))


def _definitions(openai_tools: list[dict[str, Any]]) -> list[Definition]:
    return [
        Definition(f["name"], f["description"], f["parameters"])
        for f in (t["function"] for t in openai_tools)
    ]


@contextlib.asynccontextmanager
async def connect(
    url: str, kind: HostKind, *, relist: bool, native: NativeApi | None = None
) -> AsyncIterator[Host]:
    """A new MCP session on the gateway at ``url`` (legacy protocol: a host that keeps a
    session and hears ``list_changed``), and the host of ``kind`` over it."""
    host: ListHost | GroupsHost | None = None

    async def on_message(message: Any) -> None:
        method = getattr(message, "method", None)
        if host is not None and isinstance(method, str) and method.endswith("list_changed"):
            host.changed()

    async def on_groups_changed() -> None:
        if host is not None:
            host.changed()

    extensions = [GroupsClientExtension(on_groups_changed)] if kind != "list" else []
    async with Client(
        url, mode="legacy", message_handler=on_message, extensions=extensions
    ) as client:
        if kind == "list":
            host = ListHost(client, relist=relist)
        else:
            groups = GroupsClient(client)
            await groups.start()
            if kind == "native":
                await groups.fetch_tree()
            host = GroupsHost(groups, native=native if kind == "native" else None)
            host.relist = relist
        yield host
