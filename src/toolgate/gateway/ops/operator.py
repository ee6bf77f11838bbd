"""Who is the operator, and the answer to anyone else on an operator's route.

A request is the operator's when its bearer token's SHA-256 is one of
``toolgate.dashboard.tokens``: the dashboard, ``/admin/reload``, ``/metrics`` and
``/readyz``'s counts check it here; what they answer is ``no-store`` (``NO_STORE``).
Operations layer: Starlette and the stdlib.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Message, Send

from toolgate.gateway.config.model import GatewayConfig
from toolgate.identity import BearerTokens

#: the config holds an operator token as the same digest as a caller's (``identity``)
digest = BearerTokens.digest
#: an operator's answer (and the refusal of one) is for no cache, shared or private
NO_STORE = {"Cache-Control": "no-store"}


def no_store(send: Send) -> Send:
    """``send`` with ``Cache-Control: no-store`` on the response's start, in place of
    any other ``Cache-Control`` (ASGI: every answer of an app, streamed ones too)."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers", []) if k != b"cache-control"]
            message = {**message, "headers": [*headers, (b"cache-control", b"no-store")]}
        await send(message)

    return sending


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
        challenge = {"WWW-Authenticate": f'Bearer realm="{realm}"', **NO_STORE}
        return JSONResponse({"error": "operator token required"}, 401, headers=challenge)
    if not operator_token_ok(token, digests):
        return JSONResponse({"error": "this token is not an operator token"}, 403, headers=NO_STORE)
    return None


def refused(cfg: GatewayConfig, request: Request, realm: str) -> Response | None:
    """``refusal`` against the operator tokens ``cfg`` holds now (a reload may change
    them); None as well when there are none: a gateway without operators keeps its
    operations routes open, as it did before it had any."""
    digests = cfg.toolgate.dashboard.tokens
    if not digests:
        return None
    return refusal(request.headers.get("authorization", ""), digests, realm=realm)


__all__ = ["NO_STORE", "digest", "no_store", "operator_token_ok", "refusal", "refused"]
