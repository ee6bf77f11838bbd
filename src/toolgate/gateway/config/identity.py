"""Who a caller is, as the config says: bearer tokens by SHA-256 and OAuth JWTs.

``identity_of`` builds the gateway's ``IdentityResolver``; ``oauth_identity`` the OAuth
resource server's resolver (``toolgate.oauth``), checked at start and by ``toolgate
check``. Config layer: imports the core's identity and ``toolgate.oauth``, no MCP.
"""

from __future__ import annotations

from toolgate.errors import ConfigError
from toolgate.gateway.config.model import GatewayConfig, OAuthConfig, PrincipalConfig
from toolgate.identity import BearerTokens, IdentityResolver
from toolgate.oauth import ClaimMap, OAuthResolver, OAuthSettings
from toolgate.policy import Principal, TrustLadder


def principal_from(
    cfg_principal: PrincipalConfig, ladder: TrustLadder, key: str, *, authenticated: bool
) -> Principal:
    """A configured principal, its trust level checked against ``ladder``."""
    try:
        ladder.check(cfg_principal.trust)
    except ConfigError as exc:
        raise ConfigError(f"{key}.trust: {exc.message}", key=f"{key}.trust") from None
    return Principal(
        id=cfg_principal.id,
        trust=cfg_principal.trust,
        agent_class=cfg_principal.agent_class,
        scope=tuple(cfg_principal.scope),
        attributes=dict(cfg_principal.attributes),
        authenticated=authenticated,
    )


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
            jwks_timeout_s=oauth.jwks_timeout_s,
            share_static_ids=oauth.share_static_ids,
        )
    except ConfigError as exc:
        raise ConfigError(f"{key}: {exc.message}", key=key) from None
    return OAuthResolver(settings, static=static if isinstance(static, BearerTokens) else None)


def identity_of(cfg: GatewayConfig) -> IdentityResolver:
    """Bearer tokens by SHA-256 and/or OAuth JWTs when configured (unknown or missing
    token: HTTP 401); otherwise every request is the configured default principal."""
    tg = cfg.toolgate
    ladder = TrustLadder(tuple(tg.identity.trust_levels))
    static = IdentityResolver()
    if tg.identity.tokens:
        tokens = {
            digest: principal_from(
                who, ladder, f"toolgate.identity.tokens.{digest[:12]}", authenticated=True
            )
            for digest, who in tg.identity.tokens.items()
        }
        static = BearerTokens(tokens)
    if tg.identity.oauth is not None:  # JWT access tokens; static tokens keep working
        return oauth_identity(cfg, static)
    return static


__all__ = ["identity_of", "oauth_identity", "principal_from", "resource_of"]
