"""Tracker tools for issues: list, read, create, edit, assign, close and
reopen them, and their comments.

Imports ``demo.backend``, ``demo.db`` and ``demo.tracker.model``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field

from toolgate.demo.backend import ADD, OVERWRITE, READ, SET
from toolgate.demo.db import Database, as_dict, utc_now
from toolgate.demo.tracker.model import (
    CURRENT_USER,
    ISSUE_SELECT,
    IssueId,
    Limit,
    Priority,
    ProjectKey,
    Resolution,
    Status,
    find_label,
    insert_comment,
    issue_dict,
    issue_row,
    load_issue,
    open_project_row,
    project_row,
    touch_issue,
    user_row,
)


def register(server: FastMCP, db: Database) -> None:
    """Add these tools to ``server``, working on ``db``."""

    @server.tool(annotations=READ)
    def list_issues(
        project_key: ProjectKey,
        status: Annotated[
            Status | Literal["any", "not_closed"],
            Field(description="Filter by status; 'not_closed' (default) or 'any' for all."),
        ] = "not_closed",
        assignee: Annotated[
            str | None, Field(description="Only issues assigned to this login.")
        ] = None,
        label: Annotated[str | None, Field(description="Only issues with this label.")] = None,
        limit: Limit = 50,
    ) -> dict[str, Any]:
        """List a project's issues, newest first, filtered by status, assignee or label.

        Returns id, title, status, priority, assignee, milestone and labels per issue.
        """
        with db.read() as conn:
            project = project_row(conn, project_key)
            where = ["i.project_id = ?"]
            params: list[Any] = [project["id"]]
            if status == "not_closed":
                where.append("i.status != 'closed'")
            elif status != "any":
                where.append("i.status = ?")
                params.append(status)
            if assignee is not None:
                user_row(conn, assignee)
                where.append("i.assignee = ?")
                params.append(assignee)
            if label is not None:
                label_row = find_label(conn, project["id"], label)
                where.append(
                    "EXISTS (SELECT 1 FROM tracker_issue_labels il"
                    " WHERE il.issue_id = i.id AND il.label_id = ?)"
                )
                params.append(label_row["id"])
            rows = conn.execute(
                f"{ISSUE_SELECT} WHERE {' AND '.join(where)} ORDER BY i.id DESC LIMIT ?",
                (*params, limit),
            ).fetchall()
            issues = [issue_dict(conn, r) for r in rows]
        return {"project_key": project["key"], "count": len(issues), "issues": issues}

    @server.tool(annotations=READ)
    def get_issue(issue_id: IssueId) -> dict[str, Any]:
        """Read one issue in full, including its labels and every comment.

        Use list_issues or search_issues first if you do not know the id.
        """
        with db.read() as conn:
            issue = load_issue(conn, issue_id)
            issue["comments"] = [
                as_dict(r)
                for r in conn.execute(
                    "SELECT id, author, body, created_at FROM tracker_comments"
                    " WHERE issue_id = ? ORDER BY id",
                    (issue_id,),
                )
            ]
        return issue

    @server.tool(annotations=ADD)
    def create_issue(
        project_key: ProjectKey,
        title: Annotated[
            str, Field(description="One-line summary of the issue.", min_length=1, max_length=200)
        ],
        body: Annotated[
            str, Field(description="Details: steps, expected and actual result.", max_length=5000)
        ] = "",
        priority: Annotated[
            Priority, Field(description="'low', 'normal' (default), 'high' or 'urgent'.")
        ] = "normal",
        assignee: Annotated[
            str | None, Field(description="Login to assign (see list_users); none by default.")
        ] = None,
        labels: Annotated[
            list[str] | None,
            Field(description="Label names that exist in the project, e.g. ['bug']."),
        ] = None,
    ) -> dict[str, Any]:
        """Create an open issue in a project, reported by you.

        Optionally assign it and attach existing labels. Fails without creating anything if
        the project is unknown or archived, or the assignee or a label does not exist.
        """
        with db.write() as conn:
            project = open_project_row(conn, project_key)
            if assignee is not None:
                user_row(conn, assignee)
            label_ids = [find_label(conn, project["id"], name)["id"] for name in labels or []]
            now = utc_now()
            cur = conn.execute(
                "INSERT INTO tracker_issues (project_id, title, body, status, priority, reporter,"
                " assignee, created_at, updated_at) VALUES (?, ?, ?, 'open', ?, ?, ?, ?, ?)",
                (project["id"], title, body, priority, CURRENT_USER, assignee, now, now),
            )
            issue_id = int(cur.lastrowid or 0)
            conn.executemany(
                "INSERT OR IGNORE INTO tracker_issue_labels (issue_id, label_id) VALUES (?, ?)",
                [(issue_id, label_id) for label_id in label_ids],
            )
            return load_issue(conn, issue_id)

    @server.tool(annotations=OVERWRITE)
    def update_issue(
        issue_id: IssueId,
        title: Annotated[
            str | None, Field(description="New title.", min_length=1, max_length=200)
        ] = None,
        body: Annotated[str | None, Field(description="New body text.", max_length=5000)] = None,
        priority: Annotated[Priority | None, Field(description="New priority.")] = None,
        status: Annotated[
            Literal["open", "in_progress"] | None,
            Field(description="'open' or 'in_progress'; use close_issue to close."),
        ] = None,
    ) -> dict[str, Any]:
        """Edit an issue's title, body, priority or open/in-progress status.

        Only the fields you pass change; the old title and body are overwritten. Closing and
        reopening have their own tools (close_issue, reopen_issue).
        """
        changes = {
            k: v
            for k, v in {
                "title": title,
                "body": body,
                "priority": priority,
                "status": status,
            }.items()
            if v is not None
        }
        if not changes:
            raise ToolError(
                "Nothing to update: pass at least one of title, body, priority, status."
            )
        with db.write() as conn:
            row = issue_row(conn, issue_id)
            if "status" in changes and row["status"] == "closed":
                raise ToolError(f"Issue {issue_id} is closed; use reopen_issue first.")
            assignments = ", ".join(f"{k} = ?" for k in changes)
            conn.execute(
                f"UPDATE tracker_issues SET {assignments} WHERE id = ?",
                (*changes.values(), issue_id),
            )
            touch_issue(conn, issue_id)
            return load_issue(conn, issue_id)

    @server.tool(annotations=SET)
    def assign_issue(
        issue_id: IssueId,
        assignee: Annotated[
            str | None, Field(description="Login to assign (see list_users), or null to unassign.")
        ],
    ) -> dict[str, Any]:
        """Assign an issue to a user, or unassign it by passing null.

        Returns the updated issue.
        """
        with db.write() as conn:
            issue_row(conn, issue_id)
            if assignee is not None:
                user_row(conn, assignee)
            conn.execute(
                "UPDATE tracker_issues SET assignee = ? WHERE id = ?", (assignee, issue_id)
            )
            touch_issue(conn, issue_id)
            return load_issue(conn, issue_id)

    @server.tool(annotations=SET)
    def close_issue(
        issue_id: IssueId,
        resolution: Annotated[
            Resolution,
            Field(description="'fixed' (default), 'wontfix', 'duplicate' or 'invalid'."),
        ] = "fixed",
        comment: Annotated[
            str | None,
            Field(
                description="Optional closing comment explaining the resolution.", max_length=5000
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Close an open or in-progress issue with a resolution and an optional comment.

        Fails if the issue is already closed (nothing changes). Reopen with reopen_issue.
        """
        with db.write() as conn:
            row = issue_row(conn, issue_id)
            if row["status"] == "closed":
                raise ToolError(
                    f"Issue {issue_id} is already closed (resolution {row['resolution']})."
                )
            now = utc_now()
            conn.execute(
                "UPDATE tracker_issues SET status = 'closed', resolution = ?, closed_at = ?,"
                " updated_at = ? WHERE id = ?",
                (resolution, now, now, issue_id),
            )
            if comment:
                insert_comment(conn, issue_id, comment)
            return load_issue(conn, issue_id)

    @server.tool(annotations=SET)
    def reopen_issue(
        issue_id: IssueId,
        reason: Annotated[
            str | None, Field(description="Optional comment saying why.", max_length=5000)
        ] = None,
    ) -> dict[str, Any]:
        """Reopen a closed issue, clearing its resolution; optionally comment why.

        Fails if the issue is not closed.
        """
        with db.write() as conn:
            row = issue_row(conn, issue_id)
            if row["status"] != "closed":
                raise ToolError(f"Issue {issue_id} is not closed (status {row['status']}).")
            conn.execute(
                "UPDATE tracker_issues SET status = 'open', resolution = NULL, closed_at = NULL,"
                " updated_at = ? WHERE id = ?",
                (utc_now(), issue_id),
            )
            if reason:
                insert_comment(conn, issue_id, reason)
            return load_issue(conn, issue_id)

    @server.tool(annotations=ADD)
    def add_comment(
        issue_id: IssueId,
        body: Annotated[
            str, Field(description="Comment text (markdown).", min_length=1, max_length=5000)
        ],
    ) -> dict[str, Any]:
        """Add a comment to an issue as you.

        Returns the new comment with its id and timestamp.
        """
        with db.write() as conn:
            issue_row(conn, issue_id)
            comment = insert_comment(conn, issue_id, body)
            touch_issue(conn, issue_id)
            return comment

    @server.tool(annotations=READ)
    def list_comments(issue_id: IssueId) -> dict[str, Any]:
        """List an issue's comments, oldest first.

        get_issue returns the same comments together with the issue itself.
        """
        with db.read() as conn:
            issue_row(conn, issue_id)
            rows = conn.execute(
                "SELECT id, author, body, created_at FROM tracker_comments"
                " WHERE issue_id = ? ORDER BY id",
                (issue_id,),
            ).fetchall()
        return {"issue_id": issue_id, "comments": [as_dict(r) for r in rows]}
