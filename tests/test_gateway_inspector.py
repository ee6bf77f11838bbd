"""The MCP Inspector CLI (a third-party client, from npm) against ``toolgate demo``.

Over stdio (the Inspector launches ``toolgate demo``) and over streamable HTTP: lists
the tools and calls one. The Inspector is installed on first use into ``.tools/``
(gitignored) with ``npm install --prefix``; later runs reuse it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from _fixtures.gateway import HttpGateway, toolgate_argv

ROOT = Path(__file__).resolve().parents[1]
PREFIX = ROOT / ".tools" / "inspector"
INSPECTOR = PREFIX / "node_modules" / ".bin" / "mcp-inspector"
PACKAGE = "@modelcontextprotocol/inspector"


@pytest.fixture(scope="session")
def inspector() -> Path:
    if not INSPECTOR.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("npm is needed to install the MCP Inspector (apt-get install npm)")
        PREFIX.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [npm, "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund", PACKAGE],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0 or not INSPECTOR.exists():
            pytest.fail(f"installing {PACKAGE} failed:\n{done.stderr[-2000:]}")
    return INSPECTOR


def run(inspector: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(inspector), "--cli", *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_inspector_lists_and_calls_tools_of_the_demo_over_stdio(
    inspector: Path, tmp_path: Path
) -> None:
    demo = [*toolgate_argv(), "demo", "--db", str(tmp_path / "demo.sqlite3")]
    listed = run(inspector, *demo, "--method", "tools/list")
    assert [t["name"] for t in listed["tools"]] == [
        "call_tool",
        "describe_tools",
        "disable_tools",
        "enable_tools",
        "list_groups",
        "search_products",
        "whoami",
    ]
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
        assert len(listed["tools"]) == 7
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
