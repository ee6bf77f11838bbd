"""A FastMCP backend for the gateway tests and benchmark: a few arithmetic tools.

Run over stdio (default) or streamable HTTP: ``python tests/servers/gw_math.py
[--http --port N]``.
"""

from __future__ import annotations

import argparse

from fastmcp import FastMCP

from toolgate.exiting import quick_exit

mcp = FastMCP("gw-math")


@mcp.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@mcp.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    ns = parser.parse_args()
    if ns.http:
        mcp.run(
            transport="http", host="127.0.0.1", port=ns.port, show_banner=False, log_level="warning"
        )
    else:
        mcp.run(transport="stdio", show_banner=False)
        quick_exit()  # end without collecting the heap (toolgate.exiting)
