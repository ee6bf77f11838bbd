"""Which groups hold the relayed prompts and resources, and who may see them: ``Placement``
reads the groups' ``prompts:`` / ``resources:`` patterns; ``GroupExposure`` admits an item
under the scope rule of its groups' tools (the view's ``View.group``); ``BackendAudience``
says who hears a backend outside any call. Imports the config, the access seam, the
delivery layer and the core; no MCP.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from toolgate.catalog import DEFAULT_GROUP
from toolgate.errors import PromptNotFound, ResourceNotFound, ToolgateError
from toolgate.gateway.config.model import GatewayConfig
from toolgate.gateway.relay.access import KINDS, PatternKind, PrimitiveAccess, Relayed
from toolgate.request import RequestFacts
from toolgate.state.base import EMPTY
from toolgate.strategies import Delivery
from toolgate.strategies.groups import GroupsStrategy
from toolgate.strategies.toolsets import toolset_groups
from toolgate.view import View, in_scope, tool_in_scope


@dataclass(frozen=True)
class Pattern:
    """One ``prompts:`` / ``resources:`` entry: a glob on the exposed name (a prompt's
    name, a resource's URI, a template's URI template), or, as ``server:glob``, a glob
    on one backend's own names.

    >>> Pattern.parse("everything:test://static/*", {"everything"}).server
    'everything'
    >>> Pattern.parse("file:///docs/*", {"file"}).server is None  # a URI, not a backend
    True
    """

    text: str
    glob: str
    server: str | None = None

    @classmethod
    def parse(cls, text: str, servers: Iterable[str]) -> Pattern:
        """``server:glob`` when the text before the first ``:`` names a backend and the
        text after it does not start with ``//`` (``file:///x`` stays a URI glob even
        beside a backend called ``file``); otherwise a glob on exposed names."""
        head, colon, rest = text.partition(":")
        if colon and head in set(servers) and not rest.startswith("//"):
            return cls(text, rest, head)
        return cls(text, text)

    def matches(self, item: Relayed) -> bool:
        if self.server is not None:
            return item.backend == self.server and fnmatchcase(item.original, self.glob)
        return fnmatchcase(item.name, self.glob)


@dataclass(frozen=True)
class Placement:
    """Every group's prompt and resource patterns, in config order.

    A primitive belongs to each group with a pattern of its kind that matches it, and is
    top-level (scope group ``"default"``, like an ungrouped tool) when none does.
    """

    patterns: Mapping[str, Mapping[PatternKind, tuple[Pattern, ...]]]

    @classmethod
    def from_config(cls, cfg: GatewayConfig) -> Placement:
        servers = set(cfg.mcp_servers)
        return cls(
            {
                name: {
                    "prompts": tuple(Pattern.parse(p, servers) for p in g.prompts),
                    "resources": tuple(Pattern.parse(p, servers) for p in g.resources),
                }
                for name, g in cfg.toolgate.groups.items()
            }
        )

    def groups_of(self, item: Relayed) -> tuple[str, ...]:
        """The groups holding ``item``, in config order (empty: top-level)."""
        key = KINDS[item.kind].patterns
        return tuple(
            group
            for group, kinds in self.patterns.items()
            if any(p.matches(item) for p in kinds[key])
        )

    def unmatched(self, items: Sequence[Relayed]) -> list[tuple[str, PatternKind, Pattern]]:
        """``(config key, kind, pattern)`` of each pattern that matches none of ``items``."""
        out = []
        for group, kinds in self.patterns.items():
            for kind, patterns in kinds.items():
                pool = [i for i in items if KINDS[i.kind].patterns == kind]
                for n, p in enumerate(patterns):
                    if not any(p.matches(i) for i in pool):
                        out.append((f"toolgate.groups.{group}.{kind}[{n}]", kind, p))
        return out


def unmatched_warnings(
    placement: Placement, items: Sequence[Relayed], live: set[str], servers: Iterable[str]
) -> list[str]:
    """``toolgate check``'s warning for each pattern that matches nothing the backends
    offer; a pattern whose backend (or, unqualified, any backend) is down says so."""
    down = sorted(set(servers) - live)
    out = []
    for key, kind, p in placement.unmatched(items):
        what = "prompt" if kind == "prompts" else "resource"
        if p.server is not None and p.server not in live:
            out.append(f"{key}: {p.text!r} matches nothing while {p.server!r} is down")
        elif p.server is None and down:
            out.append(
                f"{key}: {p.text!r} matches no {what} of the backends that are up "
                f"({', '.join(repr(d) for d in down)} down)"
            )
        else:
            out.append(f"{key}: {p.text!r} matches no {what}")
    return out


class GroupExposure:
    """``PrimitiveAccess`` by group: a relayed prompt or resource follows its groups.

    ``GroupExposure(cfg, delivery)`` takes the gateway's config (its groups' patterns)
    and the ``Delivery`` serving the catalog built from it (``Gateway.delivery``, i.e.
    ``Gateway.binding.delivery``): the catalog's groups and scope rule, the default
    principal and the strategy each request gets. Build it after ``Gateway.build()``;
    it reads the live catalog, so it stays right across backend syncs.

    - **use** (``check``): a primitive is usable when the principal's scope holds one
      of its groups (``View.group(g).visible``), or ``"default"`` when it is top-level;
      otherwise ``PromptNotFound`` / ``ResourceNotFound``, the same answer as for a
      primitive that does not exist.
    - **list** (``visible``): the usable ones, narrowed as ``tools/list`` is: a request
      naming groups (``X-MCP-Toolsets``) lists the top-level ones and those groups'
      (and their descendants'); a groups-extension client lists only top-level ones
      and finds the rest in ``groups/get``. Session activation plays no part
      (``docs/decisions.md``): both eras list the same for the same request.

    The relay passes what a request uses: the prompt of ``prompts/get`` and of a
    ``ref/prompt`` completion; the resource of ``resources/read`` / ``subscribe``, or,
    for a URI no listed resource has, the template it instantiates (and the template
    of a ``ref/resource`` completion).
    """

    def __init__(self, cfg: GatewayConfig, delivery: Delivery) -> None:
        self.placement = Placement.from_config(cfg)
        self.delivery = delivery
        self._groups: dict[Relayed, tuple[str, ...]] = {}

    # -- placement ---------------------------------------------------------------------
    def place(self, cfg: GatewayConfig) -> None:
        """Place the primitives by the groups' patterns of ``cfg`` from now on (a reload)."""
        self.placement = Placement.from_config(cfg)
        self._groups.clear()

    def groups_of(self, item: Relayed) -> tuple[str, ...]:
        """The catalog groups holding ``item`` (a configured group that failed to
        register holds nothing, as for tools)."""
        found = self._groups.get(item)
        if found is None:
            found = self.placement.groups_of(item)
            if len(self._groups) > 65536:  # backends come and go: keep the memo bounded
                self._groups.clear()
            self._groups[item] = found
        groups = self.delivery.toolset.catalog.groups
        return tuple(g for g in found if g in groups)

    def _view(self, facts: RequestFacts) -> View:
        toolset = self.delivery.toolset
        # scope does not depend on session state: one cached view per principal
        return toolset.view(facts.principal or toolset.default_principal, EMPTY)

    def _usable(self, view: View, groups: tuple[str, ...]) -> bool:
        if not groups:
            return in_scope(view.ctx.catalog, view.ctx.principal, DEFAULT_GROUP)
        return any(view.group(g).visible for g in groups)

    # -- PrimitiveAccess ---------------------------------------------------------------
    def visible(self, facts: RequestFacts, items: Sequence[Relayed]) -> list[Relayed]:
        """What ``prompts/list`` / ``resources/list`` / ``resources/templates/list``
        show this request, in the order given. Raises ``UnknownToolsets`` for a
        per-request view naming groups the principal may not see (as ``tools/list``)."""
        view = self._view(facts)
        wanted: frozenset[str] | None = None
        top_only = False
        if facts.toolsets:
            wanted = toolset_groups(view, facts.toolsets)
        else:
            strategy = self.delivery.choose(facts.protocol, facts.extensions)
            top_only = isinstance(strategy, GroupsStrategy)
        out = []
        for item in items:
            groups = self.groups_of(item)
            if not self._usable(view, groups):
                continue
            if groups and (top_only or (wanted is not None and wanted.isdisjoint(groups))):
                continue
            out.append(item)
        return out

    def check(self, facts: RequestFacts, item: Relayed) -> None:
        """Refuse a prompt or resource outside the principal's scope exactly as one that
        does not exist. A malformed per-request view is refused as on ``tools/call``."""
        view = self._view(facts)
        if facts.toolsets:
            toolset_groups(view, facts.toolsets)
        if not self._usable(view, self.groups_of(item)):
            raise not_found(item)

    # -- groups/get --------------------------------------------------------------------
    def in_group(self, facts: RequestFacts, group: str, items: Sequence[Relayed]) -> list[Relayed]:
        """The primitives ``group`` holds directly (child groups' stay in the children,
        as tools do), name-sorted; none when this request may not see the group."""
        view = self._view(facts)
        if not view.group(group).visible:
            return []
        return sorted(
            (i for i in items if group in self.groups_of(i)), key=lambda i: (i.kind, i.name)
        )

    def contents(
        self, listed: Callable[[], Sequence[Relayed]]
    ) -> Callable[[RequestFacts, str], list[Relayed]]:
        """A ``groups/get`` contents provider over what ``listed()`` returns now (the
        relay's current prompts, resources and templates): pass it to ``bind_groups``."""

        def provider(facts: RequestFacts, group: str) -> list[Relayed]:
            return self.in_group(facts, group, listed())

        return provider


class BackendAudience:
    """Whether a request's principal may hear what one backend sends on its own (its log
    messages outside any call, the level it logs at): when it has one of the backend's
    tools in scope (the view's scope rule, ``tool_in_scope``) or may use one of its
    prompts, resources or templates (the relay's ``PrimitiveAccess.check``).

    ``BackendAudience(delivery, access=lambda: relay.access, items=lambda:
    relay.namespace.items)`` reads the live catalog and the relay's current namespace.
    """

    def __init__(
        self,
        delivery: Delivery,
        *,
        access: Callable[[], PrimitiveAccess],
        items: Callable[[], Sequence[Relayed]],
    ) -> None:
        self.delivery = delivery
        self.access = access
        self.items = items

    def __call__(self, facts: RequestFacts, backend: str) -> bool:
        toolset = self.delivery.toolset
        catalog = toolset.catalog
        principal = facts.principal or toolset.default_principal
        if any(
            t.source == backend and tool_in_scope(catalog, principal, t)
            for t in catalog.tools.values()
        ):
            return True
        access = self.access()
        for item in self.items():
            if item.backend != backend:
                continue
            try:
                access.check(facts, item)
            except ToolgateError:
                continue
            return True
        return False


def not_found(item: Relayed) -> ToolgateError:
    """The error a primitive that does not exist gets, for ``item``'s kind."""
    return PromptNotFound(item.name) if item.kind == "prompt" else ResourceNotFound(item.name)
