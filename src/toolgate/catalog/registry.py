"""``Catalog``: everything that exists, validated at registration, versioned.

Registration raises a typed error at the wrong call (names, field kinds, parents, cycles,
duplicates, wire-name collisions, reserved names, unknown stages); each change bumps
``version`` and indexes follow it lazily. Model layer: imports the specs, flow and
errors; never MCP.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields, replace
from typing import Any

from toolgate.catalog.group import Group, check_group_fields, check_group_name
from toolgate.catalog.tool import DEFAULT_GROUP, Tool, check_tool_fields, check_tool_name
from toolgate.catalog.visibility import ByGroup
from toolgate.errors import RegistrationError, described
from toolgate.flow import Flow


class Catalog:
    """Everything that exists. Mutations validate, then bump :attr:`version`."""

    def __init__(self, flow: Flow | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self._groups: dict[str, Group] = {}
        self._exclusions: list[frozenset[str]] = []
        self._reserved: dict[str, str] = {}
        self._reserved_suffixes: dict[str, str] = {}
        self._flow = _flow(flow)
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
        return self._reserved_in(name, self._groups)

    def replace_all(self, source: Catalog) -> list[str]:
        """Take ``source``'s groups, exclusion sets, flow and tools in one change (one
        version bump, each listener called once; none when nothing differs), keeping
        this catalog's reserved names and listeners. A tool whose name a meta-tool
        reserves is left out and its name returned; a tool equal to one held now stays
        the held object. ``source`` was validated as it was built.

        >>> live.replace_all(rebuilt)   # a gateway's catalog after its config changed
        """
        groups = dict(source._groups)
        tools: dict[str, Tool] = {}
        refused: list[str] = []
        for name, tool in source._tools.items():
            if self._reserved_in(name, groups) is not None:
                refused.append(name)
                continue
            held = self._tools.get(name)
            tools[name] = held if held == tool else tool
        exclusions = list(source._exclusions)
        now = (self._groups, self._exclusions, self._flow, self._tools)
        if (groups, exclusions, source._flow, tools) == now:
            return refused
        self._groups, self._exclusions, self._flow = groups, exclusions, source._flow
        self._tools = tools
        self._changed()
        return refused

    def _reserved_in(self, name: str, groups: Mapping[str, Group]) -> str | None:
        """``reserved_owner`` as if ``groups`` were the catalog's groups."""
        owner = self._reserved.get(name)
        if owner is not None:
            return owner
        for x, o in self._reserved_suffixes.items():
            if name.endswith(x) and name[: -len(x)] in groups:
                return o
        return None

    def set_flow(self, flow: Flow) -> None:
        flow = _flow(flow)
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
        batch = _batch(groups, Group, "add_groups", "add_group")
        new: dict[str, Group] = {}
        wire_names = {g.wire_name: g.name for g in self._groups.values()}
        for g in batch:
            if not isinstance(g, Group):
                raise RegistrationError(f"Expected a Group, got {type(g).__name__}")
            check_group_name(g.name)
            check_group_fields(g)
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
        wrong = next((n for n in members if not isinstance(n, str)), None)
        if wrong is not None:
            raise RegistrationError(
                f"An exclusion set lists group names (strings), one per argument: "
                f"exclusive('a', 'b'); it holds {described(wrong)}"
            )
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

    def add_tool(
        self,
        tool: Tool,
        *,
        replace_existing: bool = False,
        check: Callable[[Tool], None] | None = None,
    ) -> None:
        self.add_tools([tool], replace_existing=replace_existing, check=check)

    def add_tools(
        self,
        tools: Iterable[Tool],
        *,
        replace_existing: bool = False,
        check: Callable[[Tool], None] | None = None,
    ) -> list[Tool]:
        """Register tools (all-or-nothing) and return them; ``check`` is one more rule
        each must pass (a toolset's trust ladder), applied after the catalog's own."""
        batch = _batch(tools, Tool, "add_tools", "add_tool")
        seen: set[str] = set()
        for t in batch:
            if not isinstance(t, Tool):
                raise RegistrationError(f"Expected a Tool, got {type(t).__name__}")
            check_tool_name(t.name)
            check_tool_fields(t)
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
            if check is not None:
                check(t)
        for t in batch:
            self._tools[t.name] = t
        self._changed()
        return batch

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

    def add_declared(
        self,
        groups: Sequence[Group],
        tools: Sequence[Tool],
        exclusions: Sequence[Sequence[str]],
        *,
        check: Callable[[Tool], None] | None = None,
    ) -> None:
        """Register groups, then tools, then exclusion sets, all or nothing: each is
        checked as ``add_groups``, ``add_tools`` and ``add_exclusion`` check it, on a
        copy of this catalog, and only a copy that took all of them becomes this
        catalog's content (one version bump). A ``@group`` class's declarations."""
        trial = Catalog(self._flow)
        trial._tools, trial._groups = dict(self._tools), dict(self._groups)
        trial._exclusions = list(self._exclusions)
        trial._reserved = dict(self._reserved)
        trial._reserved_suffixes = dict(self._reserved_suffixes)
        trial.add_groups(groups)
        trial.add_tools(tools, check=check)
        for ex in exclusions:
            trial.add_exclusion(ex)
        self._tools, self._groups, self._exclusions = trial._tools, trial._groups, trial._exclusions
        self._changed()

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
        unknown = sorted(set(changes) - {f.name for f in fields(Tool)})
        if unknown:
            raise RegistrationError(
                f"Tool {name!r}: no field {', '.join(map(repr, unknown))} to update", name=name
            )
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


def _flow(flow: Flow | None) -> Flow:
    """``flow``, or the one-stage ``Flow()`` for None; anything else is refused before
    it replaces the flow every view reads."""
    if flow is None:
        return Flow()
    if not isinstance(flow, Flow):
        raise RegistrationError(
            f"flow must be a Flow (Flow.from_mapping makes one from config), got {described(flow)}"
        )
    return flow


def _batch(items: Any, kind: type, method: str, one: str) -> list[Any]:
    """``items`` as a list for ``method``; one value or a non-list is refused, naming
    the single-value method."""
    if isinstance(items, kind | str | Mapping) or not isinstance(items, Iterable):
        raise RegistrationError(
            f"{method} takes a list of {kind.__name__} values, got {type(items).__name__}"
            f"{f'; for one, use {one}' if isinstance(items, kind) else ''}"
        )
    return list(items)
