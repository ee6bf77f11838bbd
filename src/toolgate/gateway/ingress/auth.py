"""OAuth's HTTP side of the way in: the SDK options that make ``/mcp`` an RFC 9728
protected resource (401 with ``WWW-Authenticate``, the resource metadata), and the
metadata at the bare well-known path. Ingress layer: imports ``mcp``'s auth settings,
Starlette and the gateway's config.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.routes import build_resource_metadata_url, cors_middleware
from mcp.server.auth.settings import AuthSettings
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.routing import Route

from toolgate.gateway.config.identity import resource_of
from toolgate.gateway.config.model import GatewayConfig
from toolgate.identity import IdentityResolver
from toolgate.oauth import OAuthResolver

WELL_KNOWN = "/.well-known/oauth-protected-resource"


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


__all__ = ["WELL_KNOWN", "auth_options", "metadata_routes"]
