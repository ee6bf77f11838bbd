"""Tracker tools for planning: labels (create, add to and remove from issues)
and milestones (create, list, set on issues).

Imports ``demo.backend``, ``demo.db`` and ``demo.tracker.model``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field

from toolgate.demo.backend import ADD, READ, SET
from toolgate.demo.db import Database, as_dict, utc_now
from toolgate.demo.tracker.model import (
    IssueId,
    ProjectKey,
    checked_date,
    find_label,
    issue_row,
    load_issue,
    milestone_row,
    open_project_row,
    project_row,
    touch_issue,
)


def register(server: FastMCP, db: Database) -> None:
    """Add these tools to ``server``, working on ``db``."""

    @server.tool(annotations=READ)
    def list_labels(project_key: ProjectKey) -> dict[str, Any]:
        """List a project's labels with their colours and how many issues carry each.

        Label names are what create_issue, add_label and list_issues take.
        """
        with db.read() as conn:
            project = project_row(conn, project_key)
            rows = conn.execute(
                "SELECT l.name, l.color, COUNT(il.issue_id) AS issues FROM tracker_labels l"
                " LEFT JOIN tracker_issue_labels il ON il.label_id = l.id"
                " WHERE l.project_id = ? GROUP BY l.id ORDER BY l.name",
                (project["id"],),
            ).fetchall()
        return {"project_key": project["key"], "labels": [as_dict(r) for r in rows]}

    @server.tool(annotations=ADD)
    def create_label(
        project_key: ProjectKey,
        name: Annotated[
            str,
            Field(
                description="Label name: lowercase letters, digits and '-', up to 30 chars.",
                pattern=r"^[a-z0-9][a-z0-9-]{0,29}$",
            ),
        ],
        color: Annotated[
            str,
            Field(description="Colour as '#rrggbb' (lowercase hex).", pattern=r"^#[0-9a-f]{6}$"),
        ] = "#888888",
    ) -> dict[str, Any]:
        """Create a label in a project so issues can be tagged with it.

        Fails if the project already has a label with that name.
        """
        with db.write() as conn:
            project = open_project_row(conn, project_key)
            if conn.execute(
                "SELECT 1 FROM tracker_labels WHERE project_id = ? AND name = ?",
                (project["id"], name),
            ).fetchone():
                raise ToolError(f"Project {project['key']} already has a label {name!r}.")
            conn.execute(
                "INSERT INTO tracker_labels (project_id, name, color) VALUES (?, ?, ?)",
                (project["id"], name, color),
            )
        return {"project_key": project["key"], "name": name, "color": color}

    @server.tool(annotations=SET)
    def add_label(
        issue_id: IssueId,
        label: Annotated[str, Field(description="Name of a label in the issue's project.")],
    ) -> dict[str, Any]:
        """Tag an issue with one of its project's labels.

        Adding a label the issue already has changes nothing. Returns the updated issue.
        """
        with db.write() as conn:
            row = issue_row(conn, issue_id)
            label_row = find_label(conn, row["project_id"], label)
            conn.execute(
                "INSERT OR IGNORE INTO tracker_issue_labels (issue_id, label_id) VALUES (?, ?)",
                (issue_id, label_row["id"]),
            )
            touch_issue(conn, issue_id)
            return load_issue(conn, issue_id)

    @server.tool(annotations=SET)
    def remove_label(
        issue_id: IssueId,
        label: Annotated[str, Field(description="Name of a label on the issue.")],
    ) -> dict[str, Any]:
        """Remove a label from an issue (the label itself stays in the project).

        Fails if the issue does not carry that label. Returns the updated issue.
        """
        with db.write() as conn:
            row = issue_row(conn, issue_id)
            label_row = find_label(conn, row["project_id"], label)
            cur = conn.execute(
                "DELETE FROM tracker_issue_labels WHERE issue_id = ? AND label_id = ?",
                (issue_id, label_row["id"]),
            )
            if cur.rowcount == 0:
                raise ToolError(f"Issue {issue_id} does not have the label {label!r}.")
            touch_issue(conn, issue_id)
            return load_issue(conn, issue_id)

    @server.tool(annotations=READ)
    def list_milestones(project_key: ProjectKey) -> dict[str, Any]:
        """List a project's milestones with due dates and progress (closed / total issues).

        Milestone titles are what set_milestone takes.
        """
        with db.read() as conn:
            project = project_row(conn, project_key)
            rows = conn.execute(
                "SELECT m.title, m.due_date, COUNT(i.id) AS total,"
                " COALESCE(SUM(i.status = 'closed'), 0) AS closed"
                " FROM tracker_milestones m LEFT JOIN tracker_issues i ON i.milestone_id = m.id"
                " WHERE m.project_id = ? GROUP BY m.id ORDER BY m.due_date, m.title",
                (project["id"],),
            ).fetchall()
        milestones = []
        for r in rows:
            entry = as_dict(r)
            entry["progress_percent"] = round(100 * r["closed"] / r["total"]) if r["total"] else 0
            milestones.append(entry)
        return {"project_key": project["key"], "milestones": milestones}

    @server.tool(annotations=ADD)
    def create_milestone(
        project_key: ProjectKey,
        title: Annotated[
            str, Field(description="Milestone title, e.g. 'v1.1'.", min_length=1, max_length=80)
        ],
        due_date: Annotated[
            str | None, Field(description="Due date as YYYY-MM-DD, or null for none.")
        ] = None,
    ) -> dict[str, Any]:
        """Create a milestone in a project, optionally with a due date.

        Fails if the project already has a milestone with that title.
        """
        due = checked_date(due_date, "due_date") if due_date is not None else None
        with db.write() as conn:
            project = open_project_row(conn, project_key)
            if conn.execute(
                "SELECT 1 FROM tracker_milestones WHERE project_id = ? AND title = ?",
                (project["id"], title),
            ).fetchone():
                raise ToolError(f"Project {project['key']} already has a milestone {title!r}.")
            conn.execute(
                "INSERT INTO tracker_milestones (project_id, title, due_date, created_at)"
                " VALUES (?, ?, ?, ?)",
                (project["id"], title, due, utc_now()),
            )
        return {"project_key": project["key"], "title": title, "due_date": due}

    @server.tool(annotations=SET)
    def set_milestone(
        issue_id: IssueId,
        milestone: Annotated[
            str | None,
            Field(description="Milestone title in the issue's project, or null to clear."),
        ],
    ) -> dict[str, Any]:
        """Put an issue on a milestone of its project, or take it off with null.

        Returns the updated issue.
        """
        with db.write() as conn:
            row = issue_row(conn, issue_id)
            milestone_id = (
                milestone_row(conn, row["project_id"], milestone)["id"]
                if milestone is not None
                else None
            )
            conn.execute(
                "UPDATE tracker_issues SET milestone_id = ? WHERE id = ?", (milestone_id, issue_id)
            )
            touch_issue(conn, issue_id)
            return load_issue(conn, issue_id)
