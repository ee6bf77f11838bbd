"""One way in: the gateway's HTTP guard resolves each request's caller once, checks Host
and Origin once, and reads a body once; everything behind it (the session cap, the SDK's
authentication, the fast path, the SDK's transport, a request's facts) takes what the
guard found. Real gateways on uvicorn with the guard's protocol, real MCP clients of
both protocol eras; the gateway's own meta-tools are the tools called.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import httpx
import jwt
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from _fixtures.gateway import INIT, MCP_HEADERS
from _fixtures.mcp_servers import serve_http
from _fixtures.oidc_provider import rsa_jwk
from toolgate import sdk_internals
from toolgate.gateway.config.model import parse_config
from toolgate.gateway.ingress.guard import Guard
from toolgate.gateway.ingress.protocol import GuardedProtocol
from toolgate.gateway.serve import Gateway
from toolgate.identity import BearerTokens, Caller
from toolgate.oauth import OAuthResolver
from toolgate.policy import Principal

TOKEN = "ingress-test-token"
OPERATOR = "ingress-operator-token"
ISSUER = "https://id.ingress.test"
AUDIENCE = "http://toolgate.ingress.test/mcp"
ERAS = ["legacy", "2026-07-28"]


def sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class AskedTokens(BearerTokens):
    """Bearer tokens counting the lookups of a token: every way to resolve one asks."""

    asked = 0

    def principal_for(self, token: str) -> Principal | None:
        self.asked += 1
        return super().principal_for(token)


class AskedOAuth(OAuthResolver):
    """An OAuth resolver counting each way it can be asked about a caller."""

    asked = 0

    async def resolve_with_scopes(self, caller: Caller) -> tuple[Principal | None, list[str]]:
        self.asked += 1  # ``resolve`` goes through it too
        return await super().resolve_with_scopes(caller)

    async def verify_token(self, token: str) -> Any:
        self.asked += 1
        return await super().verify_token(token)

    def principal_for(self, token: str) -> Principal | None:
        self.asked += 1
        return super().principal_for(token)


def config(tmp: Path, identity: str, **toolgate: Any) -> dict[str, Any]:
    """No backends (the meta-tools are served); ``identity`` is ``tokens``, ``oauth`` or
    ``none``."""
    who: dict[str, Any] = {}
    if identity == "tokens":
        who = {"tokens": {sha256(TOKEN): {"id": "ada", "trust": "verified", "scope": ["*"]}}}
    if identity in ("oauth", "oauth-scoped"):
        key = rsa_jwk("k1")
        public = {k: v for k, v in key.items() if k not in ("d", "p", "q", "dp", "dq", "qi")}
        (tmp / "jwks.json").write_text(json.dumps({"keys": [public]}))
        (tmp / "key.json").write_text(json.dumps(key))
        who = {
            "oauth": {
                "issuer": ISSUER,
                "audience": [AUDIENCE],
                "keys": str(tmp / "jwks.json"),
                "claims": {"scope": None},  # every group: the default scope
                # the SDK's RequireAuthMiddleware checks these against the guard's answer
                "required_scopes": ["mcp:tools"] if identity == "oauth-scoped" else [],
            }
        }
    return {"mcpServers": {}, "toolgate": {"identity": who, **toolgate}}


def jwt_for(tmp: Path, scope: str = "mcp:tools") -> str:
    key = jwt.PyJWK(json.loads((tmp / "key.json").read_text()))
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "ada", "iat": now, "exp": now + 300}
    claims["scope"] = scope
    return jwt.encode(claims, key.key, algorithm="RS256", headers={"kid": "k1"})


class Requests:
    """Outermost ASGI: numbers each HTTP request (``scope["test.request"]``), keeps its
    path and counts the body messages that came from the client."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.paths: list[str] = []
        self.bodies: list[int] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope["test.request"] = n = len(self.paths)
        self.paths.append(scope["path"])
        self.bodies.append(0)

        async def counted() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                self.bodies[n] += 1
            return message

        await self.app(scope, counted, send)


class Pulls:
    """ASGI at one point of the way in: the body messages pulled through ``receive`` there,
    by request number, as ``(point, message)``."""

    def __init__(self, app: ASGIApp, point: str, seen: dict[int, list[tuple[str, Any]]]) -> None:
        self.app = app
        self.point = point
        self.seen = seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        n = scope.get("test.request", -1)

        async def pulled() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                self.seen.setdefault(n, []).append((self.point, message))
            return message

        await self.app(scope, pulled, send)


@asynccontextmanager
async def gateway_at(
    cfg: dict[str, Any],
    *,
    identity: Callable[[Gateway], Any] | None = None,
    way_in: Callable[[list[Middleware]], list[Middleware]] | None = None,
) -> AsyncIterator[tuple[Gateway, Requests, str]]:
    """A gateway served on the guard's protocol, behind ``Requests``; ``identity`` makes
    its resolver, ``way_in`` edits its declared list of middleware."""
    gateway = Gateway(parse_config(cfg))
    if identity is not None:
        gateway.identity = identity(gateway)
    try:
        async with gateway.running():
            app = gateway.http_app()
            if way_in is not None:
                app.user_middleware = way_in(app.user_middleware)
            requests = Requests(app)
            async with serve_http(requests, http=GuardedProtocol) as url:
                yield gateway, requests, url
    finally:
        await gateway.close()


def is_guard(middleware: Middleware) -> bool:
    return cast(object, middleware.cls) is Guard


def client(url: str, token: str, era: str) -> Client[Any]:
    mode = {"mode": "legacy"} if era == "legacy" else {}
    return Client(StreamableHttpTransport(url, auth=token), **mode)


async def list_and_call(url: str, token: str, era: str) -> None:
    async with client(url, token, era) as c:
        assert "list_groups" in [t.name for t in await c.list_tools()]
        listed = await c.call_tool("list_groups", {})
        assert listed.structured_content == {"groups": []}


# -- the caller, resolved once ---------------------------------------------------------


def asked_tokens(gateway: Gateway) -> AskedTokens:
    tokens = gateway.identity
    assert isinstance(tokens, BearerTokens)
    return AskedTokens(tokens.tokens)


def asked_oauth(gateway: Gateway) -> AskedOAuth:
    oauth = gateway.identity
    assert isinstance(oauth, OAuthResolver)
    return AskedOAuth(oauth.settings, static=oauth.static)


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast-path", "sdk-path"])
@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("kind", ["tokens", "oauth", "oauth-scoped"])
async def test_each_http_request_asks_the_identity_resolver_once(
    tmp_path: Path, kind: str, era: str, fast_path: bool
) -> None:
    """Every request of a client's session (``initialize``, the SSE stream, listing,
    calling, ending) is resolved by the guard alone: the session cap, the SDK's
    authentication, the fast path and the request's facts read its verdict."""
    cfg = config(tmp_path, kind, http={"fast_path": fast_path})
    make = asked_tokens if kind == "tokens" else asked_oauth
    async with gateway_at(cfg, identity=make) as (gateway, requests, url):
        token = TOKEN if kind == "tokens" else jwt_for(tmp_path)
        await list_and_call(url, token, era)
        assert (gateway.fast_path is not None) == fast_path
        if gateway.fast_path is not None:
            assert gateway.fast_path.served == 1  # the call went by the fast path
    assert isinstance(gateway.identity, AskedTokens | AskedOAuth)
    assert requests.paths and set(requests.paths) == {"/mcp"}
    assert gateway.identity.asked == len(requests.paths)


@pytest.mark.parametrize("era", ERAS)
async def test_an_sdk_without_the_fast_paths_private_names_is_served_without_it(
    tmp_path: Path, era: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """When the SDK lacks a private name the fast path runs, the gateway says which and
    serves every request through the SDK's transport, instead of failing."""
    gone = ("mcp.server.runner._has_modern_envelope",)
    monkeypatch.setattr(sdk_internals, "FAST_PATH_MISSING", gone)
    with caplog.at_level(logging.WARNING, logger="toolgate.gateway"):
        async with gateway_at(config(tmp_path, "tokens")) as (gateway, _, url):
            await list_and_call(url, TOKEN, era)
            assert gateway.fast_path is None
    assert "the fast path for tools/call is off" in caplog.text
    assert "mcp.server.runner._has_modern_envelope" in caplog.text


async def test_a_refused_credential_is_answered_without_asking_again(tmp_path: Path) -> None:
    """A refused token is resolved once by the guard and answered 401 as before."""
    async with gateway_at(config(tmp_path, "tokens"), identity=asked_tokens) as (
        gateway,
        requests,
        url,
    ):
        headers = {
            "Accept": "application/json, text/event-stream",
            "Authorization": "Bearer not-a-known-token",
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        async with httpx.AsyncClient() as http:
            refused = await http.post(url, json=body, headers=headers)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith('Bearer error="invalid_token"')
    assert isinstance(gateway.identity, AskedTokens)
    assert (gateway.identity.asked, len(requests.paths)) == (1, 1)


async def test_a_token_without_a_required_scope_is_refused_by_the_guards_answer(
    tmp_path: Path,
) -> None:
    """With ``required_scopes``, the SDK's 403 reads the scopes the guard's one
    resolution found: a valid token lacking one is refused, and asked about once."""
    cfg = config(tmp_path, "oauth-scoped")
    async with gateway_at(cfg, identity=asked_oauth) as (gateway, requests, url):
        headers = {
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {jwt_for(tmp_path, scope='other')}",
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        async with httpx.AsyncClient() as http:
            refused = await http.post(url, json=body, headers=headers)
    assert refused.status_code == 403
    assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
    assert isinstance(gateway.identity, AskedOAuth)
    assert (gateway.identity.asked, len(requests.paths)) == (1, 1)


async def test_webmcp_reads_the_guards_answer_instead_of_asking_again(tmp_path: Path) -> None:
    """``/webmcp/*`` serves the principal the guard resolved: one resolution a request."""
    async with gateway_at(config(tmp_path, "tokens"), identity=asked_tokens) as (
        gateway,
        requests,
        url,
    ):
        root = url.removesuffix("/mcp")
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient() as http:
            listed = await http.get(f"{root}/webmcp/tools", headers=auth)
            called = await http.post(
                f"{root}/webmcp/call", headers=auth, json={"name": "list_groups", "arguments": {}}
            )
    assert (listed.status_code, called.status_code) == (200, 200)
    assert isinstance(gateway.identity, AskedTokens)
    assert requests.paths == ["/webmcp/tools", "/webmcp/call"]
    assert gateway.identity.asked == 2


# -- Host and Origin, checked once -------------------------------------------------------

PATHS = ["/mcp", "/healthz", "/dashboard/"]
FOREIGN = [
    ({"Host": "evil.example"}, (421, "Invalid Host header")),
    ({"Origin": "http://evil.example"}, (403, "Invalid Origin header")),
]


def with_dashboard(tmp: Path, identity: str = "tokens") -> dict[str, Any]:
    return config(tmp, identity, dashboard={"enabled": True, "tokens": [sha256(OPERATOR)]})


async def request(url: str, path: str, headers: dict[str, str]) -> httpx.Response:
    base = url.removesuffix("/mcp")
    token = OPERATOR if path.startswith("/dashboard") else TOKEN
    headers = {"Authorization": f"Bearer {token}", **headers}
    async with httpx.AsyncClient() as http:
        if path == "/mcp":
            return await http.post(f"{base}{path}", json=INIT, headers={**MCP_HEADERS, **headers})
        return await http.get(f"{base}{path}", headers=headers)


@pytest.mark.parametrize(("foreign", "answer"), FOREIGN, ids=["host", "origin"])
@pytest.mark.parametrize("path", PATHS)
async def test_a_foreign_host_or_origin_is_refused_by_the_guard_before_anything_else(
    tmp_path: Path, path: str, foreign: dict[str, str], answer: tuple[int, str]
) -> None:
    async with gateway_at(with_dashboard(tmp_path), identity=asked_tokens) as (gw, _, url):
        refused = await request(url, path, foreign)
        assert (refused.status_code, refused.text) == answer
        assert isinstance(gw.identity, AskedTokens)
        assert gw.identity.asked == 0  # refused before the caller was looked at
        allowed = await request(url, path, {})
        assert allowed.status_code == 200


@pytest.mark.parametrize(("foreign", "answer"), FOREIGN, ids=["host", "origin"])
@pytest.mark.parametrize("path", PATHS)
async def test_behind_the_guard_no_route_checks_host_or_origin_again(
    tmp_path: Path, path: str, foreign: dict[str, str], answer: tuple[int, str]
) -> None:
    """With the guard taken out of the declared list, a foreign Host or Origin reaches
    every route and is served: nothing behind the guard checks it a second time. (No
    bearer tokens here: without the guard, nobody resolves one.)"""

    def without_the_guard(way_in: list[Middleware]) -> list[Middleware]:
        return [m for m in way_in if not is_guard(m)]

    async with gateway_at(with_dashboard(tmp_path, "none"), way_in=without_the_guard) as (
        _,
        _,
        url,
    ):
        served = await request(url, path, foreign)
    assert served.status_code == 200
    assert served.text != answer[1]


# -- the body, read once -----------------------------------------------------------------


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast-path", "sdk-path"])
@pytest.mark.parametrize("era", ERAS)
async def test_a_body_is_read_from_the_client_once_and_replayed_once(
    tmp_path: Path, era: str, fast_path: bool
) -> None:
    """The guard reads each body and hands it on: the fast path takes it from the scope
    without pulling it again, and the SDK behind gets the guard's one replay."""
    seen: dict[int, list[tuple[str, Any]]] = {}
    cfg = config(tmp_path, "tokens", http={"fast_path": fast_path})

    def watched(way_in: list[Middleware]) -> list[Middleware]:  # right behind the guard
        assert is_guard(way_in[0])
        return [way_in[0], Middleware(Pulls, point="guard", seen=seen), *way_in[1:]]

    async with gateway_at(cfg, way_in=watched) as (gateway, requests, url):
        manager = gateway.server.session_manager
        if gateway.fast_path is not None:  # the SDK, behind the fast path
            gateway.fast_path.app = Pulls(gateway.fast_path.app, "sdk", seen)
        manager.asgi_app = Pulls(manager.asgi_app, "front", seen)  # type: ignore[assignment]
        await list_and_call(url, TOKEN, era)
        served = gateway.fast_path.served if gateway.fast_path is not None else 0
    assert served == (1 if fast_path else 0)
    assert requests.bodies and max(requests.bodies) == 1  # from the client: once each
    for n, pulled in seen.items():
        messages = {id(message) for _, message in pulled}
        assert len(messages) == 1, f"request {n} replayed {len(messages)} times"
        if fast_path:  # whatever was pulled in front of the SDK, the SDK pulled
            front = {id(m) for point, m in pulled if point == "front"}
            assert front <= {id(m) for point, m in pulled if point == "sdk"}
    with_body = [n for n, body in enumerate(requests.bodies) if body]
    assert len(seen) == len(with_body) - served  # the fast path's call pulled nothing
