"""Strategies: how a view reaches a client (DESIGN §5), one per module.

``base`` holds what they share; ``delivery`` picks one per request. This package
re-exports the names adapters use. Delivery layer: no MCP imports.
"""

from toolgate.strategies.base import Addon, MetaNames, MetaTool, Reply, Request, Strategy
from toolgate.strategies.catalog import CatalogStrategy
from toolgate.strategies.delivery import STRATEGY_NAMES, Delivery, DeliveryConfig
from toolgate.strategies.flat import FlatStrategy
from toolgate.strategies.groups import GroupsStrategy
from toolgate.strategies.lazy import LazyDescriptions, ToolDescriptions
from toolgate.strategies.list_changed import ListChangedStrategy
from toolgate.strategies.search import SearchStrategy, ToolSearch
from toolgate.strategies.toolsets import ToolsetsStrategy, parse_toolsets

__all__ = [
    "STRATEGY_NAMES",
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
    "ToolDescriptions",
    "ToolSearch",
    "ToolsetsStrategy",
    "parse_toolsets",
]
