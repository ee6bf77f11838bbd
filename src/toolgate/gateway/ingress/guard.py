"""The HTTP guard: every request passes these checks, once, before any route sees it.

``Guard`` is ASGI middleware around the whole gateway app (``/mcp``, WebMCP, the
dashboard): the client's address behind trusted proxies (``scope["client"]``), ``Host``
and ``Origin`` against the one list of allowed hosts (DNS rebinding), one well-formed
``Authorization`` credential resolved once (``CALLER``), a known ``MCP-Protocol-Version``,
and the body read once (``BODY``) and judged by ``envelope`` (its size, JSON nesting, lone
surrogates, and the shape of a JSON-RPC message and of a 2026-07-28 request's envelope).
Ingress layer: Starlette, the SDK's types, the core's identity and ``toolgate.request``'s
verdict.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from mcp_types import (
    UNSUPPORTED_PROTOCOL_VERSION,
)
from mcp_types.version import SUPPORTED_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolgate.gateway.ingress.envelope import (
    BodyProblem,
    json_problem,
)
from toolgate.gateway.ingress.envelope import (
    GuardLimits as GuardLimits,
)
from toolgate.gateway.ingress.forwarded import TrustedProxies
from toolgate.identity import Caller, IdentityResolver
from toolgate.request import CALLER, Resolved

#: Host names every gateway accepts, whatever it binds to: the one list
LOCAL_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")
#: the scope key under which ``Guard`` hands on the body it read (bytes)
BODY = "toolgate.body"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")


def version_refusal(version: str) -> Response | None:
    """A 400 for an ``MCP-Protocol-Version`` header naming no version MCP knows (the spec:
    "MUST respond with 400 Bad Request"), on either era, with the 2026-07-28 error's
    code and data (``supported``, ``requested``); None for a known one."""
    if version in SUPPORTED_PROTOCOL_VERSIONS:
        return None
    shown = version[:64]
    error = {
        "code": UNSUPPORTED_PROTOCOL_VERSION,
        "message": f"Unsupported protocol version {shown!r} in the MCP-Protocol-Version "
        f"header; supported: {', '.join(SUPPORTED_PROTOCOL_VERSIONS)}",
        "data": {"supported": list(SUPPORTED_PROTOCOL_VERSIONS), "requested": shown},
    }
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, 400)


def host_name(netloc: str) -> str:
    """The host part of a ``Host`` header or an origin's ``host:port``, lower-case."""
    host = netloc.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def allowed_names(host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """Loopback names, ``extra`` and the bind address unless it is a wildcard."""
    names = {*LOCAL_NAMES, *(host_name(h) for h in extra)}
    if host not in ("0.0.0.0", "::", ""):
        names.add(host_name(f"[{host}]" if ":" in host and not host.startswith("[") else host))
    return frozenset(names)


def origin_allowed(origin: str, names: frozenset[str], origins: frozenset[str]) -> bool:
    """An ``Origin`` the gateway serves: an http(s) origin on an allowed host, or one
    listed exactly in ``origins`` (``toolgate.http.allowed_origins``)."""
    if origin.rstrip("/") in origins:
        return True
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and host_name(parts.netloc) in names


def credential_problem(values: list[str]) -> str | None:
    """Why the ``Authorization`` header(s) cannot be taken as one credential, or None."""
    if not values:
        return None
    if len(values) > 1:
        return "send one Authorization header, not several"
    parts = values[0].strip().split(" ")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return "the Authorization header must be '<scheme> <credential>' with one credential"
    if "," in parts[1]:
        return "the Authorization header carries more than one credential"
    return None


class _TooLarge(Exception):
    pass


class Guard:
    """ASGI middleware: the checks above, in that order, on every HTTP request.

    >>> app = Guard(app, names=allowed_names("127.0.0.1"), limits=GuardLimits())

    With an ``identity`` the caller is resolved from its headers once, the verdict put in
    the scope (``CALLER``) for everything behind; a body is read (and checked) only for
    a caller it admits, others reach the route unread (it answers 401 without reading),
    except on ``own_credentials`` paths (the dashboard's login form: its body is the
    credential). A body read is handed on once: under ``BODY``, and replayed to
    ``receive``. ``rpc_paths`` hold JSON-RPC. Behind ``proxies`` the client's address
    is resolved first, once, into ``scope["client"]``: the one every later reader uses.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        names: frozenset[str],
        limits: GuardLimits,
        origins: Iterable[str] = (),
        identity: IdentityResolver | None = None,
        own_credentials: tuple[str, ...] = ("/dashboard",),
        rpc_paths: Iterable[str] = ("/mcp",),
        proxies: TrustedProxies | None = None,
    ) -> None:
        self.app = app
        self.names = names
        self.limits = limits
        self.origins = frozenset(o.rstrip("/") for o in origins)
        self.identity = identity
        self.own_credentials = own_credentials
        self.rpc_paths = frozenset(rpc_paths)
        self.proxies = proxies or TrustedProxies()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if self.proxies.networks and scope.get("client"):
            self.forwarded(scope, headers)
        refusal = self.refusal(scope, headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        refused = False
        if self.identity is not None:
            caller = Caller("http", dict(headers.items()))
            resolved = scope[CALLER] = await Resolved.of(self.identity, caller)
            refused = resolved.refused is not None
        if scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.limits.max_body_bytes:
            await self.too_large()(scope, receive, send)
            return
        if refused and not scope["path"].startswith(self.own_credentials):
            await self.app(scope, self.bounded(receive), send)
            return
        try:
            async with asyncio.timeout(self.limits.body_timeout):
                body = await self.read(receive)
        except _TooLarge:
            await self.too_large()(scope, receive, send)
            return
        except TimeoutError:
            message = f"the request body did not arrive within {self.limits.body_timeout:g}s"
            await PlainTextResponse(message, 408)(scope, receive, send)
            return
        if body is None:
            return  # the client went away
        if not headers.get("content-type", "").startswith(_FORMS):
            # any other body may be read as JSON (Starlette's request.json() does not
            # look at the content type), so every one is checked
            problem = json_problem(body, self.limits, rpc=scope["path"] in self.rpc_paths)
            if problem is not None:
                await self.answer(problem, rpc=scope["path"] in self.rpc_paths)(
                    scope, receive, send
                )
                return
        scope[BODY] = body
        await self.app(scope, replay(body, receive), send)

    def forwarded(self, scope: Scope, headers: Headers) -> None:
        """The client's address (``scope["client"]``, port 0 when a proxy named it) and
        scheme (``scope["scheme"]``) as a trusted proxy's headers give them."""
        peer = scope["client"]
        names = ("forwarded", "x-forwarded-for", "x-forwarded-proto")
        said = {n: headers.getlist(n) for n in names}
        address = self.proxies.client(peer[0], said)
        if address != peer[0]:
            scope["client"] = (address, 0)
        scope["scheme"] = self.proxies.scheme(peer[0], scope["scheme"], said)

    def refusal(self, scope: Scope, headers: Headers) -> Response | None:
        """Host, Origin and Authorization, before anything else is looked at."""
        if len(headers.getlist("host")) > 1:
            # which one counts is up to the reader (a proxy may take the last): none does
            return PlainTextResponse("Bad Request: send one Host header, not several", 400)
        if host_name(headers.get("host", "")) not in self.names:
            return PlainTextResponse("Invalid Host header", 421)
        origin = headers.get("origin")
        if origin is not None and not origin_allowed(origin, self.names, self.origins):
            return PlainTextResponse("Invalid Origin header", 403)
        problem = credential_problem(headers.getlist("authorization"))
        if problem is not None:
            return JSONResponse(
                {"error": {"message": f"Bad Authorization header: {problem}"}},
                400,
                headers={"WWW-Authenticate": 'Bearer error="invalid_request"'},
            )
        version = headers.get("mcp-protocol-version")
        if scope["path"] in self.rpc_paths and version is not None:
            return version_refusal(version)
        return None

    def too_large(self) -> Response:
        limit = self.limits.max_body_bytes
        return PlainTextResponse(f"the request body is larger than {limit} bytes", 413)

    @staticmethod
    def answer(problem: BodyProblem, *, rpc: bool) -> Response:
        if rpc and problem.rpc_code is not None:
            error: dict[str, Any] = {"code": problem.rpc_code, "message": problem.message}
            if problem.rpc_data is not None:
                error["data"] = problem.rpc_data
            payload = {"jsonrpc": "2.0", "id": problem.rpc_id, "error": error}
            return JSONResponse(payload, problem.status)
        return JSONResponse({"error": {"message": problem.message}}, problem.status)

    async def read(self, receive: Receive) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limits.max_body_bytes:
                raise _TooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def bounded(self, receive: Receive) -> Receive:
        """``receive`` that ends the body as a disconnect once it passes the limit."""
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limits.max_body_bytes:
                    return {"type": "http.disconnect"}
            return message

        return limited


def replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, then whatever the client sends next
    (a disconnect, for streaming responses)."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


__all__ = [
    "BODY",
    "LOCAL_NAMES",
    "Guard",
    "GuardLimits",
    "allowed_names",
    "credential_problem",
    "host_name",
    "replay",
]
