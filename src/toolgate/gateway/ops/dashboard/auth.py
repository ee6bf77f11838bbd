"""The operator's way in: a bearer token matched by SHA-256, and the signed cookie a
browser gets for it after logging in once.

The cookie is HttpOnly, SameSite=Strict, scoped to the dashboard's path and signed with
a secret made when the process starts (a restart logs everyone out). Edge layer: stdlib,
the core's rule for a token's digest and the operator's token check (``ops.operator``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Iterable, Mapping

from toolgate.errors import ConfigError
from toolgate.gateway.ops.operator import digest, operator_token_ok
from toolgate.identity import is_token_digest

COOKIE = "toolgate_dashboard"


class OperatorAuth:
    """Checks operator tokens and the session cookies minted for them.

    >>> auth = OperatorAuth([digest("s3cret")]); auth.token_ok("s3cret")
    True
    """

    def __init__(
        self,
        token_digests: Iterable[str],
        *,
        max_age: int = 12 * 3600,
        clock: Callable[[], float] = time.time,
    ) -> None:
        digests = [d.lower() for d in token_digests]
        if not digests:
            raise ConfigError(
                "toolgate.dashboard.tokens: the dashboard is enabled but no operator token "
                "is configured; add the SHA-256 hex digest of one",
                key="toolgate.dashboard.tokens",
            )
        for d in digests:
            if not is_token_digest(d):
                raise ConfigError(
                    "toolgate.dashboard.tokens: entries are SHA-256 hex digests of operator "
                    f"tokens, never the tokens themselves; got one of length {len(d)}",
                    key="toolgate.dashboard.tokens",
                )
        self.digests = frozenset(digests)
        self.max_age = max_age
        self.clock = clock
        self._secret = secrets.token_bytes(32)

    def token_ok(self, token: str | None) -> bool:
        return operator_token_ok(token, self.digests)

    def _sign(self, payload: str) -> str:
        return hmac.new(self._secret, payload.encode(), hashlib.sha256).hexdigest()

    def cookie_for(self, token: str) -> str:
        """A cookie value for a valid ``token``: expiry, which token, signature."""
        payload = f"{int(self.clock()) + self.max_age}.{digest(token)[:16]}"
        return f"{payload}.{self._sign(payload)}"

    def cookie_ok(self, value: str | None) -> bool:
        if not value or value.count(".") != 2:
            return False
        expires, which, signature = value.split(".")
        if not hmac.compare_digest(self._sign(f"{expires}.{which}"), signature):
            return False
        if not expires.isdigit() or int(expires) < self.clock():
            return False
        return any(d.startswith(which) for d in self.digests)

    def allows(self, headers: Mapping[str, str], cookies: Mapping[str, str]) -> bool:
        """A request carrying a valid operator bearer token or session cookie."""
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and self.token_ok(token.strip()):
            return True
        return self.cookie_ok(cookies.get(COOKIE))
