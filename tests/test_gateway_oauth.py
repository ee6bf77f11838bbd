"""The gateway as an OAuth 2.1 resource server, end to end through ``toolgate serve``.

A real OpenID provider (``oidc-provider`` on Node) issues JWT access tokens; the
gateway validates them against the provider's JWKS, maps claims to principals whose
scope and trust shape the tool list, refuses expired, wrong-audience and unknown-key
tokens with 401 and a ``WWW-Authenticate`` header pointing at its RFC 9728 metadata,
follows a key rotation by ``kid``, and keeps static bearer tokens working.
"""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from prometheus_client.parser import text_string_to_metric_families

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
from _fixtures.oidc_provider import CLIENTS, OpenIDProvider, rsa_jwk
from toolgate.errors import ConfigError, Unauthenticated
from toolgate.gateway.commands.check import run_check
from toolgate.gateway.config.identity import identity_of
from toolgate.gateway.config.model import parse_config
from toolgate.identity import Caller
from toolgate.oauth import ClaimMap, OAuthResolver, OAuthSettings
from toolgate.policy import Principal


@pytest.fixture(scope="module")
def gateway(
    openid_provider: OpenIDProvider, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HttpGateway]:
    tmp = tmp_path_factory.mktemp("oauth-gateway")
    port = free_port()
    identity: dict[str, Any] = {
        "tokens": {sha256(ALICE_TOKEN): {"id": "alice", "trust": "verified", "scope": ["math"]}},
        "oauth": {
            "issuer": openid_provider.issuer,
            "audience": [f"http://127.0.0.1:{port}/mcp"],
            "jwks_url": openid_provider.jwks_url,
            "leeway_s": 0,
            "jwks_min_interval_s": 0,
            "claims": {"trust": "toolgate_trust", "class": "kind", "attributes": ["client_id"]},
            "trust": "detected",
            "scope_prefix": "tools:",
        },
    }
    config = gateway_config(tmp, strategy="flat", identity=identity)
    served = HttpGateway([*argv(), "serve", str(config)], tmp / "gateway.log", port=port)
    served.start()
    try:
        yield served
    finally:
        served.stop()


def client(gateway: HttpGateway, token: str) -> Client[Any]:
    return Client(StreamableHttpTransport(gateway.url, auth=token), mode="legacy")


async def tool_names(gateway: HttpGateway, token: str) -> list[str]:
    async with client(gateway, token) as c:
        return sorted(t.name for t in await c.list_tools())


async def post_init(gateway: HttpGateway, token: str | None) -> httpx.Response:
    headers = dict(MCP_HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with httpx.AsyncClient() as http:
        return await http.post(gateway.url, json=INIT, headers=headers)


def metadata_url(gateway: HttpGateway) -> str:
    return f"http://127.0.0.1:{gateway.port}/.well-known/oauth-protected-resource/mcp"


def assert_refused(response: httpx.Response, gateway: HttpGateway) -> None:
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert 'error="invalid_token"' in challenge
    assert f'resource_metadata="{metadata_url(gateway)}"' in challenge


async def test_a_provider_token_lists_what_its_scope_and_trust_claims_allow(
    gateway: HttpGateway, openid_provider: OpenIDProvider
) -> None:
    ci = openid_provider.token("ci-agent", gateway.url)
    # scope "tools:notes" -> group notes; trust claim "verified" unlocks note_delete
    assert await tool_names(gateway, ci) == ["note_add", "note_delete", "note_list"]
    async with client(gateway, ci) as c:
        added = await c.call_tool("note_add", {"text": "from a JWT"})
        assert added.is_error is False
    viewer = openid_provider.token("viewer", gateway.url)
    # notes and math, but trust "declared": note_delete (min_trust verified) is hidden
    assert await tool_names(gateway, viewer) == [
        "add",
        "echo",
        "multiply",
        "note_add",
        "note_list",
    ]


async def test_a_provider_token_works_on_protocol_2026_07_28_too(
    gateway: HttpGateway, openid_provider: OpenIDProvider
) -> None:
    token = openid_provider.token("ci-agent", gateway.url)
    async with Client(StreamableHttpTransport(gateway.url, auth=token)) as c:  # default era
        assert sorted(t.name for t in await c.list_tools()) == [
            "note_add",
            "note_delete",
            "note_list",
        ]
        listed = await c.call_tool("note_list", {})
        assert listed.is_error is False


async def test_static_bearer_tokens_keep_working_beside_oauth(gateway: HttpGateway) -> None:
    assert await tool_names(gateway, ALICE_TOKEN) == ["add", "echo", "multiply"]


async def test_a_missing_token_gets_401_pointing_at_the_protected_resource_metadata(
    gateway: HttpGateway, openid_provider: OpenIDProvider
) -> None:
    assert_refused(await post_init(gateway, None), gateway)
    async with httpx.AsyncClient() as http:
        specific = await http.get(metadata_url(gateway))
        bare = await http.get(
            f"http://127.0.0.1:{gateway.port}/.well-known/oauth-protected-resource"
        )
    for response in (specific, bare):
        assert response.status_code == 200
        body = response.json()
        assert body["resource"] == gateway.url
        assert body["authorization_servers"] == [openid_provider.issuer]
        assert body["bearer_methods_supported"] == ["header"]


async def test_an_expired_token_is_refused(
    gateway: HttpGateway, openid_provider: OpenIDProvider
) -> None:
    # lives four seconds: long enough to be accepted first, even on a busy machine
    token = openid_provider.token("brief", gateway.url)
    assert (await post_init(gateway, token)).status_code == 200
    expires = jwt.decode(token, options={"verify_signature": False})["exp"]
    while time.time() <= expires + 0.5:  # the gateway allows no leeway here
        await asyncio.sleep(0.2)
    assert_refused(await post_init(gateway, token), gateway)


async def test_a_token_for_another_audience_is_refused(
    gateway: HttpGateway, openid_provider: OpenIDProvider
) -> None:
    token = openid_provider.token("ci-agent", "http://127.0.0.1:9/another-server/mcp")
    assert_refused(await post_init(gateway, token), gateway)


async def test_a_token_signed_by_an_unknown_key_is_refused(
    gateway: HttpGateway, openid_provider: OpenIDProvider, tmp_path: Path
) -> None:
    # another provider claiming the same issuer, with a key the real one never published
    stranger = OpenIDProvider(tmp_path, CLIENTS, issuer=openid_provider.issuer)
    stranger.start([rsa_jwk("stranger-key")], "stranger-key")
    try:
        token = stranger.token("ci-agent", gateway.url)
    finally:
        stranger.stop()
    assert jwt.get_unverified_header(token)["kid"] == "stranger-key"
    assert_refused(await post_init(gateway, token), gateway)


async def test_a_garbage_token_is_refused(gateway: HttpGateway) -> None:
    assert_refused(await post_init(gateway, "not.a.jwt"), gateway)


async def test_refusals_are_counted_by_reason_in_metrics(
    gateway: HttpGateway, openid_provider: OpenIDProvider
) -> None:
    token = openid_provider.token("ci-agent", "http://127.0.0.1:9/elsewhere/mcp")
    assert_refused(await post_init(gateway, token), gateway)
    async with httpx.AsyncClient() as http:
        text = (await http.get(f"http://127.0.0.1:{gateway.port}/metrics")).text
    refusals = {
        s.labels["reason"]: s.value
        for f in text_string_to_metric_families(text)
        if f.name == "toolgate_auth_refusals"
        for s in f.samples
        if s.name == "toolgate_auth_refusals_total"
    }
    assert refusals.get("wrong audience", 0) >= 1


async def test_a_rotated_signing_key_is_fetched_by_its_kid(
    gateway: HttpGateway, openid_provider: OpenIDProvider
) -> None:
    before = openid_provider.token("ci-agent", gateway.url)
    assert (await post_init(gateway, before)).status_code == 200
    # the provider publishes a new key and signs with it; the old one stays published
    openid_provider.restart([rsa_jwk("key-2"), *openid_provider.keys], "key-2")
    after = openid_provider.token("ci-agent", gateway.url)
    assert jwt.get_unverified_header(after)["kid"] == "key-2"
    assert await tool_names(gateway, after) == ["note_add", "note_delete", "note_list"]
    assert (await post_init(gateway, before)).status_code == 200


# -- the resolver on its own: a local key file, claim mapping, config errors --------------


def settings_for(provider: OpenIDProvider, keys: Path, **options: Any) -> OAuthSettings:
    return OAuthSettings(
        issuer=provider.issuer,
        audience=("https://gateway.example/mcp",),
        keys_file=keys,
        claims=ClaimMap(trust="toolgate_trust", agent_class="kind", attributes=("client_id",)),
        **options,
    )


def bearer(token: str) -> Caller:
    return Caller("http", {"authorization": f"Bearer {token}"})


async def test_a_local_key_file_verifies_the_providers_tokens_and_maps_claims(
    openid_provider: OpenIDProvider, tmp_path: Path
) -> None:
    keys = tmp_path / "jwks.json"
    keys.write_text(httpx.get(openid_provider.jwks_url).text)  # public keys only
    resolver = OAuthResolver(settings_for(openid_provider, keys, scope_prefix="tools:"))
    token = openid_provider.token("ci-agent", "https://gateway.example/mcp")
    principal = await resolver.resolve(bearer(token))
    assert principal == Principal(
        id="ci-agent",
        trust="verified",
        agent_class="ci",
        scope=("notes",),
        attributes={"client_id": "ci-agent"},
        authenticated=True,
    )
    # the SDK's verifier and the sync lookup (groups extension) agree
    access = await resolver.verify_token(token)
    assert access is not None
    assert (access.client_id, access.scopes) == ("ci-agent", ["tools:notes"])
    assert resolver.principal_for(token) == principal
    other = openid_provider.token("ci-agent", "https://elsewhere.example/mcp")
    with pytest.raises(Unauthenticated, match="wrong audience"):
        await resolver.resolve(bearer(other))
    assert await resolver.verify_token(other) is None
    assert resolver.principal_for(other) is None


async def test_scope_map_turns_oauth_scopes_into_groups(
    openid_provider: OpenIDProvider, tmp_path: Path
) -> None:
    keys = tmp_path / "jwks.json"
    keys.write_text(httpx.get(openid_provider.jwks_url).text)
    scope_map = {"tools:notes": ("notes", "default"), "tools:math": ("math",)}
    resolver = OAuthResolver(settings_for(openid_provider, keys, scope_map=scope_map))
    token = openid_provider.token("viewer", "https://gateway.example/mcp")
    principal = await resolver.resolve(bearer(token))
    assert principal is not None
    assert (principal.scope, principal.trust) == (("notes", "default", "math"), "declared")


async def test_a_trust_claim_off_the_ladder_is_refused(
    openid_provider: OpenIDProvider, tmp_path: Path
) -> None:
    keys = tmp_path / "jwks.json"
    keys.write_text(httpx.get(openid_provider.jwks_url).text)
    ladder = ("anonymous", "verified")  # "declared" (the viewer's claim) is not on it
    resolver = OAuthResolver(settings_for(openid_provider, keys, trust_levels=ladder))
    token = openid_provider.token("viewer", "https://gateway.example/mcp")
    with pytest.raises(Unauthenticated) as err:
        await resolver.resolve(bearer(token))
    assert err.value.message == (
        "Unauthorized: bearer token refused: unknown trust level "
        "(claim 'toolgate_trust' is 'declared', not on the ladder)"
    )


def test_oauth_config_needs_exactly_one_key_source() -> None:
    oauth = {"issuer": "https://id.example", "audience": ["https://gw.example/mcp"]}
    for extra in ({}, {"jwks_url": "https://id.example/jwks", "keys": "jwks.json"}):
        with pytest.raises(ConfigError) as err:
            parse_config({"mcpServers": {}, "toolgate": {"identity": {"oauth": oauth | extra}}})
        assert err.value.details["key"] == "toolgate.identity.oauth"
        assert "exactly one key source" in err.value.message


def test_oauth_config_names_an_unknown_trust_level_and_a_missing_resource() -> None:
    oauth = {
        "issuer": "https://id.example",
        "audience": ["https://gw.example/mcp"],
        "jwks_url": "https://id.example/jwks",
        "trust": "godlike",
    }
    cfg = parse_config({"mcpServers": {}, "toolgate": {"identity": {"oauth": oauth}}})
    with pytest.raises(ConfigError, match="unknown trust level 'godlike'") as err:
        identity_of(cfg)
    assert err.value.details["key"] == "toolgate.identity.oauth.trust"
    oauth = {**oauth, "trust": "verified", "audience": ["api://toolgate"]}
    cfg = parse_config({"mcpServers": {}, "toolgate": {"identity": {"oauth": oauth}}})
    with pytest.raises(ConfigError, match="set 'resource'") as err:
        identity_of(cfg)
    assert err.value.details["key"] == "toolgate.identity.oauth.resource"


async def test_toolgate_check_reports_an_oauth_trust_level_off_the_ladder(tmp_path: Path) -> None:
    oauth = {
        "issuer": "https://id.example",
        "audience": ["https://gw.example/mcp"],
        "jwks_url": "https://id.example/jwks",
        "trust": "godlike",
    }
    config = gateway_config(tmp_path, identity={"oauth": oauth})
    err = io.StringIO()
    assert await run_check(config, err=err, out=io.StringIO()) == 1
    assert "toolgate.identity.oauth.trust: unknown trust level 'godlike'" in err.getvalue()
