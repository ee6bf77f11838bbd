"""The catalog: every tool, group, exclusion set and the flow, validated and versioned.

Registration checks everything at the call that is wrong (names, parents, cycles,
duplicates, wire-name collisions, reserved meta-tool names, unknown stages) and raises
a typed error. Every change bumps ``version``; derived indexes are rebuilt lazily per
version. Core: no MCP imports.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from toolgate.errors import MAX_GROUP_NAME, RegistrationError
from toolgate.flow import Flow
from toolgate.policy import DEFAULT_POLICY, Policy

if TYPE_CHECKING:
    from toolgate.policy import Principal

TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
GROUP_NAME = re.compile(r"^[a-z0-9]+([_-][a-z0-9]+)*$")
DEFAULT_GROUP = "default"  # what ungrouped (root) tools count as in a scope
EMPTY_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class StateSnapshot:
    """Read-only state a ``When`` predicate sees. Predicates must be pure in it."""

    active_groups: frozenset[str]
    stage: str
    principal: Principal

    def is_group_active(self, name: str) -> bool:
        return name in self.active_groups


@dataclass(frozen=True)
class Always:
    """Visible whatever groups are active (still subject to access and stage rules)."""


@dataclass(frozen=True)
class ByGroup:
    """Visible when any of the tool's groups is effectively active (the default)."""


@dataclass(frozen=True)
class When:
    """Visible when ``predicate(snapshot)`` is true."""

    predicate: Callable[[StateSnapshot], bool]


Visibility = Always | ByGroup | When
ALWAYS = Always()
BY_GROUP = ByGroup()


@dataclass(frozen=True)
class ToolDoc:
    """Long-form documentation served on demand (lazy descriptions)."""

    examples: tuple[Mapping[str, Any], ...] = ()
    usage_guidance: Mapping[str, Any] | None = None
    error_guidance: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class CallContext:
    """What a handler may know about the call it serves."""

    tool: str
    session_key: str | None
    principal: Principal
    extras: Mapping[str, Any] = field(default_factory=dict)


Handler = Callable[[Mapping[str, Any], CallContext], Any]
"""``handler(arguments, ctx)``; may return a value or an awaitable of one."""


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (up to the first ``. `` or line break)."""
    text = text.strip()
    if not text:
        return ""
    line = text.split("\n", 1)[0].strip()
    m = re.search(r"(?<=[.!?])\s", line)
    return line[: m.start()].strip() if m else line


@dataclass(frozen=True)
class Tool:
    """One tool: its wire definition, where it lives, and the rules that gate it."""

    name: str
    description: str = ""
    handler: Handler | None = None
    input_schema: Mapping[str, Any] = field(default_factory=lambda: dict(EMPTY_SCHEMA))
    title: str | None = None
    summary: str | None = None
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    groups: tuple[str, ...] = ()
    visibility: Visibility = BY_GROUP
    policy: Policy = DEFAULT_POLICY
    stages: frozenset[str] | None = None
    next_stage: str | None = None
    doc: ToolDoc | None = None
    meta: Mapping[str, Any] | None = None
    icons: tuple[Mapping[str, Any], ...] | None = None  # MCP icons, for hosts' UIs
    source: str | None = None  # the backend a gateway tool comes from

    def __post_init__(self) -> None:
        if isinstance(self.groups, str):
            object.__setattr__(self, "groups", (self.groups,))
        else:
            object.__setattr__(self, "groups", tuple(dict.fromkeys(self.groups)))
        if self.stages is not None:
            # "*" means every stage, whatever container it comes in (a frozenset too)
            stages = (self.stages,) if isinstance(self.stages, str) else tuple(self.stages)
            object.__setattr__(self, "stages", None if "*" in stages else frozenset(stages))

    @property
    def summary_text(self) -> str:
        return self.summary if self.summary is not None else first_sentence(self.description)

    @property
    def scope_groups(self) -> tuple[str, ...]:
        """The groups a scope is matched against: ``("default",)`` for root tools."""
        return self.groups or (DEFAULT_GROUP,)

    @classmethod
    def from_wire(
        cls, wire: Mapping[str, Any], handler: Handler | None = None, **overrides: Any
    ) -> Tool:
        """A tool from an MCP ``Tool`` definition as a plain dict (camelCase keys, the
        form :meth:`wire` returns), keeping icons and ``_meta``; ``overrides`` set any
        other field. ``Tool.from_wire({"name": "fork"}, run, groups=("repos",))``"""
        fields: dict[str, Any] = {
            "name": str(wire["name"]),
            "description": str(wire.get("description") or ""),
            "input_schema": wire.get("inputSchema") or dict(EMPTY_SCHEMA),
            "title": wire.get("title"),
            "output_schema": wire.get("outputSchema"),
            "annotations": wire.get("annotations"),
            "meta": wire.get("_meta"),
            "icons": tuple(wire["icons"]) if wire.get("icons") else None,
        }
        return cls(handler=handler, **{**fields, **overrides})

    def wire(self) -> dict[str, Any]:
        """The MCP ``Tool`` definition as a plain dict (camelCase keys, no Nones)."""
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": dict(self.input_schema),
        }
        if self.title is not None:
            out["title"] = self.title
        if self.output_schema is not None:
            out["outputSchema"] = dict(self.output_schema)
        if self.annotations:
            out["annotations"] = dict(self.annotations)
        if self.meta:
            out["_meta"] = dict(self.meta)
        if self.icons:
            out["icons"] = [dict(i) for i in self.icons]
        return out


HookResult = Awaitable[None] | None


@dataclass(frozen=True)
class HookContext:
    group: str
    session_key: str | None
    principal: Principal
    action: str  # "activate" | "deactivate"


Hook = Callable[[HookContext], HookResult]


@dataclass(frozen=True)
class Group:
    """A named set of tools an agent can enable; optionally nested under ``parent``."""

    name: str
    description: str = ""
    title: str | None = None
    parent: str | None = None
    instructions: str | None = None
    show_deactivator: bool = True
    on_activate: Hook | None = None
    on_deactivate: Hook | None = None

    @property
    def wire_name(self) -> str:
        return self.name.replace("_", "-")


def check_tool_name(name: str) -> None:
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        raise RegistrationError(
            f"Invalid tool name {name!r}: MCP tool names are 1-128 characters of A-Z a-z 0-9 _ . -",
            name=name,
        )


def check_group_name(name: str) -> None:
    if not isinstance(name, str) or len(name) > MAX_GROUP_NAME or not GROUP_NAME.match(name):
        raise RegistrationError(
            f"Invalid group name {name!r}: use lowercase letters and digits, words joined "
            f"by single '_' or '-', at most {MAX_GROUP_NAME} characters",
            name=name,
        )


class Catalog:
    """Everything that exists. Mutations validate, then bump :attr:`version`."""

    def __init__(self, flow: Flow | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self._groups: dict[str, Group] = {}
        self._exclusions: list[frozenset[str]] = []
        self._reserved: dict[str, str] = {}
        self._reserved_suffixes: dict[str, str] = {}
        self._flow = flow or Flow()
        self.version = 0
        self._index_version = -1
        self._sorted_names: tuple[str, ...] = ()
        self._by_group: dict[str, tuple[str, ...]] = {}
        self._ungated: tuple[str, ...] = ()
        self._children: dict[str | None, tuple[str, ...]] = {}
        self._depth: dict[str, int] = {}
        self._listeners: list[Callable[[Catalog], None]] = []

    # -- reading ---------------------------------------------------------------------
    @property
    def flow(self) -> Flow:
        return self._flow

    @property
    def tools(self) -> Mapping[str, Tool]:
        return self._tools

    @property
    def groups(self) -> Mapping[str, Group]:
        return self._groups

    @property
    def exclusions(self) -> Sequence[frozenset[str]]:
        return tuple(self._exclusions)

    def tool(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def group(self, name: str) -> Group | None:
        return self._groups.get(name)

    def sorted_names(self) -> tuple[str, ...]:
        self._reindex()
        return self._sorted_names

    def tools_in(self, group: str) -> tuple[str, ...]:
        """Names of the tools directly in ``group``, sorted."""
        self._reindex()
        return self._by_group.get(group, ())

    def ungated(self) -> tuple[str, ...]:
        """Tools that need no active group: root tools, ``Always`` and ``When`` tools."""
        self._reindex()
        return self._ungated

    def children(self, group: str | None) -> tuple[str, ...]:
        """Direct child groups (``None``: top-level groups), sorted."""
        self._reindex()
        return self._children.get(group, ())

    def depth(self, group: str) -> int:
        self._reindex()
        return self._depth[group]

    def ancestors(self, group: str) -> list[str]:
        out = []
        parent = self._groups[group].parent
        while parent is not None:
            out.append(parent)
            parent = self._groups[parent].parent
        return out

    def descendants(self, group: str) -> list[str]:
        out: list[str] = []
        stack = list(self.children(group))
        while stack:
            g = stack.pop()
            out.append(g)
            stack.extend(self.children(g))
        return out

    def exclusion_peers(self, group: str) -> set[str]:
        peers: set[str] = set()
        for ex in self._exclusions:
            if group in ex:
                peers |= ex - {group}
        return peers

    # -- writing ---------------------------------------------------------------------
    def on_change(self, listener: Callable[[Catalog], None]) -> None:
        """Call ``listener(catalog)`` after every change (indexes, notifications)."""
        self._listeners.append(listener)

    def _changed(self) -> None:
        self.version += 1
        for listener in self._listeners:
            listener(self)

    def reserve(self, names: Iterable[str], owner: str) -> None:
        """Reserve meta-tool names; a real tool with one of them is a registration error."""
        names = list(names)
        for n in names:
            check_tool_name(n)
            if n in self._tools:
                raise RegistrationError(
                    f"Meta-tool name {n!r} ({owner}) collides with a registered tool; "
                    "configure a different meta-tool name or rename the tool",
                    name=n,
                )
        for n in names:
            self._reserved[n] = owner
        self._changed()

    def release(self, owner: str) -> None:
        self._reserved = {n: o for n, o in self._reserved.items() if o != owner}
        self._reserved_suffixes = {x: o for x, o in self._reserved_suffixes.items() if o != owner}

    def reserve_group_suffixes(self, suffixes: Iterable[str], owner: str) -> None:
        """Reserve ``<group><suffix>`` for every group, present and future (activators)."""
        suffixes = list(suffixes)
        for g in self._groups:
            for x in suffixes:
                if g + x in self._tools:
                    raise RegistrationError(
                        f"Meta-tool name {g + x!r} ({owner}) collides with a registered tool",
                        name=g + x,
                    )
        for x in suffixes:
            self._reserved_suffixes[x] = owner
        self._changed()

    def reserved_owner(self, name: str) -> str | None:
        """Which meta-tool owns ``name``, if it is reserved."""
        owner = self._reserved.get(name)
        if owner is not None:
            return owner
        for x, o in self._reserved_suffixes.items():
            if name.endswith(x) and name[: -len(x)] in self._groups:
                return o
        return None

    def set_flow(self, flow: Flow) -> None:
        for t in self._tools.values():
            self._check_tool_stages(t, flow)
        self._flow = flow
        self._changed()

    def add_group(self, group: Group) -> None:
        self.add_groups([group])

    def add_groups(self, groups: Iterable[Group]) -> None:
        """Register groups given in any order; parents may come after their children.

        All-or-nothing: on any error nothing is registered.
        """
        batch = list(groups)
        new: dict[str, Group] = {}
        wire_names = {g.wire_name: g.name for g in self._groups.values()}
        for g in batch:
            if not isinstance(g, Group):
                raise RegistrationError(f"Expected a Group, got {type(g).__name__}")
            check_group_name(g.name)
            if g.name == DEFAULT_GROUP:
                raise RegistrationError(
                    f"Group name {DEFAULT_GROUP!r} is reserved: it stands for ungrouped tools",
                    name=g.name,
                )
            if g.name in self._groups or g.name in new:
                raise RegistrationError(f"Duplicate group {g.name!r}", name=g.name)
            other = wire_names.get(g.wire_name)
            if other is not None:
                raise RegistrationError(
                    f"Group {g.name!r} collides with group {other!r}: both are "
                    f"{g.wire_name!r} on the groups-extension wire",
                    name=g.name,
                )
            wire_names[g.wire_name] = g.name
            for x, owner in self._reserved_suffixes.items():
                if g.name + x in self._tools:
                    raise RegistrationError(
                        f"Group {g.name!r} would make meta-tool {g.name + x!r} ({owner}) "
                        "collide with a registered tool",
                        name=g.name,
                    )
            new[g.name] = g
        merged = {**self._groups, **new}
        for g in new.values():
            if g.parent is not None and g.parent not in merged:
                raise RegistrationError(
                    f"Group {g.name!r} names unknown parent {g.parent!r}", name=g.name
                )
        for g in new.values():  # a cycle can only run through new groups
            seen = [g.name]
            parent = g.parent
            while parent is not None:
                if parent in seen:
                    cycle = " -> ".join([*seen[seen.index(parent) :], parent])
                    raise RegistrationError(f"Group cycle: {cycle}", name=g.name)
                seen.append(parent)
                parent = merged[parent].parent
        self._groups = merged
        self._changed()

    def remove_group(self, name: str) -> Group:
        g = self._groups.get(name)
        if g is None:
            raise RegistrationError(f"Unknown group {name!r}", name=name)
        if self.children(name):
            raise RegistrationError(
                f"Group {name!r} has child groups {list(self.children(name))}; remove them first"
            )
        if self.tools_in(name):
            raise RegistrationError(
                f"Group {name!r} still has tools {list(self.tools_in(name))[:5]}; remove them first"
            )
        del self._groups[name]
        self._exclusions = [ex - {name} for ex in self._exclusions if len(ex - {name}) >= 2]
        self._changed()
        return g

    def add_exclusion(self, names: Iterable[str]) -> None:
        """Declare that at most one of ``names`` may be active at a time."""
        if isinstance(names, str):
            raise RegistrationError("An exclusion set is a list of group names, not a string")
        members = list(names)
        if len(set(members)) < 2:
            raise RegistrationError(f"An exclusion set needs two or more groups: {members}")
        for n in members:
            if n not in self._groups:
                raise RegistrationError(f"Exclusion set names unknown group {n!r}", name=n)
        for n in members:
            # activating the child would displace its own ancestor: it could never be
            # effectively active, so the set is a configuration mistake
            for a in self.ancestors(n):
                if a in members:
                    raise RegistrationError(
                        f"Exclusion set {sorted(set(members))} holds group {n!r} and its "
                        f"ancestor {a!r}; a group cannot exclude its own ancestor",
                        name=n,
                    )
        self._exclusions.append(frozenset(members))
        self._changed()

    def add_tool(self, tool: Tool, *, replace_existing: bool = False) -> None:
        self.add_tools([tool], replace_existing=replace_existing)

    def add_tools(self, tools: Iterable[Tool], *, replace_existing: bool = False) -> None:
        """Register tools (all-or-nothing)."""
        batch = list(tools)
        seen: set[str] = set()
        for t in batch:
            if not isinstance(t, Tool):
                raise RegistrationError(f"Expected a Tool, got {type(t).__name__}")
            check_tool_name(t.name)
            if t.name in seen or (t.name in self._tools and not replace_existing):
                raise RegistrationError(f"Duplicate tool {t.name!r}", name=t.name)
            seen.add(t.name)
            owner = self.reserved_owner(t.name)
            if owner is not None:
                raise RegistrationError(
                    f"Tool name {t.name!r} is reserved for the meta-tool {owner!r}; "
                    "rename the tool or configure a different meta-tool name",
                    name=t.name,
                )
            for g in t.groups:
                if g not in self._groups:
                    raise RegistrationError(
                        f"Tool {t.name!r} names unknown group {g!r}", name=t.name, group=g
                    )
            if not isinstance(t.input_schema, Mapping) or t.input_schema.get("type") != "object":
                raise RegistrationError(
                    f"Tool {t.name!r}: inputSchema must be a JSON Schema object with "
                    '"type": "object"',
                    name=t.name,
                )
            self._check_tool_stages(t, self._flow)
        for t in batch:
            self._tools[t.name] = t
        self._changed()

    def _check_tool_stages(self, t: Tool, flow: Flow) -> None:
        for s in sorted(t.stages or ()):
            if not flow.has(s):
                raise RegistrationError(
                    f"Tool {t.name!r} is available in unknown stage {s!r}; "
                    f"known stages: {', '.join(sorted(flow.names))}",
                    name=t.name,
                )
        if t.next_stage is not None and not flow.has(t.next_stage):
            raise RegistrationError(
                f"Tool {t.name!r} leads to unknown stage {t.next_stage!r}", name=t.name
            )

    def remove_tool(self, name: str) -> Tool:
        t = self._tools.pop(name, None)
        if t is None:
            raise RegistrationError(f"Unknown tool {name!r}", name=name)
        self._changed()
        return t

    def update_tool(self, name: str, **changes: Any) -> Tool:
        t = self._tools.get(name)
        if t is None:
            raise RegistrationError(f"Unknown tool {name!r}", name=name)
        new = replace(t, **changes)
        self.add_tools([new], replace_existing=True)
        return new

    def touch(self) -> None:
        """Declare that something ``When`` predicates read changed outside the catalog."""
        self._changed()

    # -- indexes -----------------------------------------------------------------------
    def _reindex(self) -> None:
        if self._index_version == self.version:
            return
        self._sorted_names = tuple(sorted(self._tools))
        by_group: dict[str, list[str]] = {}
        ungated = []
        for name in self._sorted_names:
            t = self._tools[name]
            if not t.groups or not isinstance(t.visibility, ByGroup):
                ungated.append(name)
            for g in t.groups:
                by_group.setdefault(g, []).append(name)
        self._by_group = {g: tuple(v) for g, v in by_group.items()}
        self._ungated = tuple(ungated)
        children: dict[str | None, list[str]] = {}
        for g in sorted(self._groups):
            children.setdefault(self._groups[g].parent, []).append(g)
        self._children = {k: tuple(v) for k, v in children.items()}
        depth: dict[str, int] = {}
        for g in self._groups:
            depth[g] = len(self.ancestors(g))
        self._depth = depth
        self._index_version = self.version


@dataclass(frozen=True)
class ToolResult:
    """What a tool call produced, as MCP content blocks (plain dicts); ``meta`` is the
    result's ``_meta`` (a relayed result keeps its server's)."""

    content: tuple[Mapping[str, Any], ...] = ()
    structured: Mapping[str, Any] | None = None
    is_error: bool = False
    meta: Mapping[str, Any] | None = None

    @classmethod
    def text(cls, text: str, *, is_error: bool = False) -> ToolResult:
        return cls(content=({"type": "text", "text": text},), is_error=is_error)

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls.text(message, is_error=True)

    @property
    def text_content(self) -> str:
        return "".join(str(c.get("text", "")) for c in self.content if c.get("type") == "text")


def to_result(value: Any) -> ToolResult:
    """A handler's return value as a ``ToolResult``: strings become text; dicts become
    structured content plus their JSON text; other JSON-able values become JSON text."""
    import json

    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult()
    if isinstance(value, str):
        return ToolResult.text(value)
    if isinstance(value, Mapping):
        return ToolResult(
            content=({"type": "text", "text": json.dumps(value, default=str)},),
            structured=dict(value),
        )
    return ToolResult.text(json.dumps(value, default=str))
