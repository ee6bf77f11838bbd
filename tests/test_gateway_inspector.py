"""The MCP Inspector CLI (a third-party client, from npm) against ``toolgate demo``.

Over stdio (the Inspector launches ``toolgate demo``: it calls a tool) and over
streamable HTTP (it lists the tools and calls one). The Inspector is installed on first
use into ``.tools/`` (gitignored) by ``npm_servers.npm_installed``; later runs reuse it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from _fixtures.gateway import DEMO_FIRST_LIST, HttpGateway, toolgate_argv
from _fixtures.npm_servers import npm_installed

ROOT = Path(__file__).resolve().parents[1]
PREFIX = ROOT / ".tools" / "inspector"
INSPECTOR = PREFIX / "node_modules" / ".bin" / "mcp-inspector"
PACKAGE = "@modelcontextprotocol/inspector"


@pytest.fixture(scope="session")
def inspector() -> Path:
    npm_installed(PREFIX, INSPECTOR.exists, PACKAGE)
    return INSPECTOR


def run(inspector: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(inspector), "--cli", *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_inspector_calls_a_tool_of_the_demo_over_stdio(inspector: Path, tmp_path: Path) -> None:
    """The Inspector launches ``toolgate demo`` itself (each CLI run is one launch: the
    listing is checked over HTTP below, through the same client)."""
    demo = [*toolgate_argv(), "demo", "--db", str(tmp_path / "demo.sqlite3")]
    called = run(
        inspector,
        *demo,
        "--method",
        "tools/call",
        "--tool-name",
        "enable_tools",
        "--tool-arg",
        'groups=["shopper"]',
    )
    assert called["structuredContent"]["enabled"] == ["shopper"]
    assert "cart_add" in called["structuredContent"]["available_tools"]


def test_inspector_lists_and_calls_tools_of_the_demo_over_http(
    inspector: Path, tmp_path: Path
) -> None:
    gateway = HttpGateway(
        [*toolgate_argv(), "demo", "--db", str(tmp_path / "demo.sqlite3")], tmp_path / "demo.log"
    )
    gateway.start()
    try:
        listed = run(inspector, gateway.url, "--transport", "http", "--method", "tools/list")
        assert [t["name"] for t in listed["tools"]] == DEMO_FIRST_LIST
        found = run(
            inspector,
            gateway.url,
            "--transport",
            "http",
            "--method",
            "tools/call",
            "--tool-name",
            "search_products",
            "--tool-arg",
            "query=gardener",
        )
    finally:
        gateway.stop()
    assert found["structuredContent"]["count"] == 1
    assert found["structuredContent"]["products"][0]["name"] == "The Pragmatic Gardener"
