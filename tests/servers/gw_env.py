"""A stdio backend that reports its own environment: for env passthrough and stderr tests.

Writes ``gw-env: starting (pid N)`` to stderr, then serves ``getenv(name)`` (the value,
or ``<unset>``) over stdio. With ``--fail MESSAGE`` it writes the message and exits 3.
"""

from __future__ import annotations

import argparse
import os
import sys

from fastmcp import FastMCP

from toolgate.exiting import quick_exit

mcp = FastMCP("gw-env", instructions="Reads the process environment.\n\nFor tests only.")


@mcp.tool
def getenv(name: str) -> str:
    """The value of one environment variable of this process, or <unset>."""
    return os.environ.get(name, "<unset>")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--fail", default=None)
    ns = parser.parse_args()
    print(f"gw-env: starting (pid {os.getpid()})", file=sys.stderr, flush=True)
    if ns.fail:
        print(ns.fail, file=sys.stderr, flush=True)
        sys.exit(3)
    mcp.run(show_banner=False)
    quick_exit()  # end without collecting the heap (toolgate.exiting)
