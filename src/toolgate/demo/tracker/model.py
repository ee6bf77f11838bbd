"""The tracker's vocabulary: the demo user, argument types and row lookups.

Shared by every tracker tool module; lookups raise ``ToolError`` naming what exists.
Imports ``demo.db``, ``fastmcp`` and ``pydantic`` only.
"""

from __future__ import annotations

import sqlite3
from datetime import date
from typing import Annotated, Any, Literal

from fastmcp.exceptions import ToolError
from pydantic import Field

from toolgate.demo.db import as_dict, utc_now

CURRENT_USER = "local"
"""The demo is single-user: everything the tools do is done as this login."""

Status = Literal["open", "in_progress", "closed"]
Priority = Literal["low", "normal", "high", "urgent"]
Resolution = Literal["fixed", "wontfix", "duplicate", "invalid"]

ProjectKey = Annotated[
    str,
    Field(description="Project key, e.g. 'WEB' (case-insensitive; see list_projects)."),
]
IssueId = Annotated[int, Field(description="Numeric issue id, e.g. 3 (see list_issues).", ge=1)]
Limit = Annotated[int, Field(description="Maximum number of results (1-100).", ge=1, le=100)]

ISSUE_SELECT = (
    "SELECT i.*, p.key AS project_key, m.title AS milestone"
    " FROM tracker_issues i JOIN tracker_projects p ON p.id = i.project_id"
    " LEFT JOIN tracker_milestones m ON m.id = i.milestone_id"
)


# --------------------------------------------------------------------------- lookups


def project_row(conn: sqlite3.Connection, key: str) -> sqlite3.Row:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM tracker_projects WHERE key = ?", (key.strip().upper(),)
    ).fetchone()
    if row is None:
        known = [r["key"] for r in conn.execute("SELECT key FROM tracker_projects ORDER BY key")]
        raise ToolError(f"Unknown project {key!r}. Known projects: {', '.join(known) or 'none'}.")
    return row


def open_project_row(conn: sqlite3.Connection, key: str) -> sqlite3.Row:
    row = project_row(conn, key)
    if row["archived"]:
        raise ToolError(
            f"Project {row['key']} is archived; unarchive it with archive_project"
            f"(project_key={row['key']!r}, archived=false) first."
        )
    return row


def issue_row(conn: sqlite3.Connection, issue_id: int) -> sqlite3.Row:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM tracker_issues WHERE id = ?", (issue_id,)
    ).fetchone()
    if row is None:
        raise ToolError(f"Unknown issue {issue_id}. Use list_issues or search_issues to find ids.")
    return row


def user_row(conn: sqlite3.Connection, login: str) -> sqlite3.Row:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM tracker_users WHERE login = ?", (login,)
    ).fetchone()
    if row is None:
        known = [r["login"] for r in conn.execute("SELECT login FROM tracker_users ORDER BY login")]
        raise ToolError(f"Unknown user {login!r}. Known users: {', '.join(known)}.")
    return row


def find_label(conn: sqlite3.Connection, project_id: int, name: str) -> sqlite3.Row:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM tracker_labels WHERE project_id = ? AND name = ?", (project_id, name)
    ).fetchone()
    if row is None:
        known = [
            r["name"]
            for r in conn.execute(
                "SELECT name FROM tracker_labels WHERE project_id = ? ORDER BY name", (project_id,)
            )
        ]
        raise ToolError(
            f"Unknown label {name!r} in this project. Known labels: {', '.join(known) or 'none'}."
        )
    return row


def milestone_row(conn: sqlite3.Connection, project_id: int, title: str) -> sqlite3.Row:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM tracker_milestones WHERE project_id = ? AND title = ?", (project_id, title)
    ).fetchone()
    if row is None:
        known = [
            r["title"]
            for r in conn.execute(
                "SELECT title FROM tracker_milestones WHERE project_id = ? ORDER BY title",
                (project_id,),
            )
        ]
        raise ToolError(
            f"Unknown milestone {title!r} in this project. "
            f"Known milestones: {', '.join(known) or 'none'}."
        )
    return row


def load_issue(conn: sqlite3.Connection, issue_id: int) -> dict[str, Any]:
    row = conn.execute(f"{ISSUE_SELECT} WHERE i.id = ?", (issue_id,)).fetchone()
    if row is None:
        raise ToolError(f"Unknown issue {issue_id}. Use list_issues or search_issues to find ids.")
    return issue_dict(conn, row)


def issue_dict(conn: sqlite3.Connection, row: sqlite3.Row) -> dict[str, Any]:
    issue = as_dict(row)
    issue.pop("project_id")
    issue.pop("milestone_id")
    issue["labels"] = [
        r["name"]
        for r in conn.execute(
            "SELECT l.name FROM tracker_labels l JOIN tracker_issue_labels il"
            " ON il.label_id = l.id WHERE il.issue_id = ? ORDER BY l.name",
            (row["id"],),
        )
    ]
    return issue


def touch_issue(conn: sqlite3.Connection, issue_id: int) -> None:
    conn.execute("UPDATE tracker_issues SET updated_at = ? WHERE id = ?", (utc_now(), issue_id))


def insert_comment(conn: sqlite3.Connection, issue_id: int, body: str) -> dict[str, Any]:
    cur = conn.execute(
        "INSERT INTO tracker_comments (issue_id, author, body, created_at) VALUES (?, ?, ?, ?)",
        (issue_id, CURRENT_USER, body, utc_now()),
    )
    return as_dict(
        conn.execute("SELECT * FROM tracker_comments WHERE id = ?", (cur.lastrowid,)).fetchone()
    )


def project_summary(conn: sqlite3.Connection, row: sqlite3.Row) -> dict[str, Any]:
    project = as_dict(row)
    project.pop("id")
    project["archived"] = bool(project["archived"])
    counts = dict.fromkeys(("open", "in_progress", "closed"), 0)
    for r in conn.execute(
        "SELECT status, COUNT(*) AS n FROM tracker_issues WHERE project_id = ? GROUP BY status",
        (row["id"],),
    ):
        counts[r["status"]] = r["n"]
    project["issue_counts"] = counts
    return project


def checked_date(value: str, what: str) -> str:
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise ToolError(f"Invalid {what} {value!r}: expected a date as YYYY-MM-DD.") from None
