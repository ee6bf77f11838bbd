"""SQLite storage for the demo backends: the file, its transactions, which schema is seeded.

Each backend's tables and seed data are its `schema` module (`tracker.schema`,
`shop.schema`). Both servers may share one file (the gateway passes the same `{db}` to
both), so their tables never overlap and each write runs in its own `BEGIN IMMEDIATE`
transaction. Stdlib only: no `mcp`/`fastmcp`.
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
