"""Tracker tools for projects: list, read, create and archive them.

Imports ``demo.backend``, ``demo.db`` and ``demo.tracker.model``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field

from toolgate.demo.backend import ADD, READ, SET
from toolgate.demo.db import Database, utc_now
from toolgate.demo.tracker.model import CURRENT_USER, ProjectKey, project_row, project_summary


def register(server: FastMCP, db: Database) -> None:
    """Add these tools to ``server``, working on ``db``."""

    @server.tool(annotations=READ)
    def list_projects(
        include_archived: Annotated[
            bool, Field(description="Also list archived projects (default false).")
        ] = False,
    ) -> dict[str, Any]:
        """List projects with their keys, owners and issue counts by status.

        The `key` (e.g. 'WEB') is what every other project tool takes as `project_key`.
        """
        with db.read() as conn:
            rows = conn.execute(
                "SELECT * FROM tracker_projects WHERE archived = 0 OR ? ORDER BY key",
                (include_archived,),
            ).fetchall()
            return {"projects": [project_summary(conn, r) for r in rows]}

    @server.tool(annotations=READ)
    def get_project(project_key: ProjectKey) -> dict[str, Any]:
        """Read one project: description, owner, issue counts, milestones and labels.

        Use it before creating issues to see which labels and milestones exist.
        """
        with db.read() as conn:
            row = project_row(conn, project_key)
            project = project_summary(conn, row)
            project["milestones"] = [
                r["title"]
                for r in conn.execute(
                    "SELECT title FROM tracker_milestones WHERE project_id = ? ORDER BY due_date",
                    (row["id"],),
                )
            ]
            project["labels"] = [
                r["name"]
                for r in conn.execute(
                    "SELECT name FROM tracker_labels WHERE project_id = ? ORDER BY name",
                    (row["id"],),
                )
            ]
        return project

    @server.tool(annotations=ADD)
    def create_project(
        key: Annotated[
            str,
            Field(
                description="Short unique key: an uppercase letter then 1-9 uppercase letters "
                "or digits, e.g. 'OPS'.",
                pattern=r"^[A-Z][A-Z0-9]{1,9}$",
            ),
        ],
        name: Annotated[str, Field(description="Project name.", min_length=1, max_length=80)],
        description: Annotated[
            str, Field(description="What the project is about.", max_length=1000)
        ] = "",
    ) -> dict[str, Any]:
        """Create a project owned by you, with the default labels bug, feature and docs.

        Fails if the key is already used. Returns the new project.
        """
        with db.write() as conn:
            if conn.execute("SELECT 1 FROM tracker_projects WHERE key = ?", (key,)).fetchone():
                raise ToolError(f"Project key {key!r} is already used.")
            cur = conn.execute(
                "INSERT INTO tracker_projects (key, name, description, owner, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (key, name, description, CURRENT_USER, utc_now()),
            )
            conn.executemany(
                "INSERT INTO tracker_labels (project_id, name, color) VALUES (?, ?, ?)",
                [
                    (cur.lastrowid, "bug", "#d73a4a"),
                    (cur.lastrowid, "feature", "#a2eeef"),
                    (cur.lastrowid, "docs", "#0075ca"),
                ],
            )
            return project_summary(conn, project_row(conn, key))

    @server.tool(annotations=SET)
    def archive_project(
        project_key: ProjectKey,
        archived: Annotated[
            bool, Field(description="true to archive (default), false to unarchive.")
        ] = True,
    ) -> dict[str, Any]:
        """Archive a project (read-only, hidden from list_projects) or unarchive it.

        Archived projects keep all their issues but refuse new issues and edits to the project.
        Reversible: call again with archived=false.
        """
        with db.write() as conn:
            row = project_row(conn, project_key)
            conn.execute(
                "UPDATE tracker_projects SET archived = ? WHERE id = ?", (archived, row["id"])
            )
            return project_summary(conn, project_row(conn, project_key))
