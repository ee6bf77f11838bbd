"""Delivery: which strategy serves a request, and the calls adapters make.

``Delivery`` builds one strategy per name its config's registry holds
(``toolgate.strategies.registry``) over a single ``ToolSet``, picks one per request
(``auto``: groups-extension clients get ``groups``, the legacy protocol gets
``list_changed``, 2026-07-28 gets ``catalog``; ``groups`` only while the extension is
served, ``groups_served``), derives the session key, and pages
``tools/list``. Delivery layer: imports the strategies and the core, no MCP imports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolgate.errors import ConfigError, check_kind
from toolgate.paging import Page, paginate
from toolgate.policy import Confirmer, Principal
from toolgate.strategies.base import (
    GROUPS_EXTENSION,
    Addon,
    MetaNames,
    Reply,
    Request,
    Strategy,
    ToolHandler,
    emit_selection,
    is_stateless,
)
from toolgate.strategies.lazy import ToolDescriptions
from toolgate.strategies.list_changed import ListChangedStrategy
from toolgate.strategies.registry import StrategyInputs, StrategyRegistry, default_registry
from toolgate.strategies.search import DEFAULT_FULL_RESULTS, ToolSearch
from toolgate.strategies.toolsets import ToolsetsStrategy
from toolgate.toolset import ToolSet


@dataclass(frozen=True)
class DeliveryConfig:
    """How tools reach clients (the ``toolgate`` config block's delivery keys).

    ``strategy`` is ``auto`` or a name ``registry`` holds (by default the built-ins and
    whatever was registered in ``default_registry``)."""

    strategy: str = "auto"
    meta_tools: str = "menu"  # "menu" | "activators"
    names: MetaNames = field(default_factory=MetaNames)
    groups_fallback: str = "flatten"  # clients without the groups extension: "flatten" | "catalog"
    search: bool = False  # add search_tools / search_tools_regex to every strategy
    search_full_results: int = DEFAULT_FULL_RESULTS  # results in full; the rest compactly
    grouped_list: str = "summary"  # list_changed: opened groups' tools, "summary" | "full"
    #: activators style: "always" lists every in-scope group's activator (tmcp);
    #: "reachable" only those that can succeed now (the parent is active)
    activators: str = "always"
    #: the strategies ``strategy`` may name, and how ``Delivery`` builds each
    registry: StrategyRegistry = default_registry

    def __post_init__(self) -> None:
        # kinds first: a string where a bool belongs is truthy ("false" would turn
        # search on), and a wrong registry or names would fail later as AttributeError
        check_kind(
            self.registry, StrategyRegistry, "registry", "a StrategyRegistry", key="registry"
        )
        check_kind(self.names, MetaNames, "names", "a MetaNames", key="names")
        check_kind(self.search, bool, "search", "True or False", key="search")
        self.registry.check(self.strategy)
        if self.meta_tools not in ("menu", "activators"):
            raise ConfigError(
                f"meta_tools must be 'menu' or 'activators', got {self.meta_tools!r}",
                key="meta_tools",
            )
        if self.grouped_list not in ("summary", "full"):
            raise ConfigError(
                f"grouped_list must be 'summary' or 'full', got {self.grouped_list!r}",
                key="grouped_list",
            )
        if self.activators not in ("always", "reachable"):
            raise ConfigError(
                f"activators must be 'always' or 'reachable', got {self.activators!r}",
                key="activators",
            )
        if self.groups_fallback not in ("flatten", "catalog"):
            raise ConfigError(
                f"groups_fallback must be 'flatten' or 'catalog', got {self.groups_fallback!r}",
                key="groups_fallback",
            )


def check_delivery_arguments(toolset: Any, config: Any) -> None:
    """Refuse a ``toolset`` that is not a ``ToolSet``, or a ``config`` that is not a
    ``DeliveryConfig`` (or None), before an adapter changes anything."""
    check_kind(toolset, ToolSet, "toolset", "a ToolSet", key="toolset")
    check_kind(config, (DeliveryConfig, type(None)), "config", "a DeliveryConfig", key="config")


class Delivery:
    """The one object adapters talk to: list, call, resources, for any request."""

    def __init__(
        self,
        toolset: ToolSet,
        config: DeliveryConfig | None = None,
        *,
        addons: Sequence[Addon] = (),
    ) -> None:
        check_delivery_arguments(toolset, config)
        self.toolset = toolset
        self.config = config or DeliveryConfig()
        self.addons = tuple(addons)
        # the registry may have lost a name since the config was checked
        self.config.registry.check(self.config.strategy)
        wants_search = self.config.search or self.config.strategy == "search"
        if self.config.search and not any(isinstance(a, ToolSearch) for a in self.addons):
            self.addons += (ToolSearch(self.config.search_full_results),)
        if not any(isinstance(a, ToolDescriptions) for a in self.addons):
            # the second level of detail: full definitions of the tools an agent picks
            self.addons += (ToolDescriptions(toolset),)
        if wants_search:
            toolset.search_index  # noqa: B018 -- fail now (ConfigError) without the search extra
        # every registered strategy, built once: ``choose`` picks among them per request
        inputs = StrategyInputs(toolset, self.config, self.addons)
        registry = self.config.registry
        self.strategies: dict[str, Strategy] = {
            name: registry.build(name, inputs) for name in registry.names
        }
        #: per-request views (``toolsets``), offered by every configuration
        self.toolsets = ToolsetsStrategy(toolset, names=self.config.names, addons=self.addons)
        #: whether the extension's methods (``groups/list``, ``groups/get``) are served
        #: next to this delivery: a client that declares it gets ``groups`` only then.
        #: An adapter clears it when it takes the delivery (``bind``, ``attach``); the
        #: extension's endpoint sets it (``GroupsEndpoint``). A delivery no adapter
        #: serves honours the declaration.
        self.groups_served = True
        self._reserve()

    def _reserve(self) -> None:
        cat = self.toolset.catalog
        cat.release("delivery")
        names: set[str] = set()
        for s in self._in_use():
            names.update(s.reserved_names())
        cat.reserve(sorted(names), "delivery")
        lc = self.strategies["list_changed"]  # a registry holds every built-in
        in_use = {s.name for s in self._in_use()}
        if isinstance(lc, ListChangedStrategy) and "list_changed" in in_use:
            suffixes = lc.activator_suffixes()
            if suffixes:
                cat.reserve_group_suffixes(suffixes, "delivery")

    def _in_use(self) -> list[Strategy]:
        s = self.config.strategy
        if s == "auto":
            keys = ["list_changed", "catalog", "groups"]
        elif s == "groups":
            keys = ["groups", "catalog" if self.config.groups_fallback == "catalog" else "flat"]
        else:
            keys = [s]
        return [self.strategies[k] for k in keys]

    # -- choosing ----------------------------------------------------------------------
    def choose(self, protocol: str | None, extensions: frozenset[str]) -> Strategy:
        """The strategy for a request of ``protocol`` whose client declared
        ``extensions``: ``groups`` needs the declaration and the extension served."""
        return self._choose(protocol, GROUPS_EXTENSION in extensions and self.groups_served)

    @property
    def offers_groups(self) -> bool:
        """Whether the configured strategy gives a declaring client ``groups`` once the
        extension is served (``auto``, ``groups``)."""
        return self._choose(None, True) is self.strategies["groups"]

    def _choose(self, protocol: str | None, wants_groups: bool) -> Strategy:
        s = self.config.strategy
        if s == "auto":
            if wants_groups:
                return self.strategies["groups"]
            return self.strategies["catalog" if is_stateless(protocol) else "list_changed"]
        if s == "groups":
            if wants_groups:
                return self.strategies["groups"]
            return self.strategies[
                "catalog" if self.config.groups_fallback == "catalog" else "flat"
            ]
        if s == "list_changed" and is_stateless(protocol):
            # 2026-07-28 forbids tools/list varying as a side effect of other requests.
            return self.strategies["catalog"]
        return self.strategies[s]

    def request(
        self,
        *,
        session_key: str | None,
        principal: Principal | None = None,
        protocol: str | None = None,
        extensions: frozenset[str] = frozenset(),
        confirmer: Confirmer | None = None,
        extras: Mapping[str, Any] | None = None,
        toolsets: tuple[str, ...] | None = None,
    ) -> tuple[Strategy, Request]:
        """Pick the strategy and the session for one request.

        Legacy protocol: the MCP session id keys the state. 2026-07-28: an authenticated
        principal's id does; without one the session is ephemeral (nothing is kept).
        ``toolsets`` (the ``X-MCP-Toolsets`` header or ``?toolsets=``) asks for a view
        of those groups, whatever the configured strategy.
        """
        principal = principal or self.toolset.default_principal
        strategy = self.toolsets if toolsets else self.choose(protocol, extensions)
        if is_stateless(protocol):
            key = f"principal:{principal.id}" if principal.authenticated else None
        else:
            key = session_key
        session = self.toolset.session(key, principal, all_groups=strategy.open_groups)
        request = Request(session, protocol, extensions, confirmer, extras or {}, toolsets)
        return strategy, request

    # -- serving -----------------------------------------------------------------------
    async def list_tools(
        self,
        strategy: Strategy,
        request: Request,
        cursor: str | None = None,
        listed: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> Page:
        """One page of ``tools/list``; the first page hands the whole listing to
        ``listed`` (what the client was shown, for ``ToolListWatch``)."""
        if cursor is None:  # one selection per listing, not per page
            tools = await self.list_all_tools(strategy, request)
            if listed is not None:
                listed(tools)
        else:
            tools = await strategy.list_tools(request)
        return paginate(tools, lambda w: str(w["name"]), cursor, self.toolset.page_size)

    async def list_all_tools(self, strategy: Strategy, request: Request) -> list[dict[str, Any]]:
        """Every listed tool definition in one list (WebMCP publishes it whole), with
        the one ``tool.selection`` event a listing emits."""
        tools = await strategy.list_tools(request)
        emit_selection(request, "list", strategy, tools)
        return tools

    async def call_tool(
        self,
        strategy: Strategy,
        request: Request,
        name: str,
        arguments: Mapping[str, Any] | None,
        handler: ToolHandler | None = None,
    ) -> Reply:
        return await strategy.call_tool(request, name, arguments, handler)

    async def list_resources(self, request: Request) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for addon in self.addons:
            out += await addon.list_resources(request)
        return out

    async def read_resource(self, request: Request, uri: str) -> str | None:
        for addon in self.addons:
            text = await addon.read_resource(request, uri)
            if text is not None:
                return text
        return None
