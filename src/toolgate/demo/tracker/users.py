"""Tracker tools for users: who you are, who else there is, adding someone.

Imports ``demo.backend``, ``demo.db`` and ``demo.tracker.model``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field

from toolgate.demo.backend import ADD, READ
from toolgate.demo.db import Database, as_dict, utc_now
from toolgate.demo.tracker.model import CURRENT_USER, user_row


def register(server: FastMCP, db: Database) -> None:
    """Add these tools to ``server``, working on ``db``."""

    @server.tool(annotations=READ)
    def whoami() -> dict[str, Any]:
        """Show who you are acting as in the tracker and what is waiting for you.

        Returns the demo user's login, name and role, the number of open issues assigned to
        them, and the database file this server uses. Takes no arguments.
        """
        with db.read() as conn:
            user = as_dict(user_row(conn, CURRENT_USER))
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
            return as_dict(user_row(conn, login))
