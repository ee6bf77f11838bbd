"""An OAuth 2.1 resource server: JWT access tokens in, a ``Principal`` out.

``OAuthResolver`` validates a bearer JWT (signature from a JWKS URL or a local key
file, issuer, audience, expiry; keys found again by ``kid`` when the provider
rotates them), maps its claims to a principal by configuration, and keeps static
bearer tokens working beside it. It is an ``IdentityResolver`` and an SDK
``TokenVerifier``. Adapter layer: imports ``jwt`` (PyJWT), ``httpx2``, ``mcp``'s auth
types and ``toolgate.wire``; never ``fastmcp``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import jwt
from mcp.server.auth.provider import AccessToken

from toolgate.errors import ConfigError, Unauthenticated
from toolgate.identity import BearerTokens, Caller, IdentityResolver
from toolgate.policy import Principal, TrustLadder

logger = logging.getLogger("toolgate.oauth")

#: Asymmetric algorithms only: a resource server never holds an issuer's shared secret.
DEFAULT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA")
#: How long one key-set fetch may take in all, and how large its answer may be.
JWKS_TIMEOUT_S = 5.0
JWKS_MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class ClaimMap:
    """Which claims say who the caller is. ``id`` is tried in order; ``trust``,
    ``agent_class`` and ``scope`` name one claim each (None: not read from the token);
    ``attributes`` are copied into ``Principal.attributes`` when present."""

    id: tuple[str, ...] = ("sub", "client_id")
    trust: str | None = None
    agent_class: str | None = None
    scope: str | None = "scope"
    attributes: tuple[str, ...] = ()


@dataclass(frozen=True)
class OAuthSettings:
    """What a token must be, and how its claims become a principal.

    >>> OAuthSettings(issuer="https://id.example", audience=("https://mcp.example/mcp",),
    ...               jwks_url="https://id.example/jwks")  # doctest: +SKIP
    """

    issuer: str
    audience: tuple[str, ...]
    jwks_url: str | None = None
    keys_file: Path | None = None
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    leeway_s: float = 30.0
    claims: ClaimMap = field(default_factory=ClaimMap)
    trust: str = "verified"  # trust of a token without a trust claim
    trust_levels: tuple[str, ...] = ("detected", "declared", "verified", "linked")
    scope_map: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    scope_prefix: str = ""
    default_scope: tuple[str, ...] = ("*",)  # used when ``claims.scope`` is None
    required_scopes: tuple[str, ...] = ()
    jwks_max_age_s: float = 300.0
    jwks_min_interval_s: float = 10.0
    jwks_timeout_s: float = JWKS_TIMEOUT_S
    #: let a token map to the principal id of a static bearer token (off: refused)
    share_static_ids: bool = False

    def __post_init__(self) -> None:
        if (self.jwks_url is None) == (self.keys_file is None):
            raise ConfigError(
                "OAuth needs exactly one key source: 'jwks_url' or 'keys' (a JWKS file)",
                key="identity.oauth",
            )
        if not self.audience:
            raise ConfigError("OAuth needs at least one audience", key="identity.oauth.audience")
        bad = [a for a in self.algorithms if a not in DEFAULT_ALGORITHMS]
        if bad:
            raise ConfigError(
                f"algorithm {bad[0]!r} is not allowed; use asymmetric ones: "
                f"{', '.join(DEFAULT_ALGORITHMS)}",
                key="identity.oauth.algorithms",
            )
        TrustLadder(self.trust_levels).check(self.trust)


class TokenRefused(Exception):
    """A bearer token that is not acceptable. ``reason`` is one of a few fixed phrases
    (a metrics label); ``detail`` says more. Both are safe to log: no token in them."""

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason} ({detail})" if detail else reason)


class KeySet:
    """The issuer's public keys by ``kid``, from a JWKS URL or a local JWKS file.

    Fetched on first use and again when older than ``max_age_s``, or when a token
    names a ``kid`` it does not hold (at most once per ``min_interval_s``, so random
    kids cannot make the gateway hammer the provider). One fetch runs at a time, shared
    by whoever waits for it, and none outlasts ``timeout_s`` or reads more than
    ``max_bytes``. A token whose ``kid`` is held is checked with the keys held, never
    made to wait for a fetch (a stale set is refreshed behind it). A failed fetch,
    whatever the provider answered, keeps the keys it had."""

    def __init__(
        self,
        *,
        url: str | None = None,
        path: Path | None = None,
        max_age_s: float = 300.0,
        min_interval_s: float = 10.0,
        timeout_s: float = JWKS_TIMEOUT_S,
        max_bytes: int = JWKS_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self.path = path
        self.max_age_s = max_age_s
        self.min_interval_s = min_interval_s
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.clock = clock
        self.keys: dict[str, jwt.PyJWK] = {}
        self.fetched_at: float | None = None
        self.last_error: str | None = None
        self._fetch: asyncio.Task[None] | None = None

    @property
    def source(self) -> str:
        return self.url or str(self.path)

    async def _read(self) -> dict[str, Any]:
        if self.path is not None:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        else:
            assert self.url is not None
            data = json.loads(await self._download(self.url))
        if not isinstance(data, dict):
            raise ValueError(f"a key set is a JSON object, not {type(data).__name__}")
        return data

    async def _download(self, url: str) -> bytes:
        body = bytearray()
        async with (
            asyncio.timeout(self.timeout_s),  # overall: a dripping answer is cut off too
            httpx2.AsyncClient(timeout=self.timeout_s) as client,
            client.stream("GET", url, headers={"accept": "application/json"}) as response,
        ):
            response.raise_for_status()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > self.max_bytes:
                    raise ValueError(f"the key set is larger than {self.max_bytes} bytes")
        return bytes(body)

    async def refresh(self) -> None:
        """Read the key set now; on failure keep the old keys and record the error."""
        self.fetched_at = self.clock()
        try:
            data = await self._read()
            found = jwt.PyJWKSet.from_dict(data)
        except Exception as exc:  # the provider's answer, whatever it is, is no key set
            self.last_error = f"{type(exc).__name__}: {exc}"
            logger.warning("oauth: cannot read the key set at %s: %s", self.source, self.last_error)
            return
        keys = {k.key_id or f"#{i}": k for i, k in enumerate(found.keys)}
        added = sorted(set(keys) - set(self.keys))
        if added and self.keys:
            logger.info("oauth: new signing key(s) %s from %s", ", ".join(added), self.source)
        self.keys = keys
        self.last_error = None

    def _due(self, interval: float) -> bool:
        return self.fetched_at is None or self.clock() - self.fetched_at >= interval

    def _fetching(self) -> asyncio.Task[None]:
        """The fetch under way, or a new one (one at a time, shared by its waiters)."""
        task = self._fetch
        if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
            task = self._fetch = asyncio.get_running_loop().create_task(self.refresh())
        return task

    async def candidates(self, kid: str | None) -> list[jwt.PyJWK]:
        """Keys that may have signed a token with this ``kid`` (every key if none)."""
        held = self.cached(kid)
        running = self._fetch is not None and not self._fetch.done()
        if held:
            if self._due(self.max_age_s) and not running:
                self._fetching()  # behind this request: the held keys answer it now
            return held
        missing = kid is not None and self._due(self.min_interval_s)
        if running or missing or self._due(self.max_age_s):
            # shielded: a caller that goes away does not cancel the others' fetch, which
            # ends by itself within ``timeout_s``
            await asyncio.shield(self._fetching())
        return self.cached(kid)

    def cached(self, kid: str | None) -> list[jwt.PyJWK]:
        """The same, from the keys held now (no I/O)."""
        if kid is None:
            return list(self.keys.values())
        key = self.keys.get(kid)
        return [key] if key is not None else []


def _scope_values(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.split()
    if isinstance(value, Sequence):
        return [str(v) for v in value]
    return []


class OAuthResolver(IdentityResolver):
    """Bearer JWTs from an OAuth authorization server, plus optional static tokens.

    >>> OAuthResolver(settings, static=BearerTokens({...}))  # doctest: +SKIP

    Over HTTP a static token (matched by SHA-256) wins; otherwise the token must be
    a valid JWT for ``settings``. A missing or refused token raises
    ``Unauthenticated``; the SDK's bearer middleware asks ``verify_token`` first and
    answers HTTP 401 with ``WWW-Authenticate`` before any MCP message is read.
    Validated tokens are remembered until they expire (at most ``cache_size``). A token
    whose principal id is a static token's is refused unless ``share_static_ids``: two
    credentials never silently act as one principal.
    """

    def __init__(
        self,
        settings: OAuthSettings,
        *,
        static: BearerTokens | None = None,
        keys: KeySet | None = None,
        cache_size: int = 1024,
        on_refused: Callable[[str], None] | None = None,
    ) -> None:
        self.settings = settings
        self.static = static
        self.keys = keys or KeySet(
            url=settings.jwks_url,
            path=settings.keys_file,
            max_age_s=settings.jwks_max_age_s,
            min_interval_s=settings.jwks_min_interval_s,
            timeout_s=settings.jwks_timeout_s,
        )
        self.ladder = TrustLadder(settings.trust_levels)
        self.on_refused = on_refused
        self._cache: OrderedDict[str, tuple[Principal, list[str], float]] = OrderedDict()
        self._cache_size = cache_size
        # one id, one credential: rate limits, sessions and their owners go by the id
        self._static_ids = frozenset(
            p.id for p in (static.tokens.values() if static is not None else ())
        )

    # -- validation ----------------------------------------------------------------------
    def _decode(self, token: str, keys: Sequence[jwt.PyJWK]) -> dict[str, Any]:
        s = self.settings
        if not keys:
            raise TokenRefused("unknown signing key")
        last: jwt.PyJWTError | None = None
        for key in keys:
            try:
                claims: dict[str, Any] = jwt.decode(
                    token,
                    key=key,
                    algorithms=list(s.algorithms),
                    audience=list(s.audience),
                    issuer=s.issuer,
                    leeway=s.leeway_s,
                    options={"require": ["exp", "iss", "aud"]},
                )
                return claims
            except jwt.ExpiredSignatureError:
                raise TokenRefused("expired") from None
            except jwt.InvalidAudienceError:
                raise TokenRefused("wrong audience") from None
            except jwt.InvalidIssuerError:
                raise TokenRefused("wrong issuer") from None
            except jwt.MissingRequiredClaimError as exc:
                raise TokenRefused("missing claim", repr(exc.claim)) from None
            except jwt.PyJWTError as exc:
                last = exc  # another key of the set may verify it
        raise TokenRefused("invalid", str(last))

    def principal_of(self, claims: Mapping[str, Any]) -> Principal:
        """The principal a validated token's claims map to (``TokenRefused`` when the
        mapping cannot be applied)."""
        s, c = self.settings, self.settings.claims
        who = next((claims[n] for n in c.id if isinstance(claims.get(n), str) and claims[n]), None)
        if who is None:
            raise TokenRefused("no identity claim", f"looked for {', '.join(c.id)}")
        if who in self._static_ids and not s.share_static_ids:
            raise TokenRefused(
                "id of a static token",
                f"{who!r} is a static bearer token's principal (oauth.share_static_ids: false)",
            )
        trust = s.trust
        if c.trust is not None and claims.get(c.trust) is not None:
            trust = str(claims[c.trust])
            if trust not in self.ladder.levels:
                raise TokenRefused(
                    "unknown trust level", f"claim {c.trust!r} is {trust!r}, not on the ladder"
                )
        agent_class = None
        if c.agent_class is not None and claims.get(c.agent_class) is not None:
            agent_class = str(claims[c.agent_class])
        return Principal(
            id=str(who),
            trust=trust,
            agent_class=agent_class,
            scope=self.groups_of(claims),
            attributes={n: claims[n] for n in c.attributes if n in claims},
            authenticated=True,
        )

    def groups_of(self, claims: Mapping[str, Any]) -> tuple[str, ...]:
        """The principal's scope (group names) from the token's scope claim: through
        ``scope_map`` when given, else the values starting with ``scope_prefix``
        (prefix removed). An absent claim is an empty scope: nothing is shown."""
        s = self.settings
        if s.claims.scope is None:
            return s.default_scope
        values = _scope_values(claims.get(s.claims.scope))
        if s.scope_map:
            out: list[str] = []
            for v in values:
                out += [g for g in s.scope_map.get(v, ()) if g not in out]
            return tuple(out)
        prefix = s.scope_prefix
        return tuple(v[len(prefix) :] for v in values if v.startswith(prefix) and v != prefix)

    def scopes_of(self, claims: Mapping[str, Any]) -> list[str]:
        """The token's OAuth scopes, checked against ``required_scopes``: from the claim
        ``claims.scope`` names (``scp`` for some providers), the one the principal's
        groups come from; from ``scope`` when groups are not read from the token."""
        return _scope_values(claims.get(self.settings.claims.scope or "scope"))

    def _remember(self, digest: str) -> tuple[Principal, list[str]] | None:
        hit = self._cache.get(digest)
        if hit is None:
            return None
        principal, scopes, expires = hit
        if expires + self.settings.leeway_s < time.time():
            del self._cache[digest]
            return None
        self._cache.move_to_end(digest)
        return principal, scopes

    def _store(self, digest: str, claims: Mapping[str, Any], principal: Principal) -> list[str]:
        scopes = self.scopes_of(claims)
        self._cache[digest] = (principal, scopes, float(claims["exp"]))
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return scopes

    def _refused(self, refused: TokenRefused) -> None:
        logger.info("oauth: bearer token refused: %s", refused)
        if self.on_refused is not None:
            self.on_refused(refused.reason)

    async def validate(self, token: str) -> tuple[Principal, list[str]]:
        """The principal and OAuth scopes of a valid JWT; ``TokenRefused`` otherwise."""
        digest = BearerTokens.digest(token)
        hit = self._remember(digest)
        if hit is not None:
            return hit
        try:
            kid = jwt.get_unverified_header(token).get("kid")
        except jwt.PyJWTError:
            raise TokenRefused("not a JWT") from None
        claims = self._decode(token, await self.keys.candidates(kid))
        principal = self.principal_of(claims)
        return principal, self._store(digest, claims, principal)

    def principal_for(self, token: str) -> Principal | None:
        """Sync lookup from static tokens, validated tokens and the keys held now (the
        groups extension's handlers, which run after ``verify_token``)."""
        if self.static is not None:
            found = self.static.principal_for(token)
            if found is not None:
                return found
        hit = self._remember(BearerTokens.digest(token))
        if hit is not None:
            return hit[0]
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            claims = self._decode(token, self.keys.cached(kid))
            return self.principal_of(claims)
        except (jwt.PyJWTError, TokenRefused):
            return None

    # -- IdentityResolver and TokenVerifier ------------------------------------------------
    async def resolve(self, caller: Caller) -> Principal | None:
        principal, _ = await self.resolve_with_scopes(caller)
        return principal

    async def resolve_with_scopes(self, caller: Caller) -> tuple[Principal | None, list[str]]:
        """The caller's principal and its token's OAuth scopes (a static token is
        granted the required ones, as ``verify_token`` grants them)."""
        if caller.transport != "http":
            return None, []
        token = caller.bearer_token
        if token is None:
            raise Unauthenticated("Unauthorized: this server requires a bearer token")
        if self.static is not None:
            found = self.static.principal_for(token)
            if found is not None:
                return found, list(self.settings.required_scopes)
        try:
            return await self.validate(token)
        except TokenRefused as exc:
            self._refused(exc)
            raise Unauthenticated(f"Unauthorized: bearer token refused: {exc}") from None

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK ``TokenVerifier`` protocol: None makes the HTTP layer answer 401."""
        if self.static is not None:
            found = self.static.principal_for(token)
            if found is not None:
                return AccessToken(
                    token=BearerTokens.digest(token),
                    client_id=found.id,
                    scopes=list(self.settings.required_scopes),
                )
        try:
            principal, scopes = await self.validate(token)
        except TokenRefused as exc:
            self._refused(exc)
            return None
        return AccessToken(token=BearerTokens.digest(token), client_id=principal.id, scopes=scopes)


__all__ = ["ClaimMap", "KeySet", "OAuthResolver", "OAuthSettings", "TokenRefused"]
