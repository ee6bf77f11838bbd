"""What an agent sees of a server's grouped tools, and running what its model asks for.

``GroupsClient`` hands an agent a few helper tools and exports fetched tools for OpenAI
and Anthropic, as plain tool lists or for the providers' own tool search (deferred
loading). Edge: imports ``mcp`` and the client's discovery, never toolgate's core.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mcp.shared.exceptions import MCPError

from toolgate.client.discovery import GroupsDiscovery

#: The Anthropic Messages API's tool-search tools (``type``, ``name``) and their beta flag.
ANTHROPIC_TOOL_SEARCH: Mapping[str, tuple[str, str]] = {
    "bm25": ("tool_search_tool_bm25_20251119", "tool_search_tool_bm25"),
    "regex": ("tool_search_tool_regex_20251119", "tool_search_tool_regex"),
}
ANTHROPIC_TOOL_SEARCH_BETA = "advanced-tool-use-2025-11-20"
ANTHROPIC_VERSION = "2023-06-01"
ANTHROPIC_MESSAGES_URL = "https://api.anthropic.com/v1/messages"
OPENAI_RESPONSES_URL = "https://api.openai.com/v1/responses"


@dataclass(frozen=True)
class ProviderRequest:
    """An LLM API request a host sends as it is: ``url``, ``headers`` (without the API
    key, which the host adds) and the JSON ``body``."""

    url: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]


class GroupsClient(GroupsDiscovery):
    """Discover, fetch and call a server's grouped tools on behalf of an agent.

    >>> async with fastmcp.Client(url, extensions=[GroupsClientExtension()]) as c:
    ...     groups = GroupsClient(c); await groups.start()
    ...     await groups.fetch_tree()            # or let the agent call get_group
    ...     groups.openai_tools()
    """

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
