"""What both demo backends share: their MCP tool annotations and stdio command line.

Read-only tools never write; ``destructive_hint`` marks tools that delete rows, overwrite
data or move money. Imports ``fastmcp``, ``mcp.types`` and ``demo.db``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

from fastmcp import FastMCP
from mcp.types import ToolAnnotations

from toolgate.demo.db import default_db_path
from toolgate.exiting import quick_exit

READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
ADD = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
SET = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
OVERWRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
DELETE = OVERWRITE  # as hints go, deleting rows and overwriting text are the same


def serve_stdio(
    build_server: Callable[[Path], FastMCP], module: str, what: str, argv: Sequence[str] | None
) -> None:
    """``python -m <module> [--db PATH]``: serve ``build_server(db)`` over stdio."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {module}",
        description=f"toolgate demo backend: {what} MCP server over stdio.",
    )
    parser.add_argument(
        "--db",
        type=Path,
        default=default_db_path(),
        help=f"SQLite file (created and seeded if new; default {default_db_path()})",
    )
    args = parser.parse_args(argv)
    build_server(args.db).run(transport="stdio", show_banner=False)
    quick_exit()  # the process ends here, as soon as the gateway closes its stdin
