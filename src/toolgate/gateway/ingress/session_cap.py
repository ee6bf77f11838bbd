"""Open MCP sessions per client: a bound, counted over the sessions the SDK holds.

The SDK's streamable-HTTP session manager caps sessions in total (``max_sessions``) and
ends a session idle for ``session_idle_timeout``; the gateway sets both from its config
(``toolgate.http.max_sessions``, ``toolgate.idle_ttl``). ``SessionCap`` adds what the SDK
lacks: at most ``per_client`` open sessions per client, so one caller cannot fill the
total with ``initialize`` calls. Edge layer: starlette only, no MCP imports (whether the
SDK still holds a session is asked of a callable it is given).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"

#: who opened a request, for counting: ``principal:<id>``, ``credential:<digest>`` or
#: ``address:<ip>``
ClientOf = Callable[[Scope, Headers], str]


class SessionCap:
    """ASGI middleware on the MCP path: refuses a client's new session (HTTP 429, a
    JSON-RPC error naming the limit) while it holds ``per_client`` open ones.

    >>> app = SessionCap(app, per_client=32, idle_timeout=3600, client_of=lambda s, h: "x",
    ...                  alive=lambda session: True)

    A session counts from the response that opened it for as long as the server holds it
    (``alive``): until its client ends it (``DELETE``), it has been idle for
    ``idle_timeout`` seconds, or the server ends it (a config reload that leaves its
    owner no token). What another client does with its id (a 404, a ``DELETE`` the
    server refuses) does not end it. Requests of a protocol version ``stateless`` names
    (2026-07-28) open none and pass.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        per_client: int,
        idle_timeout: float,
        client_of: ClientOf,
        alive: Callable[[str], bool],
        path: str = "/mcp",
        clock: Callable[[], float] = time.monotonic,
        stateless: Callable[[str | None], bool] = lambda version: False,
    ) -> None:
        self.app = app
        #: whether requests of a protocol version (its header) never open a session
        self.stateless = stateless
        self.per_client = per_client
        self.idle_timeout = idle_timeout
        self.client_of = client_of
        #: whether the server still holds a session (by id): the one judge of its end
        self.alive = alive
        self.path = path
        self.clock = clock
        self._open: dict[str, str] = {}  # session -> its client
        self._by_client: dict[str, set[str]] = {}
        self._opening: dict[str, int] = {}  # admitted, response not started yet
        self._swept = clock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        session = headers.get(SESSION_HEADER)
        if session is None:
            # no session is opened but by a POST of a protocol that has sessions
            if scope["method"] != "POST" or self.stateless(headers.get(VERSION_HEADER)):
                await self.app(scope, receive, send)
                return
            await self._opening_request(self.client_of(scope, headers), scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)  # unknown: the SDK answers 404
        finally:
            if session in self._open and not self.alive(session):
                self._drop(session)  # ended by this request (a DELETE), or before it

    def open_sessions(self, client: str) -> int:
        """Sessions ``client`` holds now (those the server no longer holds are let go)."""
        self._expire(client)
        return len(self._by_client.get(client, ())) + self._opening.get(client, 0)

    async def _opening_request(
        self, client: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        if self.open_sessions(client) >= self.per_client:
            await self.refusal()(scope, receive, send)
            return
        self._opening[client] = self._opening.get(client, 0) + 1
        pending = True

        async def watch(message: Message) -> None:
            nonlocal pending
            if message["type"] == "http.response.start" and pending:
                # counted as opening until now, as open from now: never both, never neither
                pending = False
                self._release(client)
                session = Headers(raw=message.get("headers", [])).get(SESSION_HEADER)
                if session is not None and message["status"] < 400:
                    self._add(session, client)
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if pending:
                self._release(client)

    def refusal(self) -> JSONResponse:
        message = (
            f"Too many open sessions for this client (at most {self.per_client}): end one "
            "(HTTP DELETE with its Mcp-Session-Id) or reuse it; idle sessions end after "
            f"{self.idle_timeout:g}s"
        )
        body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
        return JSONResponse(body, 429, headers={"Retry-After": str(int(self.idle_timeout))})

    # -- the books -------------------------------------------------------------------------
    def _add(self, session: str, client: str) -> None:
        self._open[session] = client
        self._by_client.setdefault(client, set()).add(session)

    def _drop(self, session: str) -> None:
        client = self._open.pop(session, None)
        if client is None:
            return
        mine = self._by_client.get(client)
        if mine is not None:
            mine.discard(session)
            if not mine:
                del self._by_client[client]

    def _release(self, client: str) -> None:
        left = self._opening.get(client, 0) - 1
        if left > 0:
            self._opening[client] = left
        else:
            self._opening.pop(client, None)

    def _expire(self, client: str) -> None:
        for session in [s for s in self._by_client.get(client, ()) if not self.alive(s)]:
            self._drop(session)
        now = self.clock()
        if now - self._swept > self.idle_timeout:  # clients that never came back
            self._swept = now
            for session in [s for s in self._open if not self.alive(s)]:
                self._drop(session)
