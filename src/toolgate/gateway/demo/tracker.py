"""Demo backend `tracker`: a small project tracker as a real FastMCP server over SQLite.

Owns the tracker's tools (projects, issues, comments, labels, milestones, users, reports
and a destructive admin area); storage is `db.TRACKER_SCHEMA`. Annotations: read-only
tools never write; `destructiveHint` marks tools that delete rows or overwrite text, while
reversible workflow changes (close/reopen, assign, label, archive) are not destructive.
Run: `python -m toolgate.gateway.demo.tracker --db PATH` (stdio).
"""

from __future__ import annotations

import argparse
import sqlite3
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from toolgate.gateway.demo.db import TRACKER_SCHEMA, Database, as_dict, default_db_path, utc_now

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
DELETE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

_ISSUE_SELECT = (
    "SELECT i.*, p.key AS project_key, m.title AS milestone"
    " FROM tracker_issues i JOIN tracker_projects p ON p.id = i.project_id"
    " LEFT JOIN tracker_milestones m ON m.id = i.milestone_id"
)


# --------------------------------------------------------------------------- lookups


def _project(conn: sqlite3.Connection, key: str) -> sqlite3.Row:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM tracker_projects WHERE key = ?", (key.strip().upper(),)
    ).fetchone()
    if row is None:
        known = [r["key"] for r in conn.execute("SELECT key FROM tracker_projects ORDER BY key")]
        raise ToolError(f"Unknown project {key!r}. Known projects: {', '.join(known) or 'none'}.")
    return row


def _open_project(conn: sqlite3.Connection, key: str) -> sqlite3.Row:
    row = _project(conn, key)
    if row["archived"]:
        raise ToolError(
            f"Project {row['key']} is archived; unarchive it with archive_project"
            f"(project_key={row['key']!r}, archived=false) first."
        )
    return row


def _issue_row(conn: sqlite3.Connection, issue_id: int) -> sqlite3.Row:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM tracker_issues WHERE id = ?", (issue_id,)
    ).fetchone()
    if row is None:
        raise ToolError(f"Unknown issue {issue_id}. Use list_issues or search_issues to find ids.")
    return row


def _user(conn: sqlite3.Connection, login: str) -> sqlite3.Row:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM tracker_users WHERE login = ?", (login,)
    ).fetchone()
    if row is None:
        known = [r["login"] for r in conn.execute("SELECT login FROM tracker_users ORDER BY login")]
        raise ToolError(f"Unknown user {login!r}. Known users: {', '.join(known)}.")
    return row


def _label(conn: sqlite3.Connection, project_id: int, name: str) -> sqlite3.Row:
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


def _milestone(conn: sqlite3.Connection, project_id: int, title: str) -> sqlite3.Row:
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


def _issue(conn: sqlite3.Connection, issue_id: int) -> dict[str, Any]:
    row = conn.execute(f"{_ISSUE_SELECT} WHERE i.id = ?", (issue_id,)).fetchone()
    if row is None:
        raise ToolError(f"Unknown issue {issue_id}. Use list_issues or search_issues to find ids.")
    return _issue_dict(conn, row)


def _issue_dict(conn: sqlite3.Connection, row: sqlite3.Row) -> dict[str, Any]:
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


def _touch(conn: sqlite3.Connection, issue_id: int) -> None:
    conn.execute("UPDATE tracker_issues SET updated_at = ? WHERE id = ?", (utc_now(), issue_id))


def _comment(conn: sqlite3.Connection, issue_id: int, body: str) -> dict[str, Any]:
    cur = conn.execute(
        "INSERT INTO tracker_comments (issue_id, author, body, created_at) VALUES (?, ?, ?, ?)",
        (issue_id, CURRENT_USER, body, utc_now()),
    )
    return as_dict(
        conn.execute("SELECT * FROM tracker_comments WHERE id = ?", (cur.lastrowid,)).fetchone()
    )


def _project_summary(conn: sqlite3.Connection, row: sqlite3.Row) -> dict[str, Any]:
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


def _check_date(value: str, what: str) -> str:
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise ToolError(f"Invalid {what} {value!r}: expected a date as YYYY-MM-DD.") from None


# --------------------------------------------------------------------------- server


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

    # ----------------------------------------------------------------- users

    @server.tool(annotations=READ)
    def whoami() -> dict[str, Any]:
        """Show who you are acting as in the tracker and what is waiting for you.

        Returns the demo user's login, name and role, the number of open issues assigned to
        them, and the database file this server uses. Takes no arguments.
        """
        with db.read() as conn:
            user = as_dict(_user(conn, CURRENT_USER))
            assigned = conn.execute(
                "SELECT COUNT(*) FROM tracker_issues WHERE assignee = ? AND status != 'closed'",
                (CURRENT_USER,),
            ).fetchone()[0]
        return {"user": user, "open_assigned_issues": assigned, "database": str(db.path)}

    @server.tool(annotations=READ)
    def list_users() -> dict[str, Any]:
        """List every tracker user with their role and number of open assigned issues.

        Use the `login` values as `assignee` in create_issue and assign_issue.
        """
        with db.read() as conn:
            rows = conn.execute(
                "SELECT u.*, (SELECT COUNT(*) FROM tracker_issues i WHERE i.assignee = u.login"
                " AND i.status != 'closed') AS open_assigned_issues"
                " FROM tracker_users u ORDER BY u.login"
            ).fetchall()
        return {"users": [as_dict(r) for r in rows]}

    @server.tool(annotations=ADD)
    def create_user(
        login: Annotated[
            str,
            Field(
                description="Unique login: lowercase letters, digits, '_' or '-', 2-32 chars.",
                pattern=r"^[a-z][a-z0-9_-]{1,31}$",
            ),
        ],
        name: Annotated[str, Field(description="Display name.", min_length=1, max_length=80)],
        email: Annotated[
            str,
            Field(description="Email address.", pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$"),
        ],
        role: Annotated[
            Literal["admin", "member", "viewer"],
            Field(description="Role: 'admin', 'member' (default) or 'viewer'."),
        ] = "member",
    ) -> dict[str, Any]:
        """Create a tracker user who can report, be assigned and comment on issues.

        Fails if the login is already taken. Returns the new user.
        """
        with db.write() as conn:
            if conn.execute("SELECT 1 FROM tracker_users WHERE login = ?", (login,)).fetchone():
                raise ToolError(f"User {login!r} already exists.")
            conn.execute(
                "INSERT INTO tracker_users (login, name, email, role, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (login, name, email, role, utc_now()),
            )
            return as_dict(_user(conn, login))

    # ----------------------------------------------------------------- projects

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
            return {"projects": [_project_summary(conn, r) for r in rows]}

    @server.tool(annotations=READ)
    def get_project(project_key: ProjectKey) -> dict[str, Any]:
        """Read one project: description, owner, issue counts, milestones and labels.

        Use it before creating issues to see which labels and milestones exist.
        """
        with db.read() as conn:
            row = _project(conn, project_key)
            project = _project_summary(conn, row)
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
            return _project_summary(conn, _project(conn, key))

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
            row = _project(conn, project_key)
            conn.execute(
                "UPDATE tracker_projects SET archived = ? WHERE id = ?", (archived, row["id"])
            )
            return _project_summary(conn, _project(conn, project_key))

    # ----------------------------------------------------------------- issues

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
            project = _project(conn, project_key)
            where = ["i.project_id = ?"]
            params: list[Any] = [project["id"]]
            if status == "not_closed":
                where.append("i.status != 'closed'")
            elif status != "any":
                where.append("i.status = ?")
                params.append(status)
            if assignee is not None:
                _user(conn, assignee)
                where.append("i.assignee = ?")
                params.append(assignee)
            if label is not None:
                label_row = _label(conn, project["id"], label)
                where.append(
                    "EXISTS (SELECT 1 FROM tracker_issue_labels il"
                    " WHERE il.issue_id = i.id AND il.label_id = ?)"
                )
                params.append(label_row["id"])
            rows = conn.execute(
                f"{_ISSUE_SELECT} WHERE {' AND '.join(where)} ORDER BY i.id DESC LIMIT ?",
                (*params, limit),
            ).fetchall()
            issues = [_issue_dict(conn, r) for r in rows]
        return {"project_key": project["key"], "count": len(issues), "issues": issues}

    @server.tool(annotations=READ)
    def get_issue(issue_id: IssueId) -> dict[str, Any]:
        """Read one issue in full, including its labels and every comment.

        Use list_issues or search_issues first if you do not know the id.
        """
        with db.read() as conn:
            issue = _issue(conn, issue_id)
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
            project = _open_project(conn, project_key)
            if assignee is not None:
                _user(conn, assignee)
            label_ids = [_label(conn, project["id"], name)["id"] for name in labels or []]
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
            return _issue(conn, issue_id)

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
            row = _issue_row(conn, issue_id)
            if "status" in changes and row["status"] == "closed":
                raise ToolError(f"Issue {issue_id} is closed; use reopen_issue first.")
            assignments = ", ".join(f"{k} = ?" for k in changes)
            conn.execute(
                f"UPDATE tracker_issues SET {assignments} WHERE id = ?",
                (*changes.values(), issue_id),
            )
            _touch(conn, issue_id)
            return _issue(conn, issue_id)

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
            _issue_row(conn, issue_id)
            if assignee is not None:
                _user(conn, assignee)
            conn.execute(
                "UPDATE tracker_issues SET assignee = ? WHERE id = ?", (assignee, issue_id)
            )
            _touch(conn, issue_id)
            return _issue(conn, issue_id)

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
            row = _issue_row(conn, issue_id)
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
                _comment(conn, issue_id, comment)
            return _issue(conn, issue_id)

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
            row = _issue_row(conn, issue_id)
            if row["status"] != "closed":
                raise ToolError(f"Issue {issue_id} is not closed (status {row['status']}).")
            conn.execute(
                "UPDATE tracker_issues SET status = 'open', resolution = NULL, closed_at = NULL,"
                " updated_at = ? WHERE id = ?",
                (utc_now(), issue_id),
            )
            if reason:
                _comment(conn, issue_id, reason)
            return _issue(conn, issue_id)

    # ----------------------------------------------------------------- comments

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
            _issue_row(conn, issue_id)
            comment = _comment(conn, issue_id, body)
            _touch(conn, issue_id)
            return comment

    @server.tool(annotations=READ)
    def list_comments(issue_id: IssueId) -> dict[str, Any]:
        """List an issue's comments, oldest first.

        get_issue returns the same comments together with the issue itself.
        """
        with db.read() as conn:
            _issue_row(conn, issue_id)
            rows = conn.execute(
                "SELECT id, author, body, created_at FROM tracker_comments"
                " WHERE issue_id = ? ORDER BY id",
                (issue_id,),
            ).fetchall()
        return {"issue_id": issue_id, "comments": [as_dict(r) for r in rows]}

    # ----------------------------------------------------------------- labels

    @server.tool(annotations=READ)
    def list_labels(project_key: ProjectKey) -> dict[str, Any]:
        """List a project's labels with their colours and how many issues carry each.

        Label names are what create_issue, add_label and list_issues take.
        """
        with db.read() as conn:
            project = _project(conn, project_key)
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
            project = _open_project(conn, project_key)
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
            row = _issue_row(conn, issue_id)
            label_row = _label(conn, row["project_id"], label)
            conn.execute(
                "INSERT OR IGNORE INTO tracker_issue_labels (issue_id, label_id) VALUES (?, ?)",
                (issue_id, label_row["id"]),
            )
            _touch(conn, issue_id)
            return _issue(conn, issue_id)

    @server.tool(annotations=SET)
    def remove_label(
        issue_id: IssueId,
        label: Annotated[str, Field(description="Name of a label on the issue.")],
    ) -> dict[str, Any]:
        """Remove a label from an issue (the label itself stays in the project).

        Fails if the issue does not carry that label. Returns the updated issue.
        """
        with db.write() as conn:
            row = _issue_row(conn, issue_id)
            label_row = _label(conn, row["project_id"], label)
            cur = conn.execute(
                "DELETE FROM tracker_issue_labels WHERE issue_id = ? AND label_id = ?",
                (issue_id, label_row["id"]),
            )
            if cur.rowcount == 0:
                raise ToolError(f"Issue {issue_id} does not have the label {label!r}.")
            _touch(conn, issue_id)
            return _issue(conn, issue_id)

    # ----------------------------------------------------------------- milestones

    @server.tool(annotations=READ)
    def list_milestones(project_key: ProjectKey) -> dict[str, Any]:
        """List a project's milestones with due dates and progress (closed / total issues).

        Milestone titles are what set_milestone takes.
        """
        with db.read() as conn:
            project = _project(conn, project_key)
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
        due = _check_date(due_date, "due_date") if due_date is not None else None
        with db.write() as conn:
            project = _open_project(conn, project_key)
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
            row = _issue_row(conn, issue_id)
            milestone_id = (
                _milestone(conn, row["project_id"], milestone)["id"]
                if milestone is not None
                else None
            )
            conn.execute(
                "UPDATE tracker_issues SET milestone_id = ? WHERE id = ?", (milestone_id, issue_id)
            )
            _touch(conn, issue_id)
            return _issue(conn, issue_id)

    # ----------------------------------------------------------------- reports

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
                params.append(_project(conn, project_key)["id"])
            if status != "any":
                where.append("i.status = ?")
                params.append(status)
            clause = f" WHERE {' AND '.join(where)}" if where else ""
            hits: list[tuple[int, dict[str, Any]]] = []
            for row in conn.execute(f"{_ISSUE_SELECT}{clause}", params).fetchall():
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
                    hits.append((score, _issue_dict(conn, row)))
        hits.sort(key=lambda hit: (-hit[0], hit[1]["id"]))
        results = [{**issue, "score": score} for score, issue in hits[:limit]]
        return {"query": query, "count": len(results), "issues": results}

    @server.tool(annotations=READ)
    def project_report(project_key: ProjectKey) -> dict[str, Any]:
        """Summarise a project: issues by status, priority and assignee, milestone progress.

        Also lists the five oldest issues that are not closed, to spot what is stuck.
        """
        with db.read() as conn:
            project = _project(conn, project_key)
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
                f"{_ISSUE_SELECT} WHERE i.project_id = ? AND i.status != 'closed'"
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
                "project": _project_summary(conn, project),
                "by_status": grouped("status"),
                "by_priority": grouped("priority"),
                "by_assignee": grouped("assignee"),
                "milestones": [as_dict(r) for r in milestones],
                "oldest_not_closed": [
                    {"id": r["id"], "title": r["title"], "created_at": r["created_at"]}
                    for r in oldest
                ],
            }

    # ----------------------------------------------------------------- admin

    @server.tool(annotations=DELETE)
    def delete_issue(issue_id: IssueId) -> dict[str, Any]:
        """Permanently delete an issue with its comments and labels. Cannot be undone.

        Prefer close_issue for normal work; delete only spam or test issues.
        """
        with db.write() as conn:
            row = _issue_row(conn, issue_id)
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
            project = _project(conn, project_key)
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
        before = _check_date(closed_before, "closed_before") if closed_before is not None else None
        with db.write() as conn:
            where = ["status = 'closed'"]
            params: list[Any] = []
            if project_key is not None:
                where.append("project_id = ?")
                params.append(_project(conn, project_key)["id"])
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

    return server


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: serve the tracker over stdio on the given SQLite file."""
    parser = argparse.ArgumentParser(
        prog="python -m toolgate.gateway.demo.tracker",
        description="toolgate demo backend: a project tracker MCP server over stdio.",
    )
    parser.add_argument(
        "--db",
        type=Path,
        default=default_db_path(),
        help=f"SQLite file (created and seeded if new; default {default_db_path()})",
    )
    args = parser.parse_args(argv)
    build_server(args.db).run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main()
