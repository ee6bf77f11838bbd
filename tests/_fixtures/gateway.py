"""Running the real ``toolgate`` command for the gateway tests.

``toolgate_argv()`` is the installed console script (or ``python -m toolgate.cli``);
``gateway_config()`` writes a config fronting the test backends in ``tests/servers/``;
``HttpGateway`` runs ``toolgate serve --transport http`` and waits for its port.
Imports only the stdlib and pytest; nothing from toolgate.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from _fixtures.mcp_servers import free_port

SERVERS = Path(__file__).resolve().parents[1] / "servers"
ALICE_TOKEN = "alice-secret-token"
BOB_TOKEN = "bob-secret-token"
#: what ``toolgate demo`` lists before a client opens any group
DEMO_FIRST_LIST = [
    "call_tool",
    "describe_tools",
    "disable_tools",
    "enable_tools",
    "list_groups",
    "search_products",
    "whoami",
]
FAST_RECONNECT = {
    "TOOLGATE_BACKOFF_INITIAL": "0.2",
    "TOOLGATE_BACKOFF_MAX": "0.5",
    "TOOLGATE_HEALTH_INTERVAL": "2",
}


#: A raw JSON-RPC ``initialize`` (legacy protocol) and the headers streamable HTTP wants.
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def toolgate_argv() -> list[str]:
    script = Path(sys.executable).parent / "toolgate"
    return [str(script)] if script.exists() else [sys.executable, "-m", "toolgate.cli"]


def sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def gateway_env(**extra: str) -> dict[str, str]:
    return {**os.environ, **FAST_RECONNECT, **extra}


def gateway_config(
    tmp: Path, *, tokens: bool = False, servers: dict[str, Any] | None = None, **toolgate: Any
) -> Path:
    """Two backends: ``notes`` (SDK low-level) and ``math`` (FastMCP), both stdio, or the
    ``mcpServers`` entries ``servers`` gives for them (``http_backends``)."""
    notes_down = tmp / "notes.down"
    block: dict[str, Any] = {
        "always": ["notes:grow", "notes:crash"],
        "groups": {
            "notes": {"description": "Take notes", "tools": ["notes:note_*"]},
            "math": {"description": "Arithmetic", "tools": ["math:*"]},
        },
        "policies": [{"tools": ["note_delete"], "min_trust": "verified"}],
        "events": {"jsonl": str(tmp / "events.jsonl")},
    }
    if tokens:
        block["identity"] = {
            "default": {"id": "local", "trust": "declared", "scope": ["*"]},
            "tokens": {
                sha256(ALICE_TOKEN): {"id": "alice", "trust": "verified", "scope": ["notes"]},
                sha256(BOB_TOKEN): {"id": "bob", "trust": "declared", "scope": ["*"]},
            },
        }
    block.update(toolgate)
    stdio = {
        "notes": {
            "command": sys.executable,
            "args": [str(SERVERS / "gw_notes.py"), "--fail-if", str(notes_down)],
        },
        "math": {"command": sys.executable, "args": [str(SERVERS / "gw_math.py")]},
    }
    config = {"mcpServers": stdio if servers is None else servers, "toolgate": block}
    path = tmp / "toolgate.json"
    path.write_text(json.dumps(config, indent=2))
    return path


@contextmanager
def http_backends(log: Path) -> Iterator[dict[str, Any]]:
    """``gateway_config``'s two backends served over streamable HTTP, as ``mcpServers``
    entries, for tests that read many configs' backends and are not about how a backend
    starts: each gateway or command reaches them without starting two processes."""
    ports = {"notes": free_port(), "math": free_port()}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with log.open("ab") as out:
            for name, port in ports.items():
                script = str(SERVERS / f"gw_{name}.py")
                argv = [sys.executable, script, "--http", "--port", str(port)]
                procs.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT))
        for proc, port in zip(procs, ports.values(), strict=True):
            wait_for_port(port, proc)
        yield {name: {"url": f"http://127.0.0.1:{port}/mcp"} for name, port in ports.items()}
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=10)


@pytest.fixture(scope="module")
def shared_backends(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``http_backends`` for a module's gateways to share (``gateway_config(servers=...)``):
    two backend processes for the module instead of two for each gateway. Their state is
    shared too (a note's id counts up across tests)."""
    with http_backends(tmp_path_factory.mktemp("shared-backends") / "backends.log") as servers:
        yield servers


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"toolgate exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"toolgate did not listen on {port} within {timeout}s")


@dataclass
class HttpGateway:
    """A ``toolgate`` process serving streamable HTTP on a free port."""

    argv: list[str]
    log: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    #: how long ``start`` waits for the port (the gateway listens once its backends started):
    #: a bound on failing; with the longest files started together, a gateway and its two
    #: backends once took over 30 s to import and start on a loaded 2-core machine
    start_timeout: float = 90.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def origin(self) -> str:
        """Where the gateway's other routes are (``/healthz``, ``/dashboard``, ...)."""
        return f"http://127.0.0.1:{self.port}"

    def launch(self) -> subprocess.Popen[bytes]:
        """Start the gateway without waiting for its port (a test of its start-up)."""
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [*self.argv, "--transport", "http", "--port", str(self.port)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=gateway_env(),
            )
        return self.proc

    def start(self, timeout: float | None = None) -> None:
        """Start the gateway and wait for its port (``timeout`` or ``start_timeout`` s); if it
        never listens, it is stopped before the error is raised."""
        proc = self.launch()
        try:
            wait_for_port(self.port, proc, self.start_timeout if timeout is None else timeout)
        except BaseException:  # a gateway that never listened is not left running
            self.stop()
            raise

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until ``/readyz?strict`` says every backend is up: the gateway serves once its
        first backend is, and a slower one (FastMCP's import, on a busy machine) joins
        after ``TOOLGATE_START_GRACE``; a test calling its tools first waits here."""
        deadline = time.monotonic() + timeout
        body = ""
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz?strict"):
                    return
            except urllib.error.HTTPError as exc:
                body = exc.read().decode("utf-8", "replace")
            except OSError as exc:
                body = str(exc)
            time.sleep(0.1)
        raise RuntimeError(f"the gateway's backends were not all up within {timeout}s: {body}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def http_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    """``toolgate serve`` over HTTP with bearer tokens for alice and bob."""
    tmp = tmp_path_factory.mktemp("http-gateway")
    config = gateway_config(tmp, tokens=True)
    gateway = HttpGateway([*toolgate_argv(), "serve", str(config)], tmp / "gateway.log")
    gateway.start()
    try:
        yield gateway
    finally:
        gateway.stop()
