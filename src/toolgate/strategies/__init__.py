"""Strategies: how a view reaches a client (DESIGN §5), one per module.

``base`` holds what they share; ``registry`` names them and builds them; ``delivery``
picks one per request. This package re-exports the names adapters and third-party
strategies use. Delivery layer: no MCP imports.
"""

from toolgate.strategies.base import Addon, MetaNames, MetaTool, Reply, Request, Strategy
from toolgate.strategies.catalog import CatalogStrategy
from toolgate.strategies.delivery import Delivery, DeliveryConfig
from toolgate.strategies.flat import FlatStrategy
from toolgate.strategies.groups import GroupsStrategy
from toolgate.strategies.lazy import LazyDescriptions, ToolDescriptions
from toolgate.strategies.list_changed import ListChangedStrategy
from toolgate.strategies.registry import (
    StrategyFactory,
    StrategyInputs,
    StrategyRegistry,
    default_registry,
)
from toolgate.strategies.search import SearchStrategy, ToolSearch
from toolgate.strategies.toolsets import ToolsetsStrategy, parse_toolsets

__all__ = [
    "Addon",
    "CatalogStrategy",
    "Delivery",
    "DeliveryConfig",
    "FlatStrategy",
    "GroupsStrategy",
    "LazyDescriptions",
    "ListChangedStrategy",
    "MetaNames",
    "MetaTool",
    "Reply",
    "Request",
    "SearchStrategy",
    "Strategy",
    "StrategyFactory",
    "StrategyInputs",
    "StrategyRegistry",
    "ToolDescriptions",
    "ToolSearch",
    "ToolsetsStrategy",
    "default_registry",
    "parse_toolsets",
]
