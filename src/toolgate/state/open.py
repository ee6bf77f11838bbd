"""``open_store(url)``: a concrete store from a URL (``memory://``, SQLite, Redis), and
``check_store_url(url)``: whether a URL has a store's form, judged without connecting.

The one place that knows every concrete store, so ``state.base`` stays an interface.
SQLite and Redis are imported only when their URL is asked for (``redis`` is optional).
Base layer: imports only ``toolgate.state`` modules and ``toolgate.errors``.
"""

from __future__ import annotations

import inspect
import re
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, urlparse

from toolgate.errors import ConfigError
from toolgate.state.listing import SessionListing

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")  # one letter is a drive: C:\ is a path
_MEMORY = "memory://"
_SQLITE = "sqlite:///absolute/path.db, sqlite://relative/path.db or a bare file path"
_REDIS = "redis://host[:port][/db] (rediss:// for TLS) or unix:///path/redis.sock[?db=N]"
_SENTINEL = (
    "redis+sentinel://host[:port][,host[:port]...]/service[/db][?options]"
    " (rediss+sentinel:// for TLS)"
)
_FORMS = f"{_MEMORY}, {_SQLITE}, {_REDIS}, {_SENTINEL}"
_REDIS_SCHEMES = ("redis", "rediss", "unix")
_SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
_KNOWN = ("memory", "sqlite", *_REDIS_SCHEMES, *_SENTINEL_SCHEMES)


def is_store_path(url: str) -> bool:
    """Whether ``url`` is a bare filesystem path (no ``scheme:``), i.e. a SQLite file."""
    if url in ("memory", "") or "://" in url:
        return False
    return _SCHEME.match(url) is None  # "sqlite:" is no path


def _bad(kind: str, problem: str, forms: str) -> ConfigError:
    # the URL itself is never echoed: it may hold a password
    return ConfigError(f"Bad {kind} store URL: {problem}; use {forms}", key="store")


def check_store_url(url: str) -> None:
    """Raise a ``ConfigError`` (``key="store"``) naming what is wrong with ``url``'s form:
    an unknown scheme, a SQLite URL naming no file, a Redis URL redis-py cannot parse
    (host, a numeric port and database, its known options), a Sentinel URL
    ``SentinelTarget`` refuses. Nothing connects and no file is created or read."""
    if not isinstance(url, str):
        raise ConfigError(f"A store URL is a string, got {type(url).__name__}", key="store")
    if url in ("memory://", "memory", ""):
        return
    if is_store_path(url):
        return _check_sqlite_path(url)
    found = _SCHEME.match(url)
    if found is None:
        raise ConfigError(
            f"Bad store URL: it does not open with a scheme; use {_FORMS}", key="store"
        )
    scheme = found.group(1)  # as case-sensitive as redis-py's parser
    if scheme not in _KNOWN:
        raise ConfigError(f"Unknown store URL scheme {scheme!r}; use {_FORMS}", key="store")
    if scheme == "sqlite" and url == "sqlite:":
        _check_sqlite_path("")
    if not url.startswith(f"{scheme}://"):
        raise ConfigError(
            f"Bad store URL: {scheme!r} must be followed by '://'; use {_FORMS}", key="store"
        )
    rest = url[len(scheme) + 3 :]
    if scheme == "memory":
        if rest:
            raise _bad("memory", "memory:// takes nothing after it", _MEMORY)
    elif scheme == "sqlite":
        _check_sqlite_path(rest)
    elif scheme in _REDIS_SCHEMES:
        _check_redis(url, scheme)
    else:
        _check_sentinel(url)


def _check_sqlite_path(path: str) -> None:
    if not path.strip():
        raise _bad("SQLite", "it names no database file", _SQLITE)
    if path.endswith(("/", "\\")):
        raise _bad("SQLite", "its path ends with a separator, so it names a folder", _SQLITE)


def _redis_package(kind: str, forms: str) -> ModuleType:
    try:
        import redis.asyncio.connection as connection
    except ImportError:
        raise _bad(
            kind, "the redis package is not installed (pip install 'toolgate[redis]')", forms
        ) from None
    return connection


def _check_redis(url: str, scheme: str) -> None:
    """redis-py's own URL parser (the one ``RedisStore`` opens with) and what it leaves
    to the first connection: a host or socket path, the database a number, known options."""
    connection = _redis_package("Redis", _REDIS)
    try:
        options = connection.parse_url(url)
    except ValueError as exc:
        raise _bad("Redis", str(exc).rstrip("."), _REDIS) from None
    if scheme == "unix":
        if not options.get("path"):
            raise _bad("Redis", "unix:// names no socket path", _REDIS)
    else:
        if not options.get("host"):
            raise _bad("Redis", "it names no host", _REDIS)
        # redis-py ignores a database it cannot read as a number: the server's 0 is used
        path = urlparse(url).path.removeprefix("/")
        if path and not path.isdigit():
            raise _bad("Redis", f"the database must be a number, got {path!r}", _REDIS)
    # an option neither the parser nor a constructor takes fails the first connection
    given = {name for name, _ in parse_qsl(urlparse(url).query)}
    unknown = sorted(given - _redis_options(connection, options))
    if unknown:
        raise _bad("Redis", f"unknown option {unknown[0]!r}", _REDIS)


def _redis_options(connection: ModuleType, options: dict[str, Any]) -> set[str]:
    """The URL options redis-py takes: those its parser reads, and the parameters of
    the pool and of the connection class (never a class itself: a URL gives strings)."""
    cls = options.get("connection_class")  # rediss:// and unix:// set their own
    cls = cls if isinstance(cls, type) else connection.Connection
    known = set(connection.URL_QUERY_ARGUMENT_PARSERS)
    for owner in (connection.BlockingConnectionPool, *cls.__mro__):
        if "__init__" in vars(owner):
            params = inspect.signature(owner.__init__).parameters.values()
            known |= {p.name for p in params if p.kind is not p.VAR_KEYWORD}
    return known - {"self", "connection_class", "queue_class"}


def _check_sentinel(url: str) -> None:
    _redis_package("Redis Sentinel", _SENTINEL)
    from toolgate.state.redis import SentinelTarget

    try:
        SentinelTarget.of(url)
    except ValueError as exc:
        raise _bad("Redis Sentinel", str(exc), _SENTINEL) from None


def _sqlite_path(url: str) -> str | None:
    """The file a SQLite URL names (``sqlite:///abs/path`` -> ``/abs/path``,
    ``sqlite://rel/path`` -> ``rel/path``, a bare path as is); None for other stores."""
    if url.startswith("sqlite://") or is_store_path(url):
        return url.removeprefix("sqlite://")
    return None


def store_problem(url: str) -> str | None:
    """Why the store at ``url`` (a form ``check_store_url`` accepts) cannot be opened,
    judged without opening it: a SQLite file that is a folder or no database
    (``sqlite_file_problem``). Other stores are judged when they connect."""
    path = _sqlite_path(url)
    if path is None:
        return None
    from toolgate.state.sqlite import sqlite_file_problem

    return sqlite_file_problem(path)


def open_store(url: str, *, idle_ttl: float = 3600.0, **options: Any) -> SessionListing:
    """A store from a URL: ``memory://``, ``sqlite:///path``, ``redis://host:port/db``,
    ``redis+sentinel://host:26379,host2:26379/service/db`` (``SentinelTarget``);
    a bare filesystem path (no scheme) is a SQLite file, the embedded store. A URL
    ``check_store_url`` refuses is a ``ConfigError`` in its words."""
    check_store_url(url)
    if url in ("memory://", "memory", ""):
        from toolgate.state.memory import MemoryStore

        return MemoryStore(idle_ttl=idle_ttl, **options)
    path = _sqlite_path(url)
    if path is not None:
        from toolgate.state.sqlite import SqliteStore

        return SqliteStore(path=path, idle_ttl=idle_ttl, **options)
    from toolgate.state.redis import RedisStore  # redis, rediss, unix and the Sentinel ones

    return RedisStore(url=url, idle_ttl=idle_ttl, **options)
