"""Sessions cannot be exhausted: the real ``toolgate serve`` over HTTP, plain JSON-RPC.

At most ``toolgate.http.max_sessions_per_client`` open sessions per client (the
principal of a bearer token, else the address), concurrent ``initialize`` calls
included: the next one gets HTTP 429 naming the limit, another client is still served,
and ending a session (``DELETE``) or leaving it idle for ``idle_ttl`` frees its place,
as the SDK ends it then too. Stateless-protocol clients open no sessions. A
non-string cursor is refused naming ``cursor``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from _fixtures.gateway import ALICE_TOKEN, BOB_TOKEN, HttpGateway, gateway_config, toolgate_argv

LEGACY = "2025-11-25"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
PER_CLIENT = 2
IDLE_TTL = 2.0
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


def start(tmp: Path, *, tokens: bool) -> HttpGateway:
    config = gateway_config(
        tmp,
        tokens=tokens,
        idle_ttl=IDLE_TTL,
        http={"max_sessions_per_client": PER_CLIENT},
    )
    gateway = HttpGateway([*toolgate_argv(), "serve", str(config)], tmp / "gateway.log")
    gateway.start()
    return gateway


@pytest.fixture(scope="module")
def open_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    """No tokens: every caller is the default principal, counted by address."""
    gateway = start(tmp_path_factory.mktemp("sessions-open"), tokens=False)
    try:
        yield gateway
    finally:
        gateway.stop()


@pytest.fixture(scope="module")
def token_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    gateway = start(tmp_path_factory.mktemp("sessions-tokens"), tokens=True)
    try:
        yield gateway
    finally:
        gateway.stop()


def headers(token: str | None = None, session: str | None = None) -> dict[str, str]:
    out = dict(ACCEPT)
    if token is not None:
        out["authorization"] = f"Bearer {token}"
    if session is not None:
        out["mcp-session-id"] = session
        out["mcp-protocol-version"] = LEGACY
    return out


def body(response: httpx.Response) -> dict[str, Any]:
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = [ln for ln in text.splitlines() if ln.startswith("data:")][-1][5:]
    data: dict[str, Any] = json.loads(text)
    return data


def initialize(http: httpx.Client, url: str, token: str | None = None) -> httpx.Response:
    response = http.post(url, json=INITIALIZE, headers=headers(token))
    if response.status_code == 200:
        session = response.headers["mcp-session-id"]
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post(url, json=done, headers=headers(token, session)).status_code == 202
    return response


def end(http: httpx.Client, url: str, session: str, token: str | None = None) -> int:
    return http.delete(url, headers=headers(token, session)).status_code


def refused(response: httpx.Response) -> tuple[int, int, str]:
    error = body(response)["error"]
    return response.status_code, error["code"], error["message"]


TOO_MANY = (
    429,
    -32600,
    f"Too many open sessions for this client (at most {PER_CLIENT}): end one (HTTP DELETE "
    f"with its Mcp-Session-Id) or reuse it; idle sessions end after {IDLE_TTL:g}s",
)


def test_a_client_gets_at_most_its_share_of_sessions_and_ending_one_frees_its_place(
    open_gateway: HttpGateway,
) -> None:
    url = open_gateway.url
    with httpx.Client(timeout=10) as http:
        opened = [initialize(http, url) for _ in range(PER_CLIENT)]
        assert [r.status_code for r in opened] == [200] * PER_CLIENT
        sessions = [r.headers["mcp-session-id"] for r in opened]
        assert refused(initialize(http, url)) == TOO_MANY
        # the open sessions are still served
        listed = http.post(
            url,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers=headers(session=sessions[0]),
        )
        assert "tools" in body(listed)["result"]
        assert end(http, url, sessions[0]) == 200
        again = initialize(http, url)
        assert again.status_code == 200
        for session in (sessions[1], again.headers["mcp-session-id"]):
            assert end(http, url, session) == 200


async def test_concurrent_initializes_never_open_more_than_the_share(
    open_gateway: HttpGateway,
) -> None:
    url = open_gateway.url
    async with httpx.AsyncClient(timeout=10) as http:
        answers = await asyncio.gather(
            *(http.post(url, json=INITIALIZE, headers=headers()) for _ in range(3 * PER_CLIENT))
        )
        codes = sorted(r.status_code for r in answers)
        for opened in answers:
            if opened.status_code == 200:
                session = opened.headers["mcp-session-id"]
                assert (await http.delete(url, headers=headers(session=session))).status_code == 200
    assert codes == [200] * PER_CLIENT + [429] * (2 * PER_CLIENT)


def test_sessions_are_counted_per_principal_and_an_idle_one_ends_with_the_store_ttl(
    token_gateway: HttpGateway,
) -> None:
    url = token_gateway.url
    with httpx.Client(timeout=10) as http:
        alice = [initialize(http, url, ALICE_TOKEN) for _ in range(PER_CLIENT)]
        assert [r.status_code for r in alice] == [200] * PER_CLIENT
        assert refused(initialize(http, url, ALICE_TOKEN)) == TOO_MANY
        # the same address, another principal: served
        bob = initialize(http, url, BOB_TOKEN)
        assert bob.status_code == 200
        # a made-up token buys no sessions (refused before any session opens)
        assert initialize(http, url, "made-up-token").status_code == 401
        # idle past idle_ttl: the transport session is gone (404), and its place is free
        idle = alice[0].headers["mcp-session-id"]
        ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
        status, wait = 200, 2 * IDLE_TTL
        while status != 404 and wait < 40 * IDLE_TTL:
            time.sleep(wait)  # every look is a request: wait past the idle time each time
            status = http.post(url, json=ping, headers=headers(ALICE_TOKEN, idle)).status_code
            wait *= 2
        assert status == 404
        assert initialize(http, url, ALICE_TOKEN).status_code == 200


@pytest.mark.parametrize("method", ["tools/list", "resources/list"])
def test_a_cursor_that_is_not_a_string_is_refused_naming_cursor(
    open_gateway: HttpGateway, method: str
) -> None:
    url = open_gateway.url
    with httpx.Client(timeout=10) as http:
        opened = initialize(http, url)
        session = opened.headers["mcp-session-id"]
        try:
            request = {"jsonrpc": "2.0", "id": 4, "method": method, "params": {"cursor": 5}}
            response = http.post(url, json=request, headers=headers(session=session))
            error = body(response)["error"]
        finally:
            end(http, url, session)
    assert error == {
        "code": -32602,
        "message": "Invalid cursor: must be a string (the nextCursor of the previous page), "
        "not integer",
        "data": {"field": "cursor"},
    }


async def test_clients_on_the_stateless_protocol_open_no_sessions_and_are_not_capped(
    token_gateway: HttpGateway,
) -> None:
    # more 2026-07-28 clients of one principal than it may hold legacy sessions
    for _ in range(PER_CLIENT + 2):
        async with Client(StreamableHttpTransport(token_gateway.url, auth=BOB_TOKEN)) as client:
            assert "list_groups" in [t.name for t in await client.list_tools()]
            await client.call_tool_mcp("list_groups", {})


async def test_a_client_holding_its_share_of_sessions_still_calls_on_the_stateless_protocol(
    open_gateway: HttpGateway,
) -> None:
    """A 2026-07-28 request opens no session, so a client whose legacy sessions fill its
    share is still served on the stateless protocol."""
    url = open_gateway.url
    with httpx.Client(timeout=10) as http:
        opened = [initialize(http, url) for _ in range(PER_CLIENT)]
        sessions = [r.headers["mcp-session-id"] for r in opened]
        try:
            assert refused(initialize(http, url)) == TOO_MANY
            async with Client(StreamableHttpTransport(url)) as client:
                assert "list_groups" in [t.name for t in await client.list_tools()]
        finally:
            for session in sessions:
                assert end(http, url, session) == 200
