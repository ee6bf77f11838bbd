"""The tracker's tables and seed data (projects WEB and API, issues, users, ...).

Storage only; the file and its transactions are ``demo.db``'s. Stdlib only.
"""

from __future__ import annotations

import sqlite3

from toolgate.demo.db import Schema

_TRACKER_TABLES = (
    (
        "tracker_users",
        "CREATE TABLE IF NOT EXISTS tracker_users ("
        " login TEXT PRIMARY KEY,"
        " name TEXT NOT NULL,"
        " email TEXT NOT NULL,"
        " role TEXT NOT NULL CHECK (role IN ('admin', 'member', 'viewer')),"
        " created_at TEXT NOT NULL)",
    ),
    (
        "tracker_projects",
        "CREATE TABLE IF NOT EXISTS tracker_projects ("
        " id INTEGER PRIMARY KEY,"
        " key TEXT NOT NULL UNIQUE,"
        " name TEXT NOT NULL,"
        " description TEXT NOT NULL DEFAULT '',"
        " owner TEXT NOT NULL REFERENCES tracker_users (login),"
        " archived INTEGER NOT NULL DEFAULT 0,"
        " created_at TEXT NOT NULL)",
    ),
    (
        "tracker_milestones",
        "CREATE TABLE IF NOT EXISTS tracker_milestones ("
        " id INTEGER PRIMARY KEY,"
        " project_id INTEGER NOT NULL REFERENCES tracker_projects (id) ON DELETE CASCADE,"
        " title TEXT NOT NULL,"
        " due_date TEXT,"
        " created_at TEXT NOT NULL,"
        " UNIQUE (project_id, title))",
    ),
    (
        "tracker_issues",
        "CREATE TABLE IF NOT EXISTS tracker_issues ("
        " id INTEGER PRIMARY KEY,"
        " project_id INTEGER NOT NULL REFERENCES tracker_projects (id) ON DELETE CASCADE,"
        " title TEXT NOT NULL,"
        " body TEXT NOT NULL DEFAULT '',"
        " status TEXT NOT NULL CHECK (status IN ('open', 'in_progress', 'closed')),"
        " priority TEXT NOT NULL CHECK (priority IN ('low', 'normal', 'high', 'urgent')),"
        " resolution TEXT,"
        " reporter TEXT NOT NULL REFERENCES tracker_users (login),"
        " assignee TEXT REFERENCES tracker_users (login),"
        " milestone_id INTEGER REFERENCES tracker_milestones (id) ON DELETE SET NULL,"
        " created_at TEXT NOT NULL,"
        " updated_at TEXT NOT NULL,"
        " closed_at TEXT)",
    ),
    (
        "tracker_comments",
        "CREATE TABLE IF NOT EXISTS tracker_comments ("
        " id INTEGER PRIMARY KEY,"
        " issue_id INTEGER NOT NULL REFERENCES tracker_issues (id) ON DELETE CASCADE,"
        " author TEXT NOT NULL REFERENCES tracker_users (login),"
        " body TEXT NOT NULL,"
        " created_at TEXT NOT NULL)",
    ),
    (
        "tracker_labels",
        "CREATE TABLE IF NOT EXISTS tracker_labels ("
        " id INTEGER PRIMARY KEY,"
        " project_id INTEGER NOT NULL REFERENCES tracker_projects (id) ON DELETE CASCADE,"
        " name TEXT NOT NULL,"
        " color TEXT NOT NULL,"
        " UNIQUE (project_id, name))",
    ),
    (
        "tracker_issue_labels",
        "CREATE TABLE IF NOT EXISTS tracker_issue_labels ("
        " issue_id INTEGER NOT NULL REFERENCES tracker_issues (id) ON DELETE CASCADE,"
        " label_id INTEGER NOT NULL REFERENCES tracker_labels (id) ON DELETE CASCADE,"
        " PRIMARY KEY (issue_id, label_id))",
    ),
)


def _seed_tracker(conn: sqlite3.Connection) -> None:
    t0 = "2026-09-01T09:00:00+00:00"
    conn.executemany(
        "INSERT INTO tracker_users (login, name, email, role, created_at) VALUES (?, ?, ?, ?, ?)",
        [
            ("local", "Local Demo User", "local@example.com", "admin", t0),
            ("ada", "Ada Lovelace", "ada@example.com", "member", t0),
            ("grace", "Grace Hopper", "grace@example.com", "member", t0),
            ("linus", "Linus Pauling", "linus@example.com", "viewer", t0),
        ],
    )
    conn.executemany(
        "INSERT INTO tracker_projects (id, key, name, description, owner, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [
            (1, "WEB", "Website relaunch", "New marketing site and docs portal.", "local", t0),
            (2, "API", "Public API v2", "Versioned REST API with OAuth.", "ada", t0),
        ],
    )
    conn.executemany(
        "INSERT INTO tracker_milestones (id, project_id, title, due_date, created_at)"
        " VALUES (?, ?, ?, ?, ?)",
        [
            (1, 1, "Beta", "2026-12-15", t0),
            (2, 1, "Launch", "2027-02-01", t0),
            (3, 2, "v2.0", "2027-03-31", t0),
        ],
    )
    labels = [("bug", "#d73a4a"), ("feature", "#a2eeef"), ("docs", "#0075ca")]
    conn.executemany(
        "INSERT INTO tracker_labels (project_id, name, color) VALUES (?, ?, ?)",
        [(project, name, color) for project in (1, 2) for name, color in labels],
    )
    issues = [
        # id, project, title, body, status, priority, resolution, reporter, assignee, ms, closed
        (1, 1, "Hero image is blurry on retina screens", "Serve 2x assets.", "open", "high",
         None, "grace", "ada", 1, None),
        (2, 1, "Add dark mode", "Follow the OS preference.", "in_progress", "normal",
         None, "local", "grace", 2, None),
        (3, 1, "Broken link to pricing page", "Footer link 404s.", "closed", "urgent",
         "fixed", "ada", "ada", 1, "2026-09-03T15:00:00+00:00"),
        (4, 2, "Rate limit headers missing", "Return X-RateLimit-* on every response.", "open",
         "high", None, "ada", None, 3, None),
        (5, 2, "Document OAuth scopes", "List every scope with an example.", "open", "low",
         None, "grace", "local", 3, None),
        (6, 2, "Remove v1 XML endpoints", "Deprecated since 2024.", "closed", "normal",
         "wontfix", "local", None, None, "2026-09-05T10:00:00+00:00"),
    ]  # fmt: skip
    conn.executemany(
        "INSERT INTO tracker_issues (id, project_id, title, body, status, priority, resolution,"
        " reporter, assignee, milestone_id, created_at, updated_at, closed_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(*issue[:10], t0, issue[10] or t0, issue[10]) for issue in issues],
    )
    # label ids: project 1 -> 1 bug, 2 feature, 3 docs; project 2 -> 4 bug, 5 feature, 6 docs
    conn.executemany(
        "INSERT INTO tracker_issue_labels (issue_id, label_id) VALUES (?, ?)",
        [(1, 1), (2, 2), (3, 1), (4, 4), (5, 6), (6, 5)],
    )
    conn.executemany(
        "INSERT INTO tracker_comments (issue_id, author, body, created_at) VALUES (?, ?, ?, ?)",
        [
            (1, "ada", "Reproduced on a MacBook; the source image is 1x.", t0),
            (2, "grace", "Draft palette is in the design file.", t0),
            (3, "ada", "Fixed in the footer template.", "2026-09-03T15:00:00+00:00"),
            (4, "local", "Needed before the v2.0 milestone.", t0),
        ],
    )


TRACKER_SCHEMA = Schema(name="tracker", tables=_TRACKER_TABLES, seed=_seed_tracker)
