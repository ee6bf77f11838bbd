"""The gateway's HTTP app, assembled: the SDK's streamable-HTTP app for ``/mcp`` with
the gateway's routes beside it, behind the ingress middleware (the guard, the session
cap) and with the fast path for ``tools/call`` in front of the SDK's session manager;
and the HTTP server's options. Ingress layer: knows no ``Gateway``, only what it is
handed.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from importlib.metadata import version
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.routing import BaseRoute
from starlette.types import Scope

from toolgate.gateway.config.model import GatewayConfig
from toolgate.gateway.ingress.auth import auth_options
from toolgate.gateway.ingress.fast_path import Lane
from toolgate.gateway.ingress.fast_path import install as install_lane
from toolgate.gateway.ingress.guard import (
    Edge,
    EdgeLimits,
    allowed_names,
    bearer_admits,
    guarded_protocol,
)
from toolgate.gateway.ingress.session_cap import ClientOf, SessionCap
from toolgate.identity import BearerTokens, IdentityResolver
from toolgate.lowlevel import Binding
from toolgate.sdk_internals import MISSING, fast_path_available
from toolgate.strategies.base import is_stateless

logger = logging.getLogger("toolgate.gateway")

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def http_app(
    binding: Binding,
    cfg: GatewayConfig,
    identity: IdentityResolver,
    *,
    routes: Sequence[BaseRoute] = (),
    host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
) -> tuple[Starlette, Lane | None]:
    """The app serving ``binding`` at ``/mcp`` and ``routes`` beside it, and its fast path
    (``None`` when ``toolgate.http.fast_path`` is off).
    Local binds get DNS-rebinding protection; other binds must name the host names
    clients use in ``allowed_hosts``."""
    names = ["127.0.0.1", "localhost", "[::1]", *allowed_hosts]
    if host not in (*LOCAL_HOSTS, "0.0.0.0", "::"):
        names.append(host)
    hosts = [h for n in names for h in (n, f"{n}:*")]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{h}" for h in hosts] + [f"https://{h}" for h in hosts],
    )
    tg = cfg.toolgate
    auth = auth_options(cfg, identity)
    app = binding.streamable_http_app(
        host=host,
        transport_security=security,
        # a transport session ends when its store state would: idle for idle_ttl
        session_idle_timeout=tg.idle_ttl,
        max_sessions=tg.http.max_sessions,
        **auth,
    )
    lane = None
    if tg.http.fast_path and not fast_path_available():
        logger.warning(
            "the fast path for tools/call is off: this MCP SDK (%s) lacks %s",
            version("mcp"),
            ", ".join(MISSING),
        )
    elif tg.http.fast_path:
        lane = install_lane(binding.server)
    app.router.routes.extend(routes)
    app.add_middleware(
        SessionCap,
        per_client=tg.http.max_sessions_per_client,
        idle_timeout=tg.idle_ttl,
        client_of=client_of(identity, verified="token_verifier" in auth),
        stateless=is_stateless,
    )
    return guarded(app, cfg, identity, host=host, allowed_hosts=allowed_hosts), lane


def guarded(
    app: Starlette,
    cfg: GatewayConfig,
    identity: IdentityResolver,
    *,
    host: str,
    allowed_hosts: Sequence[str],
) -> Starlette:
    """``app`` behind the HTTP guard (``toolgate.gateway.ingress.guard``): Host/Origin on
    every route, one credential, bounded and checked bodies (``toolgate.http``)."""
    limits = cfg.toolgate.http
    app.add_middleware(
        Edge,
        names=allowed_names(host, allowed_hosts),
        origins=limits.allowed_origins,
        limits=EdgeLimits(limits.max_body_bytes, limits.max_json_depth, limits.body_timeout),
        admits=(
            bearer_admits(lambda token: identity.principal_for(token) is not None)
            if isinstance(identity, BearerTokens) and identity.anonymous is None
            else None
        ),
    )
    return app


def client_of(identity: IdentityResolver, *, verified: bool) -> ClientOf:
    """Who a request comes from, for the per-client session bound: the principal of a
    configured bearer token; the credential itself when the HTTP layer verifies tokens
    before a session opens (OAuth, ``verified``); otherwise the client's address, so
    made-up credentials cannot buy a caller more sessions."""

    def client(scope: Scope, headers: Headers) -> str:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if token and scheme.lower() == "bearer":
            if isinstance(identity, BearerTokens):
                principal = identity.principal_for(token)
                if principal is not None:
                    return f"principal:{principal.id}"
            elif verified:
                return f"credential:{hashlib.sha256(token.encode()).hexdigest()}"
        address = scope.get("client")
        return f"address:{address[0] if address else 'unknown'}"

    return client


def server_options(cfg: GatewayConfig, *, host: str, port: int) -> dict[str, Any]:
    """``uvicorn.Config`` keywords: the bind, and the connection limits of
    ``toolgate.http`` (header deadline, keep-alive, open connections, header size)."""
    limits = cfg.toolgate.http
    return {
        "host": host,
        "port": port,
        "log_level": "warning",
        "lifespan": "on",
        "access_log": False,
        "http": guarded_protocol(
            header_timeout=limits.header_timeout,
            max_connections=limits.max_connections,
            max_header_bytes=limits.max_header_bytes,
        ),
        "timeout_keep_alive": limits.keep_alive_timeout,
        # uvicorn answers 503 once connections reach this; the protocol closes past it
        "limit_concurrency": limits.max_connections + 1,
    }


__all__ = ["LOCAL_HOSTS", "client_of", "guarded", "http_app", "server_options"]
