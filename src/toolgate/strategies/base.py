"""What every delivery strategy shares: requests, replies, meta-tools, add-ons.

A strategy turns a session's view into what a client sees — a list of tool
definitions and the results of calls — as plain dicts. Adapters translate those to
MCP types. Delivery layer: imports the core, never ``mcp`` or ``fastmcp``.
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from toolgate.activation import ChangeResult
from toolgate.catalog import CallContext, Tool, ToolResult
from toolgate.errors import MAX_GROUP_NAME, InvalidArguments, ToolgateError, json_type
from toolgate.policy import Confirmer
from toolgate.tokens import wire_text
from toolgate.toolset import CallOutcome, Session, ToolSet
from toolgate.view import View

LEGACY = "2025-11-25"
STATELESS = "2026-07-28"
GROUPS_EXTENSION = "io.modelcontextprotocol/groups"
MAX_GROUPS_PER_REQUEST = 64

ToolHandler = Callable[[Mapping[str, Any], CallContext], Any]


def is_stateless(protocol: str | None) -> bool:
    """Protocol revisions from 2026-07-28 on have no sessions."""
    return protocol is not None and protocol >= STATELESS


@dataclass(frozen=True)
class Request:
    """One client request as a strategy sees it."""

    session: Session
    protocol: str | None = None
    extensions: frozenset[str] = frozenset()
    confirmer: Confirmer | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)
    toolsets: tuple[str, ...] | None = None  # a per-request view: the groups it names

    @property
    def stateless(self) -> bool:
        return is_stateless(self.protocol)


@dataclass(frozen=True)
class Reply:
    """A call's result and whether the caller's tool list changed because of it."""

    result: ToolResult
    list_changed: bool = False


@dataclass(frozen=True)
class MetaNames:
    """Configurable meta-tool names (a collision with a real tool is a registration error)."""

    enable_tools: str = "enable_tools"
    disable_tools: str = "disable_tools"
    list_groups: str = "list_groups"
    call_tool: str = "call_tool"
    get_group: str = "get_group"
    search_tools: str = "search_tools"
    search_tools_regex: str = "search_tools_regex"
    describe_tools: str = "describe_tools"


MetaRun = Callable[[Request, Mapping[str, Any]], Awaitable[Reply]]


@dataclass(frozen=True)
class MetaTool:
    """A toolgate-provided tool. Its description never changes with state."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    run: MetaRun
    annotations: Mapping[str, Any] | None = None
    names_groups: bool = False  # its description ends with the principal's groups

    def wire(self, groups_note: str | None = None) -> dict[str, Any]:
        description = self.description
        if self.names_groups and groups_note:
            description = f"{description} {groups_note}"
        out: dict[str, Any] = {
            "name": self.name,
            "description": description,
            "inputSchema": dict(self.input_schema),
        }
        if self.annotations:
            out["annotations"] = dict(self.annotations)
        return out


MAX_NAMED_GROUPS = 40
GROUP_NOTE_WORDS = 8


def few_words(text: str, limit: int = GROUP_NOTE_WORDS) -> str:
    """The first clause of ``text``, at most ``limit`` words."""
    clause = re.split(r"(?<=[.;])\s", text.strip(), maxsplit=1)[0].rstrip(".;")
    words = clause.split()
    return " ".join(words[:limit]) + ("…" if len(words) > limit else "")


def groups_note(view: View) -> str:
    """The sentence that names the groups a principal may open, for the descriptions
    of the meta-tools that open them. It depends on the catalog and the principal's
    scope only (never on what is active), so descriptions stay stable."""
    groups = [g.group for g in view.groups if g.visible and g.group is not None]
    if not groups:
        return ""
    parts = []
    for g in groups[:MAX_NAMED_GROUPS]:
        facts = [w for w in (few_words(g.description or g.title or ""),) if w]
        if g.parent:
            facts.append(f"inside {g.parent}")
        parts.append(f"{g.name} ({'; '.join(facts)})" if facts else g.name)
    more = len(groups) - MAX_NAMED_GROUPS
    tail = f"; and {more} more (list_groups)" if more > 0 else ""
    return "Groups: " + "; ".join(parts) + tail + "."


def unexpected_arguments(
    arguments: Mapping[str, Any], accepted: Sequence[str], tool: str | None = None
) -> None:
    """Raise ``InvalidArguments`` naming every argument not in ``accepted`` (and what is
    accepted), and for arguments that are not a JSON object at all."""
    if not isinstance(arguments, Mapping):
        raise InvalidArguments(f"Arguments must be a JSON object, not {json_type(arguments)}")
    extra = sorted(set(arguments) - set(accepted))
    if not extra:
        return
    named = ", ".join(repr(short(str(k), 64)) for k in extra[:10])
    more = f" and {len(extra) - 10} more" if len(extra) > 10 else ""
    if accepted:
        expected = "expected " + " and ".join(repr(k) for k in accepted)
    else:
        expected = f"{tool} takes no arguments" if tool else "it takes no arguments"
    raise InvalidArguments(f"Unexpected argument(s): {named}{more}; {expected}")


def no_arguments(tool: str, arguments: Mapping[str, Any]) -> None:
    """A meta-tool without arguments refuses any, by name."""
    unexpected_arguments(arguments, (), tool)


def short(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was: an error message
    never echoes a caller's 10 KB back."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def structured(data: Mapping[str, Any], *, is_error: bool = False) -> ToolResult:
    """A meta-tool result: structured content plus the same JSON as compact text (the
    model reads every byte of it)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return ToolResult(
        content=({"type": "text", "text": text},), structured=dict(data), is_error=is_error
    )


def error_result(message: str, **details: Any) -> ToolResult:
    return structured({"error": message, **details}, is_error=True)


# -- two levels of detail ------------------------------------------------------------------
Detail = Literal["names", "summary", "full"]
DETAILS: tuple[Detail, ...] = ("names", "summary", "full")
DETAIL_PROPERTY: Mapping[str, Any] = {
    "type": "string",
    "enum": list(DETAILS),
    "default": "summary",
    "description": "summary (default): one line per tool; full: whole definitions.",
}


def detail_arg(arguments: Mapping[str, Any], default: Detail = "summary") -> Detail:
    """The ``detail`` argument of an opening meta-tool (raises InvalidArguments)."""
    value = arguments.get("detail", default)
    if not isinstance(value, str) or value not in DETAILS:
        got = repr(short(value, 32)) if isinstance(value, str) else json_type(value)
        raise InvalidArguments(
            f"'detail' must be one of {', '.join(repr(d) for d in DETAILS)}, not {got}"
        )
    return value


def index_entry(tool: Tool) -> str:
    """A tool in a compact index, one line: its name, its required arguments and its
    one-line summary, as ``issue_read(owner, repo, issue_number): Get an issue.``"""
    required = tool.input_schema.get("required")
    args = [str(r) for r in required] if isinstance(required, Sequence) else []
    return f"{tool.name}({', '.join(args)}): {tool.summary_text}"


def tool_entries(tools: Sequence[Tool], detail: Detail) -> list[Any]:
    """``tools`` at ``detail``: names, compact index entries, or full definitions."""
    if detail == "names":
        return [t.name for t in tools]
    if detail == "full":
        return [t.wire() for t in tools]
    return [index_entry(t) for t in tools]


OPEN_SCHEMA: Mapping[str, Any] = {"type": "object", "additionalProperties": True}


def summary_wire(wire: Mapping[str, Any], tool: Tool, *, minimal: bool = True) -> dict[str, Any]:
    """A listed tool at the summary level: its one-line summary and an open object
    schema, without icons (``title`` and ``_meta`` stay). ``minimal`` (lazy descriptions'
    seed) also drops the output schema and annotations: a host then assumes the cautious
    hints. Otherwise they stay, so a client still checks and unwraps structured results
    and shows the hints; they are what the host acts on, and small."""
    out = dict(wire)
    out["description"] = tool.summary_text
    out["inputSchema"] = dict(OPEN_SCHEMA)
    for key in ("outputSchema", "annotations", "icons") if minimal else ("icons",):
        out.pop(key, None)
    return out


def group_names_arg(
    arguments: Mapping[str, Any], key: str = "groups", optional: Sequence[str] = ("detail",)
) -> list[str]:
    """Validate a meta-tool's list-of-group-names argument (raises InvalidArguments);
    ``optional`` names the other arguments the meta-tool accepts."""
    unexpected_arguments(arguments, (key, *optional))
    if key not in arguments:
        raise InvalidArguments(f"Missing required argument {key!r}: a list of group names")
    value = arguments[key]
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidArguments(
            f'{key!r} must be a list of group names, like ["issues"], not {json_type(value)}'
        )
    if not value:
        raise InvalidArguments(f"{key!r} must name at least one group")
    if len(value) > MAX_GROUPS_PER_REQUEST:
        raise InvalidArguments(
            f"{key!r} names {len(value)} groups; at most {MAX_GROUPS_PER_REQUEST} per request"
        )
    for item in value:
        problem = group_name_problem(item)
        if problem is not None:
            raise InvalidArguments(f"{key!r} must contain group names: {problem}")
    return list(value)


def group_name_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a group name, or None. Too long is said with the limit,
    never by echoing the value."""
    if not isinstance(value, str):
        return f"a group name is a string, not {json_type(value)}"
    if not value:
        return "a group name cannot be empty"
    if len(value) > MAX_GROUP_NAME:
        return f"group names are at most {MAX_GROUP_NAME} characters; got one of {len(value)}"
    return None


def tool_name_arg(arguments: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """Validate ``call_tool``'s ``name`` and ``arguments``."""
    unexpected_arguments(arguments, ("name", "arguments"))
    name = arguments.get("name")
    if not isinstance(name, str) or not name:
        got = "an empty string" if name == "" else json_type(name)
        raise InvalidArguments(f"'name' must be the name of a tool (a non-empty string), not {got}")
    args = arguments.get("arguments", {})
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise InvalidArguments(
            f"'arguments' must be a JSON object of the tool's arguments, not {json_type(args)}"
        )
    return name, args


GROUPS_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "groups": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "description": "Names of the groups, as list_groups shows them.",
        }
    },
    "required": ["groups"],
    "additionalProperties": False,
}
OPEN_GROUPS_SCHEMA: Mapping[str, Any] = {
    **GROUPS_SCHEMA,
    "properties": {**GROUPS_SCHEMA["properties"], "detail": DETAIL_PROPERTY},
}
DETAIL_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"detail": DETAIL_PROPERTY},
    "additionalProperties": False,
}
EMPTY_OBJECT: Mapping[str, Any] = {
    "type": "object",
    "properties": {},
    "additionalProperties": False,
}
CALL_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The tool to run."},
        "arguments": {"type": "object", "description": "The tool's arguments."},
    },
    "required": ["name"],
    "additionalProperties": False,
}
READ_ONLY = {"readOnlyHint": True, "idempotentHint": True}


def emit_selection(
    request: Request, kind: str, strategy: Strategy, shown: Sequence[Mapping[str, Any]]
) -> None:
    """Emit one ``tool.selection`` event for a listing or a search: how many catalog
    tools were candidates, shown, hidden by access (rules 1-5) and hidden by
    discovery (accessible, not shown), with the tokens of what was shown against a
    flat listing of every accessible tool. Counts only, never names."""
    session = request.session
    ts = session.toolset
    if not ts.events.active:
        return
    # access rules never read session state: the initial view (cached) answers them
    access = ts.view(session.principal, ts.initial_state())
    known = strategy.access_costs.get(access)
    if known is None:
        tools = access.accessible()
        known = (len(tools), sum(ts.tool_tokens(t) for t in tools))
        strategy.access_costs[access] = known
    accessible, flat_tokens = known
    catalog = ts.catalog.tools
    tools_shown = sum(1 for w in shown if w.get("name") in catalog)
    ts.events.emit(
        "tool.selection",
        session=session.key,
        principal=session.principal.id,
        kind=kind,
        strategy=strategy.name,
        candidates=len(catalog),
        shown=tools_shown,
        meta=len(shown) - tools_shown,
        hidden_access=len(catalog) - accessible,
        hidden_discovery=max(accessible - tools_shown, 0),
        tokens_shown=sum(strategy.wire_tokens(w) for w in shown),
        tokens_flat=flat_tokens,
    )


class Addon:
    """Extends any strategy with meta-tools, list transforms and resources (lazy
    descriptions, search). Override what you need; every default does nothing."""

    def reserved_names(self) -> list[str]:
        return []

    def meta_tools(self, strategy: Strategy) -> list[MetaTool]:
        return []

    def transform(self, wire: dict[str, Any], tool: Tool, request: Request) -> dict[str, Any]:
        return wire

    async def list_resources(self, request: Request) -> list[dict[str, Any]]:
        return []

    async def read_resource(self, request: Request, uri: str) -> str | None:
        """The resource's text, or None when this add-on doesn't serve ``uri``."""
        return None

    def startup_warnings(self) -> list[str]:
        """What an adapter logs when it starts serving this add-on (one line each)."""
        return []


class Strategy:
    """How a view reaches a client. Subclasses set ``name`` and override what differs."""

    name: ClassVar[str] = "base"
    open_groups: ClassVar[bool] = False  # every group counts as active (no gating)
    can_change_list: ClassVar[bool] = False  # tools/list varies with this session's actions
    on_demand: ClassVar[bool] = False  # tools arrive through meta-tools: offer describe_tools

    def __init__(
        self,
        toolset: ToolSet,
        *,
        names: MetaNames | None = None,
        addons: Sequence[Addon] = (),
    ) -> None:
        self.toolset = toolset
        self.names = names or MetaNames()
        self.addons = tuple(addons)
        self._meta: dict[str, MetaTool] = {}
        #: per access view (views are cached by the toolset): accessible tools, flat tokens
        self.access_costs: weakref.WeakKeyDictionary[View, tuple[int, int]] = (
            weakref.WeakKeyDictionary()
        )
        self._wire_tokens: dict[str, tuple[dict[str, Any], int]] = {}
        for m in self.base_meta_tools():
            self._meta[m.name] = m
        for addon in self.addons:
            for m in addon.meta_tools(self):
                self._meta[m.name] = m

    # -- what subclasses provide -----------------------------------------------------
    def base_meta_tools(self) -> list[MetaTool]:
        return []

    def reserved_names(self) -> list[str]:
        names = list(self._meta)
        for addon in self.addons:
            names += addon.reserved_names()
        return sorted(set(names))

    def listed_meta(self, request: Request, view: View) -> list[MetaTool]:
        """Meta-tools shown in ``tools/list`` for this request and view."""
        return list(self._meta.values())

    def meta_tool(self, name: str) -> MetaTool | None:
        return self._meta.get(name)

    async def meta_for(self, request: Request, name: str) -> MetaTool | None:
        """The meta-tool ``name`` names for this request's principal, or None: a
        catalog tool of that name wins, and a meta-tool the principal may not know
        of must read exactly like a tool that does not exist."""
        if self.toolset.catalog.tool(name) is not None:
            return None
        return self.meta_tool(name)

    def listed(self, request: Request, view: View) -> Sequence[Tool]:
        """The catalog tools ``tools/list`` shows (the view's visible ones unless a
        strategy narrows them)."""
        return view.visible

    def shape(self, wire: dict[str, Any], tool: Tool) -> dict[str, Any]:
        """A visible tool's listed definition (the full one unless a strategy says)."""
        return wire

    def wire_tokens(self, wire: Mapping[str, Any]) -> int:
        """Tokens of one listed definition, remembered per name while it stays equal
        (comparing dicts is far cheaper than serializing them on every listing)."""
        name = str(wire.get("name"))
        hit = self._wire_tokens.get(name)
        if hit is not None and hit[0] == wire:
            return hit[1]
        count = self.toolset.token_counter.count(wire_text(wire))
        if len(self._wire_tokens) > 2 * len(self.toolset.catalog.tools) + 64:
            self._wire_tokens.clear()  # names the catalog no longer holds
        self._wire_tokens[name] = (dict(wire), count)
        return count

    # -- what adapters call ----------------------------------------------------------
    async def list_tools(self, request: Request) -> list[dict[str, Any]]:
        """Every listed tool definition, name-sorted."""
        view = await request.session.view()
        note = groups_note(view)
        out = [m.wire(note) for m in self.listed_meta(request, view)]
        for tool in self.listed(request, view):
            wire = self.shape(tool.wire(), tool)
            for addon in self.addons:
                wire = addon.transform(wire, tool, request)
            out.append(wire)
        out.sort(key=lambda w: w["name"])
        return out

    async def call_tool(
        self,
        request: Request,
        name: str,
        arguments: Mapping[str, Any] | None,
        handler: ToolHandler | None = None,
    ) -> Reply:
        """Run a meta-tool or a catalog tool. Errors a client must see as JSON-RPC errors
        (unknown tool) are raised as ``ToolgateError``; the rest are error results."""
        meta = await self.meta_for(request, name)
        if meta is not None:
            try:
                return await meta.run(request, arguments or {})
            except InvalidArguments as exc:
                return Reply(error_result(exc.message))
        outcome = await request.session.call(
            name,
            arguments,
            confirmer=request.confirmer,
            extras=request.extras,
            handler=handler,
        )
        return self.reply_for_call(outcome)

    def reply_for_call(self, outcome: CallOutcome) -> Reply:
        return Reply(outcome.result, self.can_change_list and outcome.visible_changed)

    # -- shared meta-tool bodies -----------------------------------------------------
    def _list_groups_tool(self) -> MetaTool:
        async def run(request: Request, arguments: Mapping[str, Any]) -> Reply:
            no_arguments(self.names.list_groups, arguments)
            groups = await request.session.list_groups()
            return Reply(structured({"groups": [g.to_dict() for g in groups]}))

        return MetaTool(
            self.names.list_groups,
            "List the tool groups: name, description, whether it is active, its parent "
            "and how many tools it holds.",
            EMPTY_OBJECT,
            run,
            READ_ONLY,
        )

    def _call_tool_tool(self) -> MetaTool:
        async def run(request: Request, arguments: Mapping[str, Any]) -> Reply:
            name, args = tool_name_arg(arguments)
            if await self.meta_for(request, name) is not None:
                return Reply(error_result(f"call_tool runs catalog tools, not {name!r}"))
            try:
                outcome = await request.session.call(
                    name, args, confirmer=request.confirmer, extras=request.extras
                )
            except ToolgateError as exc:
                return Reply(error_result(exc.message, code=exc.code, **exc.details))
            return self.reply_for_call(outcome)

        return MetaTool(
            self.names.call_tool,
            "Run any tool you are allowed to use by name, with its arguments. Use it for "
            "tools you found through groups or search that are not in your tool list.",
            CALL_SCHEMA,
            run,
        )

    def menu_result(
        self, result: ChangeResult, request: Request, detail: Detail = "summary"
    ) -> dict[str, Any]:
        """The wags-shaped result of ``enable_tools`` plus the tools that just became
        visible at ``detail`` (by default a compact index: the agent describes the ones
        it picks)."""
        session = request.session
        return {
            "enabled": list(result.changed),
            "enabled_groups": list(result.active_groups),
            "available_tools": sorted(result.after.visible_names),
            "available_groups": session.available_groups(result.after),
            "errors": [e.message for e in result.errors],
            "tools": tool_entries(result.newly_visible, detail),
        }
