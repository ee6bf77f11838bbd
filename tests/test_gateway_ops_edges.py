"""A gateway's operations at their edges, asked out of turn by an operator or a client.

One real ``toolgate serve`` process over HTTP, from its first instant to its exit: a
SIGHUP while it is still importing its code leaves it running; a reload asked while its
backends start runs once it serves; a client that hangs up before its last answer is
no error in its log; a call cut by a reload that reconnects or removes its backend is
answered saying which, and whether to retry, and the report warns of the backends as
they are once started. Then it is stopped in the middle of a reload waiting for a new
backend: the reload answers its report at once, a reload asked during the drain is
refused (naming why), the calls in flight on both protocol eras get their real results,
the dashboard's live event stream ends cleanly, and the process exits 0. ``toolgate
reload`` answered by something that is no gateway (a proxy's error page) says it does
not know the outcome, instead of "refused"; and ``toolgate check`` refuses operator
tokens no bearer token could ever match.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from _fixtures.gateway import (
    SERVERS,
    HttpGateway,
    gateway_env,
    sha256,
    toolgate_argv,
    wait_for_port,
)
from _fixtures.mcp_servers import free_port, structured

OPERATOR = "operator-secret-token"
ADMIN = {"Authorization": f"Bearer {OPERATOR}"}


def slow_backend(gate: Path) -> dict[str, Any]:
    """A backend that starts only once ``gate`` exists."""
    return {"command": sys.executable, "args": [str(SERVERS / "gw_slow.py"), "--gate", str(gate)]}


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    port: int
    config: Path
    log_path: Path
    tmp: Path

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text("utf-8", errors="replace")

    def edit(self, change: Any) -> None:
        config = json.loads(self.config.read_text())
        change(config)
        self.config.write_text(json.dumps(config, indent=2))

    def signal(self, number: signal.Signals) -> None:
        os.kill(self.proc.pid, number)

    def serving(self) -> None:
        """Let the slow backend start and wait for the port (the first test does it at
        its own moment; a test run alone does it here)."""
        (self.tmp / "gate").touch()
        wait_for_port(self.port, self.proc, timeout=60)

    def reload_cli(self) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*toolgate_argv(), "reload", "--url", self.root],
            capture_output=True,
            text=True,
            env=gateway_env(TOOLGATE_OPERATOR_TOKEN=OPERATOR),
            timeout=60,
        )


def started_calls(served: Served) -> int:
    """How many ``wait`` calls the drain backend has begun (it notes each)."""
    started = served.tmp / "started"
    return len(started.read_text().split()) if started.exists() else 0


def until(predicate: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        time.sleep(0.02)


def ignores_sighup(pid: int) -> bool:
    """What the kernel says of the process: SIGHUP (signal 1) in its ignored set."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & 1)
    return False


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Started, not waited for: ``drain`` (a ``wait`` tool) and ``slow``, which starts
    only once the test creates ``gate``."""
    tmp = tmp_path_factory.mktemp("ops-edges")
    drain = {
        "command": sys.executable,
        "args": [
            *(str(SERVERS / "gw_drain.py"), "--started", str(tmp / "started")),
            *("--pid", str(tmp / "drain.pid")),
        ],
    }
    config = tmp / "toolgate.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {"drain": drain, "slow": slow_backend(tmp / "gate")},
                "toolgate": {
                    "always": ["drain:*"],
                    "groups": {"slow": {"description": "Late greetings", "tools": ["slow:*"]}},
                    "dashboard": {"enabled": True, "tokens": [sha256(OPERATOR)]},
                    "http": {"drain_timeout": 30},
                },
            }
        )
    )
    port = free_port()
    log_path = tmp / "gateway.log"
    proc = HttpGateway([*toolgate_argv(), "serve", str(config)], log_path, port).launch()
    try:
        yield Served(proc, port, config, log_path, tmp)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


async def group_names(client: Client[Any]) -> list[str]:
    groups = structured(await client.call_tool("list_groups", {}))["groups"]
    return sorted(g["name"] for g in groups)


@pytest.mark.timeout(120)
async def test_a_reload_asked_before_the_gateway_serves_neither_ends_it_nor_is_lost(
    served: Served,
) -> None:
    # still importing its code, before it obeys signals: SIGHUP's default would end it
    until(
        lambda: ignores_sighup(served.proc.pid) or "starting" in served.log(),
        "the gateway is on its way",
    )
    assert ignores_sighup(served.proc.pid), "a SIGHUP now would end the starting gateway"
    served.signal(signal.SIGHUP)
    until(lambda: "starting 2 backend(s)" in served.log(), "the backends start")
    # its backends starting: the file changes, a reload is asked for, twice
    served.edit(
        lambda c: c["toolgate"]["groups"].update(
            later={"description": "Added while starting", "tools": ["drain:*"]}
        )
    )
    served.signal(signal.SIGHUP)
    served.signal(signal.SIGHUP)
    until(lambda: "asked to reload while starting" in served.log(), "the reload is kept")
    served.serving()
    until(lambda: "config reloaded" in served.log(), "the kept reload runs once serving")

    url = f"{served.root}/mcp"
    legacy = Client(StreamableHttpTransport(url), mode="legacy")
    async with legacy, Client(StreamableHttpTransport(url)) as modern:
        assert await group_names(legacy) == ["later", "slow"]
        assert await group_names(modern) == ["later", "slow"]
    log = served.log()
    assert log.count("config reloaded") == 1, log  # both asks, one reload
    assert "groups added: later" in log
    assert "Traceback" not in log, log


def test_a_client_that_hangs_up_before_its_answer_is_no_error_in_the_log(
    served: Served,
) -> None:
    served.serving()
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    closing = request.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
    for _ in range(5):
        # a second request behind the first holds the connection's reading, so the
        # gateway answers the first to a client that has already closed its socket
        with socket.create_connection(("127.0.0.1", served.port), timeout=10) as conn:
            conn.sendall(closing + request)
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as conn:
        conn.sendall(closing)  # answered after the five: they were all handled
        answer = b""
        while chunk := conn.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200"), answer
    log = served.log()
    assert "Exception in ASGI application" not in log, log
    assert "Traceback" not in log, log


class _NotAGateway(http.server.BaseHTTPRequestHandler):
    """Answers every POST as a proxy in front of a gateway that is down might."""

    def do_POST(self) -> None:
        status, body = self.server.answers[self.path]  # type: ignore[attr-defined]
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


def reload_at(url: str) -> subprocess.CompletedProcess[str]:
    """``toolgate reload --url URL`` with the operator's token, as an operator runs it."""
    return subprocess.run(
        [*toolgate_argv(), "reload", "--url", url],
        capture_output=True,
        text=True,
        env=gateway_env(TOOLGATE_OPERATOR_TOKEN=OPERATOR),
        timeout=60,
    )


def test_toolgate_reload_answered_by_no_gateway_says_the_outcome_is_unknown(
    tmp_path: Path,
) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotAGateway)
    server.answers = {  # type: ignore[attr-defined]
        "/ok/admin/reload": (200, b"<html>Welcome to nginx!</html>"),
        "/bad/admin/reload": (502, b"<html>502 Bad Gateway</html>"),
        "/misdirected/admin/reload": (421, b"Invalid Host header"),  # the gateway's guard
    }
    threading.Thread(target=server.serve_forever, daemon=True).start()
    root = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        for path, status, page in (("ok", 200, "Welcome"), ("bad", 502, "502 Bad Gateway")):
            done = reload_at(f"{root}/{path}")
            assert done.returncode == 2, done.stderr
            assert f"answered {status}, not a reload report" in done.stderr
            assert page in done.stderr and "not known" in done.stderr
            assert "refused" not in done.stderr and "Traceback" not in done.stderr
        done = reload_at(f"{root}/misdirected")
        assert done.returncode == 2, done.stderr
        assert "does not serve the host name" in done.stderr
        assert "nothing reloaded" in done.stderr and "--allow-host" in done.stderr
    finally:
        server.shutdown()
        server.server_close()
    missing = tmp_path / "no-such-token"
    done = subprocess.run(
        [*toolgate_argv(), "reload", "--url", root, "--token-file", str(missing)],
        capture_output=True,
        text=True,
        env=gateway_env(),
        timeout=60,
    )
    assert (done.returncode, done.stderr.strip()) == (
        2,
        f"toolgate: cannot read the token file {missing}: No such file or directory",
    )


async def running_on_drain(
    served: Served, clients: list[tuple[Client[Any], str]]
) -> list[asyncio.Task[Any]]:
    """A ``wait`` call per client, in flight on the ``drain`` backend once this returns."""
    before = started_calls(served)
    calls = [
        asyncio.create_task(
            client.call_tool("wait", {"seconds": 30, "tag": tag}, raise_on_error=False)
        )
        for client, tag in clients
    ]
    await asyncio.to_thread(
        until, lambda: started_calls(served) == before + len(clients), "the calls run"
    )
    return calls


async def admin_reload(served: Served) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=60) as http_client:
        answer = await http_client.post(f"{served.root}/admin/reload", headers=ADMIN)
    assert answer.status_code == 200, answer.text
    report: dict[str, Any] = answer.json()
    return report


@pytest.mark.timeout(120)
async def test_a_call_cut_by_a_reload_that_reconnects_or_removes_its_backend_says_so(
    served: Served,
) -> None:
    served.serving()
    first = json.loads(served.config.read_text())
    url = f"{served.root}/mcp"
    legacy = Client(StreamableHttpTransport(url), mode="legacy")
    async with legacy, Client(StreamableHttpTransport(url)) as modern:
        await legacy.list_tools()
        await modern.list_tools()
        both = [(legacy, "legacy"), (modern, "modern")]

        # reached another way (a new command line): reconnected, retry shortly
        calls = await running_on_drain(served, both)
        served.edit(lambda c: c["mcpServers"]["drain"]["args"].extend(["--pid", "other.pid"]))
        assert (await admin_reload(served))["reconnected_backends"] == ["drain"]
        for call in calls:
            cut = structured(await call)
            assert (cut["code"], cut["reconnecting"]) == ("backend_unavailable", True)
            assert "a config reload changed how it is reached" in cut["error"]
        again = await modern.call_tool("wait", {"seconds": 0, "tag": "again"})
        assert again.content[0].text == "done again"

        # taken out of the config: said so, and no retry is promised
        calls = await running_on_drain(served, both)

        def without_drain(config: dict[str, Any]) -> None:
            del config["mcpServers"]["drain"]
            config["toolgate"]["always"] = []
            config["toolgate"]["groups"].pop("later", None)

        served.edit(without_drain)
        assert (await admin_reload(served))["removed_backends"] == ["drain"]
        for call in calls:
            cut = structured(await call)
            assert (cut["code"], cut["reconnecting"]) == ("backend_removed", False)
            assert "removed from the gateway's configuration" in cut["error"]
            assert "again shortly" not in cut["error"]
    served.config.write_text(json.dumps(first))
    restored = await admin_reload(served)
    # warned of as it is once the reload has started it: up, its tools matched
    assert (restored["added_backends"], restored["warnings"]) == (["drain"], [])


async def event_stream(http_client: httpx.AsyncClient, served: Served, lines: list[str]) -> str:
    """Read the dashboard's live event stream to its end (into ``lines``): "ended" when
    it ends cleanly."""
    url = f"{served.root}/dashboard/api/events/stream"
    async with http_client.stream("GET", url, headers=ADMIN) as answer:
        async for line in answer.aiter_lines():
            lines.append(line)
    return "ended"


@pytest.mark.timeout(120)
async def test_a_stop_during_a_reload_answers_it_refuses_the_next_and_finishes_every_call(
    served: Served,
) -> None:
    served.serving()
    # a reload that starts a backend which never comes up: it waits for its first try
    served.edit(lambda c: c["mcpServers"].update(never=slow_backend(served.tmp / "no-gate")))
    url = f"{served.root}/mcp"
    legacy = Client(StreamableHttpTransport(url), mode="legacy")
    async with (
        legacy,
        Client(StreamableHttpTransport(url)) as modern,
        httpx.AsyncClient(timeout=60) as http_client,
    ):
        await legacy.list_tools()
        await modern.list_tools()
        before = started_calls(served)
        calls = [
            asyncio.create_task(client.call_tool("wait", {"seconds": 6, "tag": tag}))
            for client, tag in ((legacy, "legacy"), (modern, "modern"))
        ]
        reloading = asyncio.create_task(
            http_client.post(f"{served.root}/admin/reload", headers=ADMIN)
        )
        await asyncio.to_thread(
            until,
            lambda: (
                "backend never: connecting" in served.log() and started_calls(served) == before + 2
            ),
            "the reload waits for its backend while both calls run",
        )
        # an operator watching the dashboard's live events as the gateway stops
        lines: list[str] = []
        events = asyncio.create_task(event_stream(http_client, served, lines))
        await asyncio.to_thread(until, lambda: events.done() or bool(lines), "events stream")
        served.signal(signal.SIGTERM)
        answer = await reloading
        assert answer.status_code == 200, answer.text
        report = answer.json()
        assert report["applied"] is True and report["added_backends"] == ["never"]
        stopping = "mcpServers.never: not up (starting); the gateway is stopping"
        assert report["warnings"] == [stopping]

        # asked during the drain: refused, the reason named, by the endpoint and by SIGHUP
        refused = await asyncio.to_thread(served.reload_cli)
        assert refused.returncode == 1, refused.stderr
        assert "the gateway is stopping: nothing reloaded" in refused.stderr
        served.signal(signal.SIGHUP)
        await asyncio.to_thread(
            until,
            lambda: served.log().count("config reload refused") == 2,
            "the SIGHUP's reload is refused too",
        )
        results = [(await call).content[0].text for call in calls]
        assert results == ["done legacy", "done modern"]
        assert await events == "ended"  # at the end of the drain, its last chunk sent
    assert await asyncio.to_thread(served.proc.wait, 60) == 0
    log = served.log()
    assert "Traceback" not in log, log
    assert "graceful shutdown exceeded" not in log, log


@pytest.mark.parametrize(
    ("dashboard", "line"),
    [
        (
            {"enabled": True},
            "toolgate.dashboard: the dashboard is enabled but no operator token is configured",
        ),
        (
            {"tokens": [OPERATOR]},  # the token itself, where its digest belongs
            "toolgate.dashboard.tokens: entry 0 is not a SHA-256 hex digest (64 hex "
            f"characters; it has {len(OPERATOR)})",
        ),
    ],
    ids=["enabled without a token", "the token itself"],
)
def test_check_refuses_operator_tokens_the_gateway_could_never_match(
    tmp_path: Path, dashboard: dict[str, Any], line: str
) -> None:
    config = tmp_path / "toolgate.json"
    config.write_text(json.dumps({"mcpServers": {}, "toolgate": {"dashboard": dashboard}}))
    done = subprocess.run(
        [*toolgate_argv(), "check", str(config), "--offline"],
        capture_output=True,
        text=True,
        env=gateway_env(),
        timeout=60,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{config}: {line}" in done.stderr
    assert OPERATOR not in done.stderr  # a token put there by mistake is never echoed
