"""A tiny MCP server (FastMCP) the example gateway fronts: a to-do list in memory.

The gateway starts it over stdio: ``python todo_server.py``. It knows nothing about
toolgate; the gateway's ``toolgate.json`` puts its tools into groups.
"""

from __future__ import annotations

from fastmcp import FastMCP

mcp = FastMCP("todo")
ITEMS: list[str] = []


@mcp.tool
def todo_add(text: str) -> int:
    """Add a to-do item. Returns how many items there are."""
    ITEMS.append(text)
    return len(ITEMS)


@mcp.tool
def todo_list() -> list[str]:
    """List the to-do items."""
    return ITEMS


@mcp.tool
def todo_clear() -> str:
    """Delete every to-do item."""
    ITEMS.clear()
    return "cleared"


@mcp.tool
def whoami() -> str:
    """Say which server answered."""
    return "todo server"


if __name__ == "__main__":
    mcp.run(transport="stdio", show_banner=False)
