"""Lazy descriptions: summaries in ``tools/list``, full docs on demand, describe-before-call.

``LazyDescriptions`` is an ``Addon`` for any strategy: it shortens listed tools, serves
``resource:///tool_descriptions?tools=a,b`` and the ``describe_tools`` meta-tool (same
JSON), records described tools in the session store, and words the error for calling
one first. Delivery layer: imports the core and ``toolgate.docs``, never ``mcp``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from toolgate.catalog import Tool, ToolResult
from toolgate.docs import ToolDocs
from toolgate.errors import (
    MAX_NAME_SHOWN,
    ConfigError,
    DescriptionRequired,
    InvalidArguments,
    json_type,
    short,
)
from toolgate.strategies.arguments import unexpected_arguments
from toolgate.strategies.base import READ_ONLY, Addon, MetaNames, MetaTool, Reply, Request, Strategy
from toolgate.strategies.detail import rest_pointer, summary_wire
from toolgate.tokens import model_form
from toolgate.toolset import ToolSet

SchemaMode = Literal["full", "minimal"]
DEFAULT_URI = "resource:///tool_descriptions"
MAX_TOOLS_PER_REQUEST = 64
MISSING_TOOL_SELECTION = "MISSING_TOOL_SELECTION"
TOO_MANY_TOOLS = "TOO_MANY_TOOLS"

DESCRIBE_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "tools": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["tools"],
}


#: what a description answer adds to a tool's model form: its long-form docs
LONG_FORM = ("examples", "usage_guidance", "error_guidance")


def as_model_reads(described: Mapping[str, Any]) -> dict[str, Any]:
    """A full description as a model reads it, in an answer keyed by the tool's name:
    its description and input schema (``toolgate.tokens.model_form``, less the name the
    key already gives) and the long-form docs; the fields hosts keep for themselves
    (title, annotations, output schema, icons) are left to ``tools/list``."""
    form = model_form(described)
    del form["name"]
    return {**form, **{k: described[k] for k in LONG_FORM if k in described}}


def workflow_text(uri: str, describe_tool: str) -> str:
    """The resource's description: the seed's proven step-by-step wording."""
    return (
        "WORKFLOW:\n"
        "\n"
        "Step 1: PICK which tool you need from tools/list based on SHORT descriptions\n"
        f"Step 2: FETCH full description: {uri}?tools=TOOL_NAME\n"
        f'        (or call the {describe_tool} tool with {{"tools": ["TOOL_NAME"]}})\n'
        "Step 3: CALL the tool with parameters you learned\n"
        "\n"
        "IMPORTANT: You CANNOT call a tool until you fetch its description.\n"
        "\n"
        "The SHORT descriptions tell you WHICH tool to use (sufficient for selection).\n"
        "This resource tells you HOW to use it (parameters, examples) and authorizes it.\n"
        "\n"
        "MUST include ?tools=TOOL_NAME (base URI without tools will error)."
    )


class ToolDescriptions(Addon):
    """``describe_tools`` for the strategies that disclose tools on demand (menu,
    activators, catalog, search): the full descriptions of the tools an agent picked
    from a compact index, the second of the two levels of detail. Nothing is gated or
    recorded; ``LazyDescriptions`` adds that. ``Delivery`` installs one by default.
    """

    records = False  # describing authorizes the tool for the session (lazy mode)

    def __init__(self, toolset: ToolSet, *, docs_dir: str | Path | None = None) -> None:
        self.toolset = toolset
        self.docs = ToolDocs.from_dir(docs_dir)
        #: the meta-tool's name; every strategy of one Delivery shares its MetaNames
        self.describe_name = MetaNames().describe_tools

    def offers(self, strategy: Strategy) -> bool:
        """Whether ``strategy`` lists ``describe_tools``."""
        return strategy.on_demand

    def describes(self, strategy: Strategy) -> bool:
        return self.offers(strategy)

    async def shown_in_full(self, request: Request, names: Sequence[str]) -> None:
        # a search's full result is a definition read: calling it next is not refused
        # with TOOL_DESCRIPTION_REQUIRED (lazy mode records; plain describe_tools does not)
        if names and self.records:
            await request.session.mark(described=names)

    def meta_tools(self, strategy: Strategy) -> list[MetaTool]:
        if not self.offers(strategy):
            return []
        self.describe_name = strategy.names.describe_tools

        async def run(request: Request, arguments: Mapping[str, Any]) -> Reply:
            unexpected_arguments(arguments, ("tools",))
            names = arguments.get("tools", [])
            if isinstance(names, str) or not isinstance(names, Sequence):
                raise InvalidArguments(
                    f"'tools' must be a list of tool names, like [\"a\"], not {json_type(names)}"
                )
            odd = next((n for n in names if not isinstance(n, str)), "")
            if not isinstance(odd, str):
                raise InvalidArguments(
                    f"'tools' must contain tool-name strings, not {json_type(odd)}"
                )
            blank = next((i for i, n in enumerate(names) if not n.strip()), None)
            if blank is not None:
                raise InvalidArguments(f"'tools[{blank}]' must be a tool name, not a blank string")
            data, ok = await self.describe(request, list(names))
            text = self.dumps(data)
            result = ToolResult(
                content=({"type": "text", "text": text},), structured=data, is_error=not ok
            )
            return Reply(result)

        return [MetaTool(self.describe_name, self.describe_text(), DESCRIBE_SCHEMA, run, READ_ONLY)]

    def describe_text(self) -> str:
        return (
            "The full definitions (description, parameters, examples) of the tools you "
            "picked from a one-line list."
        )

    # -- the one implementation behind the resource and the meta-tool ------------------
    async def describe(self, request: Request, names: Sequence[str]) -> tuple[dict[str, Any], bool]:
        """Full descriptions keyed by tool name, and whether any tool was described.

        Tools the session can use now are described (and, in lazy mode, authorized for
        it); any other name gets the error calling it would get, plus ``available_tools``.
        """
        session = request.session
        view = await session.view()
        available = sorted(view.visible_names)
        requested = list(dict.fromkeys(names))
        if not requested:
            return self.missing_selection(available), False
        if len(requested) > MAX_TOOLS_PER_REQUEST:
            return {
                "error": {
                    "code": TOO_MANY_TOOLS,
                    "message": f"{len(requested)} tools requested; at most "
                    f"{MAX_TOOLS_PER_REQUEST} per request. Describe only the tools you "
                    "picked for this task.",
                }
            }, False
        out: dict[str, Any] = {}
        described: list[str] = []
        for name in requested:
            s = view.surfacing(name)
            if s.visible and s.tool is not None:
                out[name] = as_model_reads(self.docs.describe(s.tool))
                described.append(name)
            else:
                exc = self.toolset.hidden_error(s, view)
                out[short(name, MAX_NAME_SHOWN)] = {
                    "error": exc.message,
                    "code": exc.code,
                    "available_tools": available,
                }
        if described and self.records:
            await session.mark(described=described)
        return out, bool(described)

    def missing_selection(self, available: Sequence[str]) -> dict[str, Any]:
        picks = list(available[:2]) or ["TOOL_NAME"]
        return {
            "error": {
                "code": MISSING_TOOL_SELECTION,
                "message": "You must specify one or more tool names in the 'tools' parameter. "
                "Pick the tools you need first; their short descriptions are enough to choose.",
                "describe_call": {"name": self.describe_name, "arguments": {"tools": picks}},
                "available_tools": list(available),
            }
        }

    @staticmethod
    def dumps(data: Mapping[str, Any]) -> str:
        """The one serialization of a descriptions answer (resource and meta-tool)."""
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


class LazyDescriptions(ToolDescriptions):
    """Lazy descriptions for every strategy of a ``Delivery``.

    ``tools/list`` carries each tool's summary. ``schema="full"`` keeps the other
    fields; ``schema="minimal"`` sends the seed's minimal tool: an open object schema,
    no output schema, no annotations (``title`` and ``_meta`` stay).

    Constructing it switches the toolset's describe-before-call gate on and loads and
    validates ``docs_dir`` (``ConfigError`` on a malformed file). Construct it after
    registering tools: each file must name a registered tool. A gateway whose tools
    arrive later passes ``check_names=False`` and calls :meth:`check_docs` once they do.

    >>> lazy = LazyDescriptions(toolset, schema="minimal", docs_dir="docs")  # doctest: +SKIP
    >>> delivery = Delivery(toolset, addons=[lazy])                      # doctest: +SKIP
    >>> for line in lazy.startup_warnings(): log.warning(line)           # doctest: +SKIP
    """

    def __init__(
        self,
        toolset: ToolSet,
        *,
        schema: SchemaMode = "full",
        docs_dir: str | Path | None = None,
        uri: str = DEFAULT_URI,
        check_names: bool = True,
    ) -> None:
        if schema not in ("full", "minimal"):
            raise ConfigError(
                f"descriptions.schema must be 'full' or 'minimal', got {schema!r}",
                key="descriptions.schema",
            )
        parts = urlsplit(uri)
        if not parts.scheme or parts.query or parts.fragment:
            raise ConfigError(
                f"descriptions.uri must be an absolute URI without a query, got {uri!r}",
                key="descriptions.uri",
            )
        super().__init__(toolset, docs_dir=docs_dir)
        self.schema: SchemaMode = schema
        self.uri = uri
        if check_names:
            self.check_docs()
        toolset.describe_before_call = True
        toolset.description_required = self.description_required

    def check_docs(self) -> None:
        """Check the doc files against the registered tools (``ConfigError``)."""
        self.docs.check(self.toolset.catalog)

    def startup_warnings(self) -> list[str]:
        """What an adapter should log at start-up about this configuration."""
        if self.toolset.default_principal.authenticated:
            return []
        return [
            "Lazy tool descriptions: requests on protocol 2026-07-28 without an "
            "authenticated principal have no session, so describe-before-call is not "
            "enforced for them (their tools are callable without describing first). "
            "Configure authentication to enforce it on that protocol."
        ]

    records = True

    # -- the Addon hooks -----------------------------------------------------------------
    def offers(self, strategy: Strategy) -> bool:
        return True  # every strategy lists summaries, so every one needs describing

    def describe_text(self) -> str:
        return (
            "Get the full descriptions of the tools you picked from your tool list: "
            "parameters, examples and common errors. You must describe a tool before "
            "calling it; the short descriptions are enough to choose one."
        )

    def transform(self, wire: dict[str, Any], tool: Tool, request: Request) -> dict[str, Any]:
        if self.schema == "minimal":  # the seed's minimal tool, with its required arguments
            return summary_wire(wire, tool, describe_tool=self.describe_name)
        pointer = rest_pointer(self.describe_name)
        return {**wire, "description": f"{tool.summary_text} {pointer}".lstrip()}

    async def list_resources(self, request: Request) -> list[dict[str, Any]]:
        return [
            {
                "uri": self.uri,
                "name": "tool_descriptions",
                "title": "Tool Descriptions - Required for tool use",
                "description": workflow_text(self.uri, self.describe_name),
                "mimeType": "application/json",
            }
        ]

    async def read_resource(self, request: Request, uri: str) -> str | None:
        names = self.parse_uri(uri)
        if names is None:
            return None
        data, _ = await self.describe(request, names)
        return self.dumps(data)

    # -- the one implementation behind the resource and the meta-tool ------------------
    def parse_uri(self, uri: str) -> list[str] | None:
        """The tool names a descriptions URI asks for (``[]``: none), or None when
        ``uri`` is not this add-on's resource."""
        parts = urlsplit(str(uri))
        base = urlsplit(self.uri)
        if (parts.scheme, parts.netloc, parts.path) != (base.scheme, base.netloc, base.path):
            return None
        names: list[str] = []
        for value in parse_qs(parts.query).get("tools", []):
            names += [n.strip() for n in value.split(",") if n.strip()]
        return names

    def resource_uri(self, names: Sequence[str]) -> str:
        return f"{self.uri}?tools={','.join(names)}"

    def missing_selection(self, available: Sequence[str]) -> dict[str, Any]:
        picks = list(available[:2]) or ["TOOL_NAME"]
        examples = [self.resource_uri(picks[:1])]
        if len(picks) > 1:
            examples.append(self.resource_uri(picks))
        return {
            "error": {
                "code": MISSING_TOOL_SELECTION,
                "message": "You must specify one or more tool names in the 'tools' parameter. "
                "Pick the tools you need from your tool list first; their short "
                "descriptions are enough to choose.",
                "examples": examples,
                "describe_call": {"name": self.describe_name, "arguments": {"tools": picks}},
                "available_tools": list(available),
            }
        }

    def description_required(self, name: str) -> DescriptionRequired:
        """The error for calling ``name`` before describing it (installed on the toolset)."""
        uri = self.resource_uri([name])
        call = {"name": self.describe_name, "arguments": {"tools": [name]}}
        return DescriptionRequired(
            f"Tool {name!r} requires fetching its description before use. Read the resource "
            f"{uri} (or call {self.describe_name} with {json.dumps(call['arguments'])}), "
            "then call the tool again.",
            tool=name,
            resource_uri=uri,
            describe_call=call,
            instructions=[
                f'1. Fetch: read_resource(resource_uri="{uri}")',
                "2. Review the parameters and examples",
                "3. Then call the tool",
            ],
        )


__all__ = ["DEFAULT_URI", "LazyDescriptions", "ToolDescriptions", "workflow_text"]
