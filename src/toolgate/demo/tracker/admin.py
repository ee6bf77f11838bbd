"""The tracker's destructive admin tools: delete issues and projects, purge
closed issues, reset the demo data.

Imports ``demo.backend``, ``demo.db`` and ``demo.tracker.model``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from toolgate.demo.backend import DELETE
from toolgate.demo.db import Database
from toolgate.demo.tracker.model import IssueId, ProjectKey, checked_date, issue_row, project_row
from toolgate.demo.tracker.schema import TRACKER_SCHEMA


def register(server: FastMCP, db: Database) -> None:
    """Add these tools to ``server``, working on ``db``."""

    @server.tool(annotations=DELETE)
    def delete_issue(issue_id: IssueId) -> dict[str, Any]:
        """Permanently delete an issue with its comments and labels. Cannot be undone.

        Prefer close_issue for normal work; delete only spam or test issues.
        """
        with db.write() as conn:
            row = issue_row(conn, issue_id)
            comments = conn.execute(
                "SELECT COUNT(*) FROM tracker_comments WHERE issue_id = ?", (issue_id,)
            ).fetchone()[0]
            conn.execute("DELETE FROM tracker_issues WHERE id = ?", (issue_id,))
        return {"deleted_issue": issue_id, "title": row["title"], "deleted_comments": comments}

    @server.tool(annotations=DELETE)
    def delete_project(project_key: ProjectKey) -> dict[str, Any]:
        """Permanently delete a project and everything in it. Cannot be undone.

        Removes the project's issues, comments, labels and milestones. Consider
        archive_project, which is reversible, instead.
        """
        with db.write() as conn:
            project = project_row(conn, project_key)
            issues = conn.execute(
                "SELECT COUNT(*) FROM tracker_issues WHERE project_id = ?", (project["id"],)
            ).fetchone()[0]
            conn.execute("DELETE FROM tracker_projects WHERE id = ?", (project["id"],))
        return {"deleted_project": project["key"], "deleted_issues": issues}

    @server.tool(annotations=DELETE)
    def purge_closed_issues(
        project_key: Annotated[
            str | None, Field(description="Only purge in this project; every project if null.")
        ] = None,
        closed_before: Annotated[
            str | None,
            Field(description="Only issues closed before this date (YYYY-MM-DD); any if null."),
        ] = None,
    ) -> dict[str, Any]:
        """Permanently delete closed issues (all, or one project's, or those closed before a date).

        Cannot be undone. Returns the ids that were deleted.
        """
        before = checked_date(closed_before, "closed_before") if closed_before is not None else None
        with db.write() as conn:
            where = ["status = 'closed'"]
            params: list[Any] = []
            if project_key is not None:
                where.append("project_id = ?")
                params.append(project_row(conn, project_key)["id"])
            if before is not None:
                where.append("closed_at < ?")
                params.append(before)
            clause = " AND ".join(where)
            ids = [
                r["id"]
                for r in conn.execute(
                    f"SELECT id FROM tracker_issues WHERE {clause} ORDER BY id", params
                )
            ]
            conn.execute(f"DELETE FROM tracker_issues WHERE {clause}", params)
        return {"deleted_issue_ids": ids, "deleted": len(ids)}

    @server.tool(annotations=DELETE)
    def reset_database() -> dict[str, Any]:
        """Wipe every tracker table and restore the original demo data. Cannot be undone.

        Projects, issues, comments, labels, milestones and users all return to the seed
        state; the shop's tables in the same file are not touched.
        """
        with db.write() as conn:
            db.reset(conn)
            counts = {
                table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                for table, _ in TRACKER_SCHEMA.tables
            }
        return {"reset": True, "rows": counts}
