"""SQLite storage for the demo backends: connections, both schemas and their seed data.

Owns the file layout only; the tools live in `tracker` and `shop`. Both servers may share
one file (the gateway passes the same `{db}` to both), so their tables never overlap and
each write runs in its own `BEGIN IMMEDIATE` transaction. Stdlib only: no `mcp`/`fastmcp`.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DEFAULT_DB_FILENAME = "toolgate-demo.sqlite3"

_META_DDL = (
    "CREATE TABLE IF NOT EXISTS demo_meta ( schema TEXT PRIMARY KEY, seeded_at TEXT NOT NULL)"
)


def default_db_path() -> Path:
    """The demo database used when no `--db` is given: one file in the temp directory."""
    return Path(tempfile.gettempdir()) / DEFAULT_DB_FILENAME


def utc_now() -> str:
    """Current UTC time as an ISO-8601 string with second precision."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def as_dict(row: sqlite3.Row) -> dict[str, Any]:
    """A row as a plain JSON-able dict."""
    return {key: row[key] for key in row.keys()}  # noqa: SIM118 - sqlite3.Row is not a Mapping


@dataclass(frozen=True)
class Schema:
    """One backend's tables (in creation order) and the data it starts with."""

    name: str
    tables: tuple[tuple[str, str], ...]
    seed: Callable[[sqlite3.Connection], None]


class Database:
    """A SQLite file holding one schema; every unit of work is one short transaction.

    >>> db = Database("/tmp/demo.sqlite3", TRACKER_SCHEMA); db.initialize()
    """

    def __init__(self, path: str | Path, schema: Schema) -> None:
        self.path = Path(path)
        self.schema = schema

    def _connect(self) -> sqlite3.Connection:
        # Autocommit mode: transactions are explicit, so DDL and DML roll back together.
        conn = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    def initialize(self) -> None:
        """Create the schema if missing and seed it the first time this file sees it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self._connect()) as conn:
            # WAL lets the two demo servers read while the other writes.
            conn.execute("PRAGMA journal_mode = WAL")
        with self.write() as conn:
            conn.execute(_META_DDL)
            for _, ddl in self.schema.tables:
                conn.execute(ddl)
            seeded = conn.execute(
                "SELECT 1 FROM demo_meta WHERE schema = ?", (self.schema.name,)
            ).fetchone()
            if seeded is None:
                self._seed(conn)

    def reset(self, conn: sqlite3.Connection) -> None:
        """Drop, recreate and re-seed this schema's tables inside `conn`'s transaction."""
        for table, _ in reversed(self.schema.tables):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        for _, ddl in self.schema.tables:
            conn.execute(ddl)
        conn.execute(_META_DDL)
        conn.execute("DELETE FROM demo_meta WHERE schema = ?", (self.schema.name,))
        self._seed(conn)

    def _seed(self, conn: sqlite3.Connection) -> None:
        self.schema.seed(conn)
        conn.execute(
            "INSERT INTO demo_meta (schema, seeded_at) VALUES (?, ?)", (self.schema.name, utc_now())
        )

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: committed if the block succeeds, rolled back if it raises."""
        with closing(self._connect()) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: one consistent snapshot for the whole block."""
        with closing(self._connect()) as conn:
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("ROLLBACK")


# --------------------------------------------------------------------------- tracker

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


# --------------------------------------------------------------------------- shop

_SHOP_TABLES = (
    (
        "shop_products",
        "CREATE TABLE IF NOT EXISTS shop_products ("
        " id INTEGER PRIMARY KEY,"
        " sku TEXT NOT NULL UNIQUE,"
        " name TEXT NOT NULL,"
        " category TEXT NOT NULL,"
        " description TEXT NOT NULL,"
        " price_cents INTEGER NOT NULL CHECK (price_cents >= 0),"
        " stock INTEGER NOT NULL CHECK (stock >= 0),"
        " weight_grams INTEGER NOT NULL CHECK (weight_grams > 0))",
    ),
    (
        "shop_reviews",
        "CREATE TABLE IF NOT EXISTS shop_reviews ("
        " id INTEGER PRIMARY KEY,"
        " product_id INTEGER NOT NULL REFERENCES shop_products (id) ON DELETE CASCADE,"
        " author TEXT NOT NULL,"
        " rating INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),"
        " title TEXT NOT NULL,"
        " body TEXT NOT NULL,"
        " created_at TEXT NOT NULL)",
    ),
    (
        "shop_cart_items",
        "CREATE TABLE IF NOT EXISTS shop_cart_items ("
        " product_id INTEGER PRIMARY KEY REFERENCES shop_products (id),"
        " quantity INTEGER NOT NULL CHECK (quantity > 0),"
        " added_at TEXT NOT NULL)",
    ),
    (
        "shop_orders",
        "CREATE TABLE IF NOT EXISTS shop_orders ("
        " id INTEGER PRIMARY KEY,"
        " customer TEXT NOT NULL,"
        " status TEXT NOT NULL CHECK (status IN"
        "  ('pending_payment', 'paid', 'shipped', 'cancelled', 'refunded')),"
        " ship_to_name TEXT NOT NULL,"
        " ship_to_address TEXT NOT NULL,"
        " country TEXT NOT NULL,"
        " shipping_method TEXT NOT NULL,"
        " subtotal_cents INTEGER NOT NULL,"
        " shipping_cents INTEGER NOT NULL,"
        " total_cents INTEGER NOT NULL,"
        " payment_ref TEXT,"
        " carrier TEXT,"
        " tracking_number TEXT,"
        " created_at TEXT NOT NULL,"
        " updated_at TEXT NOT NULL)",
    ),
    (
        "shop_order_items",
        "CREATE TABLE IF NOT EXISTS shop_order_items ("
        " order_id INTEGER NOT NULL REFERENCES shop_orders (id) ON DELETE CASCADE,"
        " product_id INTEGER NOT NULL REFERENCES shop_products (id),"
        " name TEXT NOT NULL,"
        " unit_price_cents INTEGER NOT NULL,"
        " quantity INTEGER NOT NULL CHECK (quantity > 0),"
        " PRIMARY KEY (order_id, product_id))",
    ),
    (
        "shop_order_events",
        "CREATE TABLE IF NOT EXISTS shop_order_events ("
        " id INTEGER PRIMARY KEY,"
        " order_id INTEGER NOT NULL REFERENCES shop_orders (id) ON DELETE CASCADE,"
        " status TEXT NOT NULL,"
        " note TEXT NOT NULL,"
        " at TEXT NOT NULL)",
    ),
)


def _seed_shop(conn: sqlite3.Connection) -> None:
    t0 = "2026-09-01T09:00:00+00:00"
    products = [
        # id, sku, name, category, description, price_cents, stock, weight_grams
        (1, "BK-001", "The Pragmatic Gardener", "books",
         "Hands-on guide to growing vegetables on a balcony.", 2450, 12, 480),
        (2, "BK-002", "SQLite Internals", "books",
         "How a B-tree database fits in one file.", 3900, 5, 650),
        (3, "KT-001", "Cast-iron skillet 26 cm", "kitchen",
         "Pre-seasoned skillet for stove, oven and campfire.", 4500, 8, 2300),
        (4, "KT-002", "Pour-over coffee set", "kitchen",
         "Glass dripper, carafe and 100 paper filters.", 3200, 15, 900),
        (5, "KT-003", "Chef's knife 20 cm", "kitchen",
         "Stainless steel, full tang, with blade guard.", 6900, 0, 300),
        (6, "OD-001", "Ultralight tent 2P", "outdoor",
         "Two-person, three-season tent, 1.2 kg packed.", 24900, 3, 1200),
        (7, "OD-002", "Headlamp 400 lm", "outdoor",
         "USB-C rechargeable, red light mode.", 2999, 25, 90),
        (8, "OD-003", "Insulated bottle 750 ml", "outdoor",
         "Keeps drinks cold for 24 h or hot for 12 h.", 2200, 40, 380),
        (9, "EL-001", "Mechanical keyboard", "electronics",
         "Tenkeyless, hot-swappable switches, USB-C.", 8900, 7, 850),
        (10, "EL-002", "Noise-cancelling earbuds", "electronics",
         "Active noise cancelling, 24 h with case.", 12900, 10, 60),
    ]  # fmt: skip
    conn.executemany(
        "INSERT INTO shop_products"
        " (id, sku, name, category, description, price_cents, stock, weight_grams)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        products,
    )
    conn.executemany(
        "INSERT INTO shop_reviews (product_id, author, rating, title, body, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [
            (1, "sam", 5, "Finally tomatoes", "Clear, practical, no fluff.", t0),
            (1, "kim", 4, "Good start", "Wish it covered herbs more.", t0),
            (3, "lee", 5, "Lasts forever", "Heavy but perfect sear.", t0),
            (6, "ana", 4, "Light and roomy", "Condensation on cold nights.", t0),
            (7, "joe", 3, "Bright", "Strap loosens over time.", t0),
            (9, "max", 5, "Great feel", "Swapped to tactile switches in minutes.", t0),
        ],
    )
    conn.execute(
        "INSERT INTO shop_orders (id, customer, status, ship_to_name, ship_to_address, country,"
        " shipping_method, subtotal_cents, shipping_cents, total_cents, payment_ref, carrier,"
        " tracking_number, created_at, updated_at)"
        " VALUES (1, 'local', 'shipped', 'Local Demo User', '1 Demo Street, Springfield',"
        " 'US', 'standard', 5198, 0, 5198, 'pay_seed0001', 'ups', '1Z999AA10123456784', ?, ?)",
        (t0, "2026-09-02T12:00:00+00:00"),
    )
    conn.executemany(
        "INSERT INTO shop_order_items (order_id, product_id, name, unit_price_cents, quantity)"
        " VALUES (1, ?, ?, ?, ?)",
        [(7, "Headlamp 400 lm", 2999, 1), (8, "Insulated bottle 750 ml", 2200, 1)],
    )
    conn.executemany(
        "INSERT INTO shop_order_events (order_id, status, note, at) VALUES (1, ?, ?, ?)",
        [
            ("pending_payment", "Checkout started.", t0),
            ("paid", "Paid with card ending 4242.", t0),
            (
                "shipped",
                "Shipped with ups, tracking 1Z999AA10123456784.",
                "2026-09-02T12:00:00+00:00",
            ),
        ],
    )


SHOP_SCHEMA = Schema(name="shop", tables=_SHOP_TABLES, seed=_seed_shop)
