"""Who is asking: a ``Principal`` from how a request arrived, never from tool arguments.

``Caller`` is what a resolver may read (transport, HTTP headers, a verified access
token); ``IdentityResolver`` and ``IdentityFn`` are the two ways to map it, and
``BearerTokens`` / ``ClaimsIdentity`` the two shipped ones. Model layer: imports
``policy`` and ``errors`` only, never ``mcp`` or ``fastmcp``.
"""

from __future__ import annotations

import hashlib
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from types import NoneType
from typing import Any

from toolgate.errors import ConfigError, Unauthenticated, check_kind, described
from toolgate.policy import DEFAULT_TRUST_LEVELS, Principal


@dataclass(frozen=True)
class Caller:
    """What an identity resolver may read about a request: how it arrived
    (``transport`` is ``"http"`` or ``"local"``: stdio, in-memory), its HTTP headers
    (lower-case names) and the access token an auth layer verified (or None)."""

    transport: str = "local"
    headers: Mapping[str, str] = field(default_factory=dict)
    access_token: Any = None

    @property
    def bearer_token(self) -> str | None:
        value = self.headers.get("authorization", "")
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer":
            return None
        return token.strip() or None


class IdentityResolver:
    """Maps a request to a ``Principal``. Override ``resolve``; ``None`` means the
    toolset's default principal (the configured identity for stdio)."""

    async def resolve(self, caller: Caller) -> Principal | None:
        return None

    async def resolve_with_scopes(self, caller: Caller) -> tuple[Principal | None, list[str]]:
        """``resolve``, with the OAuth scopes the caller's credential grants (none by
        default): an HTTP front that resolves a caller once keeps both."""
        return await self.resolve(caller), []


IdentityFn = Callable[[Caller], "Principal | Awaitable[Principal | None] | None"]


def check_identity(identity: Any) -> None:
    """Refuse an ``identity`` that is neither a resolver nor a callable when an adapter
    is made: it would otherwise fail at the first request, with every client."""
    if identity is not None and not isinstance(identity, IdentityResolver | Callable):
        raise ConfigError(
            "identity must be an IdentityResolver (BearerTokens, ClaimsIdentity) or a "
            f"function of a Caller, got {described(identity)}",
            key="identity",
        )


async def resolve_principal(
    identity: IdentityResolver | IdentityFn | None, caller: Caller
) -> Principal | None:
    """Run a resolver object or a plain (sync or async) callable."""
    if identity is None:
        return None
    if isinstance(identity, IdentityResolver):
        return await identity.resolve(caller)
    found = identity(caller)
    return await found if inspect.isawaitable(found) else found


_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


def is_token_digest(value: str) -> bool:
    """``value`` is how configuration holds a bearer token: its lower-case hex SHA-256
    (never the token itself)."""
    return _SHA256_HEX.match(value) is not None


class BearerTokens(IdentityResolver):
    """Bearer tokens matched by their SHA-256, so configuration never holds a token.

    >>> BearerTokens({hashlib.sha256(b"s3cret").hexdigest(): Principal(id="ci")})

    Over HTTP a known token gives its principal (marked authenticated); an unknown
    token is refused, and so is a missing one unless ``anonymous`` is given. Local
    transports get the default principal. ``toolgate.lowlevel`` also hands it to the
    SDK as a token verifier, so the HTTP layer can answer 401 before MCP runs.
    """

    def __init__(
        self, tokens: Mapping[str, Principal], *, anonymous: Principal | None = None
    ) -> None:
        if not isinstance(tokens, Mapping):
            raise ConfigError(
                "bearer tokens must be a mapping of token SHA-256 to Principal, got "
                f"{described(tokens)}",
                key="identity.tokens",
            )
        for digest, principal in tokens.items():
            check_kind(digest, str, "bearer token keys", "strings", key="identity.tokens")
            if not is_token_digest(digest):
                raise ConfigError(
                    "bearer tokens are configured by the lower-case hex SHA-256 of the "
                    f"token, not the token itself; got a key of length {len(digest)}",
                    key="identity.tokens",
                )
            if not isinstance(principal, Principal):
                raise ConfigError(
                    f"bearer token {digest[:12]}...: its principal must be a Principal, got "
                    f"{described(principal)}",
                    key="identity.tokens",
                )
        check_kind(
            anonymous, (Principal, NoneType), "anonymous", "a Principal or None", key="anonymous"
        )
        self.tokens = {d: replace(p, authenticated=True) for d, p in tokens.items()}
        self.anonymous = anonymous

    @staticmethod
    def digest(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    def principal_for(self, token: str) -> Principal | None:
        return self.tokens.get(self.digest(token))

    async def resolve(self, caller: Caller) -> Principal | None:
        if caller.transport != "http":
            return None
        token = caller.bearer_token
        if token is None:
            if self.anonymous is not None:
                return self.anonymous
            raise Unauthenticated("Unauthorized: this server requires a bearer token")
        principal = self.principal_for(token)
        if principal is None:
            raise Unauthenticated("Unauthorized: unknown bearer token")
        return principal


@dataclass(frozen=True)
class ClaimsIdentity(IdentityResolver):
    """A principal from a verified access token's claims (FastMCP auth); ``default``
    without a token.

    >>> ClaimsIdentity(id_claim="sub", trust_claim="trust", scope_claim="scope",
    ...                default=Principal(id="local", scope=("default",)))

    A scope claim may be a list or a space-separated string of group names. A trust
    claim naming no level of ``trust_levels`` refuses the request (``Unauthenticated``):
    an unknown trust level is a configuration error, never silently "lowest".
    Claims the token lacks fall back to ``default``'s values.
    """

    id_claim: str = "sub"
    trust_claim: str | None = None
    scope_claim: str | None = None
    class_claim: str | None = None
    default: Principal | None = None
    trust_levels: tuple[str, ...] = DEFAULT_TRUST_LEVELS

    def __post_init__(self) -> None:
        if not isinstance(self.id_claim, str) or not self.id_claim:
            raise ConfigError(
                f"id_claim must be a claim name, got {described(self.id_claim)}", key="id_claim"
            )
        for key in ("trust_claim", "scope_claim", "class_claim"):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, str) or not value):
                raise ConfigError(
                    f"{key} must be a claim name or None, got {described(value)}", key=key
                )
        check_kind(
            self.default, (Principal, NoneType), "default", "a Principal or None", key="default"
        )

    async def resolve(self, caller: Caller) -> Principal | None:
        token = caller.access_token
        if token is None:
            return self.default
        base = self.default or Principal()
        claims: Mapping[str, Any] = getattr(token, "claims", None) or {}
        ident = claims.get(self.id_claim) or getattr(token, "subject", None) or token.client_id
        trust = base.trust
        if self.trust_claim is not None and self.trust_claim in claims:
            value = claims[self.trust_claim]
            if value not in self.trust_levels:
                raise Unauthenticated(
                    f"The token's {self.trust_claim!r} claim {value!r} names no trust level "
                    f"(known: {', '.join(self.trust_levels)})"
                )
            trust = str(value)
        scope = base.scope
        if self.scope_claim is not None and self.scope_claim in claims:
            raw = claims[self.scope_claim]
            scope = tuple(raw.split()) if isinstance(raw, str) else tuple(map(str, raw or ()))
        agent_class = base.agent_class
        if self.class_claim is not None and claims.get(self.class_claim) is not None:
            agent_class = str(claims[self.class_claim])
        return Principal(
            id=str(ident),
            trust=trust,
            agent_class=agent_class,
            scope=scope,
            attributes=base.attributes,
            authenticated=True,
        )
