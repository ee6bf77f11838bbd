"""Demo backend `tracker`: a small project tracker as a real FastMCP server over SQLite.

Owns the tracker's tools (projects, issues, comments, labels, milestones, users, reports
and a destructive admin area); storage is `tracker.schema`. Annotations: read-only
tools never write; `destructiveHint` marks tools that delete rows or overwrite text, while
reversible workflow changes (close/reopen, assign, label, archive) are not destructive.
One module per area: users, projects, issues, labels, reports, admin.
Run: `python -m toolgate.demo.tracker --db PATH` (stdio).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fastmcp import FastMCP

from toolgate.demo.backend import serve_stdio
from toolgate.demo.db import Database
from toolgate.demo.tracker import admin, issues, labels, projects, reports, users
from toolgate.demo.tracker.schema import TRACKER_SCHEMA


def build_server(db_path: str | Path) -> FastMCP:
    """The tracker server over the SQLite file at `db_path` (created and seeded if new).

    >>> server = build_server("/tmp/demo.sqlite3")  # then server.run() or Client(server)
    """
    db = Database(db_path, TRACKER_SCHEMA)
    db.initialize()
    server = FastMCP(
        "toolgate-demo-tracker",
        instructions=(
            "A small project tracker. Projects have a short key (WEB, API); issues have "
            "numeric ids. Start with list_projects, then list_issues or search_issues."
        ),
    )
    for area in (users, projects, issues, labels, reports, admin):
        area.register(server, db)
    return server


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: serve the tracker over stdio on the given SQLite file."""
    serve_stdio(build_server, "toolgate.demo.tracker", "a project tracker", argv)
