"""The strategy registry: the names a configuration may give, and how each is built.

``StrategyRegistry`` maps a name to a factory. ``default_registry`` holds the built-in
strategies; ``Delivery``, ``DeliveryConfig``, the gateway's config and its JSON Schema
all read a registry, so a third party adds a strategy with ``register`` and edits no
toolgate file. Delivery layer: imports the strategies and the core, never ``mcp``,
``mcp_types`` or ``fastmcp``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from toolgate.errors import ConfigError, RegistrationError
from toolgate.strategies.base import Addon, MetaNames, Strategy
from toolgate.strategies.catalog import CatalogStrategy
from toolgate.strategies.flat import FlatStrategy
from toolgate.strategies.groups import GroupsStrategy
from toolgate.strategies.list_changed import ListChangedStrategy
from toolgate.strategies.search import SearchStrategy
from toolgate.toolset import ToolSet

#: not a strategy but a choice among the built-ins per request (``Delivery.choose``)
AUTO = "auto"
STRATEGY_NAME = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
MAX_STRATEGY_NAME = 64


class DeliverySettings(Protocol):
    """What a factory reads of a ``DeliveryConfig`` (``toolgate.strategies.delivery``),
    named here so the registry does not import the module that builds from it."""

    @property
    def strategy(self) -> str: ...
    @property
    def meta_tools(self) -> str: ...
    @property
    def names(self) -> MetaNames: ...
    @property
    def grouped_list(self) -> str: ...
    @property
    def activators(self) -> str: ...
    @property
    def search(self) -> bool: ...
    @property
    def search_full_results(self) -> int: ...


@dataclass(frozen=True)
class StrategyInputs:
    """What a factory builds a strategy from: one ``Delivery``'s toolset, its config
    and the add-ons every strategy of it carries (search, ``describe_tools``, lazy)."""

    toolset: ToolSet
    config: DeliverySettings
    addons: tuple[Addon, ...]

    @property
    def names(self) -> MetaNames:
        """The meta-tool names the config gives (every strategy shares them)."""
        return self.config.names


#: builds one strategy for one ``Delivery``: ``lambda inputs: Mine(inputs.toolset)``
StrategyFactory = Callable[[StrategyInputs], Strategy]


class StrategyRegistry:
    """Strategy names and their factories: the built-ins, then what was registered.

    >>> registry = StrategyRegistry()
    >>> registry.register("mine", lambda i: Mine(i.toolset, addons=i.addons))  # doctest: +SKIP
    >>> DeliveryConfig(strategy="mine", registry=registry)  # doctest: +SKIP

    A name is registered once: replacing one (a built-in included) takes
    ``replace=True``. A built-in can be replaced but not removed, since ``auto`` and the
    groups fallback choose among them. ``auto`` is not a strategy and cannot be
    registered.
    """

    def __init__(self) -> None:
        self._factories: dict[str, StrategyFactory] = dict(BUILTIN)

    def register(self, name: str, factory: StrategyFactory, *, replace: bool = False) -> None:
        """Make ``name`` a strategy a config may name, built by ``factory``.

        Raises ``RegistrationError`` for a malformed name, ``auto``, a factory that is
        not callable, or a name already registered unless ``replace`` is true."""
        if not isinstance(name, str):
            raise RegistrationError(
                f"a strategy name is a string, not {type(name).__name__}", strategy=repr(name)
            )
        if len(name) > MAX_STRATEGY_NAME:
            raise RegistrationError(
                f"strategy names are at most {MAX_STRATEGY_NAME} characters; "
                f"got one of {len(name)}",
                strategy=f"{name[:MAX_STRATEGY_NAME]}…",
            )
        if not STRATEGY_NAME.match(name):
            raise RegistrationError(
                f"strategy name {name!r} is not valid: lowercase letters and digits "
                "in words joined by single '_', starting with a letter",
                strategy=name,
            )
        if name == AUTO:
            raise RegistrationError(
                "'auto' is not a strategy: it picks a built-in one per request",
                strategy=name,
            )
        if not callable(factory):
            raise RegistrationError(
                f"the factory of strategy {name!r} must be callable, not {type(factory).__name__}",
                strategy=name,
            )
        if name in self._factories and not replace:
            raise RegistrationError(
                f"strategy {name!r} is already registered; pass replace=True to replace it",
                strategy=name,
            )
        self._factories[name] = factory

    def unregister(self, name: str) -> None:
        """Forget ``name`` (a plug-in that is switched off). Raises ``RegistrationError``
        for a built-in name or one that is not registered."""
        if name in BUILTIN:
            raise RegistrationError(
                f"the built-in strategy {name!r} cannot be removed (auto and the groups "
                "fallback choose among the built-ins); replace it with "
                "register(name, factory, replace=True)",
                strategy=name,
            )
        if name not in self._factories:
            raise RegistrationError(f"no strategy {name!r} is registered", strategy=name)
        del self._factories[name]

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def __repr__(self) -> str:
        return f"StrategyRegistry({', '.join(self.names)})"

    @property
    def names(self) -> tuple[str, ...]:
        """The registered strategies: the built-ins, then the others in registration order."""
        return tuple(self._factories)

    @property
    def choices(self) -> tuple[str, ...]:
        """What a config's ``strategy`` may be: ``auto``, then every registered name."""
        return (AUTO, *self._factories)

    def problem(self, name: object) -> str | None:
        """Why a config cannot name ``name`` as its strategy, or None."""
        if isinstance(name, str) and name in self.choices:
            return None
        return f"unknown strategy {name!r}; known: {', '.join(self.choices)}"

    def check(self, name: object) -> None:
        """Raise ``ConfigError`` (key ``strategy``) when a config cannot name ``name``."""
        problem = self.problem(name)
        if problem is not None:
            raise ConfigError(problem, key="strategy")

    def build(self, name: str, inputs: StrategyInputs) -> Strategy:
        """The strategy ``name`` for one ``Delivery``. Raises ``RegistrationError`` when
        the factory gives anything but a ``Strategy`` whose ``name`` is ``name`` (events
        and logs report ``Strategy.name``; it must be the name the config gives)."""
        built = self._factories[name](inputs)
        if not isinstance(built, Strategy):
            raise RegistrationError(
                f"the factory of strategy {name!r} returned {type(built).__name__}, not a Strategy",
                strategy=name,
            )
        if built.name != name:
            raise RegistrationError(
                f"the factory of strategy {name!r} built {type(built).__name__}, whose name "
                f"is {built.name!r}; set name = {name!r} on the class",
                strategy=name,
            )
        return built

    def copy(self) -> StrategyRegistry:
        """A registry with the same strategies, to change without touching this one."""
        out = StrategyRegistry()
        out._factories.update(self._factories)
        return out


# -- the built-ins -------------------------------------------------------------------------


def _list_changed(i: StrategyInputs) -> Strategy:
    c = i.config
    return ListChangedStrategy(
        i.toolset,
        style="activators" if c.meta_tools == "activators" else "menu",
        names=i.names,
        addons=i.addons,
        grouped_list="full" if c.grouped_list == "full" else "summary",
        activators="reachable" if c.activators == "reachable" else "always",
    )


def _catalog(i: StrategyInputs) -> Strategy:
    return CatalogStrategy(i.toolset, names=i.names, addons=i.addons)


def _groups(i: StrategyInputs) -> Strategy:
    return GroupsStrategy(i.toolset, names=i.names, addons=i.addons)


def _search(i: StrategyInputs) -> Strategy:
    full = i.config.search_full_results
    return SearchStrategy(i.toolset, names=i.names, addons=i.addons, full_results=full)


def _flat(i: StrategyInputs) -> Strategy:
    return FlatStrategy(i.toolset, names=i.names, addons=i.addons)


#: The built-in strategies, in the order ``toolgate schema`` and the docs list them.
BUILTIN: Mapping[str, StrategyFactory] = {
    "list_changed": _list_changed,
    "catalog": _catalog,
    "groups": _groups,
    "search": _search,
    "flat": _flat,
}

#: The registry a ``DeliveryConfig`` and the gateway's config read unless given one.
#: Register here, before a gateway is built, to serve a strategy through the gateway's
#: config (docs/decisions.md, "An open set of strategies").
default_registry = StrategyRegistry()
