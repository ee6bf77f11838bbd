"""WebMCP publishing: ``/webmcp.js`` (beside this file) and the JSON endpoints it calls.

The script lists a token holder's surfaced tools (``GET /webmcp/tools``), registers them
with ``document.modelContext`` and calls them (``POST /webmcp/call``) through the same
Delivery path as MCP, so every policy holds. An adapter beside ``lowlevel``, not in the
gateway, as it serves any ``Delivery``: imports the core, strategies, wire and Starlette.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from toolgate.catalog import ToolResult
from toolgate.errors import StoreUnavailable, ToolgateError, Unauthenticated, json_type
from toolgate.identity import Caller, IdentityFn, IdentityResolver
from toolgate.policy import Principal
from toolgate.request import resolved_or
from toolgate.strategies import Delivery
from toolgate.strategies.base import LEGACY, Strategy
from toolgate.strategies.base import Request as ToolRequest
from toolgate.wire import error_as_result, jsonrpc_code, mcp_error

SCRIPT = Path(__file__).parent / "webmcp.js"
AGENT_CLASS = "webmcp"
SESSION_HEADER = "x-toolgate-session"
_PAGE_SESSION = re.compile(r"^[A-Za-z0-9_-]{8,64}$")


class SessionsSeen(Protocol):
    """Told of each session WebMCP serves, e.g. the dashboard's ``SessionRecorder``."""

    async def seen(
        self,
        key: str,
        principal: Principal,
        *,
        protocol: str | None,
        strategy: str,
        transport: str = "mcp",
    ) -> None: ...


def result_json(result: ToolResult) -> dict[str, Any]:
    """A ``ToolResult`` in MCP's ``CallToolResult`` JSON shape."""
    out: dict[str, Any] = {"content": [dict(c) for c in result.content], "isError": result.is_error}
    if result.structured is not None:
        out["structuredContent"] = dict(result.structured)
    return out


def webmcp_routes(
    delivery: Delivery,
    identity: IdentityResolver | IdentityFn | None,
    *,
    recorder: SessionsSeen | None = None,
    allow_origins: Sequence[str] = ("*",),
) -> list[Route]:
    """``/webmcp.js``, ``/webmcp/tools`` and ``/webmcp/call``, for the gateway's root.

    >>> app.routes.extend(webmcp_routes(gateway.delivery, gateway.identity))

    The principal comes from the bearer token (``identity``; a principal without an
    agent class gets ``webmcp``), never from the page; without an authenticated
    principal (no tokens configured) every call is refused with 401. OAuth's required
    scopes are the gateway's to hold here, as on ``/mcp`` (``toolgate.gateway.ingress.auth``,
    403 before these routes run). Each page load is its own
    session, keyed ``webmcp:<principal>:<page id>`` so no page reaches another
    principal's state. ``allow_origins`` are the page origins allowed to call (CORS;
    no cookies are involved, the token is the credential).
    """
    origins = frozenset(allow_origins)

    def cors(request: Request) -> dict[str, str]:
        origin = request.headers.get("origin")
        if origin is None:
            return {}
        if "*" in origins or origin in origins:
            allowed = origin  # named, never "*": the gateway's edge has vetted the origin
        else:
            return {}
        return {
            "Access-Control-Allow-Origin": allowed,
            "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
            "Access-Control-Allow-Headers": f"authorization, content-type, {SESSION_HEADER}",
            "Access-Control-Max-Age": "600",
            "Vary": "Origin",
        }

    def refuse(request: Request, status: int, message: str) -> Response:
        headers = cors(request)
        if status == 401:
            headers["WWW-Authenticate"] = "Bearer"
        return JSONResponse({"error": {"message": message}}, status, headers=headers)

    async def session_for(request: Request) -> tuple[Strategy, ToolRequest]:
        headers = {k.lower(): v for k, v in request.headers.items()}
        found = await resolved_or(request.scope, identity, lambda: Caller("http", headers))
        if found is None or not found.authenticated:
            # any web page may call a loopback server: tools are published to token
            # holders only, never to whoever the default principal is
            raise Unauthenticated(
                "WebMCP publishing needs a bearer token: configure toolgate.identity.tokens"
            )
        principal: Principal = found
        if principal.agent_class is None:
            principal = dataclasses.replace(principal, agent_class=AGENT_CLASS)
        page = headers.get(SESSION_HEADER, "")
        key = f"webmcp:{principal.id}" + (f":{page}" if _PAGE_SESSION.match(page) else "")
        strategy, tool_request = delivery.request(
            session_key=key, principal=principal, protocol=LEGACY
        )
        if recorder is not None:
            await recorder.seen(
                key, principal, protocol=LEGACY, strategy=strategy.name, transport="webmcp"
            )
        return strategy, tool_request

    async def script(request: Request) -> Response:
        return FileResponse(
            SCRIPT,
            media_type="text/javascript; charset=utf-8",
            headers={"Cache-Control": "no-cache", **cors(request)},
        )

    async def preflight(request: Request) -> Response:
        headers = cors(request)
        return Response(status_code=204 if headers else 403, headers=headers)

    async def tools(request: Request) -> Response:
        try:
            strategy, tool_request = await session_for(request)
            listed = await delivery.list_all_tools(strategy, tool_request)
        except Unauthenticated as exc:
            return refuse(request, 401, exc.message)
        except StoreUnavailable as exc:
            return refuse(request, 503, exc.message)
        return JSONResponse({"strategy": strategy.name, "tools": listed}, headers=cors(request))

    async def call(request: Request) -> Response:
        try:  # who is calling, before the body is read
            strategy, tool_request = await session_for(request)
        except Unauthenticated as exc:
            return refuse(request, 401, exc.message)
        except StoreUnavailable as exc:
            return refuse(request, 503, exc.message)
        try:
            body = await request.json()
        except ValueError:
            return refuse(request, 400, "the body must be JSON: {name, arguments}")
        if not isinstance(body, Mapping) or not isinstance(body.get("name"), str):
            return refuse(request, 400, "the body must be JSON: {name, arguments}")
        arguments = body.get("arguments")
        if arguments is not None and not isinstance(arguments, Mapping):
            # absent or null is "no arguments", as for tools/call; anything else is a
            # mistake to name, never a call made without them
            return refuse(
                request, 400, f"'arguments' must be a JSON object, not {json_type(arguments)}"
            )
        try:
            reply = await delivery.call_tool(strategy, tool_request, body["name"], arguments)
        except Unauthenticated as exc:
            return refuse(request, 401, exc.message)
        except StoreUnavailable as exc:
            return refuse(request, 503, exc.message)
        except ToolgateError as exc:
            if jsonrpc_code(exc) is not None:  # unknown (or access-hidden: the same) tool
                err = mcp_error(exc)
                error = {"code": err.code, "message": err.message}
                return JSONResponse({"error": error}, headers=cors(request))
            payload = {"result": result_json(error_as_result(exc)), "list_changed": False}
            return JSONResponse(payload, headers=cors(request))
        payload = {"result": result_json(reply.result), "list_changed": reply.list_changed}
        return JSONResponse(payload, headers=cors(request))

    return [
        Route("/webmcp.js", script, methods=["GET"]),
        Route("/webmcp/tools", tools, methods=["GET"]),
        Route("/webmcp/call", call, methods=["POST"]),
        Route("/webmcp/tools", preflight, methods=["OPTIONS"]),
        Route("/webmcp/call", preflight, methods=["OPTIONS"]),
    ]
