"""``POST /admin/reload``: an operator asks a running gateway to read its config again.

Served when ``toolgate.dashboard.tokens`` names an operator token (no token 401, a wrong
one 403, as the dashboard checks it). Answers the reload's report: 200 applied, 422
refused; a body or a query, which a reload never reads, 400 and nothing reloaded.
Operations layer: Starlette, the dashboard's token rule and ``reload``; never ``serve``.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from toolgate.gateway.commands.reload import PATH
from toolgate.gateway.ops.dashboard.auth import OperatorAuth
from toolgate.gateway.ops.operator import NO_STORE, refusal
from toolgate.gateway.ops.reload import Reloadable, reload

REALM = "toolgate-admin"
TAKES_NOTHING = (
    f"POST {PATH} takes no body and no query: it reads the gateway's own config file again"
)


def mount_admin(
    gateway: Reloadable, host: str, allowed_hosts: Sequence[str]
) -> Sequence[BaseRoute]:
    """``/admin/reload`` when an operator token is configured (none: no route, 404)."""
    digests = gateway.cfg.toolgate.dashboard.tokens
    if not digests:
        return []
    OperatorAuth(digests)  # refuses digests that are not SHA-256, as the dashboard does

    async def reload_config(request: Request) -> Response:
        answer = refusal(request.headers.get("authorization", ""), digests, realm=REALM)
        if answer is not None:
            return answer
        # a reload reads the file the gateway was started with, nothing else: a body or a
        # query (another path, a partial config) would be ignored while the answer says
        # "applied", so it is refused and nothing is reloaded
        if request.url.query or await request.body():
            return JSONResponse({"error": TAKES_NOTHING}, 400, headers=NO_STORE)
        report = await reload(gateway)
        return JSONResponse(report.to_json(), 200 if report.applied else 422, headers=NO_STORE)

    return [Route(PATH, reload_config, methods=["POST"])]


__all__ = ["mount_admin"]
