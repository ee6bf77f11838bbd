"""The HTTP edge: every request passes these checks before any route sees it.

``Edge`` is ASGI middleware wrapped around the whole gateway app (``/mcp``, WebMCP, the
dashboard): ``Host`` and ``Origin`` against the allowed hosts (DNS rebinding), one
well-formed ``Authorization`` credential, the body's size (before reading, and only
after the caller is admitted), its JSON nesting, lone UTF-16 surrogates, and JSON-RPC
ids on the MCP path. ``GuardedProtocol`` bounds what the HTTP server itself holds
open: header deadlines, header size and a connection cap, and tells a request at once
when its client's connection closes (``Leaving``). Edge layer: starlette,
uvicorn, httptools.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit

import pydantic_core
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

#: Host names every gateway accepts, whatever it binds to.
LOCAL_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")


@dataclass(frozen=True)
class EdgeLimits:
    """What one request may hold. ``toolgate.http`` in the config sets them."""

    max_body_bytes: int = 1_048_576
    max_json_depth: int = 64
    body_timeout: float = 30.0


Admits = Callable[[Scope, Headers], bool]


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


@dataclass(frozen=True)
class BodyProblem:
    """Why a body is refused: HTTP status, message, and the JSON-RPC code and id when
    the body is an MCP message (answered as a JSON-RPC error)."""

    status: int
    message: str
    rpc_code: int | None = None
    rpc_id: Any = None


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of parsed JSON, counted without recursion; stops past ``limit``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            children = node.values() if isinstance(node, dict) else node
            stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return deepest


def surrogate_at(value: Any) -> str | None:
    """The path of the first string (key or value) holding a lone UTF-16 surrogate."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                return path or "(the body)"
        elif isinstance(node, dict):
            for k, v in node.items():
                if isinstance(k, str) and surrogate_at(k) is not None:
                    return f"{path}.{k!a}".lstrip(".")
                stack.append((v, f"{path}.{k}".lstrip(".")))
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))
    return None


def json_problem(body: bytes, limits: EdgeLimits, *, rpc: bool) -> BodyProblem | None:
    """Check a JSON body: nesting, lone surrogates and, for MCP (``rpc``), the id.

    Bodies that do not parse are left to the route, which answers its own parse error.
    """
    try:
        parsed = pydantic_core.from_json(body)  # rejects lone surrogates, bounds recursion
    except ValueError as exc:
        if "recursion limit" in str(exc):
            return BodyProblem(
                400, f"JSON nested deeper than {limits.max_json_depth} levels", -32600
            )
        try:  # the stdlib parser accepts lone surrogates: is that what failed?
            parsed = json.loads(body)
        except (ValueError, RecursionError):
            return None
        where = surrogate_at(parsed)
        if where is None:
            return None
        rpc_id = parsed.get("id") if isinstance(parsed, dict) else None
        return BodyProblem(
            400,
            f"Invalid params: {where} holds a lone UTF-16 surrogate, which is not valid "
            "Unicode and cannot be sent on",
            -32602,
            rpc_id if isinstance(rpc_id, str | int) and not isinstance(rpc_id, bool) else None,
        )
    # every level opens with "{" or "[": a body with no more of them than the limit
    # (counted in C, strings included) cannot nest deeper, and need not be walked
    deep = body.count(b"{") + body.count(b"[") > limits.max_json_depth
    if deep and _depth(parsed, limits.max_json_depth) > limits.max_json_depth:
        return BodyProblem(400, f"JSON nested deeper than {limits.max_json_depth} levels", -32600)
    if rpc and isinstance(parsed, dict) and "id" in parsed and "method" in parsed:
        rpc_id = parsed["id"]
        if isinstance(rpc_id, bool) or not isinstance(rpc_id, str | int):
            return BodyProblem(
                400, "Invalid Request: a request's id must be a string or an integer", -32600
            )
    return None


class _TooLarge(Exception):
    pass


class Edge:
    """ASGI middleware: the checks above, in that order, on every HTTP request.

    >>> app = Edge(app, names=allowed_names("127.0.0.1"), limits=EdgeLimits())

    ``admits(scope, headers)`` says whether the route would accept the caller's
    credentials; a body is read (and checked) only for admitted callers, others reach
    the route unread (it answers 401 without reading). ``rpc_paths`` hold JSON-RPC.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        names: frozenset[str],
        limits: EdgeLimits,
        origins: Iterable[str] = (),
        admits: Admits | None = None,
        rpc_paths: Iterable[str] = ("/mcp",),
    ) -> None:
        self.app = app
        self.names = names
        self.limits = limits
        self.origins = frozenset(o.rstrip("/") for o in origins)
        self.admits = admits
        self.rpc_paths = frozenset(rpc_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = self.refusal(scope, headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.limits.max_body_bytes:
            await self.too_large()(scope, receive, send)
            return
        if self.admits is not None and not self.admits(scope, headers):
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
        await self.app(scope, replay(body, receive), send)

    def refusal(self, scope: Scope, headers: Headers) -> Response | None:
        """Host, Origin and Authorization, before anything else is looked at."""
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
        return None

    def too_large(self) -> Response:
        limit = self.limits.max_body_bytes
        return PlainTextResponse(f"the request body is larger than {limit} bytes", 413)

    @staticmethod
    def answer(problem: BodyProblem, *, rpc: bool) -> Response:
        if rpc and problem.rpc_code is not None:
            error = {"code": problem.rpc_code, "message": problem.message}
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


def bearer_admits(accepts: Callable[[str], bool]) -> Admits:
    """``admits`` for bearer-token routes: a request whose token ``accepts``; paths under
    ``/dashboard`` authenticate themselves (the login form's body is the credential)."""

    def admits(scope: Scope, headers: Headers) -> bool:
        if scope["path"].startswith("/dashboard"):
            return True
        scheme, _, token = headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and bool(token.strip()) and accepts(token.strip())

    return admits


class _Paired:
    """A transport that sends a write together with the one right after it: a
    response's head waits for its body (written in the same turn of the event loop) and
    both leave in one send, one system call instead of two. A write nothing follows
    leaves at the end of the turn."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes) -> None:
        if not data:
            return
        if self._held is None:
            self._held = data
            self._loop.call_soon(self.flush)
            return
        held, self._held = self._held, None
        self._transport.write(held + data)

    def flush(self) -> None:
        held, self._held = self._held, None
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


#: the scope key under which ``GuardedProtocol`` puts its connection's ``Leaving``
LEAVING = "toolgate.leaving"


def _nothing() -> None:
    return None


class Leaving:
    """The end of one client connection, told to the requests on it that asked: a
    callback run when it closes, where a request would otherwise keep a task waiting on
    ``receive`` for ``http.disconnect``."""

    __slots__ = ("_callbacks", "left")

    def __init__(self) -> None:
        self.left = False
        self._callbacks: list[Callable[[], None]] = []

    def when(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` when the connection closes (now, if it has); returns what
        takes it back."""
        if self.left:
            callback()
            return _nothing
        self._callbacks.append(callback)

        def forget() -> None:
            with contextlib.suppress(ValueError):
                self._callbacks.remove(callback)

        return forget

    def closed(self) -> None:
        self.left = True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the edge's connection limits: a deadline for
    each request head (a client that opens a connection and dribbles, or never sends,
    its headers is closed after ``header_timeout`` seconds), a bound on a head's size
    (``max_header_bytes``: past it, 431 and the connection closes), and a cap on open
    connections (past ``max_connections`` a new one is closed at once). A response's
    head and body leave in one send (``_Paired``). Each request's scope carries the
    connection's ``Leaving`` (``LEAVING``). Configure with ``guarded_protocol``."""

    header_timeout: float = 10.0
    max_connections: int = 1000
    max_header_bytes: int = 16_384
    #: seconds a connection refused for its head's size still reads what the client sends
    linger: float = 2.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = cast(asyncio.Transport, _Paired(transport, self.loop))
        self._head_deadline: asyncio.TimerHandle | None = None
        self._head_bytes = 0  # of the head under way (bytes since the last complete one)
        self._head_done = False
        self._leaving = Leaving()
        self._refused = False  # its head was too large: answered 431, closing
        if len(self.connections) > self.max_connections:
            transport.close()
            return
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._head_done = False
        self._head_bytes = 0
        self._head_deadline = self.loop.call_later(self.header_timeout, self._head_late)

    def _disarm(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_late(self) -> None:
        self._head_deadline = None
        if not self._head_done and not self.transport.is_closing():
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # the head was refused: what follows is read and dropped
        head_was_done = self._head_done
        super().data_received(data)
        if head_was_done or self._head_done or self.transport.is_closing():
            return
        self._head_bytes += len(data)  # still in the head: the parser holds it all
        if self._head_bytes > self.max_header_bytes:
            self._refuse_head()

    def _refuse_head(self) -> None:
        """431, then the connection closes: our side at once (the client reads the
        answer to its end), theirs after ``linger`` seconds, what they send meanwhile
        read and dropped (closing with it unread would reset the connection, and the
        client could lose the answer)."""
        self._refused = True
        self._disarm()
        message = b"Request header fields too large"
        transport = cast(_Paired, self.transport)
        transport.write(
            STATUS_LINE[431]
            + b"content-type: text/plain; charset=utf-8\r\n"
            + b"content-length: %d\r\nconnection: close\r\n\r\n" % len(message)
            + message
        )
        transport.flush()
        if transport.can_write_eof():
            transport.write_eof()
        self.loop.call_later(self.linger, transport.close)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.scope[LEAVING] = self._leaving  # type: ignore[literal-required]

    def on_headers_complete(self) -> None:
        self._head_done = True
        self._disarm()  # the head is complete: the request is under way
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)  # the next request's head is in already
        super().on_response_complete()
        if not self.transport.is_closing() and not pipelined:
            self._arm()  # the next request's head has the same deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)
        self._leaving.closed()


def guarded_protocol(
    *, header_timeout: float, max_connections: int, max_header_bytes: int = 16_384
) -> type[GuardedProtocol]:
    """A ``GuardedProtocol`` subclass with these limits, for ``uvicorn.Config(http=...)``."""
    return type(
        "GuardedProtocol",
        (GuardedProtocol,),
        {
            "header_timeout": header_timeout,
            "max_connections": max_connections,
            "max_header_bytes": max_header_bytes,
        },
    )


__all__ = [
    "LEAVING",
    "Edge",
    "EdgeLimits",
    "GuardedProtocol",
    "Leaving",
    "allowed_names",
    "bearer_admits",
    "credential_problem",
    "guarded_protocol",
    "json_problem",
]
