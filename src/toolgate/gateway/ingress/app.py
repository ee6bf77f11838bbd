"""The gateway's HTTP app, assembled: the SDK's streamable-HTTP app for ``/mcp`` with the
gateway's routes beside it, behind the way in declared as one ordered list (the guard,
the drain's gate, the session cap, authentication), with the fast path for
``tools/call`` in front of the SDK's session manager; and the HTTP server's options.
Ingress layer: knows no ``Gateway``, only what it is handed.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import socket
from collections.abc import Callable, Sequence
from importlib.metadata import version
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.routing import BaseRoute
from starlette.types import Scope

from toolgate import sdk_internals
from toolgate.errors import ConfigError
from toolgate.gateway.config.model import GatewayConfig
from toolgate.gateway.ingress.auth import authentication, oauth_settings
from toolgate.gateway.ingress.drain import Drain, DrainGate
from toolgate.gateway.ingress.fast_path import FastPath
from toolgate.gateway.ingress.fast_path import install as install_fast_path
from toolgate.gateway.ingress.forwarded import TrustedProxies
from toolgate.gateway.ingress.guard import Guard, GuardLimits, allowed_names
from toolgate.gateway.ingress.protocol import guarded_protocol
from toolgate.gateway.ingress.session_cap import ClientOf, SessionCap
from toolgate.identity import IdentityResolver
from toolgate.lowlevel import Binding
from toolgate.request import CALLER, Resolved
from toolgate.sdk_internals import live_transports
from toolgate.strategies.base import is_stateless

logger = logging.getLogger("toolgate.gateway")


def http_app(
    binding: Binding,
    cfg: GatewayConfig,
    identity: IdentityResolver,
    *,
    routes: Sequence[BaseRoute] = (),
    host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
    drain: Drain | None = None,
) -> tuple[Starlette, FastPath | None]:
    """The app serving ``binding`` at ``/mcp`` and ``routes`` beside it, and its fast path
    (``None`` when ``toolgate.http.fast_path`` is off). The guard accepts loopback names,
    the bind address and ``allowed_hosts`` (the names clients use for other binds);
    ``drain`` is the stop its gate follows (one that never begins, by default)."""
    tg = cfg.toolgate
    limits = tg.http
    app = binding.streamable_http_app(
        host=host,
        # the guard checks Host and Origin on every route; the SDK does not again
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        # the guard authenticates; ``authentication`` makes its verdict the SDK's user
        token_verifier=None,
        auth=oauth_settings(cfg),
        # a transport session ends when its store state would: idle for idle_ttl
        session_idle_timeout=tg.idle_ttl,
        max_sessions=limits.max_sessions,
    )
    app.router.routes.extend(routes)
    # the way in, outermost first; then the routes: /mcp's fast path, the SDK's session manager
    app.user_middleware = [
        Middleware(
            Guard,  # Host and Origin, the caller resolved, the body read: each once
            names=allowed_names(host, allowed_hosts),
            origins=limits.allowed_origins,
            limits=GuardLimits(limits.max_body_bytes, limits.max_json_depth, limits.body_timeout),
            identity=identity,
            proxies=TrustedProxies.of(limits.trusted_proxies),
        ),
        Middleware(DrainGate, drain=drain or Drain()),  # while stopping: calls counted, new refused
        Middleware(
            SessionCap,  # open sessions per client
            per_client=limits.max_sessions_per_client,
            idle_timeout=tg.idle_ttl,
            client_of=client_of(by_credential=tg.identity.oauth is not None),
            alive=held_by(binding.server.session_manager),
            stateless=is_stateless,
        ),
        *authentication(cfg),  # the guard's verdict as the SDK's user; 401 on /mcp
    ]
    fast_path = None
    missing = sdk_internals.fast_path_missing(binding.server.session_manager)
    if limits.fast_path and missing:
        logger.warning(
            "the fast path for tools/call is off: this MCP SDK (%s) lacks %s",
            version("mcp"),
            ", ".join(missing),
        )
    elif limits.fast_path:
        fast_path = install_fast_path(binding.server)
    return app, fast_path


def client_of(*, by_credential: bool) -> ClientOf:
    """Who a request comes from, for the per-client session bound: the principal the
    guard admitted (``CALLER``), or its credential itself when OAuth verified it
    (``by_credential``); otherwise the client's address, so made-up credentials cannot
    buy a caller more sessions. The address is the one the guard resolved behind trusted
    proxies (``scope["client"]``)."""

    def client(scope: Scope, headers: Headers) -> str:
        resolved = scope.get(CALLER)
        principal = resolved.principal if isinstance(resolved, Resolved) else None
        if principal is not None and principal.authenticated:
            if not by_credential:
                return f"principal:{principal.id}"
            token = headers.get("authorization", "").partition(" ")[2]
            return f"credential:{hashlib.sha256(token.encode()).hexdigest()}"
        address = scope.get("client")
        return f"address:{address[0] if address else 'unknown'}"

    return client


def held_by(manager: StreamableHTTPSessionManager) -> Callable[[str], bool]:
    """Whether ``manager`` (the SDK's) still holds a legacy session, by id: the session
    cap's one judge of when a session ended, however it ended."""

    def alive(session: str) -> bool:
        transport = live_transports(manager).get(session)
        return transport is not None and not transport.is_terminated

    return alive


def check_bind(host: str, port: int) -> None:
    """Raise ``ConfigError`` naming ``--host`` / ``--port`` when this machine cannot
    listen on ``host:port`` (an unknown name, an address it does not have, a port in
    use or not allowed), by binding and closing a socket as uvicorn will bind it: said
    before any backend starts, not by uvicorn once they have."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:  # socket.gaierror too: a name that resolves to nothing
        key = "--port" if exc.errno in (errno.EADDRINUSE, errno.EACCES) else "--host"
        message = f"{key}: cannot listen on {host}:{port}: {exc.strerror}"
        raise ConfigError(message, key=key) from None


def server_options(
    cfg: GatewayConfig, *, host: str, port: int, drain: Drain | None = None
) -> dict[str, Any]:
    """``uvicorn.Config`` keywords: the bind, and the connection limits of
    ``toolgate.http`` (header deadline, keep-alive, open connections, header size);
    while ``drain`` drains, every response closes its connection."""
    limits = cfg.toolgate.http
    return {
        "host": host,
        "port": port,
        "log_level": "warning",
        "lifespan": "on",
        "access_log": False,
        # the guard alone reads forwarding headers, from ``http.trusted_proxies``;
        # uvicorn's own reading (on by default for loopback peers) would be a second rule
        "proxy_headers": False,
        "http": guarded_protocol(
            header_timeout=limits.header_timeout,
            max_connections=limits.max_connections,
            max_header_bytes=limits.max_header_bytes,
            draining=(lambda: drain.draining) if drain is not None else None,
        ),
        "timeout_keep_alive": limits.keep_alive_timeout,
        # uvicorn answers 503 once connections reach this; the protocol closes past it
        "limit_concurrency": limits.max_connections + 1,
    }


__all__ = ["check_bind", "client_of", "held_by", "http_app", "server_options"]
