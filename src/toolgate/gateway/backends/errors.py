"""How a request to a backend fails, sorted once for calls and relayed requests alike,
and why a connection failed, in one line. The bottom of the backends: imports ``mcp``'s
error type, nothing of the gateway.
"""

from __future__ import annotations

from mcp.shared.exceptions import MCPError

CONNECTION_CLOSED = -32000  # the SDK's code for a connection that went away


class ConnectionLost(Exception):
    """The backend's transport closed or stopped answering."""


class SessionEnded(Exception):
    """The backend no longer knows the gateway's session (a call found it gone): nothing
    ran; the backend is reconnected."""


class BackendDown(Exception):
    """A request found the backend down, or its connection closed under it."""


class BackendTimeout(Exception):
    """A request got no answer within the backend's timeout (it was cancelled)."""


class BackendFailed(Exception):
    """A request failed in transport, or the SDK rejected what the backend answered."""


def reason(exc: BaseException) -> str:
    """A one-line reason, unwrapping exception groups from task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, ConnectionLost):
        return str(exc) or "connection lost"
    if isinstance(exc, MCPError):
        return f"MCP error {exc.error.code}: {exc.error.message}"
    if isinstance(exc, TimeoutError):
        return "timed out while starting (no answer to initialize/tools/list)"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, OSError) else text


__all__ = [
    "CONNECTION_CLOSED",
    "BackendDown",
    "BackendFailed",
    "BackendTimeout",
    "ConnectionLost",
    "SessionEnded",
    "reason",
]
