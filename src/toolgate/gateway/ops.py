"""What an operator runs the gateway with: OAuth, health and metrics over HTTP.

Builds the OAuth resource server from ``identity.oauth`` (``toolgate.oauth``), the
SDK auth options that make ``/mcp`` answer 401 with ``WWW-Authenticate`` and serve
RFC 9728 metadata, and the ``/healthz``, ``/readyz`` and ``/metrics`` routes. Edge
layer: reads a ``Gateway`` and its config; imports Starlette, ``mcp``'s auth
settings and ``toolgate.oauth``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.routes import build_resource_metadata_url, cors_middleware
from mcp.server.auth.settings import AuthSettings
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from toolgate.errors import ConfigError
from toolgate.gateway.config import GatewayConfig, OAuthConfig
from toolgate.identity import BearerTokens, IdentityResolver
from toolgate.oauth import ClaimMap, OAuthResolver, OAuthSettings

if TYPE_CHECKING:
    from toolgate.gateway.metrics import Live, Metrics
    from toolgate.gateway.serve import Gateway

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def resource_of(oauth: OAuthConfig) -> str:
    """The protected resource's URL (RFC 9728 ``resource``): ``resource``, else the
    first audience that is an http(s) URL."""
    if oauth.resource is not None:
        return oauth.resource
    for audience in oauth.audience:
        if audience.startswith(("http://", "https://")):
            return audience
    raise ConfigError(
        "identity.oauth: no audience is an http(s) URL; set 'resource' to the gateway's "
        "MCP endpoint URL (clients find the authorization server through it)",
        key="toolgate.identity.oauth.resource",
    )


def oauth_identity(cfg: GatewayConfig, static: IdentityResolver | None = None) -> OAuthResolver:
    """The resolver for ``identity.oauth``; configured static bearer tokens keep working."""
    tg = cfg.toolgate
    oauth = tg.identity.oauth
    if oauth is None:
        raise ConfigError("identity.oauth is not configured", key="toolgate.identity.oauth")
    resource_of(oauth)  # fail at start, not at the first request
    key = "toolgate.identity.oauth"
    levels = tuple(tg.identity.trust_levels)
    if oauth.trust not in levels:
        raise ConfigError(
            f"{key}.trust: unknown trust level {oauth.trust!r}; known: {', '.join(levels)}",
            key=f"{key}.trust",
        )
    try:
        settings = OAuthSettings(
            issuer=oauth.issuer,
            audience=tuple(oauth.audience),
            jwks_url=oauth.jwks_url,
            keys_file=cfg.resolve(oauth.keys) if oauth.keys is not None else None,
            algorithms=tuple(oauth.algorithms),
            leeway_s=oauth.leeway_s,
            claims=ClaimMap(
                id=tuple(oauth.claims.id),
                trust=oauth.claims.trust,
                agent_class=oauth.claims.agent_class,
                scope=oauth.claims.scope,
                attributes=tuple(oauth.claims.attributes),
            ),
            trust=oauth.trust,
            trust_levels=levels,
            scope_map={k: tuple(v) for k, v in oauth.scope_map.items()},
            scope_prefix=oauth.scope_prefix,
            default_scope=tuple(oauth.default_scope),
            required_scopes=tuple(oauth.required_scopes),
            jwks_max_age_s=oauth.jwks_max_age_s,
            jwks_min_interval_s=oauth.jwks_min_interval_s,
        )
    except ConfigError as exc:
        raise ConfigError(f"{key}: {exc.message}", key=key) from None
    return OAuthResolver(settings, static=static if isinstance(static, BearerTokens) else None)


def auth_options(cfg: GatewayConfig, identity: IdentityResolver) -> dict[str, Any]:
    """Options for ``Binding.streamable_http_app`` that make ``/mcp`` an OAuth protected
    resource (none without ``identity.oauth``: static tokens wire themselves)."""
    oauth = cfg.toolgate.identity.oauth
    if oauth is None or not isinstance(identity, OAuthResolver):
        return {}
    # validated from strings: the models keep a path-less URL as it is (no "/" added),
    # as RFC 8414 compares issuers by exact string
    settings = AuthSettings.model_validate(
        {
            "issuer_url": oauth.issuer,
            "resource_server_url": resource_of(oauth),
            "required_scopes": list(oauth.required_scopes) or None,
            "validate_token_resource": False,  # the resolver checks the audience itself
        }
    )
    return {"token_verifier": identity, "auth": settings}


def metadata_routes(cfg: GatewayConfig) -> list[Route]:
    """RFC 9728 metadata at the bare well-known path too (the SDK serves it at the
    path-inserted one, ``/.well-known/oauth-protected-resource/mcp``)."""
    oauth = cfg.toolgate.identity.oauth
    if oauth is None:
        return []
    resource = resource_of(oauth)
    if urlparse(str(build_resource_metadata_url(AnyHttpUrl(resource)))).path == WELL_KNOWN:
        return []  # the SDK's route is already this one
    metadata = ProtectedResourceMetadata.model_validate(
        {
            "resource": resource,
            "authorization_servers": [oauth.issuer],
            "scopes_supported": list(oauth.required_scopes) or None,
        }
    )
    handler = ProtectedResourceMetadataHandler(metadata)
    endpoint = cors_middleware(handler.handle, ["GET", "OPTIONS"])
    return [Route(WELL_KNOWN, endpoint=endpoint, methods=["GET", "OPTIONS"])]


# -- health and metrics ------------------------------------------------------------------


def live(gateway: Gateway) -> Live:
    """Backends up, open HTTP sessions and catalog size, read now."""
    from toolgate.gateway.metrics import Live

    manager = getattr(gateway.server, "_session_manager", None)
    sessions = getattr(manager, "_server_instances", None) or {}
    tools = len(gateway.toolset.catalog.tools) if gateway.binding is not None else 0
    return Live({n: b.up for n, b in gateway.backends.items()}, len(sessions), tools)


def gateway_metrics(gateway: Gateway) -> Metrics | None:
    """The gateway's ``Metrics`` sink on its event bus (None when disabled)."""
    if not gateway.cfg.toolgate.metrics.enabled:
        return None
    from toolgate.gateway.metrics import Metrics

    def known_tool(name: str) -> bool:
        return gateway.binding is not None and gateway.toolset.catalog.tool(name) is not None

    metrics = Metrics(known_tool=known_tool, live=lambda: live(gateway))
    gateway.events.add_sink(metrics)
    if isinstance(gateway.identity, OAuthResolver):
        gateway.identity.on_refused = metrics.auth_refused
    return metrics


def readiness(gateway: Gateway) -> dict[str, Any]:
    """What ``/readyz`` answers: ``ready`` when the catalog is built and at least one
    backend is up; ``status`` is ``ok``, ``degraded`` (some down) or ``unavailable``."""
    backends = {
        name: {"status": b.status, "up": b.up, "tools": len(b.tools), "error": b.last_error}
        for name, b in sorted(gateway.backends.items())
    }
    up = sum(1 for b in gateway.backends.values() if b.up)
    built = gateway.binding is not None
    if built and up == len(backends):
        status = "ok"
    elif built and up:
        status = "degraded"
    else:
        status = "unavailable"
    return {
        "ready": status != "unavailable",
        "status": status,
        "backends": backends,
        "tools": len(gateway.toolset.catalog.tools) if built else 0,
    }


Endpoint = Callable[[Request], Awaitable[Response]]


def ops_routes(gateway: Gateway, *, allowed_hosts: Sequence[str] = ()) -> list[Route]:
    """``/healthz`` (the process answers), ``/readyz`` (backends, JSON; 503 when not
    ready, or with ``?strict`` when any backend is down) and ``/metrics``. A foreign
    ``Host`` gets 421, as on ``/mcp`` (DNS rebinding); ``allowed_hosts`` adds names."""
    from toolgate.gateway.edge import allowed_names, host_name

    hosts = allowed_names("127.0.0.1", allowed_hosts)

    def guarded(endpoint: Endpoint) -> Endpoint:
        async def checked(request: Request) -> Response:
            if host_name(request.headers.get("host", "")) not in hosts:
                return PlainTextResponse("Invalid Host header", 421)
            return await endpoint(request)

        return checked

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        body = readiness(gateway)
        strict = "strict" in request.query_params
        ok = body["status"] == "ok" if strict else body["ready"]
        return JSONResponse(body, status_code=200 if ok else 503)

    routes = [
        Route("/healthz", guarded(healthz), methods=["GET"]),
        Route("/readyz", guarded(readyz), methods=["GET"]),
    ]
    metrics = gateway.metrics
    if metrics is not None:
        from toolgate.gateway.metrics import CONTENT_TYPE

        async def scrape(request: Request) -> Response:
            return Response(metrics.render(), media_type=CONTENT_TYPE)

        routes.append(Route("/metrics", guarded(scrape), methods=["GET"]))
    return [*routes, *metadata_routes(gateway.cfg)]


__all__ = [
    "auth_options",
    "gateway_metrics",
    "live",
    "oauth_identity",
    "ops_routes",
    "readiness",
    "resource_of",
]
