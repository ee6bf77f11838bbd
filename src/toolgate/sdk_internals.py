"""The MCP SDK's private names that toolgate reads, in one place and nowhere else.

Everything toolgate takes from the SDK beyond its public API goes through this module:
a connection behind a request context, the streamable-HTTP session manager's sessions
and owners, a transport's idle countdown, and the pieces of the SDK's 2026-07-28 entry
that the gateway's fast path runs (``toolgate.gateway.ingress.fast_path``). ``MISSING``
names what this installed SDK lacks; ``tests/test_sdk_internals.py`` fails on it, naming
the SDK's version, and the fast path switches itself off rather than break. Adapter
layer: imports ``mcp`` only.
"""

from __future__ import annotations

import contextlib
import importlib
import math
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio
from mcp import ClientSession
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

#: (module, name) of each private module-level name the fast path runs: its 2026-07-28
#: envelope checks and single-exchange dispatch, and the SSE framing of the SDK's transport
FAST_PATH_NAMES: tuple[tuple[str, str], ...] = (
    ("mcp.server._streamable_http_modern", "_SSE_HEADERS"),
    ("mcp.server._streamable_http_modern", "_SSE_PING_INTERVAL"),
    ("mcp.server._streamable_http_modern", "_mcp_param_rejection"),
    ("mcp.server._streamable_http_modern", "_SingleExchangeDispatchContext"),
    ("mcp.server.runner", "_has_modern_envelope"),
)
#: (class, attribute) of each private attribute read below, checked on the classes
#: (instance attributes are checked by the tests on live objects)
PRIVATE_ATTRIBUTES: tuple[tuple[type[Any], str], ...] = (
    (ClientSession, "_on_notify"),
    (ClientSession, "_on_request"),
)


def _load(module: str, name: str) -> Any:
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


_loaded = {name: _load(module, name) for module, name in FAST_PATH_NAMES}
#: the fast path's module-level names this SDK lacks, as ``module.name``
FAST_PATH_MISSING: tuple[str, ...] = tuple(
    f"{module}.{name}" for module, name in FAST_PATH_NAMES if _loaded[name] is None
)
#: the session manager's private attributes the fast path reads (instance attributes)
MANAGER_ATTRIBUTES = ("_server_instances", "_session_owners", "_lifespan_state")
#: what this SDK lacks of the names above and of ``PRIVATE_ATTRIBUTES``
MISSING: tuple[str, ...] = FAST_PATH_MISSING + tuple(
    f"{cls.__name__}.{attr}" for cls, attr in PRIVATE_ATTRIBUTES if not hasattr(cls, attr)
)

SSE_HEADERS: list[tuple[bytes, bytes]] = _loaded["_SSE_HEADERS"] or []
SSE_PING_INTERVAL: float = _loaded["_SSE_PING_INTERVAL"] or 15.0
mcp_param_rejection: Any = _loaded["_mcp_param_rejection"]
SingleExchangeDispatchContext: Any = _loaded["_SingleExchangeDispatchContext"]
has_modern_envelope: Any = _loaded["_has_modern_envelope"]


def fast_path_missing(manager: StreamableHTTPSessionManager) -> tuple[str, ...]:
    """What the fast path in front of ``manager`` would read and this SDK lacks: its
    module-level names, then the manager's private attributes; empty when all is there."""
    lacking = tuple(
        f"StreamableHTTPSessionManager.{attr}"
        for attr in MANAGER_ATTRIBUTES
        if not hasattr(manager, attr)
    )
    return FAST_PATH_MISSING + lacking


# -- requests and connections -------------------------------------------------------------


def connection_of(ctx: ServerRequestContext[Any, Any]) -> Connection:
    """The connection a request came on (its session id, negotiated version, state)."""
    connection: Connection = ctx.session._connection
    return connection


def connection_if_any(ctx: ServerRequestContext[Any, Any]) -> Connection | None:
    """The connection a request came on, or ``None`` for a session that has none (a
    FastMCP or test double session)."""
    connection: Connection | None = getattr(ctx.session, "_connection", None)
    return connection


def has_exit_callbacks(connection: Connection) -> bool:
    """Whether anything was put on the connection's exit stack (the SDK closes it then)."""
    return bool(connection.exit_stack._exit_callbacks)  # type: ignore[attr-defined]


# -- the streamable-HTTP session manager ----------------------------------------------------


def live_transports(manager: StreamableHTTPSessionManager) -> Mapping[str, Any]:
    """The manager's open legacy sessions: session id → its transport."""
    transports: Mapping[str, Any] = manager._server_instances
    return transports


def session_owner(manager: StreamableHTTPSessionManager, key: str) -> Any:
    """Who opened session ``key`` (the SDK's authorization context), if anyone."""
    return manager._session_owners.get(key)


def lifespan_state(manager: StreamableHTTPSessionManager) -> Any:
    """The server's lifespan state, as the manager hands it to each request."""
    return manager._lifespan_state


def session_manager(server: Any) -> StreamableHTTPSessionManager | None:
    """The session manager of a low-level ``Server`` whose HTTP app was built, if any."""
    manager: StreamableHTTPSessionManager | None = getattr(server, "_session_manager", None)
    return manager


@contextlib.asynccontextmanager
async def holding(transport: StreamableHTTPServerTransport) -> AsyncIterator[None]:
    """A request in flight holds its session, as the SDK's transport counts one: the
    idle countdown stops while any is served and restarts when the last completes."""
    scope, idle = transport.idle_scope, transport._idle_timeout
    if scope is None or idle is None:
        yield
        return
    transport._requests_in_flight += 1
    scope.deadline = math.inf
    try:
        yield
    finally:
        transport._requests_in_flight -= 1
        if not transport._requests_in_flight:
            scope.deadline = anyio.current_time() + idle


# -- the client session ----------------------------------------------------------------------


async def client_notified(
    session: ClientSession, dctx: Any, method: str, params: Mapping[str, Any] | None
) -> None:
    """Hand a notification a backend sent to ``session``'s own notification handling."""
    await session._on_notify(dctx, method, params)


async def client_asked(
    session: ClientSession, dctx: Any, method: str, params: Mapping[str, Any] | None
) -> Any:
    """Hand a request a backend sent to ``session``'s own request handling; its answer."""
    return await session._on_request(dctx, method, params)


def client_extensions(session: Any) -> Mapping[str, Any] | None:
    """The extensions a client session declared, where this SDK keeps them; ``None``
    when it does not (the caller then asks the server)."""
    declared = getattr(session, "_extensions", None)
    return declared if isinstance(declared, Mapping) else None


# -- the high-level server ---------------------------------------------------------------------


def lowlevel_of(mcp_server: Any) -> Any:
    """The low-level ``Server`` inside an ``MCPServer``; a low-level ``Server`` itself."""
    return getattr(mcp_server, "_lowlevel_server", mcp_server)


def registered_tools(mcp_server: Any) -> list[Any]:
    """An ``MCPServer``'s own registered tools."""
    tools: list[Any] = mcp_server._tool_manager.list_tools()
    return tools


def watch_tools(mcp_server: Any, changed: Callable[[], None]) -> None:
    """Call ``changed`` after every tool an ``MCPServer`` adds or removes (``@tool()``,
    ``add_tool``, ``remove_tool``): the SDK has no public hook for it, so its tool
    manager's two methods are wrapped on that one server."""
    manager = mcp_server._tool_manager
    for method in ("add_tool", "remove_tool"):
        original = getattr(manager, method)

        def watched(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            result = _original(*args, **kwargs)
            changed()
            return result

        setattr(manager, method, watched)


__all__ = [
    "FAST_PATH_MISSING",
    "FAST_PATH_NAMES",
    "MISSING",
    "SSE_HEADERS",
    "SSE_PING_INTERVAL",
    "SingleExchangeDispatchContext",
    "client_asked",
    "client_extensions",
    "client_notified",
    "connection_if_any",
    "connection_of",
    "fast_path_missing",
    "has_exit_callbacks",
    "has_modern_envelope",
    "holding",
    "lifespan_state",
    "live_transports",
    "lowlevel_of",
    "mcp_param_rejection",
    "registered_tools",
    "session_manager",
    "session_owner",
    "watch_tools",
]
