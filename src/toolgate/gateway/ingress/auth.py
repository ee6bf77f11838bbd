"""Authentication's HTTP side of the way in: the guard's verdict (``CALLER``) as the SDK's
authenticated user, ``/mcp`` refused to a caller without one as the SDK refuses it (401
with ``WWW-Authenticate``), the required scopes held on ``/mcp`` and WebMCP's tool routes
alike (403), and OAuth's protected-resource metadata (RFC 9728). Ingress
layer: imports ``mcp``'s auth middleware and settings, Starlette and the gateway's config.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlparse

from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url, cors_middleware
from mcp.server.auth.settings import AuthSettings
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.authentication import AuthCredentials, AuthenticationBackend
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from toolgate.gateway.config.identity import resource_of
from toolgate.gateway.config.model import GatewayConfig
from toolgate.identity import BearerTokens
from toolgate.request import CALLER, Resolved

WELL_KNOWN = "/.well-known/oauth-protected-resource"
#: The routes beside ``/mcp`` that list and call tools (``toolgate.webmcp``): the same
#: required scopes hold there.
TOOL_ROUTES = ("/webmcp/tools", "/webmcp/call")


def oauth_settings(cfg: GatewayConfig) -> AuthSettings | None:
    """The SDK's settings for ``/mcp`` as an OAuth protected resource (its metadata
    route, the ``resource_metadata`` of a refusal); None without ``identity.oauth``."""
    oauth = cfg.toolgate.identity.oauth
    if oauth is None:
        return None
    # validated from strings: the models keep a path-less URL as it is (no "/" added),
    # as RFC 8414 compares issuers by exact string
    return AuthSettings.model_validate(
        {
            "issuer_url": oauth.issuer,
            "resource_server_url": resource_of(oauth),
            "required_scopes": list(oauth.required_scopes) or None,
            "validate_token_resource": False,  # the resolver checks the audience itself
        }
    )


def authentication(cfg: GatewayConfig) -> list[Middleware]:
    """When the config asks for a credential (bearer tokens, OAuth): the guard's verdict
    as the SDK's user (its session owners, its access-token context), then ``/mcp``
    behind the SDK's ``RequireAuthMiddleware`` (401, 403 for a missing required scope),
    whose scope check holds on WebMCP's tool routes too."""
    tg = cfg.toolgate.identity
    if not tg.tokens and tg.oauth is None:
        return []
    settings = oauth_settings(cfg)
    scopes = list(settings.required_scopes or []) if settings is not None else []
    metadata = None
    if settings is not None and settings.resource_server_url is not None:
        metadata = build_resource_metadata_url(settings.resource_server_url)
    backend = Admitted()
    return [
        Middleware(AuthenticationMiddleware, backend=backend),
        Middleware(AuthContextMiddleware),
        Middleware(RequiredOn, path="/mcp", scopes=scopes, metadata=metadata, scoped=TOOL_ROUTES),
    ]


class Admitted(AuthenticationBackend):
    """The SDK's authenticated user for the principal the guard admitted (``CALLER``),
    as its bearer backend makes one: an ``AccessToken`` naming the principal, the
    token's digest and the scopes the guard's one resolution found."""

    async def authenticate(
        self, conn: HTTPConnection
    ) -> tuple[AuthCredentials, AuthenticatedUser] | None:
        resolved = conn.scope.get(CALLER)
        if not isinstance(resolved, Resolved):
            return None
        principal = resolved.principal
        if principal is None or not principal.authenticated:
            return None
        token = conn.headers.get("authorization", "").partition(" ")[2].strip()
        access = AccessToken(
            token=BearerTokens.digest(token), client_id=principal.id, scopes=list(resolved.scopes)
        )
        return AuthCredentials(access.scopes), AuthenticatedUser(access)


class RequiredOn:
    """``path`` behind the SDK's ``RequireAuthMiddleware``. On the ``scoped`` paths an
    authenticated caller is held to the same required scopes (the same 403 and
    ``WWW-Authenticate``); a caller without a credential, and a CORS preflight, are
    theirs to answer (WebMCP's 401 carries its CORS headers). Other paths (the
    dashboard) answer for themselves."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        path: str,
        scopes: list[str],
        metadata: AnyHttpUrl | None,
        scoped: Sequence[str] = (),
    ) -> None:
        self.app = app
        self.path = path
        self.scoped = frozenset(scoped)
        self.required = RequireAuthMiddleware(app, scopes, metadata)

    def _on(self, scope: Scope) -> bool:
        if scope["type"] != "http":
            return False
        if scope["path"] == self.path:
            return True
        return (
            scope["path"] in self.scoped
            and scope["method"] != "OPTIONS"
            and isinstance(scope.get("user"), AuthenticatedUser)
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await (self.required if self._on(scope) else self.app)(scope, receive, send)


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


__all__ = [
    "TOOL_ROUTES",
    "WELL_KNOWN",
    "Admitted",
    "RequiredOn",
    "authentication",
    "metadata_routes",
    "oauth_settings",
]
