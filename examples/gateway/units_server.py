"""A tiny MCP server (the official SDK's ``MCPServer``) the example gateway fronts.

Unit conversions. The gateway starts it over stdio: ``python units_server.py``.
"""

from __future__ import annotations

from mcp.server import MCPServer

mcp = MCPServer("units")


@mcp.tool()
def km_to_miles(km: float) -> float:
    """Convert kilometres to miles."""
    return round(km * 0.621371, 3)


@mcp.tool()
def celsius_to_fahrenheit(celsius: float) -> float:
    """Convert degrees Celsius to Fahrenheit."""
    return round(celsius * 9 / 5 + 32, 2)


@mcp.tool()
def whoami() -> str:
    """Say which server answered."""
    return "units server"


if __name__ == "__main__":
    mcp.run("stdio")
