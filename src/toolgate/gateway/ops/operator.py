"""Who is the operator, and the answer to anyone else on an operator's route.

A request is the operator's when its bearer token's SHA-256 is one of
``toolgate.dashboard.tokens``: the dashboard, ``/admin/reload``, ``/metrics`` and
``/readyz``'s counts check it here. Operations layer: Starlette and the stdlib.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from toolgate.gateway.config.model import GatewayConfig
from toolgate.identity import BearerTokens

#: the config holds an operator token as the same digest as a caller's (``identity``)
digest = BearerTokens.digest


def operator_token_ok(token: str | None, digests: Iterable[str]) -> bool:
    if not token:
        return False
    mine = digest(token)
    # compare against every digest: the time taken says nothing about which matched
    return any([hmac.compare_digest(mine, d.lower()) for d in digests])


def refusal(authorization: str, digests: Iterable[str], *, realm: str) -> Response | None:
    """None when the ``Authorization`` header carries an operator token; else the answer:
    401 (with the challenge) without a bearer token, 403 for another one."""
    scheme, _, token = authorization.partition(" ")
    token = token.strip() if scheme.lower() == "bearer" else ""
    if not token:
        challenge = {"WWW-Authenticate": f'Bearer realm="{realm}"'}
        return JSONResponse({"error": "operator token required"}, 401, headers=challenge)
    if not operator_token_ok(token, digests):
        return JSONResponse({"error": "this token is not an operator token"}, 403)
    return None


def refused(cfg: GatewayConfig, request: Request, realm: str) -> Response | None:
    """``refusal`` against the operator tokens ``cfg`` holds now (a reload may change
    them); None as well when there are none: a gateway without operators keeps its
    operations routes open, as it did before it had any."""
    digests = cfg.toolgate.dashboard.tokens
    if not digests:
        return None
    return refusal(request.headers.get("authorization", ""), digests, realm=realm)


__all__ = ["digest", "operator_token_ok", "refusal", "refused"]
