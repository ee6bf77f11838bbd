"""The OAuth resource server holds on every route and against its own key provider.

One ``toolgate serve`` with OAuth (``required_scopes``, scopes in ``scp``), a static
token and the dashboard, over a JWKS server a test can make misbehave: WebMCP's tool
routes refuse a token without the required scopes as ``/mcp`` does; required scopes are
read from the claim the config names; a key set that is no JSON object, too large or
endlessly slow refuses new keys with 401 within a bounded time, keeps the keys it had and
never holds up a token whose key is held; operator answers are ``no-store``; an OAuth
token naming a static token's principal is refused.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from _fixtures.gateway import (
    ALICE_TOKEN,
    INIT,
    MCP_HEADERS,
    HttpGateway,
    gateway_config,
    sha256,
)
from _fixtures.gateway import toolgate_argv as argv
from _fixtures.mcp_servers import free_port
from toolgate.gateway.config.identity import identity_of
from toolgate.gateway.config.model import parse_config
from toolgate.identity import BearerTokens
from toolgate.oauth import ClaimMap, OAuthResolver, OAuthSettings, TokenRefused
from toolgate.policy import Principal

ISSUER = "https://issuer.test"
OPERATOR_TOKEN = "operator-secret-token"
TIMEOUT_S = 3.0  # the gateway's jwks_timeout_s
REQUIRED = "mcp:use"

pytestmark = pytest.mark.timeout(30)


class Signer:
    """An RSA key, its public JWK (``kid``) and the tokens it signs."""

    def __init__(self, kid: str) -> None:
        self.kid = kid
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        self.jwk.update(kid=kid, alg="RS256", use="sig")

    def token(self, audience: str, **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": ISSUER, "aud": audience, "sub": "user-1", "exp": now + 600, "iat": now}
        body["scp"] = f"{REQUIRED} tools:math"
        body["jti"] = f"{time.monotonic_ns()}"  # a new token each time: never the cached one
        body.update(claims)
        return jwt.encode(body, self.key, algorithm="RS256", headers={"kid": self.kid})


class KeyServer:
    """A JWKS endpoint whose answer a test picks: ``ok`` (its keys), ``null``, ``num``,
    ``list`` (JSON that is no object), ``huge`` (a valid set over 1 MiB) or ``drip`` (its
    keys, one byte every 0.3 s)."""

    def __init__(self) -> None:
        self.keys: list[dict[str, Any]] = []
        self.mode = "ok"
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                mode = server.mode
                body = {
                    "ok": json.dumps({"keys": server.keys}),
                    "drip": json.dumps({"keys": server.keys}),
                    "null": "null",
                    "num": "42",
                    "list": "[1, 2]",
                    "huge": json.dumps({"keys": server.keys, "pad": "x" * (2 << 20)}),
                }[mode].encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                if mode != "drip":
                    self.send_header("content-length", str(len(body)))
                self.end_headers()
                try:
                    if mode != "drip":
                        self.wfile.write(body)
                        return
                    for byte in body:  # never a long silence: only an overall deadline ends it
                        if server.mode != "drip":
                            return
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(0.3)
                except OSError:
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/jwks"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.mode = "ok"
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def k1() -> Signer:
    return Signer("k1")


@pytest.fixture(scope="module")
def keys(k1: Signer) -> Iterator[KeyServer]:
    server = KeyServer()
    server.keys = [k1.jwk]
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def key_mode(keys: KeyServer) -> Iterator[KeyServer]:
    """The key server, back to ``ok`` (and the signing keys it had) after the test."""
    held = list(keys.keys)
    try:
        yield keys
    finally:
        keys.mode = "ok"
        keys.keys = held


@pytest.fixture(scope="module")
def gateway(keys: KeyServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    tmp = tmp_path_factory.mktemp("oauth-hold")
    port = free_port()
    identity: dict[str, Any] = {
        "tokens": {sha256(ALICE_TOKEN): {"id": "alice", "trust": "verified", "scope": ["math"]}},
        "oauth": {
            "issuer": ISSUER,
            "audience": [f"http://127.0.0.1:{port}/mcp"],
            "jwks_url": keys.url,
            "leeway_s": 0,
            "jwks_min_interval_s": 0,
            "jwks_max_age_s": 1,  # stale at once: every test meets a refresh
            "jwks_timeout_s": TIMEOUT_S,
            "claims": {"scope": "scp"},
            "scope_prefix": "tools:",
            "required_scopes": [REQUIRED],
        },
    }
    dashboard = {"enabled": True, "tokens": [sha256(OPERATOR_TOKEN)]}
    config = gateway_config(tmp, strategy="flat", identity=identity, dashboard=dashboard)
    served = HttpGateway([*argv(), "serve", str(config)], tmp / "gateway.log", port=port)
    served.start()
    try:
        yield served
    finally:
        served.stop()


def metadata_url(gateway: HttpGateway) -> str:
    return f"{gateway.origin}/.well-known/oauth-protected-resource/mcp"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def post_init(http: httpx.AsyncClient, gateway: HttpGateway, token: str) -> httpx.Response:
    return await http.post(gateway.url, json=INIT, headers={**MCP_HEADERS, **bearer(token)})


def assert_invalid_token(response: httpx.Response, gateway: HttpGateway) -> None:
    assert response.status_code == 401, response.text
    challenge = response.headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge
    assert f'resource_metadata="{metadata_url(gateway)}"' in challenge


def log_of(gateway: HttpGateway) -> str:
    return gateway.log.read_text(encoding="utf-8", errors="replace")


# -- WebMCP and the required scopes ------------------------------------------------------------


async def test_webmcp_refuses_a_token_without_the_required_scope_as_mcp_does(
    gateway: HttpGateway, k1: Signer
) -> None:
    lacking = k1.token(gateway.url, scp="tools:math")
    async with httpx.AsyncClient(base_url=gateway.origin, timeout=10) as http:
        on_mcp = await post_init(http, gateway, lacking)
        listed = await http.get("/webmcp/tools", headers=bearer(lacking))
        called = await http.post(
            "/webmcp/call", headers=bearer(lacking), json={"name": "add", "arguments": {"a": 2}}
        )
    assert on_mcp.status_code == 403
    challenge = on_mcp.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert f'resource_metadata="{metadata_url(gateway)}"' in challenge
    for refused in (listed, called):
        assert refused.status_code == 403, refused.text
        assert refused.headers["www-authenticate"] == challenge
        assert refused.json()["error"] == "insufficient_scope"


async def test_webmcp_serves_a_token_with_the_required_scope_and_the_static_token(
    gateway: HttpGateway, k1: Signer
) -> None:
    async with httpx.AsyncClient(base_url=gateway.origin, timeout=10) as http:
        for token in (k1.token(gateway.url), ALICE_TOKEN):
            listed = await http.get("/webmcp/tools", headers=bearer(token))
            assert listed.status_code == 200, listed.text
            assert sorted(t["name"] for t in listed.json()["tools"]) == ["add", "echo", "multiply"]
        missing = await http.get("/webmcp/tools")  # no token: WebMCP's own 401, as before
    assert missing.status_code == 401
    assert "error" in missing.json()


async def test_required_scopes_are_read_from_the_claim_the_config_names_for_scopes(
    gateway: HttpGateway, k1: Signer
) -> None:
    # scopes in "scp" (claims.scope), none in "scope": its groups and required scopes agree
    token = k1.token(gateway.url)
    async with httpx.AsyncClient(timeout=10) as http:
        assert (await post_init(http, gateway, token)).status_code == 200
    refusing = k1.token(gateway.url, scp="tools:math", scope=REQUIRED)
    async with httpx.AsyncClient(timeout=10) as http:
        assert (await post_init(http, gateway, refusing)).status_code == 403


def test_the_resolvers_oauth_scopes_come_from_the_configured_scope_claim() -> None:
    def resolver(scope_claim: str | None) -> OAuthResolver:
        settings = OAuthSettings(
            issuer=ISSUER,
            audience=("aud",),
            keys_file=Path("unused.json"),
            claims=ClaimMap(scope=scope_claim),
        )
        return OAuthResolver(settings)

    claims = {"scp": ["mcp:use", "tools:a"], "scope": "other"}
    assert resolver("scp").scopes_of(claims) == ["mcp:use", "tools:a"]
    assert resolver(None).scopes_of(claims) == ["other"]  # groups not from the token


# -- the key set: garbage, size and time -------------------------------------------------------


@pytest.mark.parametrize("mode", ["null", "num", "list"])
async def test_a_key_set_that_is_no_json_object_refuses_new_keys_and_keeps_the_old(
    gateway: HttpGateway, k1: Signer, key_mode: KeyServer, mode: str
) -> None:
    key_mode.mode = mode
    stranger = Signer("k-unknown").token(gateway.url)
    async with httpx.AsyncClient(base_url=gateway.origin, timeout=10) as http:
        refused = await post_init(http, gateway, stranger)
        assert_invalid_token(refused, gateway)
        elsewhere = await http.get("/healthz", headers=bearer(stranger))
        assert elsewhere.status_code < 500
        await asyncio.sleep(1.1)  # the held keys go stale: a refresh reads the garbage
        held = await post_init(http, gateway, k1.token(gateway.url))
        assert held.status_code == 200, held.text
        assert (
            await http.get("/healthz", headers=bearer(k1.token(gateway.url)))
        ).status_code == 200
    assert "cannot read the key set" in log_of(gateway)
    assert "Internal Server Error" not in refused.text


async def test_a_key_set_over_the_size_cap_is_refused_and_the_old_keys_kept(
    gateway: HttpGateway, k1: Signer, key_mode: KeyServer
) -> None:
    k2 = Signer("k2")
    key_mode.keys = [k1.jwk, k2.jwk]
    key_mode.mode = "huge"
    async with httpx.AsyncClient(timeout=10) as http:
        assert_invalid_token(await post_init(http, gateway, k2.token(gateway.url)), gateway)
        assert (await post_init(http, gateway, k1.token(gateway.url))).status_code == 200
    assert "larger than" in log_of(gateway)


async def test_a_slow_key_set_holds_up_no_held_key_and_an_unknown_kid_waits_at_most_the_deadline(
    gateway: HttpGateway, k1: Signer, key_mode: KeyServer
) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        assert (await post_init(http, gateway, k1.token(gateway.url))).status_code == 200
        key_mode.mode = "drip"
        await asyncio.sleep(1.1)  # the held keys go stale

        async def timed(token: str) -> tuple[httpx.Response, float]:
            started = time.monotonic()
            response = await post_init(http, gateway, token)
            return response, time.monotonic() - started

        stranger = Signer("k-unknown").token(gateway.url)
        unknown = asyncio.create_task(timed(stranger))
        await asyncio.sleep(0.2)  # the unknown kid's fetch is under way
        held, held_s = await timed(k1.token(gateway.url))
        assert held.status_code == 200, held.text
        assert held_s < TIMEOUT_S - 1.0  # never behind the fetch (due 0.2 s before it)
        refused, refused_s = await unknown
        assert_invalid_token(refused, gateway)
        assert refused_s < TIMEOUT_S + 1.5
        # the next unknown kid starts a fetch of its own, bounded the same way
        again, again_s = await timed(Signer("k-other").token(gateway.url))
        assert_invalid_token(again, gateway)
        assert again_s < TIMEOUT_S + 1.5
    assert "TimeoutError" in log_of(gateway)


# -- operator answers ---------------------------------------------------------------------------


async def test_every_operator_answer_is_no_store(gateway: HttpGateway) -> None:
    operator = bearer(OPERATOR_TOKEN)
    async with httpx.AsyncClient(base_url=gateway.origin, timeout=10) as http:
        answers = {
            "page": await http.get("/dashboard/", headers=operator),
            "login": await http.get("/dashboard/login"),
            "api": await http.get("/dashboard/api/overview", headers=operator),
            "sessions": await http.get("/dashboard/api/sessions", headers=operator),
            "api 401": await http.get("/dashboard/api/overview"),
            "page 401": await http.get("/dashboard/"),
            "metrics": await http.get("/metrics", headers=operator),
            "metrics 401": await http.get("/metrics"),
            "metrics 403": await http.get("/metrics", headers=bearer(ALICE_TOKEN)),
            "readyz": await http.get("/readyz"),
        }
        async with http.stream("GET", "/dashboard/api/events", headers=operator) as events:
            answers["events"] = events
    assert answers["api"].status_code == 200
    assert answers["api 401"].status_code == 401
    assert answers["metrics"].status_code == 200
    unstored = {name: r.headers.get("cache-control") for name, r in answers.items()}
    assert unstored == dict.fromkeys(answers, "no-store")


# -- one principal id, one credential --------------------------------------------------------


async def test_an_oauth_token_naming_a_static_tokens_principal_is_refused(
    gateway: HttpGateway, k1: Signer
) -> None:
    impostor = k1.token(gateway.url, sub="alice")
    async with httpx.AsyncClient(base_url=gateway.origin, timeout=10) as http:
        assert_invalid_token(await post_init(http, gateway, impostor), gateway)
        webmcp = await http.get("/webmcp/tools", headers=bearer(impostor))
        assert webmcp.status_code == 401
        assert (await post_init(http, gateway, ALICE_TOKEN)).status_code == 200
    log = log_of(gateway)
    assert "id of a static token" in log
    assert impostor not in log


def test_sharing_a_static_tokens_principal_id_is_the_operators_choice() -> None:
    static = BearerTokens({sha256(ALICE_TOKEN): Principal(id="alice")})

    def resolver(share: bool) -> OAuthResolver:
        settings = OAuthSettings(
            issuer=ISSUER,
            audience=("aud",),
            keys_file=Path("unused.json"),
            share_static_ids=share,
        )
        return OAuthResolver(settings, static=static)

    with pytest.raises(TokenRefused, match="id of a static token"):
        resolver(False).principal_of({"sub": "alice"})
    assert resolver(False).principal_of({"sub": "bob"}).id == "bob"
    assert resolver(True).principal_of({"sub": "alice"}).id == "alice"
    cfg = parse_config(
        {
            "mcpServers": {},
            "toolgate": {
                "identity": {
                    "oauth": {
                        "issuer": ISSUER,
                        "audience": ["https://mcp.test/mcp"],
                        "jwks_url": "https://issuer.test/jwks",
                        "share_static_ids": True,
                        "jwks_timeout_s": 2,
                    }
                }
            },
        }
    )
    built = identity_of(cfg)
    assert isinstance(built, OAuthResolver)
    assert built.settings.share_static_ids is True
    assert built.keys.timeout_s == 2
