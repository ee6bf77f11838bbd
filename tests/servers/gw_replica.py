"""A stdio backend that says which gateway replica served a call, for the replica tests.

Every tool answers ``{"replica": NAME}`` (``--name NAME``; the gateway's config passes
``${TOOLGATE_REPLICA}`` from each replica's environment): ``whoami``; ``work(ms)``, which
sleeps first, so a load has calls in flight; ``begin`` and ``finish``, which the tests'
stages make a per-principal flow (``finish`` runs only after ``begin``).
Run: ``python tests/servers/gw_replica.py --name r1`` (stdio).
"""

from __future__ import annotations

import argparse

import anyio
from fastmcp import FastMCP

from toolgate.exiting import quick_exit

mcp = FastMCP("gw-replica")
NAME = "unnamed"


@mcp.tool
def whoami() -> dict[str, str]:
    """Name the replica that served this call."""
    return {"replica": NAME}


@mcp.tool
async def work(ms: int) -> dict[str, str]:
    """Wait ``ms`` milliseconds, then name the replica that served this call."""
    await anyio.sleep(ms / 1000)
    return {"replica": NAME}


@mcp.tool
def begin() -> dict[str, str]:
    """Start the flow (moves the caller to the stage where ``finish`` runs)."""
    return {"replica": NAME}


@mcp.tool
def finish() -> dict[str, str]:
    """End the flow; runs only once ``begin`` has."""
    return {"replica": NAME}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", required=True)
    NAME = parser.parse_args().name
    mcp.run(transport="stdio", show_banner=False)
    quick_exit()  # end without collecting the heap (toolgate.exiting)
