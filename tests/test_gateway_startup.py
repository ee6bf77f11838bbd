"""``toolgate serve`` does not wait for its slowest backend.

The real command over streamable HTTP fronts a fast backend (``gw_math.py``) and one that
does not start until the test opens its gate (``gw_slow.py``). The gateway serves the fast
backend's tools while the slow one is still starting, logs each backend's progress, and
when the slow one comes up its tools join the catalog and a legacy session is told
(``notifications/tools/list_changed``); a client of the 2026-07-28 era sees them too.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from _fixtures.gateway import SERVERS, HttpGateway, toolgate_argv
from _fixtures.mcp_servers import text, tool_names
from toolgate.strategies.base import GROUPS_EXTENSION

LIST_CHANGED = "notifications/tools/list_changed"


class Heard:
    """The notifications a client received, with an event per arrival."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.arrived = asyncio.Event()

    async def __call__(self, message: Any) -> None:
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        if isinstance(method, str):
            self.methods.append(method)
            self.arrived.set()


def slow_config(tmp: Path, gate: Path) -> Path:
    config = {
        "mcpServers": {
            "math": {"command": sys.executable, "args": [str(SERVERS / "gw_math.py")]},
            "slow": {
                "command": sys.executable,
                "args": [str(SERVERS / "gw_slow.py"), "--gate", str(gate)],
            },
        },
        "toolgate": {"strategy": "flat"},
    }
    path = tmp / "toolgate.json"
    path.write_text(json.dumps(config))
    return path


async def wait_for(heard: Heard, method: str, timeout: float = 60.0) -> None:
    async with asyncio.timeout(timeout):
        while method not in heard.methods:
            heard.arrived.clear()
            await heard.arrived.wait()


async def backend_up(gateway: HttpGateway, name: str, timeout: float = 60.0) -> dict[str, Any]:
    """What ``/readyz`` says once backend ``name`` is up."""
    async with httpx.AsyncClient() as http, asyncio.timeout(timeout):
        while True:
            ready = (await http.get(f"http://127.0.0.1:{gateway.port}/readyz")).json()
            if ready["backends"][name]["up"]:
                return dict(ready)
            await asyncio.sleep(0.05)


def log_lines(log: Path) -> str:
    return log.read_text("utf-8", errors="replace")


async def test_a_slow_backend_does_not_hold_back_the_others_and_joins_when_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLGATE_START_GRACE", "0.5")
    gate = tmp_path / "slow.gate"
    log = tmp_path / "gateway.log"
    gateway = HttpGateway([*toolgate_argv(), "serve", str(slow_config(tmp_path, gate))], log)
    heard = Heard()
    try:
        gateway.start()  # returns once the port is open: the slow backend is still gated
        legacy = Client(StreamableHttpTransport(gateway.url), mode="legacy", message_handler=heard)
        async with legacy:
            ready = await backend_up(gateway, "math")  # served within the grace after it
            assert (ready["status"], ready["backends"]["slow"]["status"]) == (
                "degraded",
                "starting",
            )
            assert await tool_names(legacy) == ["add", "echo", "multiply"]
            added = await legacy.call_tool("add", {"a": 2, "b": 40})
            assert text(added) == "42"
            lines = log_lines(log)
            assert "backend slow: connecting" in lines
            assert re.findall(r"still starting: ([\w, ]+);", lines) == ["slow"]
            assert "backend slow: up" not in lines

            heard.methods.clear()  # only what follows the slow backend's start counts
            gate.touch()
            await wait_for(heard, LIST_CHANGED)
            assert await tool_names(legacy) == ["add", "echo", "multiply", "slow_hello"]
            hello = await legacy.call_tool("slow_hello", {"name": "ada"})
            assert text(hello) == "hello ada, from the slow backend"
        async with Client(StreamableHttpTransport(gateway.url)) as modern:
            assert await tool_names(modern) == ["add", "echo", "multiply", "slow_hello"]
    finally:
        gateway.stop()
    lines = log_lines(log)
    assert "backend slow: up, 1 tools" in lines
    assert "catalog synced after slow changed" in lines
    assert "gw-slow: waiting for" in lines  # the backend's stderr reaches the log


async def test_a_gateway_serving_the_groups_extension_never_loads_fastmcp(tmp_path: Path) -> None:
    # FastMCP is the framework of servers behind the gateway, not of the gateway: its
    # import is a second of CPU at every start. ``-X importtime`` logs every import.
    config = tmp_path / "toolgate.json"
    notes = {"command": sys.executable, "args": [str(SERVERS / "gw_notes.py")]}
    config.write_text(json.dumps({"mcpServers": {"notes": notes}, "toolgate": {}}))
    log = tmp_path / "gateway.log"
    argv = [sys.executable, "-X", "importtime", "-m", "toolgate.cli", "serve", str(config)]
    gateway = HttpGateway(argv, log)
    gateway.start()
    try:
        async with Client(StreamableHttpTransport(gateway.url), mode="legacy") as legacy:
            advertised = legacy.initialize_result.capabilities.model_dump()["extensions"]
            assert GROUPS_EXTENSION in advertised  # the extension is served
    finally:
        gateway.stop()
    imported = re.findall(r"^import time:.*\| +(\S+)$", log_lines(log), re.M)
    assert "toolgate.groups_extension" in imported
    assert "mcp.server.lowlevel" in imported
    assert [m for m in imported if m.split(".")[0] == "fastmcp"] == []
