"""``open_store(url)``: a concrete store from a URL (``memory://``, SQLite, Redis).

The one place that knows every concrete store, so ``state.base`` stays an interface.
SQLite and Redis are imported only when their URL is asked for (``redis`` is optional).
Base layer: imports only ``toolgate.state`` modules and ``toolgate.errors``.
"""

from __future__ import annotations

import re
from typing import Any

from toolgate.errors import ConfigError
from toolgate.state.listing import SessionListing


def is_store_path(url: str) -> bool:
    """Whether ``url`` is a bare filesystem path (no ``scheme:``), i.e. a SQLite file."""
    if url in ("memory", "") or "://" in url:
        return False
    return re.match(r"[A-Za-z][A-Za-z0-9+.-]+:", url) is None  # "sqlite:" is no path


def open_store(url: str, *, idle_ttl: float = 3600.0, **options: Any) -> SessionListing:
    """A store from a URL: ``memory://``, ``sqlite:///path``, ``redis://host:port/db``,
    ``redis+sentinel://host:26379,host2:26379/service/db`` (``SentinelTarget``);
    a bare filesystem path (no scheme) is a SQLite file, the embedded store."""
    if url in ("memory://", "memory", ""):
        from toolgate.state.memory import MemoryStore

        return MemoryStore(idle_ttl=idle_ttl, **options)
    if url.startswith("sqlite://") or is_store_path(url):
        from toolgate.state.sqlite import SqliteStore

        # sqlite:///abs/path -> /abs/path ; sqlite://rel/path -> rel/path ; a bare path as is
        return SqliteStore(path=url.removeprefix("sqlite://"), idle_ttl=idle_ttl, **options)
    if url.startswith(("redis://", "rediss://", "unix://")):
        from toolgate.state.redis import RedisStore

        return RedisStore(url=url, idle_ttl=idle_ttl, **options)
    if url.startswith(("redis+sentinel://", "rediss+sentinel://")):
        from toolgate.state.redis import RedisStore

        try:
            return RedisStore(url=url, idle_ttl=idle_ttl, **options)
        except ValueError as exc:
            raise ConfigError(f"Bad Redis Sentinel store URL: {exc}", key="store") from None
    raise ConfigError(
        f"Unknown store URL {url!r}: use memory://, sqlite:///path (or a bare file path), "
        "redis://host:port/db or redis+sentinel://host:26379,.../service/db",
        key="store",
    )
