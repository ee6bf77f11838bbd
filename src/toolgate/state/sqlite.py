"""``SqliteStore``: session state in one SQLite file that survives restarts.

Owns the file's schema (``sessions`` and ``rate_hits``), WAL mode and the single-statement
compare-and-set that keeps several processes on one file safe. Base layer: imports only
``state.base``, ``state.listing``, the stdlib and ``sqlite3``; never ``mcp`` or ``fastmcp``.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from toolgate.errors import ConfigError, StoreUnavailable
from toolgate.state.base import SessionState
from toolgate.state.listing import SessionInfo, SessionListing

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    key        TEXT PRIMARY KEY,
    version    INTEGER NOT NULL,
    touched_at REAL NOT NULL,
    state      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_touched_at ON sessions (touched_at);
CREATE TABLE IF NOT EXISTS rate_hits (
    id     INTEGER PRIMARY KEY,
    bucket TEXT NOT NULL,
    at     REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS rate_hits_bucket_at ON rate_hits (bucket, at);
CREATE TABLE IF NOT EXISTS session_infos (
    key        TEXT PRIMARY KEY,
    touched_at REAL NOT NULL,
    info       TEXT NOT NULL
);
"""

# the first 16 bytes of every SQLite database file
_HEADER = b"SQLite format 3\x00"


def sqlite_file_problem(path: str) -> str | None:
    """Why the file at ``path`` cannot hold a ``SqliteStore``: a folder, or a file that is
    not a SQLite database (a missing or empty one will do: the store makes it one).
    Reads at most the file's first 16 bytes and writes nothing, so a file named by
    mistake is left as it was."""
    if path == ":memory:" or path.startswith("file:"):
        return None
    try:
        if Path(path).is_dir():
            return f"{path} is a folder, not a SQLite database"
        with open(path, "rb") as f:
            head = f.read(len(_HEADER))
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path} cannot be opened: {exc.strerror}"
    return f"{path} is not a SQLite database" if head and head != _HEADER else None


# A row is idle-expired when ``now - touched_at > idle_ttl`` (the MemoryStore rule);
# every statement below spells that comparison the same way, with (now, idle_ttl) bound.
_LIVE = "(? - touched_at) <= ?"

# Rate-limit entries older than this are garbage whatever the window (as in MemoryStore).
_RATE_LOG_HORIZON_S = 86400.0


@dataclass
class SqliteStore(SessionListing):
    """Session state in a SQLite file; several processes may share the file.

    ``path`` is the database file (its directory is created); ``busy_timeout`` is how
    long a statement waits for another process's write lock, in seconds.
    Example: ``SqliteStore(path="/var/lib/toolgate/state.db", idle_ttl=1800)``.
    """

    path: str = field(kw_only=True)
    busy_timeout: float = 5.0
    sweep_every: int = 1024
    _conn: sqlite3.Connection = field(init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _writes: int = field(default=0, init=False, repr=False)
    _identity: tuple[int, int] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        problem = sqlite_file_problem(self.path)
        if problem is not None:  # judged before SQLite touches the file
            raise ConfigError(problem, key="store")
        try:
            self._open()
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"{self.path} cannot be opened: {exc}", key="store") from None

    def _open(self) -> None:
        if self.path != ":memory:" and not self.path.startswith("file:"):
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        # Autocommit mode: each write below is one statement (atomic on its own) or an
        # explicit BEGIN IMMEDIATE block, so no implicit transaction is ever left open.
        self._conn = sqlite3.connect(
            self.path,
            timeout=self.busy_timeout,
            isolation_level=None,
            check_same_thread=False,
            uri=self.path.startswith("file:"),
        )
        self._conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = NORMAL")
        self._conn.executescript(_SCHEMA)
        if self.path != ":memory:" and not self.path.startswith("file:"):
            found = os.stat(self.path)
            self._identity = (found.st_dev, found.st_ino)

    def _check_file(self) -> None:
        """Fail closed when the file was deleted or replaced under the open connection:
        SQLite would go on writing to the unlinked inode, lost at the next start."""
        if self._identity is None:
            return
        try:
            found = os.stat(self.path)
        except FileNotFoundError:
            found = None
        if found is None or (found.st_dev, found.st_ino) != self._identity:
            raise StoreUnavailable(
                f"Session store unavailable: the SQLite file {self.path} was deleted or "
                "replaced while in use; restart toolgate to open it again"
            )

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` on the store's connection in a worker thread, one at a time."""

        def locked() -> T:
            with self._lock:
                self._check_file()
                return work(self._conn)

        return await asyncio.to_thread(locked)

    # -- primitives -------------------------------------------------------------------
    async def get(self, key: str) -> SessionState | None:
        now, ttl = self.clock(), self.idle_ttl

        def read(conn: sqlite3.Connection) -> SessionState | None:
            row = conn.execute(
                f"SELECT state FROM sessions WHERE key = ? AND {_LIVE}", (key, now, ttl)
            ).fetchone()
            return SessionState.from_json(row[0]) if row is not None else None

        return await self._run(read)

    async def compare_and_set(self, key: str, expected_version: int, state: SessionState) -> bool:
        now, ttl = self.clock(), self.idle_ttl
        text = state.to_json()

        def write(conn: sqlite3.Connection) -> bool:
            if expected_version == 0:
                # Absent, or present but idle-expired (which reads as absent).
                cursor = conn.execute(
                    "INSERT INTO sessions (key, version, touched_at, state) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET version = excluded.version, "
                    "touched_at = excluded.touched_at, state = excluded.state "
                    f"WHERE NOT {_LIVE}",
                    (key, state.version, state.touched_at, text, now, ttl),
                )
            else:
                cursor = conn.execute(
                    "UPDATE sessions SET version = ?, touched_at = ?, state = ? "
                    f"WHERE key = ? AND version = ? AND {_LIVE}",
                    (state.version, state.touched_at, text, key, expected_version, now, ttl),
                )
            return cursor.rowcount == 1

        ok = await self._run(write)
        if ok:
            self._writes += 1
            if self._writes % self.sweep_every == 0:
                await self.sweep()
        return ok

    async def delete(self, key: str) -> None:
        def remove(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM sessions WHERE key = ?", (key,))
            conn.execute("DELETE FROM session_infos WHERE key = ?", (key,))

        await self._run(remove)

    async def rate_hit(self, bucket: str, limit: int, window_s: float) -> float | None:
        now = self.clock()

        def hit(conn: sqlite3.Connection) -> float | None:
            # IMMEDIATE takes the write lock up front: count-then-insert cannot interleave
            # with another process doing the same.
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    "DELETE FROM rate_hits WHERE bucket = ? AND at <= ?", (bucket, now - window_s)
                )
                count, oldest = conn.execute(
                    "SELECT COUNT(*), MIN(at) FROM rate_hits WHERE bucket = ?", (bucket,)
                ).fetchone()
                if count >= limit:
                    retry_after: float | None = float(oldest) + window_s - now
                else:
                    conn.execute("INSERT INTO rate_hits (bucket, at) VALUES (?, ?)", (bucket, now))
                    retry_after = None
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return retry_after

        return await self._run(hit)

    async def rate_peek(self, bucket: str, limit: int, window_s: float) -> float | None:
        now = self.clock()

        def peek(conn: sqlite3.Connection) -> float | None:
            # one statement reads one snapshot; the entries rate_hit would delete are not
            # counted, and nothing is written
            count, oldest = conn.execute(
                "SELECT COUNT(*), MIN(at) FROM rate_hits WHERE bucket = ? AND at > ?",
                (bucket, now - window_s),
            ).fetchone()
            return float(oldest) + window_s - now if count >= limit else None

        return await self._run(peek)

    async def sweep(self) -> int:
        now, ttl = self.clock(), self.idle_ttl

        def clean(conn: sqlite3.Connection) -> int:
            removed = conn.execute(f"DELETE FROM sessions WHERE NOT {_LIVE}", (now, ttl)).rowcount
            conn.execute("DELETE FROM rate_hits WHERE at < ?", (now - _RATE_LOG_HORIZON_S,))
            conn.execute(f"DELETE FROM session_infos WHERE NOT {_LIVE}", (now, ttl))
            return removed

        return await self._run(clean)

    async def session_count(self) -> int:
        """Rows in the file, idle ones included until :meth:`sweep` removes them."""

        def count(conn: sqlite3.Connection) -> int:
            return int(conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0])

        return await self._run(count)

    async def sessions(self) -> AsyncIterator[tuple[str, SessionState]]:
        now, ttl = self.clock(), self.idle_ttl

        def read(conn: sqlite3.Connection) -> list[tuple[str, str]]:
            query = f"SELECT key, state FROM sessions WHERE {_LIVE}"
            return [(str(k), str(v)) for k, v in conn.execute(query, (now, ttl))]

        for key, text in await self._run(read):
            yield key, SessionState.from_json(text)

    async def put_info(self, info: SessionInfo) -> None:
        text = info.to_json()
        await self._run(
            lambda conn: conn.execute(
                "INSERT INTO session_infos (key, touched_at, info) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET touched_at = excluded.touched_at, "
                "info = excluded.info",
                (info.key, info.last_seen, text),
            )
        )

    async def infos(self) -> AsyncIterator[SessionInfo]:
        now, ttl = self.clock(), self.idle_ttl

        def read(conn: sqlite3.Connection) -> list[str]:
            query = f"SELECT info FROM session_infos WHERE {_LIVE}"
            return [str(row[0]) for row in conn.execute(query, (now, ttl))]

        for text in await self._run(read):
            yield SessionInfo.from_json(text)

    async def close(self) -> None:
        def shut() -> None:  # no file check: a deleted file's connection still closes
            with self._lock:
                self._conn.close()

        await asyncio.to_thread(shut)
