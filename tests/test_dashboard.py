"""The operator dashboard, in a real browser: log-in, live sessions, groups and token
chart, explained views and the event stream; and the store reads it relies on.

A real MCP client (``mcp.ClientSession`` over streamable HTTP, legacy protocol) drives
the gateway while headless Chromium (Playwright) watches the dashboard. Screenshots go
to ``test-artifacts/``. The session list is read from the store, tested on memory,
SQLite and Redis, and across two replicas sharing one Redis.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import httpx
import httpx2
import pytest
import pytest_asyncio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from playwright.async_api import Browser, Page, expect

from _fixtures.browser import (
    ALICE_TOKEN,
    BOB_TOKEN,
    BROWSER_LOOP,
    OPERATOR_TOKEN,
    DashboardGateway,
    running_gateway,
    screenshot,
)
from toolgate.gateway.dashboard.auth import COOKIE
from toolgate.gateway.dashboard.events import EventRing
from toolgate.policy import Principal
from toolgate.state.base import SessionState
from toolgate.state.listing import SessionInfo, SessionListing
from toolgate.state.memory import MemoryStore
from toolgate.state.sqlite import SqliteStore
from toolgate.strategies.base import LEGACY
from toolgate.tokens import wire_text

OPERATOR = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
pytestmark = BROWSER_LOOP


@asynccontextmanager
async def mcp_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    """A legacy-protocol MCP client session with a bearer token."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def logged_in(browser: Browser, gateway: DashboardGateway) -> Page:
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await context.new_page()
    response = await page.goto(f"{gateway.url}/dashboard/")
    assert response is not None and response.status == 401
    await page.fill("#token", OPERATOR_TOKEN)
    await page.click("button[type=submit]")
    await expect(page.locator("h1")).to_have_text("Live sessions 0")
    return page


# -- who may read it --------------------------------------------------------------------


async def test_every_dashboard_route_answers_401_without_the_operator_token(
    dashboard_gateway: DashboardGateway,
) -> None:
    paths = ["/", "/groups", "/explain", "/events", "/api/sessions", "/api/events/stream"]
    identities = [{}, {"Authorization": f"Bearer {ALICE_TOKEN}"}, {"Cookie": f"{COOKIE}=1.2.3"}]
    async with httpx.AsyncClient(base_url=f"{dashboard_gateway.url}/dashboard") as http:
        statuses = {
            (path, json.dumps(headers)): (await http.get(path, headers=headers)).status_code
            for path in paths
            for headers in identities
        }
        assert set(statuses.values()) == {401}
        refused = await http.get("/api/sessions")
        assert refused.json() == {"error": "operator token required"}
        assert refused.headers["www-authenticate"] == 'Bearer realm="toolgate-dashboard"'
        assert (await http.get("/api/sessions", headers=OPERATOR)).status_code == 200


async def test_a_foreign_host_header_is_refused_even_with_the_token(
    dashboard_gateway: DashboardGateway,
) -> None:
    async with httpx.AsyncClient(base_url=f"{dashboard_gateway.url}/dashboard") as http:
        response = await http.get("/", headers={**OPERATOR, "Host": "evil.example"})
    assert (response.status_code, response.text) == (421, "Invalid Host header")


async def test_logging_in_sets_an_httponly_samesite_strict_cookie_and_a_bad_token_is_refused(
    dashboard_gateway: DashboardGateway,
) -> None:
    async with httpx.AsyncClient(base_url=f"{dashboard_gateway.url}/dashboard") as http:
        wrong = await http.post("/login", data={"token": ALICE_TOKEN})
        assert wrong.status_code == 401
        assert "That token is not an operator token." in wrong.text
        foreign = await http.post(
            "/login", data={"token": OPERATOR_TOKEN}, headers={"Origin": "http://evil.example"}
        )
        assert foreign.status_code == 403
        ok = await http.post("/login", data={"token": OPERATOR_TOKEN})
        assert (ok.status_code, ok.headers["location"]) == (303, "/dashboard/")
        cookie = ok.headers["set-cookie"]
        for attribute in ("HttpOnly", "SameSite=strict", "Path=/dashboard", "Max-Age=43200"):
            assert attribute in cookie
        assert OPERATOR_TOKEN not in cookie
        assert (await http.get("/api/sessions")).status_code == 200  # the cookie, no header


# -- in the browser ---------------------------------------------------------------------


async def test_operator_sees_an_mcp_session_appear_and_its_activation_arrive_live(
    browser: Browser, dashboard_gateway: DashboardGateway
) -> None:
    gateway = dashboard_gateway
    sessions = await logged_in(browser, gateway)
    events = await sessions.context.new_page()
    await events.goto(f"{gateway.url}/dashboard/events")
    await expect(events.locator("#stream-status")).to_have_text("live")

    async with mcp_session(gateway.mcp_url, ALICE_TOKEN) as client:
        await client.call_tool("enable_tools", {"groups": ["notes"]})
        row = sessions.locator("#sessions tbody tr[data-key]")
        await expect(row).to_have_count(1)
        await expect(row.locator(".principal")).to_have_text("alice verified")
        await expect(row.locator(".era")).to_have_text(f"legacy {LEGACY}")
        await expect(row.locator(".strategy")).to_have_text("list_changed")
        await expect(row.locator(".groups")).to_have_text("notes")
        await expect(row.locator(".stage")).to_have_text("undefined")
        await expect(row.locator(".when")).to_have_text("0 s ago")
        await screenshot(sessions, "dashboard-sessions")

        activated = events.locator("#events tbody tr[data-type='group.activated']")
        await expect(activated).to_have_count(1)
        await expect(activated.locator(".details")).to_have_text("group=notes")
        # newest first; listings (tool.selection) may follow as the client refreshes
        first = events.locator("#events tbody tr:not([data-type='tool.selection'])").first
        assert await first.get_attribute("data-type") == "tool.surfaced"
        surfaced = events.locator("#events tbody tr[data-type='tool.surfaced']")
        await expect(surfaced).to_have_count(3)
        await events.uncheck("input[value='tool.']")  # filter: groups only
        await expect(events.locator("#events tbody tr:visible")).to_have_count(1)
        await screenshot(events, "dashboard-events")
    await events.close()


async def test_group_page_draws_the_tree_and_the_flat_vs_disclosed_token_chart(
    browser: Browser, dashboard_gateway: DashboardGateway
) -> None:
    gateway = dashboard_gateway
    toolset = gateway.toolset
    tokens = {n: toolset.tool_tokens(t) for n, t in toolset.catalog.tools.items()}
    strategy, request = gateway.binding.delivery.request(session_key=None, protocol=LEGACY)
    disclosed = sum(
        toolset.token_counter.count(wire_text(w)) for w in await strategy.list_tools(request)
    )
    page = await logged_in(browser, gateway)
    await page.click("nav >> text=Groups & tokens")
    bars = page.locator("#token-chart svg g.bar")
    expected = [
        ["flat: every tool listed", sum(tokens.values())],
        ["disclosed: a new session", disclosed],
        ["(root: always listed)", tokens["whoami"]],
        ["notes", tokens["add_note"] + tokens["read_note"] + tokens["search_notes"]],
        ["admin", tokens["export_notes"] + tokens["purge_notes"]],
    ]
    assert (
        await bars.evaluate_all("bars => bars.map(b => [b.dataset.label, Number(b.dataset.value)])")
        == expected
    )
    widths = await page.locator("#token-chart rect").evaluate_all(
        "rects => rects.map(r => Number(r.getAttribute('width')))"
    )
    # bar lengths follow the numbers (on six tools the meta-tools outweigh the saving)
    values = [v for _, v in expected]
    assert [round(w / max(widths), 2) for w in widths] == [
        round(v / max(values), 2) for v in values
    ]
    await expect(page.locator("li[data-group='admin'] > .count")).to_have_text("2 tools")
    await expect(page.locator("#flat-tokens")).to_have_text(str(sum(tokens.values())))
    shot = await screenshot(page, "dashboard-groups")
    assert shot.stat().st_size > 10_000


async def test_explain_page_shows_every_tool_with_its_surfacing_reason(
    browser: Browser, dashboard_gateway: DashboardGateway
) -> None:
    page = await logged_in(browser, dashboard_gateway)
    await page.goto(f"{dashboard_gateway.url}/dashboard/explain?principal=bob")
    rows = page.locator("#explain tbody tr")
    assert await rows.evaluate_all(
        "rows => rows.map(r => [r.dataset.tool, r.querySelector('.reason').textContent])"
    ) == [
        ["add_note", "group-inactive:notes"],
        ["export_notes", "group-inactive:admin"],
        ["purge_notes", "trust-too-low:declared<verified"],
        ["read_note", "group-inactive:notes"],
        ["search_notes", "group-inactive:notes"],
        ["whoami", "visible"],
    ]
    await screenshot(page, "dashboard-explain")


async def test_explaining_a_live_session_uses_its_principal_and_state(
    dashboard_gateway: DashboardGateway,
) -> None:
    gateway = dashboard_gateway
    async with (
        mcp_session(gateway.mcp_url, BOB_TOKEN) as client,
        httpx.AsyncClient(base_url=f"{gateway.url}/dashboard", headers=OPERATOR) as http,
    ):
        await client.call_tool("enable_tools", {"groups": ["notes"]})
        await client.call_tool("enable_tools", {"groups": ["admin"]})
        (session,) = (await http.get("/api/sessions")).json()["sessions"]
        explained = (await http.get("/api/explain", params={"session": session["key"]})).json()
    assert explained["principal"] == {
        "id": "bob",
        "trust": "declared",
        "agent_class": None,
        "scope": ["*"],
    }
    assert explained["active_groups"] == ["admin", "notes"]
    assert {t["name"]: t["reason"] for t in explained["tools"]} == {
        "add_note": "visible",
        "export_notes": "visible",
        "purge_notes": "trust-too-low:declared<verified",
        "read_note": "visible",
        "search_notes": "visible",
        "whoami": "visible",
    }


async def test_the_event_stream_sends_only_the_requested_types_as_server_sent_events(
    dashboard_gateway: DashboardGateway,
) -> None:
    gateway = dashboard_gateway
    session = gateway.toolset.session("direct", Principal(id="carol"))
    url = f"{gateway.url}/dashboard/api/events/stream"
    async with (
        httpx.AsyncClient(headers=OPERATOR, timeout=5) as http,
        http.stream("GET", url, params={"types": "group."}) as stream,
    ):
        assert stream.headers["content-type"] == "text/event-stream; charset=utf-8"
        lines = stream.aiter_lines()
        assert await anext(lines) == "retry: 1000"
        await session.activate(["notes"])
        received = [await anext(lines) for _ in range(5)]
    assert received[1:3] == ["id: 1", "event: toolgate"]
    data = json.loads(received[3].removeprefix("data: "))
    assert {k: v for k, v in data.items() if k != "time"} == {
        "id": 1,
        "type": "group.activated",
        "session": "direct",
        "principal": "carol",
        "group": "notes",
    }


async def test_the_event_ring_keeps_only_the_newest_events() -> None:
    from toolgate.events import EventBus

    bus, ring = EventBus(), EventRing(capacity=3)
    bus.add_sink(ring)
    for n in range(5):
        bus.emit("group.activated", session="s", group=f"g{n}")
    assert [(e.id, e.event.data["group"]) for e in ring.recent()] == [
        (3, "g2"),
        (4, "g3"),
        (5, "g4"),
    ]
    assert [e.id for e in ring.recent(after=4)] == [5]


# -- sessions from the store --------------------------------------------------------------


def info(key: str, seen: float) -> SessionInfo:
    return SessionInfo(
        key, "alice", "verified", None, ("*",), LEGACY, "list_changed", "mcp", 1.0, seen
    )


@pytest_asyncio.fixture(params=["memory", "sqlite", "redis"], loop_scope="session")
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionListing]:
    clock = [1000.0]
    made: SessionListing
    if request.param == "memory":
        made = MemoryStore(idle_ttl=100, clock=lambda: clock[0])
    elif request.param == "sqlite":
        made = SqliteStore(path=str(tmp_path / "state.db"), idle_ttl=100, clock=lambda: clock[0])
    else:
        from toolgate.state.redis import RedisStore

        url = request.getfixturevalue("redis_url")
        made = RedisStore(
            url=url, idle_ttl=100, clock=lambda: clock[0], prefix=f"t{time.time_ns()}:"
        )
    made.clock_cell = clock  # type: ignore[union-attr]
    yield made
    await made.close()


async def test_every_store_lists_its_live_sessions_and_their_infos_but_not_idle_ones(
    store: SessionListing,
) -> None:
    clock: list[float] = store.clock_cell  # type: ignore[attr-defined]
    old = SessionState(active=frozenset({"notes"}), version=1, touched_at=950.0)
    new = SessionState(stage="checkout", version=1, touched_at=1000.0)
    assert await store.compare_and_set("old", 0, old)
    assert await store.compare_and_set("new:ünï", 0, new)
    await store.put_info(info("old", 950.0))
    await store.put_info(info("new:ünï", 1000.0))
    await store.put_info(replace(info("new:ünï", 1000.0), strategy="catalog"))  # replaces
    assert sorted([(k, s) async for k, s in store.sessions()]) == [("new:ünï", new), ("old", old)]
    assert sorted([i async for i in store.infos()], key=lambda i: i.key) == [
        replace(info("new:ünï", 1000.0), strategy="catalog"),
        info("old", 950.0),
    ]
    clock[0] = 1060.0  # "old" is now idle (110 s > idle_ttl 100 s)
    assert [k async for k, _ in store.sessions()] == ["new:ünï"]
    assert [i.key async for i in store.infos()] == ["new:ünï"]
    await store.delete("new:ünï")
    assert [k async for k, _ in store.sessions()] == []
    assert [i.key async for i in store.infos()] == []


async def test_a_dashboard_on_one_replica_lists_sessions_served_by_another_through_redis(
    redis_url: str,
) -> None:
    from toolgate.state.redis import RedisStore

    prefix = f"replicas{time.time_ns()}:"
    async with (
        running_gateway(RedisStore(url=redis_url, prefix=prefix)) as serving,
        running_gateway(RedisStore(url=redis_url, prefix=prefix)) as watching,
        httpx.AsyncClient(base_url=f"{watching.url}/dashboard", headers=OPERATOR) as http,
    ):
        assert (await http.get("/api/sessions")).json() == {"sessions": []}
        async with mcp_session(serving.mcp_url, ALICE_TOKEN) as client:
            await client.call_tool("enable_tools", {"groups": ["notes"]})
            (row,) = (await http.get("/api/sessions")).json()["sessions"]
    assert {k: v for k, v in row.items() if k not in ("key", "last_activity")} == {
        "principal": "alice",
        "trust": "verified",
        "transport": "mcp",
        "protocol": LEGACY,
        "era": "legacy",
        "strategy": "list_changed",
        "active_groups": ["notes"],
        "stage": "undefined",
    }
    assert abs(row["last_activity"] - time.time()) < 10
