"""A real browser and a small gateway for the dashboard and WebMCP tests.

``browser`` is Debian's headless Chromium driven by Playwright (``executable_path``:
no downloaded browsers), with WebMCP switched on; it fails, never skips, when Chromium
is missing. ``dashboard_gateway`` serves a gateway-built catalog through the SDK
low-level adapter with the dashboard and WebMCP routes mounted, over uvicorn.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mcp.server import Server
from playwright.async_api import Browser, Page, async_playwright
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Mount, Route

from toolgate.catalog import CallContext, Handler
from toolgate.events import EventBus
from toolgate.gateway.config.build import BackendTool, build_toolset
from toolgate.gateway.config.identity import principal_from
from toolgate.gateway.config.model import GatewayConfig, parse_config
from toolgate.gateway.ingress.guard import Guard, GuardLimits, allowed_names
from toolgate.gateway.ops.dashboard import (
    DashboardSource,
    SessionRecorder,
    dashboard_app,
    record_sessions,
)
from toolgate.identity import BearerTokens
from toolgate.lowlevel import Binding, bind
from toolgate.policy import TrustLadder
from toolgate.state.base import StateStore
from toolgate.strategies import DeliveryConfig
from toolgate.toolset import ToolSet
from toolgate.webmcp import webmcp_routes

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
#: screenshots the documentation shows (``docs/guides/operators.md``), retaken by the tests
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "img"
CHROMIUM = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-features=WebMCP",  # document.modelContext (Chromium 146+, secure contexts)
]

OPERATOR_TOKEN = "operator-secret-token"
ALICE_TOKEN = "alice-secret-token"  # verified
BOB_TOKEN = "bob-secret-token"  # declared: below purge_notes' trust floor


def sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def chromium_path() -> str:
    for candidate in CHROMIUM:
        if shutil.which(candidate):
            return candidate
    raise RuntimeError(
        "no Chromium found at " + " or ".join(CHROMIUM) + ": install Debian's "
        "chromium-headless-shell (scripts/test.sh does)"
    )


#: Browser tests run on one event loop for the whole session, so Playwright's driver and
#: Chromium start once: ``pytestmark = BROWSER_LOOP`` in a test module.
BROWSER_LOOP = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(
            executable_path=chromium_path(), args=CHROMIUM_FLAGS
        )
        try:
            yield chromium
        finally:
            await chromium.close()


async def screenshot(page: Page, name: str, *, docs: bool = False) -> Path:
    """Save a full-page screenshot as ``test-artifacts/NAME.png`` and return its path.
    With ``docs`` it is a picture the documentation shows: ``docs/img/NAME.png`` when
    ``TOOLGATE_DOCS_SCREENSHOTS=1`` (refresh them after changing the dashboard), so an
    ordinary test run leaves the committed pictures alone."""
    refresh = docs and os.environ.get("TOOLGATE_DOCS_SCREENSHOTS") == "1"
    folder = DOCS_IMAGES if refresh else ARTIFACTS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True, animations="disabled")
    return path


# -- the gateway under test ------------------------------------------------------------

CONFIG: dict[str, Any] = {
    # never started: the harness builds the catalog from LISTING with in-process handlers
    "mcpServers": {"notes": {"command": "unused-notes-backend"}},
    "toolgate": {
        "strategy": "auto",
        "always": ["whoami"],
        "groups": {
            "notes": {
                "description": "Search, read and write notes",
                "tools": ["search_notes", "read_note", "add_note"],
            },
            "admin": {
                "description": "Export and purge notes",
                "parent": "notes",
                "tools": ["export_notes", "purge_notes"],
            },
        },
        "policies": [{"tools": ["purge_notes"], "min_trust": "verified"}],
        "identity": {
            "tokens": {
                sha256(ALICE_TOKEN): {"id": "alice", "trust": "verified"},
                sha256(BOB_TOKEN): {"id": "bob", "trust": "declared"},
            }
        },
        "events": {"logging": False},
        "dashboard": {"enabled": True, "tokens": [sha256(OPERATOR_TOKEN)]},
        "http": {"allowed_origins": ["https://shop.example"]},  # a page publishing WebMCP
    },
}


def _long(text: str) -> str:
    """A description as long as real servers write them (disclosure pays off)."""
    return (
        f"{text} Notes are short texts kept by the notes service; each has a numeric id. "
        "Use the ids that search_notes returns. The service keeps every note until it is "
        "purged, answers in plain text or JSON, and never calls other services."
    )


def _schema(**properties: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {k: {"type": "string", "description": v} for k, v in properties.items()},
        "required": list(properties),
    }


LISTING: dict[str, list[dict[str, Any]]] = {
    "notes": [
        {"name": "whoami", "description": "Who you are.", "inputSchema": _schema()},
        {
            "name": "search_notes",
            "title": "Search notes",
            "description": _long("Find notes whose text contains a word."),
            "inputSchema": _schema(word="The word to look for"),
            "annotations": {"readOnlyHint": True},
        },
        {
            "name": "read_note",
            "description": _long("Read one note."),
            "inputSchema": _schema(id="Id"),
        },
        {
            "name": "add_note",
            "description": _long("Add a note."),
            "inputSchema": _schema(text="Text"),
        },
        {
            "name": "export_notes",
            "description": _long("Export every note as one text, in id order, for backups."),
            "inputSchema": _schema(),
        },
        {
            "name": "purge_notes",
            "description": _long("Delete every note, permanently."),
            "inputSchema": _schema(),
            "annotations": {"destructiveHint": True},
        },
    ]
}


@dataclass
class Notes:
    """The backend's data: a few notes, kept in memory."""

    items: dict[str, str] = field(
        default_factory=lambda: {"1": "buy milk", "2": "call the plumber", "3": "milk the cow"}
    )

    def handler_for(self, tool: BackendTool) -> Handler:
        def run(arguments: Mapping[str, Any], ctx: CallContext) -> Any:
            name = tool.name
            if name == "whoami":
                return ctx.principal.id
            if name == "search_notes":
                word = str(arguments["word"])
                return {"ids": [k for k, v in sorted(self.items.items()) if word in v]}
            if name == "read_note":
                return self.items[str(arguments["id"])]
            if name == "add_note":
                key = str(len(self.items) + 1)
                self.items[key] = str(arguments["text"])
                return {"id": key}
            if name == "export_notes":
                return "\n".join(self.items[k] for k in sorted(self.items))
            self.items.clear()
            return "purged"

        return run


@dataclass
class DashboardGateway:
    """One running harness: the base URL and what it serves."""

    url: str
    config: GatewayConfig
    binding: Binding
    notes: Notes

    @property
    def toolset(self) -> ToolSet:
        return self.binding.toolset

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/mcp"


def identity(cfg: GatewayConfig) -> BearerTokens:
    ladder = TrustLadder(tuple(cfg.toolgate.identity.trust_levels))
    return BearerTokens(
        {
            digest: principal_from(who, ladder, "identity", authenticated=True)
            for digest, who in cfg.toolgate.identity.tokens.items()
        }
    )


async def test_page(request: Request) -> HTMLResponse:
    """A page of a site that publishes the gateway's tools with WebMCP.
    ``?token=`` picks the principal; ``?hide=1`` removes ``document.modelContext``."""
    token = request.query_params.get("token", "")
    origin = f"{request.url.scheme}://{request.url.netloc}"
    hide = ""
    if request.query_params.get("hide"):
        hide = (
            "<script>Object.defineProperty(document, 'modelContext', {value: undefined});</script>"
        )
    return HTMLResponse(
        f"<!doctype html><title>shop</title>{hide}"
        f'<script src="/webmcp.js" data-gateway="{origin}" data-token="{token}"></script>'
        "<h1>A page with WebMCP tools</h1>"
    )


@asynccontextmanager
async def running_gateway(
    store: StateStore | None = None, *, record_every: float = 0.0
) -> AsyncIterator[DashboardGateway]:
    from _fixtures.mcp_servers import serve_http  # a plugin too: imported once registered

    cfg = parse_config(CONFIG)
    notes = Notes()
    toolset, report = build_toolset(cfg, LISTING, notes.handler_for, store=store, events=EventBus())
    assert report.errors == []
    tokens = identity(cfg)
    binding = bind(
        Server("notes-gateway"), toolset, DeliveryConfig(strategy="auto"), identity=tokens
    )
    recorder = SessionRecorder(toolset, every=record_every)
    binding.server.middleware.append(record_sessions(binding, recorder))
    app = binding.streamable_http_app()
    source = DashboardSource(lambda: cfg, binding.delivery, lambda: LISTING)
    app.router.routes.extend(
        [
            Mount("/dashboard", dashboard_app(source, refresh_s=0.3)),
            *webmcp_routes(binding.delivery, tokens, recorder=recorder),
            Route("/shop", test_page),
        ]
    )
    # behind the gateway's guard, as `toolgate serve` serves them: Host and Origin once
    app.add_middleware(
        Guard,
        names=allowed_names("127.0.0.1"),
        origins=cfg.toolgate.http.allowed_origins,
        limits=GuardLimits(),
        identity=tokens,
    )
    async with serve_http(app, path="") as url:
        yield DashboardGateway(url, cfg, binding, notes)
    await toolset.close()


@pytest_asyncio.fixture(loop_scope="session")
async def dashboard_gateway() -> AsyncIterator[DashboardGateway]:
    async with running_gateway() as gateway:
        yield gateway
