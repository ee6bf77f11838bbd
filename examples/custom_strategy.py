"""A strategy of your own, registered by name: toolgate's files stay as they are.

``summaries`` lists every tool the caller may use in one line (its summary and its
required arguments), so a large server's whole list stays cheap; ``describe_tools`` gives the full
definitions of the ones an agent picks. It subclasses ``FlatStrategy`` and is
registered in a ``StrategyRegistry``, which ``DeliveryConfig`` reads:

    python examples/custom_strategy.py                           # this server, stdio
    python examples/custom_strategy.py toolgate serve CONFIG     # the gateway, with
                                                                 # "strategy": "summaries"

The second form registers ``summaries`` in ``default_registry`` (what the gateway's
config reads) and runs the ``toolgate`` command. ``build()`` returns the server for tests.
"""

from __future__ import annotations

import sys
from typing import Any

from mcp.server import Server

from toolgate import ToolSet
from toolgate.catalog import Tool
from toolgate.lowlevel import bind
from toolgate.strategies import (
    DeliveryConfig,
    FlatStrategy,
    StrategyInputs,
    StrategyRegistry,
    default_registry,
)
from toolgate.strategies.detail import summary_wire


class SummariesStrategy(FlatStrategy):
    """Every accessible tool, one line each; full definitions through describe_tools."""

    name = "summaries"  # the name it is registered under: events and logs report it
    on_demand = True  # Delivery's describe_tools add-on offers itself to this strategy

    def shape(self, wire: dict[str, Any], tool: Tool) -> dict[str, Any]:
        return summary_wire(wire, tool, minimal=False)


def summaries(inputs: StrategyInputs) -> SummariesStrategy:
    """The factory: one strategy per ``Delivery``, from its toolset, names and add-ons."""
    return SummariesStrategy(inputs.toolset, names=inputs.names, addons=inputs.addons)


def build() -> Server[Any]:
    registry = StrategyRegistry()  # the built-ins, and now ours
    registry.register("summaries", summaries)
    toolset = ToolSet("units")

    @toolset.tool
    def km_to_miles(km: float) -> float:
        """Convert kilometres to miles. Rounded to three decimals."""
        return round(km / 1.609344, 3)

    @toolset.tool
    def celsius_to_fahrenheit(celsius: float) -> float:
        """Convert degrees Celsius to Fahrenheit. Exact."""
        return celsius * 9 / 5 + 32

    server: Server[Any] = Server("units", version="1.0")
    bind(server, toolset, DeliveryConfig(strategy="summaries", registry=registry))
    return server


async def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    server = build()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    if sys.argv[1:2] == ["toolgate"]:
        from toolgate.cli import main

        default_registry.register("summaries", summaries)
        sys.exit(main(sys.argv[2:]))
    import anyio

    anyio.run(serve_stdio)
