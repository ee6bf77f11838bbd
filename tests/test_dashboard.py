"""The operator dashboard, in a real browser: log-in, live sessions, groups and token
chart, explained views and the event stream; and the store reads it relies on.

Real MCP clients (``mcp.ClientSession`` on the legacy protocol, ``fastmcp.Client`` on
2026-07-28) drive the gateway while headless Chromium (Playwright) watches the
dashboard. Screenshots go to ``test-artifacts/``, and those the operators guide shows to
``docs/img/``. The session list is read from the store, tested on memory, SQLite and
Redis, and across two replicas sharing one Redis.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import fastmcp
import httpx
import httpx2
import pytest
import pytest_asyncio
from fastmcp.client.transports import StreamableHttpTransport
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation
from playwright.async_api import Browser, Page, expect

from _fixtures.browser import (
    ALICE_TOKEN,
    BOB_TOKEN,
    BROWSER_LOOP,
    DOCS_IMAGES,
    OPERATOR_TOKEN,
    DashboardGateway,
    running_gateway,
    screenshot,
)
from _fixtures.gateway import HttpGateway, gateway_config, sha256, toolgate_argv
from toolgate.gateway.ops.dashboard import SessionRecorder
from toolgate.gateway.ops.dashboard.auth import COOKIE
from toolgate.gateway.ops.dashboard.events import EventRing
from toolgate.policy import Principal
from toolgate.state.base import SessionState
from toolgate.state.listing import SessionInfo, SessionListing
from toolgate.state.memory import MemoryStore
from toolgate.state.sqlite import SqliteStore
from toolgate.strategies.base import LEGACY
from toolgate.tokens import model_text
from toolgate.toolset import ToolSet

OPERATOR = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
pytestmark = BROWSER_LOOP


AGENT = Implementation(name="notes-agent", version="1.2.3")


@asynccontextmanager
async def mcp_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    """A legacy-protocol MCP client session with a bearer token; on exit it closes its
    transport session (HTTP ``DELETE``)."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, client_info=AGENT) as session,
    ):
        await session.initialize()
        yield session


async def logged_in(browser: Browser, url: str, then: str | None = "/sessions") -> Page:
    """A page logged in to the dashboard at ``url`` (it lands on the overview), then
    at ``then``."""
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await context.new_page()
    response = await page.goto(f"{url}/dashboard/")
    assert response is not None and response.status == 401
    await page.fill("#token", OPERATOR_TOKEN)
    await page.click("button[type=submit]")
    await expect(page.locator("h1")).to_have_text("Overview")
    if then == "/sessions":
        await page.click("nav >> text=Sessions")
        await expect(page.locator("h1")).to_have_text("Live sessions 0")
    return page


# -- who may read it --------------------------------------------------------------------


async def test_every_dashboard_route_answers_401_without_the_operator_token(
    dashboard_gateway: DashboardGateway,
) -> None:
    paths = [
        "/",
        "/sessions",
        "/groups",
        "/explain",
        "/events",
        "/api/overview",
        "/api/sessions",
        "/api/events/stream",
    ]
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
    sessions = await logged_in(browser, gateway.url)
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
        await expect(row.locator(".client")).to_have_text("notes-agent 1.2.3")
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
    # the client closed its session (DELETE): it leaves the list at once
    await expect(sessions.locator("#sessions tbody tr[data-key]")).to_have_count(0)
    await expect(sessions.locator("#session-count")).to_have_text("0")
    await events.close()


async def test_group_page_draws_the_tree_and_the_flat_vs_disclosed_token_chart(
    browser: Browser, dashboard_gateway: DashboardGateway
) -> None:
    gateway = dashboard_gateway
    toolset = gateway.toolset
    tokens = {n: toolset.tool_tokens(t) for n, t in toolset.catalog.tools.items()}
    # flat: every tool a new session's principal may access, as tool.selection counts it
    access = toolset.view(toolset.default_principal, toolset.initial_state())
    flat = sum(tokens[t.name] for t in access.accessible())
    assert flat < sum(tokens.values())  # purge_notes needs more trust than the default's
    strategy, request = gateway.binding.delivery.request(session_key=None, protocol=LEGACY)
    disclosed = sum(
        toolset.token_counter.count(model_text(w)) for w in await strategy.list_tools(request)
    )
    page = await logged_in(browser, gateway.url)
    await page.click("nav >> text=Groups & tokens")
    bars = page.locator("#token-chart svg g.bar")
    expected: list[list[str | int]] = [
        ["flat: every tool it may use", flat],
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
    values = [int(v) for _, v in expected]
    drawn = [w / max(widths) for w in widths]
    # within a pixel's rounding: the chart draws whole pixels
    assert all(abs(d - v / max(values)) < 0.01 for d, v in zip(drawn, values, strict=True))
    await expect(page.locator("li[data-group='admin'] > .count")).to_have_text("2 tools")
    await expect(page.locator("#flat-tokens")).to_have_text(str(flat))
    shot = await screenshot(page, "dashboard-groups")
    assert shot.stat().st_size > 10_000


async def test_explain_page_shows_every_tool_with_its_surfacing_reason(
    browser: Browser, dashboard_gateway: DashboardGateway
) -> None:
    page = await logged_in(browser, dashboard_gateway.url)
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
        # closed on the serving replica: gone from the shared store
        assert (await http.get("/api/sessions")).json() == {"sessions": []}
    assert {k: v for k, v in row.items() if k not in ("key", "last_activity")} == {
        "principal": "alice",
        "trust": "verified",
        "transport": "mcp",
        "protocol": LEGACY,
        "era": "legacy",
        "strategy": "list_changed",
        "client": "notes-agent",
        "client_version": "1.2.3",
        "active_groups": ["notes"],
        "stage": "undefined",
    }
    assert abs(row["last_activity"] - time.time()) < 10


# -- the landing page: backends' health and the token chart -----------------------------


async def test_landing_page_shows_each_backends_health_and_follows_it_live(
    browser: Browser, tmp_path: Path
) -> None:
    """Through ``toolgate serve``: both backends up, then ``notes`` crashes and cannot
    come back; the open page turns ``degraded`` without a reload."""
    dashboard = {"enabled": True, "tokens": [sha256(OPERATOR_TOKEN)]}
    config = gateway_config(tmp_path, tokens=True, dashboard=dashboard)
    served = HttpGateway([*toolgate_argv(), "serve", str(config)], tmp_path / "gateway.log")
    served.start()
    try:
        url = f"http://127.0.0.1:{served.port}"
        page = await logged_in(browser, url, then=None)
        await expect(page.locator("#health-status")).to_have_text("ok")
        notes = page.locator("#backends tr[data-backend='notes']")
        math = page.locator("#backends tr[data-backend='math']")
        await expect(notes.locator(".status")).to_have_text("up")
        await expect(math.locator(".status")).to_have_text("up")
        await expect(page.locator("#live-sessions")).to_have_text("0")
        labels = await page.locator("#token-chart svg g.bar").evaluate_all(
            "bars => bars.map(b => b.dataset.label)"
        )
        assert labels == [
            "flat: every tool it may use",
            "disclosed: a new session",
            "(root: always listed)",
            "math",
            "notes",
        ]

        (tmp_path / "notes.down").write_text("stay down")
        transport = StreamableHttpTransport(f"{url}/mcp", auth=BOB_TOKEN)
        async with fastmcp.Client(transport, mode="legacy") as bob:
            # the backend dies mid-call; how that call ends does not matter here
            with contextlib.suppress(Exception):
                await bob.call_tool("crash", {}, raise_on_error=False)
        await expect(page.locator("#health-status")).to_have_text("degraded", timeout=30_000)
        await expect(notes.locator(".status")).to_have_text(re.compile("^(down|starting)$"))
        await expect(notes.locator(".error")).not_to_be_empty()
        await expect(math.locator(".status")).to_have_text("up")
        await screenshot(page, "dashboard-overview-degraded")
        await page.context.close()

        async with httpx.AsyncClient(base_url=f"{url}/dashboard", headers=OPERATOR) as http:
            health = (await http.get("/api/overview")).json()["health"]
            ready = (await http.get(f"{url}/readyz")).json()
        assert (health["status"], ready["status"]) == ("degraded", "degraded")
        assert health["backends"]["math"] == ready["backends"]["math"]
        assert health["backends"]["notes"]["up"] is False
        assert health["backends"]["notes"]["error"]
    finally:
        served.stop()


async def test_the_landing_page_without_a_running_gateway_counts_listed_backends_as_up(
    dashboard_gateway: DashboardGateway,
) -> None:
    async with httpx.AsyncClient(
        base_url=f"{dashboard_gateway.url}/dashboard", headers=OPERATOR
    ) as http:
        overview = (await http.get("/api/overview")).json()
    assert overview == {
        "health": {
            "status": None,
            "backends": {"notes": {"status": "up", "tools": 6, "error": None}},
        },
        "sessions": 0,
    }


# -- who the client says it is, and sessions that end --------------------------------------


async def test_a_2026_client_is_listed_with_the_client_info_of_its_requests(
    dashboard_gateway: DashboardGateway,
) -> None:
    gateway = dashboard_gateway
    transport = StreamableHttpTransport(gateway.mcp_url, auth=ALICE_TOKEN)
    async with (
        fastmcp.Client(transport, client_info=AGENT) as client,
        httpx.AsyncClient(base_url=f"{gateway.url}/dashboard", headers=OPERATOR) as http,
    ):
        await client.list_tools()
        rows = (await http.get("/api/sessions")).json()["sessions"]
    assert [(r["era"], r["principal"], r["client"], r["client_version"]) for r in rows] == [
        ("stateless", "alice", "notes-agent", "1.2.3")
    ]


async def test_a_session_without_client_info_is_listed_without_a_client(
    dashboard_gateway: DashboardGateway,
) -> None:
    recorder = SessionRecorder(dashboard_gateway.toolset, every=0)
    await recorder.seen("quiet", Principal(id="dave"), protocol=LEGACY, strategy="catalog")
    async with httpx.AsyncClient(
        base_url=f"{dashboard_gateway.url}/dashboard", headers=OPERATOR
    ) as http:
        (row,) = (await http.get("/api/sessions")).json()["sessions"]
        assert (row["key"], row["client"], row["client_version"]) == ("quiet", None, None)
        await recorder.closed("quiet")
        assert (await http.get("/api/sessions")).json() == {"sessions": []}


async def test_a_session_record_written_before_client_info_existed_reads_back_without_it() -> None:
    old = '{"key":"k","principal":"alice","protocol":"2025-11-25","last_seen":5.0}'
    assert SessionInfo.from_json(old) == SessionInfo("k", "alice", protocol=LEGACY, last_seen=5.0)
    new = replace(SessionInfo.from_json(old), client="notes-agent", client_version="1.2.3")
    assert SessionInfo.from_json(new.to_json()) == new


# -- events by type and principal -----------------------------------------------------------


async def test_events_filter_by_type_and_principal_in_the_page_the_api_and_the_stream(
    browser: Browser, dashboard_gateway: DashboardGateway
) -> None:
    gateway = dashboard_gateway
    carol = gateway.toolset.session("carol-session", Principal(id="carol"))
    erin = gateway.toolset.session("erin-session", Principal(id="erin"))
    url = f"{gateway.url}/dashboard/api/events/stream"
    wanted = {"types": "group.", "principal": "carol"}
    async with (
        httpx.AsyncClient(headers=OPERATOR, timeout=5) as http,
        http.stream("GET", url, params=wanted) as stream,
    ):
        lines = stream.aiter_lines()
        assert await anext(lines) == "retry: 1000"
        await erin.activate(["notes"])  # another principal: not sent
        await carol.activate(["notes"])
        received = [await anext(lines) for _ in range(4)]
        listed = await http.get(f"{gateway.url}/dashboard/api/events", params=wanted)
        by_type = await http.get(
            f"{gateway.url}/dashboard/api/events", params={"types": "tool.surfaced,budget."}
        )
    data = json.loads(received[3].removeprefix("data: "))
    assert (data["type"], data["principal"], data["session"]) == (
        "group.activated",
        "carol",
        "carol-session",
    )
    assert [(e["type"], e["principal"]) for e in listed.json()["events"]] == [
        ("group.activated", "carol")
    ]
    surfaced = by_type.json()["events"]
    assert surfaced and {e["type"] for e in surfaced} == {"tool.surfaced"}
    assert {e["principal"] for e in surfaced} == {"carol", "erin"}

    page = await logged_in(browser, gateway.url, then=None)
    await page.goto(f"{gateway.url}/dashboard/events?principal=erin")
    await expect(page.locator("#stream-status")).to_have_text("live")
    rows = page.locator("#events tbody tr")
    assert set(await rows.evaluate_all("rows => rows.map(r => r.dataset.principal)")) == {"erin"}
    await expect(page.locator("#principal")).to_have_value("erin")
    await page.select_option("#principal", "carol")  # the page reloads with the filter
    await expect(page).to_have_url(re.compile(r"principal=carol"))
    await page.uncheck("input[value='tool.']")
    await expect(page).to_have_url(re.compile(r"types=group\.&types=budget\..*principal=carol"))
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_have_attribute("data-type", "group.activated")
    await expect(page.locator("#stream-status")).to_have_text("live")
    await carol.deactivate(["notes"])  # arrives live, through the filtered stream
    await erin.deactivate(["notes"])
    await expect(rows).to_have_count(2)
    await expect(rows.first).to_have_attribute("data-type", "group.deactivated")
    assert set(await rows.evaluate_all("rows => rows.map(r => r.dataset.principal)")) == {"carol"}
    await page.context.close()


# -- the demo behind the dashboard: the pictures in docs/guides/operators.md ----------------


async def test_the_demo_gateway_on_the_dashboard_as_the_operator_guide_shows_it(
    browser: Browser, tmp_path: Path
) -> None:
    """The built-in demo (two backends, 49 tools) served by ``Gateway`` with the dashboard
    on; a legacy client and a 2026-07-28 client work while the operator looks. The
    screenshots are the ones ``docs/guides/operators.md`` shows (``docs/img/``)."""
    from _fixtures.mcp_servers import serve_http
    from toolgate.demo.run import demo_config
    from toolgate.gateway.serve import Gateway

    identity = {
        "default": {"id": "local", "trust": "declared", "scope": ["*"]},
        "tokens": {
            sha256(ALICE_TOKEN): {"id": "alice", "trust": "verified"},
            sha256(BOB_TOKEN): {"id": "bob", "trust": "declared"},
        },
    }
    dashboard = {"enabled": True, "tokens": [sha256(OPERATOR_TOKEN)]}
    cfg = demo_config(tmp_path / "demo.sqlite3", {"dashboard": dashboard, "identity": identity})
    gateway = Gateway(cfg)
    shopper = Implementation(name="shop-assistant", version="0.9.0")
    try:
        async with gateway.running(), serve_http(gateway.http_app(), path="") as url:
            bob_transport = StreamableHttpTransport(f"{url}/mcp", auth=BOB_TOKEN)
            async with (
                mcp_session(f"{url}/mcp", ALICE_TOKEN) as alice,
                fastmcp.Client(bob_transport, client_info=shopper) as bob,
            ):
                await alice.call_tool("enable_tools", {"groups": ["tracker", "issues"]})
                await alice.call_tool("create_issue", {"project_key": "WEB", "title": "Hi"})
                await bob.call_tool("enable_tools", {"groups": ["shopper"]})
                await bob.call_tool("cart_add", {"product_id": 1})

                page = await logged_in(browser, url, then=None)
                await expect(page.locator("#health-status")).to_have_text("ok")
                backends = await page.locator("#backends tr[data-backend]").evaluate_all(
                    "rows => rows.map(r => [r.dataset.backend,"
                    " r.querySelector('.status').textContent,"
                    " Number(r.querySelector('.tools').textContent)])"
                )
                assert backends == [["shop", "up", 20], ["tracker", "up", 29]]
                await expect(page.locator("#live-sessions")).to_have_text("2")
                flat, disclosed = await page.locator("#token-chart g.bar").evaluate_all(
                    "bars => bars.slice(0, 2).map(b => Number(b.dataset.value))"
                )
                assert disclosed < flat
                await screenshot(page, "dashboard-overview", docs=True)

                await page.click("nav >> text=Sessions")
                rows = page.locator("#sessions tbody tr[data-key]")
                await expect(rows).to_have_count(2)
                described = await rows.evaluate_all(
                    "rows => rows.map(r => ["
                    " r.querySelector('.principal').textContent,"
                    " r.querySelector('.client').textContent,"
                    " r.querySelector('.era').textContent.split(' ')[0],"
                    " r.querySelector('.stage').textContent])"
                )
                assert sorted(described) == [
                    ["alice verified", "notes-agent 1.2.3", "legacy", "browse"],
                    ["bob declared", "shop-assistant 0.9.0", "stateless", "checkout"],
                ]
                await screenshot(page, "dashboard-sessions", docs=True)

                await page.click("nav >> text=Events")
                await expect(page.locator("#stream-status")).to_have_text("live")
                types = await page.locator("#events tbody tr").evaluate_all(
                    "rows => rows.map(r => r.dataset.type)"
                )
                assert {"group.activated", "tool.surfaced", "tool.selection"} <= set(types)
                await page.goto(
                    f"{url}/dashboard/events?types=group.,tool.executed,tool.progressed"
                )
                await expect(page.locator("#stream-status")).to_have_text("live")
                assert await page.locator("#filters input[name=types]").evaluate_all(
                    "boxes => boxes.map(b => [b.value, b.checked])"
                ) == [
                    ["tool.", False],
                    ["group.", True],
                    ["budget.", False],
                    ["tool.executed", True],
                    ["tool.progressed", True],
                ]
                types = await page.locator("#events tbody tr").evaluate_all(
                    "rows => rows.map(r => r.dataset.type)"
                )
                # newest first; bob's enable_tools on 2026-07-28 is the catalog's
                # trial, which records and tells nothing
                assert types == [
                    "tool.progressed",
                    "tool.executed",
                    "tool.executed",
                    "group.activated",
                    "group.activated",
                ]
                await screenshot(page, "dashboard-events", docs=True)
                await page.context.close()
    finally:
        await gateway.close()
    for name in ("overview", "sessions", "events"):
        assert (DOCS_IMAGES / f"dashboard-{name}.png").stat().st_size > 10_000


async def test_the_recorder_writes_a_session_when_it_changes_or_its_record_ages() -> None:
    now = [100.0]
    written: list[SessionInfo] = []

    class Counting(MemoryStore):
        async def put_info(self, info: SessionInfo) -> None:
            written.append(info)
            await super().put_info(info)

    recorder = SessionRecorder(ToolSet(store=Counting(), clock=lambda: now[0]), every=5.0)
    alice = Principal(id="alice")

    async def seen(
        strategy: str = "catalog", client: tuple[str, str] = ("a", "1"), who: Principal = alice
    ) -> int:
        await recorder.seen("s", who, protocol=LEGACY, strategy=strategy, client=client)
        return len(written)

    assert await seen() == 1
    now[0] += 1
    assert await seen() == 1  # the same, and recent: not written again
    assert await seen(strategy="search") == 2  # what the record says changed
    assert await seen(strategy="search", client=("a", "2")) == 3
    assert await seen("search", ("a", "2"), Principal(id="bob")) == 4
    now[0] += 5
    assert await seen("search", ("a", "2"), Principal(id="bob")) == 5
    assert written[-1].last_seen == 106.0 and written[-1].first_seen == 100.0
