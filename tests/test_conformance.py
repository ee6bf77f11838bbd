"""The official MCP conformance suite (``@modelcontextprotocol/conformance``, pinned in
``tests/_fixtures/npm_servers.py``) against the real gateway.

``toolgate serve`` (streamable HTTP, strategy ``flat``) fronts the suite's reference
backend, ``tests/servers/conformance_reference.py``, reached over stdio and over
streamable HTTP; the suite's active server scenarios run in one invocation per setup and
every one must pass. The same suite against
the reference backend served directly proves the backend implements every scenario, so
a failure through the gateway is the gateway's.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _fixtures.gateway import SERVERS, HttpGateway, toolgate_argv, wait_for_port
from _fixtures.mcp_servers import free_port
from _fixtures.npm_servers import ConformanceSuite

REFERENCE = SERVERS / "conformance_reference.py"
#: the active server scenarios of the pinned suite (``conformance list``, minus pending)
ACTIVE = frozenset(
    {
        "server-initialize",
        "logging-set-level",
        "ping",
        "completion-complete",
        "tools-list",
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
        "tools-call-with-logging",
        "tools-call-error",
        "tools-call-with-progress",
        "tools-call-sampling",
        "tools-call-elicitation",
        "elicitation-sep1034-defaults",
        "server-sse-multiple-streams",
        "elicitation-sep1330-enums",
        "resources-list",
        "resources-read-text",
        "resources-read-binary",
        "resources-templates-read",
        "resources-subscribe",
        "resources-unsubscribe",
        "prompts-list",
        "prompts-get-simple",
        "prompts-get-with-args",
        "prompts-get-embedded-resource",
        "prompts-get-with-image",
        "dns-rebinding-protection",
    }
)
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d\d-\d\dT[\d-]+Z$")
SUITE_TIMEOUT = 300.0


def run_suite(suite: ConformanceSuite, url: str, out: Path) -> dict[str, list[str]]:
    """Run the active server scenarios once; ``{scenario: [failed check: why, ...]}``."""
    done = subprocess.run(
        suite.argv("server", "--url", url, "-o", str(out)),
        capture_output=True,
        text=True,
        timeout=SUITE_TIMEOUT,
        check=False,
    )
    results: dict[str, list[str]] = {}
    for folder in sorted(out.iterdir()):
        match = RESULT_DIR.match(folder.name)
        if match is None:
            continue
        checks = json.loads((folder / "checks.json").read_text("utf-8"))
        results[match["scenario"]] = [
            f"{c['id']}: {c.get('errorMessage') or 'failed'}"
            for c in checks
            if c.get("status") == "FAILURE"
        ]
    assert set(results) == ACTIVE, (
        f"the suite ran {sorted(results)}, not the active scenarios; "
        f"exit {done.returncode}, stderr: {done.stderr[-2000:]}"
    )
    return results


def assert_all_pass(results: dict[str, list[str]]) -> None:
    """Fails naming every failed scenario and its failed checks, one per line."""
    failed = {name: why for name, why in sorted(results.items()) if why}
    lines = [f"  {name}: {' | '.join(why)}" for name, why in failed.items()]
    if failed:
        pytest.fail(
            f"{len(failed)} of {len(results)} scenarios failed:\n" + "\n".join(lines),
            pytrace=False,
        )


@contextlib.contextmanager
def reference_http(tmp: Path) -> Iterator[str]:
    """The reference backend over streamable HTTP on a free port; yields its URL."""
    port = free_port()
    with (tmp / "reference.log").open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(REFERENCE), "--http", "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def reference_direct(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The reference backend served over streamable HTTP, without the gateway."""
    with reference_http(tmp_path_factory.mktemp("reference")) as url:
        yield url


@pytest.fixture(scope="module", params=["stdio", "http"])
def reference_gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """``toolgate serve`` over HTTP in front of the reference backend, which the gateway
    reaches over stdio or over streamable HTTP."""
    tmp = tmp_path_factory.mktemp(f"conformance-gateway-{request.param}")
    with contextlib.ExitStack() as stack:
        if request.param == "stdio":
            backend: dict[str, Any] = {"command": sys.executable, "args": [str(REFERENCE)]}
        else:
            backend = {"url": stack.enter_context(reference_http(tmp))}
        config = tmp / "reference.json"
        config.write_text(
            json.dumps({"mcpServers": {"ref": backend}, "toolgate": {"strategy": "flat"}})
        )
        gateway = HttpGateway([*toolgate_argv(), "serve", str(config)], tmp / "gateway.log")
        stack.callback(gateway.stop)
        gateway.start()
        gateway.wait_ready()
        yield gateway.url


def test_reference_backend_passes_every_active_scenario_directly(
    conformance_suite: ConformanceSuite, reference_direct: str, tmp_path: Path
) -> None:
    assert_all_pass(run_suite(conformance_suite, reference_direct, tmp_path))


def test_gateway_passes_every_active_scenario(
    conformance_suite: ConformanceSuite, reference_gateway: str, tmp_path: Path
) -> None:
    assert_all_pass(run_suite(conformance_suite, reference_gateway, tmp_path))
