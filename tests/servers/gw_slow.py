"""A backend that is slow to start, for the gateway's start-up tests: it waits until a
gate file exists (``--gate PATH``; the test creates it when it wants the backend up),
saying so on stderr, then serves one tool, ``slow_hello``, over stdio.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from fastmcp import FastMCP

from toolgate.exiting import quick_exit

mcp = FastMCP("gw-slow")


@mcp.tool
def slow_hello(name: str) -> str:
    """Greet someone, from the backend that started late."""
    return f"hello {name}, from the slow backend"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--gate", type=Path, required=True)
    ns = parser.parse_args()
    print(f"gw-slow: waiting for {ns.gate}", file=sys.stderr, flush=True)
    parent = os.getppid()
    while not ns.gate.exists():
        if os.getppid() != parent:  # the gateway is gone: nobody will open the gate
            sys.exit("gw-slow: the gateway went away before the gate opened")
        time.sleep(0.05)
    print("gw-slow: gate open, serving", file=sys.stderr, flush=True)
    mcp.run(transport="stdio", show_banner=False)
    quick_exit()  # end without collecting the heap (toolgate.exiting)
