"""What every delivery strategy shares: requests, replies, meta-tools, add-ons.

A strategy turns a session's view into what a client sees (tool definitions and call
results) as plain dicts; adapters translate those to MCP types. Delivery layer: imports
the core, ``strategies.arguments`` and ``strategies.detail``; never ``mcp`` or ``fastmcp``.
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from toolgate.activation import ChangeResult
from toolgate.catalog import CallContext, Group, Tool, ToolResult
from toolgate.errors import InvalidArguments, ToolgateError
from toolgate.policy import Confirmer
from toolgate.strategies.arguments import CALL_SCHEMA, EMPTY_OBJECT, no_arguments, tool_name_arg
from toolgate.strategies.detail import Detail, tool_entries
from toolgate.tokens import model_form, model_text, result_texts
from toolgate.toolset import CallOutcome, Session, ToolSet
from toolgate.view import View

LEGACY = "2025-11-25"
STATELESS = "2026-07-28"
GROUPS_EXTENSION = "io.modelcontextprotocol/groups"

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


#: the opening of a description up to its first ": " (``github: list, get``), a few words
LEAD = re.compile(r"[^\s:;.]+(?: [^\s:;.]+){0,2}: ")


def shared_lead(texts: Sequence[str]) -> str:
    """The opening ``words: `` that every one of ``texts`` (two or more) starts with, or
    ``""``. Said by every group (``github: `` on one server's proposed groups), it tells
    none of them apart, so a list of groups says it once or not at all.

    >>> shared_lead(["github: get, list", "github: create"]), shared_lead(["a: x", "b: y"])
    ('github: ', '')
    """
    leads = {m.group(0) if (m := LEAD.match(t)) else "" for t in texts}
    return leads.pop() if len(texts) > 1 and len(leads) == 1 else ""


def group_texts(groups: Iterable[Group]) -> list[str]:
    """Each group's description (or title)."""
    return [g.description or g.title or "" for g in groups]


def groups_lead(view: View) -> str:
    """The shared lead of the groups ``view``'s principal may see. Judged on those
    alone: a group it may not see must not change how the others read (a lead judged on
    every group told a principal that some group it cannot see opens otherwise). Group
    visibility never reads session state, so the lead stays the same in every state."""
    return shared_lead(group_texts(g.group for g in view.groups if g.visible and g.group))


def groups_note(view: View) -> str:
    """The sentence that names the groups a principal may open, for the descriptions
    of the meta-tools that open them. It depends on the catalog and the principal's
    scope only (never on what is active), so descriptions stay stable."""
    groups = [g.group for g in view.groups if g.visible and g.group is not None]
    if not groups:
        return ""
    lead = groups_lead(view)
    parts = []
    for g in groups[:MAX_NAMED_GROUPS]:
        text = (g.description or g.title or "").removeprefix(lead)
        facts = [w for w in (few_words(text),) if w]
        parent = view.ctx.parent(g.name)  # one out of the principal's scope is never named
        if parent:
            facts.append(f"inside {parent}")
        parts.append(f"{g.name} ({'; '.join(facts)})" if facts else g.name)
    more = len(groups) - MAX_NAMED_GROUPS
    tail = f"; and {more} more (list_groups)" if more > 0 else ""
    said = f" ({lead.removesuffix(': ')})" if lead else ""
    return f"Groups{said}: " + "; ".join(parts) + tail + "."


def structured(
    data: Mapping[str, Any], *, is_error: bool = False, text: Mapping[str, Any] | None = None
) -> ToolResult:
    """A meta-tool result: structured content plus its JSON as compact text (the model
    reads every byte of it); ``text``, when given, is what the text says instead."""
    shown = data if text is None else text
    text_json = json.dumps(shown, ensure_ascii=False, separators=(",", ":"), default=str)
    return ToolResult(
        content=({"type": "text", "text": text_json},), structured=dict(data), is_error=is_error
    )


#: what the text of an answer that opens groups leaves to its structured content: the
#: names its ``tools`` entry gives again, with the root tools the model's list holds
REPEATED_IN_TEXT = ("available_tools",)


def opening_answer(
    data: Mapping[str, Any],
    *,
    is_error: bool = False,
    displaced: Sequence[str] = (),
) -> ToolResult:
    """The answer of a meta-tool that opens groups (``enable_tools``, ``get_group``, an
    activator). The structured content has every field, whole definitions for hosts;
    the text, which the model reads, gives full definitions as a model reads them
    (``toolgate.tokens.model_form``) and leaves out what repeats (``REPEATED_IN_TEXT``).
    ``displaced``: groups the change switched off (an exclusion peer and its children),
    named in the text as ``disabled`` after ``enabled``; the structured fields stay the
    menu's (docs/decisions.md)."""
    text: dict[str, Any] = {}
    for k, v in data.items():
        if k in REPEATED_IN_TEXT:
            continue
        text[k] = v
        if k == "enabled" and displaced:
            text["disabled"] = list(displaced)
    tools = text.get("tools")
    if isinstance(tools, list):
        text["tools"] = [model_form(t) if isinstance(t, Mapping) else t for t in tools]
    return structured(data, is_error=is_error, text=text)


def error_result(message: str, **details: Any) -> ToolResult:
    return structured({"error": message, **details}, is_error=True)


READ_ONLY = {"readOnlyHint": True, "idempotentHint": True}


def emit_selection(
    request: Request,
    kind: str,
    strategy: Strategy,
    shown: Sequence[Mapping[str, Any]],
    *,
    result: ToolResult | None = None,
    answer: Mapping[str, Any] | None = None,
) -> None:
    """Emit one ``tool.selection`` event for a listing (``kind`` "list"), a search
    ("search") or an opened group ("group"): how many catalog tools were candidates,
    shown, hidden by access (rules 1-5) and hidden by discovery (accessible, not
    shown), with the tokens the model reads of it against a flat listing of every
    accessible tool, and the tokenizer that counted. Tools count as a model reads them
    (``toolgate.tokens.model_form``); a meta-tool's ``result`` counts its text content
    blocks; an ``answer`` that carries tools beside other fields (``groups/get``) counts
    its tools so and the rest as compact JSON (``toolgate.tokens.result_texts``).
    Counts only, never names."""
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
    counter = strategy.toolset.token_counter
    if result is not None:
        tokens_shown = counter.count(result.text_content)
    elif answer is not None:
        tokens_shown = sum(counter.count(text) for text in result_texts(answer))
    else:
        tokens_shown = sum(strategy.wire_tokens(w) for w in shown)
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
        tokens_shown=tokens_shown,
        tokens_flat=flat_tokens,
        tokenizer=counter.name,
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

    def describes(self, strategy: Strategy) -> bool:
        """Whether this add-on gives ``strategy``'s tools in full on request
        (``describe_tools``), so a shortened entry may point at it."""
        return False

    async def shown_in_full(self, request: Request, names: Sequence[str]) -> None:
        """Another meta-tool (a search) gave the model these tools' full definitions;
        an add-on that gates calls on reading them (lazy descriptions) records that."""


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

    def describes(self) -> bool:
        """Whether a tool shown shortened can be had in full here (an add-on offers
        ``describe_tools``); where not, nothing may point at it."""
        return any(addon.describes(self) for addon in self.addons)

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
        count = self.toolset.token_counter.count(model_text(wire))
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
        return self.reply_for_call(outcome, name)

    def reply_for_call(self, outcome: CallOutcome, name: str | None = None) -> Reply:
        result = outcome.result
        describe = self.names.describe_tools
        if outcome.refused == "invalid-arguments" and name and self.meta_tool(describe):
            # the list may have shown less than the whole definition: say where it is
            pointer = f'Call {describe} with {{"tools": ["{name}"]}} for its full definition.'
            blocks = list(result.content)
            if blocks and blocks[0].get("type") == "text":
                blocks[0] = {**blocks[0], "text": f"{blocks[0].get('text', '')} {pointer}"}
            else:
                blocks.append({"type": "text", "text": pointer})
            result = ToolResult(
                content=tuple(blocks),
                structured=result.structured,
                is_error=result.is_error,
                meta=result.meta,
            )
        return Reply(result, self.can_change_list and outcome.visible_changed)

    # -- shared meta-tool bodies -----------------------------------------------------
    def _list_groups_tool(self) -> MetaTool:
        async def run(request: Request, arguments: Mapping[str, Any]) -> Reply:
            no_arguments(self.names.list_groups, arguments)
            groups = await request.session.list_groups()
            return Reply(structured({"groups": [g.to_dict() for g in groups]}))

        return MetaTool(
            self.names.list_groups,
            "List the tool groups: name, description, active, parent, tool count.",
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
            return self.reply_for_call(outcome, name)

        return MetaTool(
            self.names.call_tool,
            "Run a tool by name with its arguments: for tools found through groups or "
            "search that are not in your tool list.",
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
