"""WebMCP publishing in a real browser: ``/webmcp.js`` registers a principal's surfaced
tools with Chromium's own ``document.modelContext`` and runs them through the gateway.

Chromium 156 (Debian) exposes ``document.modelContext`` with ``--enable-features=WebMCP``
on secure origins (``http://127.0.0.1`` is one); its testing methods ``getTools()`` and
``executeTool()`` play the agent. Policies hold server-side whatever the page does.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from playwright.async_api import Browser, Page
from starlette.applications import Starlette

from _fixtures.browser import (
    ALICE_TOKEN,
    BOB_TOKEN,
    BROWSER_LOOP,
    DashboardGateway,
    screenshot,
)
from toolgate.policy import Principal
from toolgate.strategies.base import LEGACY
from toolgate.webmcp import webmcp_routes

pytestmark = BROWSER_LOOP
META_TOOLS = ["call_tool", "describe_tools", "disable_tools", "enable_tools", "list_groups"]


async def shop_page(browser: Browser, gateway: DashboardGateway, token: str, **query: str) -> Page:
    context = await browser.new_context()
    page = await context.new_page()
    page.on("console", lambda message: page.console.append(message.text))  # type: ignore[attr-defined,call-overload]
    page.console = []  # type: ignore[attr-defined]
    await page.goto(
        f"{gateway.url}/shop?" + "&".join(f"{k}={v}" for k, v in {"token": token, **query}.items())
    )
    await page.evaluate("() => window.toolgateWebMCP.ready")
    return page


async def registered(page: Page) -> list[str]:
    """What the browser's own WebMCP registry holds, name-sorted."""
    tools = await page.evaluate(
        "async () => (await document.modelContext.getTools()).map(t => t.name)"
    )
    return sorted(tools)


async def execute(page: Page, name: str, arguments: dict[str, Any]) -> Any:
    """Run a registered tool the way an agent does: through the browser's WebMCP."""
    text = await page.evaluate(
        """async ([name, args]) => {
            const tool = (await document.modelContext.getTools()).find(t => t.name === name);
            return await document.modelContext.executeTool(tool, args);
        }""",
        [name, arguments],
    )
    return json.loads(text)


async def settled(page: Page, version: int) -> None:
    """Wait until the script has re-synced past ``version``."""
    await page.wait_for_function(f"window.toolgateWebMCP.version > {version}")
    await page.evaluate("() => window.toolgateWebMCP.ready")


async def surfaced(gateway: DashboardGateway, token_principal: str, key: str) -> list[str]:
    """The principal's listed tools for that session, straight from the delivery."""
    tokens = {"alice": ("alice", "verified"), "bob": ("bob", "declared")}
    who, trust = tokens[token_principal]
    principal = Principal(id=who, trust=trust, agent_class="webmcp", authenticated=True)
    strategy, request = gateway.binding.delivery.request(
        session_key=key, principal=principal, protocol=LEGACY
    )
    return sorted(str(w["name"]) for w in await strategy.list_tools(request))


async def test_the_page_registers_exactly_the_principals_surfaced_tools_with_their_definitions(
    browser: Browser, dashboard_gateway: DashboardGateway
) -> None:
    page = await shop_page(browser, dashboard_gateway, BOB_TOKEN)
    session = await page.evaluate("window.toolgateWebMCP.session")
    names = await registered(page)
    assert names == [*META_TOOLS, "whoami"]
    assert names == await surfaced(dashboard_gateway, "bob", f"webmcp:bob:{session}")
    await page.evaluate(
        "async () => window.toolgateWebMCP.refresh()"
    )  # a re-sync of an unchanged list changes nothing
    assert await registered(page) == names
    definition = await page.evaluate(
        """async () => {
            const t = (await document.modelContext.getTools()).find(t => t.name === 'whoami');
            return {name: t.name, description: t.description, inputSchema: t.inputSchema};
        }"""
    )
    whoami = dashboard_gateway.toolset.catalog.tools["whoami"]
    assert definition == {
        "name": "whoami",
        "description": whoami.description,
        "inputSchema": dict(whoami.input_schema),
    }


async def test_execute_returns_the_real_tool_result_from_the_gateway(
    browser: Browser, dashboard_gateway: DashboardGateway
) -> None:
    page = await shop_page(browser, dashboard_gateway, BOB_TOKEN)
    assert await execute(page, "whoami", {}) == {
        "content": [{"type": "text", "text": "bob"}],
        "isError": False,
    }


async def test_activation_re_registers_and_a_trust_gated_tool_is_never_registered(
    browser: Browser, dashboard_gateway: DashboardGateway
) -> None:
    gateway = dashboard_gateway
    page = await shop_page(browser, gateway, BOB_TOKEN)
    session = await page.evaluate("window.toolgateWebMCP.session")
    version = await page.evaluate("window.toolgateWebMCP.version")
    enabled = await execute(page, "enable_tools", {"groups": ["notes"]})
    assert enabled["structuredContent"]["enabled"] == ["notes"]
    await settled(page, version)
    assert await registered(page) == [
        "add_note",
        "call_tool",
        "describe_tools",
        "disable_tools",
        "enable_tools",
        "list_groups",
        "read_note",
        "search_notes",
        "whoami",
    ]
    found = await execute(page, "search_notes", {"word": "milk"})
    assert found["structuredContent"] == {"ids": ["1", "3"]}

    version = await page.evaluate("window.toolgateWebMCP.version")
    await execute(page, "enable_tools", {"groups": ["admin"]})
    await settled(page, version)
    names = await registered(page)
    assert "export_notes" in names and "purge_notes" not in names  # declared < verified
    assert names == await surfaced(gateway, "bob", f"webmcp:bob:{session}")
    await screenshot(page, "webmcp-page")

    # calling the gated tool anyway, around the page: the gateway refuses it as unknown
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        refused = await http.post(
            "/webmcp/call",
            json={"name": "purge_notes", "arguments": {}},
            headers={"Authorization": f"Bearer {BOB_TOKEN}", "X-Toolgate-Session": session},
        )
    assert refused.json() == {"error": {"code": -32602, "message": "Unknown tool: purge_notes"}}
    assert gateway.notes.items["1"] == "buy milk"


async def test_a_verified_principal_gets_the_gated_tool_and_it_runs(
    browser: Browser, dashboard_gateway: DashboardGateway
) -> None:
    page = await shop_page(browser, dashboard_gateway, ALICE_TOKEN)
    version = await page.evaluate("window.toolgateWebMCP.version")
    await execute(page, "enable_tools", {"groups": ["notes", "admin"]})
    await settled(page, version)
    assert "purge_notes" in await registered(page)
    assert await execute(page, "purge_notes", {}) == {
        "content": [{"type": "text", "text": "purged"}],
        "isError": False,
    }
    assert dashboard_gateway.notes.items == {}


async def test_a_page_without_model_context_registers_nothing_and_says_so(
    browser: Browser, dashboard_gateway: DashboardGateway
) -> None:
    page = await shop_page(browser, dashboard_gateway, BOB_TOKEN, hide="1")
    assert await page.evaluate("window.toolgateWebMCP.enabled") is False
    assert page.console == [  # type: ignore[attr-defined]
        "toolgate webmcp: this page has no document.modelContext (WebMCP is not available "
        "in this browser), so no tools were registered"
    ]


async def test_the_webmcp_endpoints_refuse_a_missing_or_unknown_token(
    dashboard_gateway: DashboardGateway,
) -> None:
    async with httpx.AsyncClient(base_url=dashboard_gateway.url) as http:
        missing = await http.get("/webmcp/tools")
        unknown = await http.post(
            "/webmcp/call",
            json={"name": "whoami"},
            headers={"Authorization": "Bearer stolen", "Origin": "https://shop.example"},
        )
        preflight = await http.options(
            "/webmcp/call",
            headers={"Origin": "https://shop.example", "Access-Control-Request-Method": "POST"},
        )
    assert (missing.status_code, missing.json()) == (
        401,
        {"error": {"message": "Unauthorized: this server requires a bearer token"}},
    )
    assert (unknown.status_code, unknown.json()) == (
        401,
        {"error": {"message": "Unauthorized: unknown bearer token"}},
    )
    assert unknown.headers["access-control-allow-origin"] == "https://shop.example"
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-headers"] == (
        "authorization, content-type, x-toolgate-session"
    )


async def test_without_configured_tokens_webmcp_publishes_nothing_to_any_page(
    dashboard_gateway: DashboardGateway,
) -> None:
    app = Starlette(routes=webmcp_routes(dashboard_gateway.binding.delivery, identity=None))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        listed = await http.get("/webmcp/tools", headers={"Origin": "https://any.example"})
    assert (listed.status_code, listed.json()) == (
        401,
        {
            "error": {
                "message": "WebMCP publishing needs a bearer token: configure "
                "toolgate.identity.tokens"
            }
        },
    )


async def test_a_call_whose_arguments_are_not_an_object_is_refused_with_400_naming_them(
    dashboard_gateway: DashboardGateway,
) -> None:
    auth = {"Authorization": f"Bearer {ALICE_TOKEN}"}
    async with httpx.AsyncClient(base_url=dashboard_gateway.url, headers=auth) as http:
        refused = [
            await http.post("/webmcp/call", json={"name": "whoami", "arguments": bad})
            for bad in ([1, 2], "rm -rf", 5)
        ]
        absent = await http.post("/webmcp/call", json={"name": "whoami"})
        null = await http.post("/webmcp/call", json={"name": "whoami", "arguments": None})
    assert [(r.status_code, r.json()) for r in refused] == [
        (400, {"error": {"message": f"'arguments' must be a JSON object, not {kind}"}})
        for kind in ("array", "string", "integer")
    ]
    # absent or null stays "no arguments", as for MCP's tools/call
    for ran in (absent, null):
        assert ran.status_code == 200
        assert ran.json()["result"]["isError"] is False
