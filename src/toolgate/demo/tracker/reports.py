"""Tracker tools that read across projects: issue search and project reports.

Imports ``demo.backend``, ``demo.db`` and ``demo.tracker.model``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field

from toolgate.demo.backend import READ
from toolgate.demo.db import Database, as_dict
from toolgate.demo.tracker.model import (
    ISSUE_SELECT,
    Limit,
    ProjectKey,
    Status,
    issue_dict,
    project_row,
    project_summary,
)


def register(server: FastMCP, db: Database) -> None:
    """Add these tools to ``server``, working on ``db``."""

    @server.tool(annotations=READ)
    def search_issues(
        query: Annotated[
            str,
            Field(
                description="Words to look for in titles, bodies and comments (all must match).",
                min_length=1,
                max_length=200,
            ),
        ],
        project_key: Annotated[
            str | None, Field(description="Limit to one project key; all projects by default.")
        ] = None,
        status: Annotated[
            Status | Literal["any"], Field(description="Filter by status; 'any' by default.")
        ] = "any",
        limit: Limit = 20,
    ) -> dict[str, Any]:
        """Full-text search over issues in every project (title, body and comments).

        Every word of the query must appear (case-insensitive). Results are ranked by how
        often the words occur, best first.
        """
        words = query.lower().split()
        if not words:
            raise ToolError("query must contain at least one word.")
        with db.read() as conn:
            where = []
            params: list[Any] = []
            if project_key is not None:
                where.append("i.project_id = ?")
                params.append(project_row(conn, project_key)["id"])
            if status != "any":
                where.append("i.status = ?")
                params.append(status)
            clause = f" WHERE {' AND '.join(where)}" if where else ""
            hits: list[tuple[int, dict[str, Any]]] = []
            for row in conn.execute(f"{ISSUE_SELECT}{clause}", params).fetchall():
                comments = " ".join(
                    r["body"]
                    for r in conn.execute(
                        "SELECT body FROM tracker_comments WHERE issue_id = ?", (row["id"],)
                    )
                )
                # The title appears twice so that title hits weigh double in the score.
                text = f"{row['title']} {row['title']} {row['body']} {comments}".lower()
                if all(word in text for word in words):
                    score = sum(text.count(word) for word in words)
                    hits.append((score, issue_dict(conn, row)))
        hits.sort(key=lambda hit: (-hit[0], hit[1]["id"]))
        results = [{**issue, "score": score} for score, issue in hits[:limit]]
        return {"query": query, "count": len(results), "issues": results}

    @server.tool(annotations=READ)
    def project_report(project_key: ProjectKey) -> dict[str, Any]:
        """Summarise a project: issues by status, priority and assignee, milestone progress.

        Also lists the five oldest issues that are not closed, to spot what is stuck.
        """
        with db.read() as conn:
            project = project_row(conn, project_key)
            pid = project["id"]

            def grouped(column: str) -> dict[str, int]:
                return {
                    str(r["k"]) if r["k"] is not None else "unassigned": r["n"]
                    for r in conn.execute(
                        f"SELECT {column} AS k, COUNT(*) AS n FROM tracker_issues"
                        f" WHERE project_id = ? GROUP BY {column} ORDER BY {column}",
                        (pid,),
                    )
                }

            oldest = conn.execute(
                f"{ISSUE_SELECT} WHERE i.project_id = ? AND i.status != 'closed'"
                " ORDER BY i.created_at, i.id LIMIT 5",
                (pid,),
            ).fetchall()
            milestones = conn.execute(
                "SELECT m.title, m.due_date, COUNT(i.id) AS total,"
                " COALESCE(SUM(i.status = 'closed'), 0) AS closed"
                " FROM tracker_milestones m LEFT JOIN tracker_issues i ON i.milestone_id = m.id"
                " WHERE m.project_id = ? GROUP BY m.id ORDER BY m.due_date",
                (pid,),
            ).fetchall()
            return {
                "project": project_summary(conn, project),
                "by_status": grouped("status"),
                "by_priority": grouped("priority"),
                "by_assignee": grouped("assignee"),
                "milestones": [as_dict(r) for r in milestones],
                "oldest_not_closed": [
                    {"id": r["id"], "title": r["title"], "created_at": r["created_at"]}
                    for r in oldest
                ],
            }
