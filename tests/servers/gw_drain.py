"""A backend for the gateway's stop tests: ``wait`` sleeps as long as it is told, then
answers its tag; each call's start is appended to ``--started FILE`` (so a test knows
the call is in flight) and the process's id is written to ``--pid FILE`` (so a test
can tell the gateway ended it). Serves over stdio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path

from fastmcp import FastMCP

from toolgate.exiting import quick_exit

mcp = FastMCP("gw-drain")
started: Path | None = None


@mcp.tool
async def wait(seconds: float, tag: str) -> str:
    """Sleep ``seconds``, then answer ``tag``."""
    if started is not None:
        with started.open("a") as out:
            out.write(tag + "\n")
    await asyncio.sleep(seconds)
    return f"done {tag}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--started", type=Path, required=True)
    parser.add_argument("--pid", type=Path, required=True)
    ns = parser.parse_args()
    started = ns.started
    ns.pid.write_text(str(os.getpid()))
    mcp.run(transport="stdio", show_banner=False)
    quick_exit()  # end without collecting the heap (toolgate.exiting)
