"""Stopping a gateway served over HTTP loses no call within its drain time. On SIGTERM
(or SIGINT) ``toolgate serve`` turns ``/readyz`` unready at once while ``/healthz``
stays up, refuses new work (``initialize``, sessionless 2026-07-28 requests) with a
retryable 503 and ``Connection: close``, still serves a legacy session that lives on it,
lets the calls in flight finish with their real results, answers the calls still
running at ``http.drain_timeout`` with a retryable JSON-RPC error, ends its backend
process and exits 0. A real ``toolgate serve`` process, real fastmcp clients on both
eras, both the fast path and the SDK's transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastmcp import Client
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from _fixtures.gateway import (
    INIT,
    MCP_HEADERS,
    SERVERS,
    HttpGateway,
    toolgate_argv,
)
from _fixtures.mcp_servers import free_port
from toolgate.errors import ConfigError
from toolgate.gateway.config.model import parse_config
from toolgate.gateway.ingress.protocol import GuardedProtocol, guarded_protocol

DRAIN_TIMEOUT = 3  # seconds: the short calls finish within it, the long ones do not
SHORT, LONG = 0.5, 120.0
STOPPING = -32010  # the drain's JSON-RPC code


def drain_gateway(tmp: Path, *, fast_path: bool) -> tuple[HttpGateway, Path, Path]:
    """A gateway over one stdio backend with a ``wait`` tool; the files where the
    backend notes each call's start and its process id."""
    started, pid = tmp / "started", tmp / "backend.pid"
    backend = {
        "command": sys.executable,
        "args": [str(SERVERS / "gw_drain.py"), "--started", str(started), "--pid", str(pid)],
    }
    toolgate = {
        "always": ["slow:*"],
        "http": {"drain_timeout": DRAIN_TIMEOUT, "fast_path": fast_path},
    }
    config = tmp / "toolgate.json"
    config.write_text(json.dumps({"mcpServers": {"slow": backend}, "toolgate": toolgate}))
    return HttpGateway([*toolgate_argv(), "serve", str(config)], tmp / "gateway.log"), started, pid


async def call(client: Client[Any], seconds: float, tag: str) -> str | MCPError:
    """The tool's answer, or the error the call ended with."""
    try:
        result = await client.call_tool("wait", {"seconds": seconds, "tag": tag})
    except MCPError as exc:
        return exc
    text: str = result.content[0].text  # type: ignore[union-attr]
    return text


async def until(predicate: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        await asyncio.sleep(0.02)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def kept_alive(port: int) -> socket.socket:
    """A raw connection that has had one answer and is kept open, idle."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    answer = b""
    while not answer.endswith(b'{"status":"ok"}'):
        answer += conn.recv(4096)
    assert b"connection: close" not in answer.lower()
    return conn


def request_on(conn: socket.socket, body: dict[str, Any]) -> bytes:
    """Send a POST to /mcp on ``conn``; everything answered until the gateway closes it."""
    data = json.dumps(body).encode()
    conn.sendall(
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(data), data)
    )
    answer = b""
    while chunk := conn.recv(65_536):
        answer += chunk
    return answer


SESSIONLESS = {  # a 2026-07-28 request: no session, the version in its _meta
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/list",
    "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("fast_path", "sig"),
    [(True, signal.SIGTERM), (False, signal.SIGINT)],
    ids=["fast path, SIGTERM", "SDK transport, SIGINT"],
)
async def test_a_stopped_gateway_finishes_its_calls_refuses_new_work_and_exits_0(
    tmp_path: Path, fast_path: bool, sig: signal.Signals
) -> None:
    gateway, started, pid_file = drain_gateway(tmp_path, fast_path=fast_path)
    gateway.start()
    assert gateway.proc is not None
    base = f"http://127.0.0.1:{gateway.port}"
    try:
        clients = {
            "legacy": Client(gateway.url, mode="legacy"),
            "legacy-idle": Client(gateway.url, mode="legacy"),
            "default": Client(gateway.url),
            "default-2": Client(gateway.url),
        }
        sessions = contextlib.AsyncExitStack()
        for client in clients.values():
            await sessions.enter_async_context(client)
            await client.list_tools()  # as a host does before its model calls a tool
        short = {
            tag: asyncio.create_task(call(clients[era], SHORT, tag))
            for tag, era in [("s-legacy", "legacy"), ("s-default", "default")]
        }
        long = {
            tag: asyncio.create_task(call(clients[era], LONG, tag))
            for tag, era in [("l-legacy", "legacy"), ("l-default", "default-2")]
        }
        idle = await asyncio.to_thread(kept_alive, gateway.port)
        in_flight = {*short, *long}
        await until(
            lambda: started.exists() and set(started.read_text().split()) == in_flight,
            "every call in flight",
        )
        gateway.proc.send_signal(sig)

        async with httpx.AsyncClient(base_url=base, timeout=10) as http:

            async def unready() -> bool:
                return (await http.get("/readyz")).status_code == 503

            for _ in range(50):  # the signal is handled at once: a few tries at most
                if await unready():
                    break
                await asyncio.sleep(0.02)
            ready = await http.get("/readyz")
            assert ready.status_code == 503
            assert ready.json()["status"] == "draining"
            alive_now = await http.get("/healthz")
            assert alive_now.status_code == 200  # a liveness probe does not kill it
            assert alive_now.headers["connection"] == "close"  # every answer, while draining

            # new work goes elsewhere: a new session, a sessionless request
            for body, headers in [
                (INIT, MCP_HEADERS),
                (SESSIONLESS, {**MCP_HEADERS, "MCP-Protocol-Version": "2026-07-28"}),
            ]:
                refused = await http.post("/mcp", json=body, headers=headers)
                assert refused.status_code == 503
                assert refused.headers["retry-after"] == "1"
                assert refused.headers["connection"] == "close"
                error = refused.json()["error"]
                assert error["code"] == STOPPING
                assert error["data"] == {"retryable": True, "reason": "draining"}
                assert refused.json()["id"] == body["id"]

        # a request written on a connection kept alive from before the signal is
        # answered (not reset), and the answer closes the connection
        with idle:
            answer = await asyncio.to_thread(request_on, idle, INIT)
        assert answer.startswith(b"HTTP/1.1 503 ")
        assert b"\r\nconnection: close\r\n" in answer.lower()
        assert answer.count(b"HTTP/1.1 ") == 1

        # a legacy session lives only here: it is served while the replica drains
        listed = await clients["legacy-idle"].list_tools()
        assert "wait" in [t.name for t in listed]

        answers = await asyncio.gather(*short.values())
        assert answers == [f"done {tag}" for tag in short]  # no call lost
        for tag, task in long.items():
            cut = await task
            assert isinstance(cut, MCPError), (tag, cut)
            assert cut.error.code == STOPPING
            assert cut.error.data == {"retryable": True, "reason": "deadline"}

        assert await asyncio.to_thread(gateway.proc.wait, 30) == 0
        backend = int(pid_file.read_text())
        await until(lambda: not alive(backend), "the backend process ended", timeout=10)
        log = gateway.log.read_text()
        assert "2 call(s) still running answered with a retryable error" in log
        # the server is gone: ending a legacy session there cannot succeed
        with contextlib.suppress(Exception):
            await asyncio.wait_for(sessions.aclose(), 30)
    finally:
        gateway.stop()


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (-1, "greater than or equal to 0"),
        (7200, "less than or equal to 3600"),
        ("soon", "a valid number"),
    ],
)
def test_a_bad_drain_timeout_is_refused_naming_the_key_and_the_problem(
    value: object, problem: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config({"mcpServers": {}, "toolgate": {"http": {"drain_timeout": value}}})
    assert "toolgate.http.drain_timeout" in refused.value.message
    assert problem in refused.value.message


def test_the_drain_timeout_defaults_to_20_seconds_within_kubernetes_grace() -> None:
    assert parse_config({"mcpServers": {}}).toolgate.http.drain_timeout == 20


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


@pytest.mark.timeout(60)
def test_a_request_whose_head_was_arriving_when_the_server_closed_is_answered_not_dropped() -> None:
    async def hello(request: Any) -> PlainTextResponse:
        return PlainTextResponse("hello")

    port = free_port()
    config = uvicorn.Config(
        Starlette(routes=[Route("/hello", hello)]),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        http=guarded_protocol(header_timeout=30, max_connections=10),
        timeout_graceful_shutdown=10,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.02)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(b"GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # half a head
            # the server has accepted the connection and read that half (a connection
            # still in the listener's backlog is reset when the listener closes: before
            # any server code sees it, on a loaded machine)
            deadline = time.monotonic() + 10
            while not any(
                isinstance(c, GuardedProtocol) and c.head_arriving
                for c in list(server.server_state.connections)
            ):
                assert time.monotonic() < deadline, "the server never read the half head"
                time.sleep(0.01)
            server.should_exit = True
            deadline = time.monotonic() + 10
            while not refused(port):  # the server is closing: it takes no new connection
                assert time.monotonic() < deadline, "the server did not begin to close"
                time.sleep(0.02)
            conn.sendall(b"\r\n")  # the rest of the head
            answer = b""
            while chunk := conn.recv(4096):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 200 ")
        assert b"\r\nconnection: close\r\n" in answer.lower()
        assert answer.endswith(b"hello")
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.mark.timeout(90)
def test_a_gateway_stopped_while_its_backends_start_stops_them_and_exits_0(
    tmp_path: Path,
) -> None:
    """SIGTERM before anything is served ends the start-up: the backend still coming up
    is ended and the process exits 0 (the default handler would kill it by the signal)."""
    pid = tmp_path / "backend.pid"
    hang = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"
    config = tmp_path / "toolgate.json"
    config.write_text(
        json.dumps(
            {"mcpServers": {"stuck": {"command": sys.executable, "args": ["-c", hang, str(pid)]}}}
        )
    )
    log = tmp_path / "gateway.log"
    port = free_port()
    proc = HttpGateway([*toolgate_argv(), "serve", str(config)], log, port).launch()
    try:
        deadline = time.monotonic() + 60
        while not (pid.exists() and pid.read_text()) and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        assert pid.exists(), f"the backend never started: {log.read_text()}"
        time.sleep(0.5)  # the backend is up, the gateway waits for its first answer
        assert proc.poll() is None and refused(port), log.read_text()  # not serving yet
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(timeout=45)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert status == 0, text
    assert "stopped before serving" in text, text
    backend = int(pid.read_text())
    deadline = time.monotonic() + 10
    while alive(backend) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(backend), "the backend still starting outlived the gateway"
