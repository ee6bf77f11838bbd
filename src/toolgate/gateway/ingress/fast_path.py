"""The fast path: ``tools/call`` over streamable HTTP served without the SDK's
per-session transport and JSON-RPC dispatcher (memory streams, a task group and two
pydantic passes per message) but by the same kernel, so a call here is the call the SDK
path makes: on a legacy session (``session_calls``) or on the 2026-07-28 era
(``stateless_calls``). ``FastPath`` takes the body the guard read and hands anything else, or
anything it cannot vouch for, to the SDK untouched. Ingress layer: imports ``mcp``.
"""

from __future__ import annotations

from typing import Any

import pydantic_core
from mcp.server.context import CallNext, HandlerResult
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Receive, Scope, Send

from toolgate.gateway.ingress.guard import BODY
from toolgate.gateway.ingress.session_calls import FastPathSession, SessionCalls
from toolgate.gateway.ingress.stateless_calls import StatelessCalls
from toolgate.request import Context


class FastPath:
    """ASGI in front of the SDK's session manager: serves ``LANE_METHODS`` calls of the
    legacy sessions it knows and of the 2026-07-28 era, and the client's answers to and
    cancellations of what it serves; passes everything else on as it came."""

    def __init__(self, app: ASGIApp, manager: StreamableHTTPSessionManager, server: Server[Any]):
        self.app = app
        self.in_session = SessionCalls(server, manager)
        self.stateless = StatelessCalls(server, manager)

    @property
    def sessions(self) -> dict[str, FastPathSession]:
        return self.in_session.sessions

    @property
    def served(self) -> int:
        """Calls the fast path served, so far."""
        return self.in_session.served + self.stateless.served

    async def learn(self, ctx: Context, call_next: CallNext) -> HandlerResult:
        """``ServerMiddleware``: meet each legacy session on the SDK path."""
        return await self.in_session.learn(ctx, call_next)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not await self._took(scope, receive, send):
            await self.app(scope, receive, send)  # the SDK answers, as it always did

    async def _took(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """Whether this request was the fast path's to serve, and it served it: a POST of
        one JSON message whose body the guard read (``BODY``)."""
        if scope["type"] != "http" or scope["method"] != "POST" or BODY not in scope:
            return False
        headers = dict(scope["headers"])
        if headers.get(b"content-type", b"").split(b";")[0].strip() != b"application/json":
            return False
        key = headers.get(MCP_SESSION_ID_HEADER.encode())
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER.encode(), b"").decode("latin-1")
        if key is None and version in MODERN_PROTOCOL_VERSIONS:
            message = _message(scope[BODY])
            return message is not None and await self.stateless.take(message, scope, receive, send)
        found = self.in_session.find(scope, headers, key.decode("latin-1") if key else None)
        if found is None:
            return False
        message = _message(scope[BODY])
        return message is not None and await self.in_session.take(message, *found, scope, send)


def _message(body: bytes) -> dict[str, Any] | None:
    """A single JSON-RPC 2.0 message object, or ``None`` (the SDK judges the rest)."""
    try:
        message = pydantic_core.from_json(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    return message


def install(server: Server[Any]) -> FastPath:
    """Put a fast path in front of ``server``'s streamable-HTTP session manager (call after
    ``streamable_http_app()`` built it). It learns the sessions the SDK opens once its
    ``learn`` is in the server's middleware (``Gateway`` places it)."""
    manager = server.session_manager
    if isinstance(manager.asgi_app, FastPath):  # the app was built again: the fast path is in place
        return manager.asgi_app
    fast_path = FastPath(manager.asgi_app, manager, server)
    manager.asgi_app = fast_path  # type: ignore[assignment]  # any ASGI app serves there
    return fast_path


__all__ = ["FastPath", "install"]
