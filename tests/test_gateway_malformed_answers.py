"""A backend's malformed answer to a call is an error at once, naming the backend and what
was wrong, not a wait for the call's timeout: the real ``toolgate serve`` over HTTP, real
clients of both eras, a backend speaking JSON-RPC by hand (``servers/raw_malformed.py``).

Each shape (an error object of the wrong types, neither result nor error, a result that is
no ``CallToolResult``, a line that is not JSON) on each way a call reaches a backend:
stdio; HTTP by hand and HTTP through the SDK's session (a backend that gives no session
id), each with JSON and SSE answers; and as 2026-07-28 requests to a backend serving them
(``modern``, for the 2026-07-28 client). The backend then answers a good call as before.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from _fixtures.gateway import SERVERS, HttpGateway, toolgate_argv, wait_for_port
from _fixtures.mcp_servers import free_port

RAW = str(SERVERS / "raw_malformed.py")
#: far longer than any of these calls may take: an answer is never this timeout
TIMEOUT = 20.0
PROBLEMS = {
    "bad_error": "error.code",
    "no_outcome": "neither a result nor an error",
    "bad_result": "not a valid CallToolResult",
    "bad_json": "not JSON",
}
#: backend name -> how it is reached
BACKENDS = ("stdio", "hand", "hand_sse", "modern", "sdk", "sdk_sse")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    tmp = tmp_path_factory.mktemp("malformed")
    json_port, sse_port = free_port(), free_port()
    raws = [
        subprocess.Popen([sys.executable, RAW, "--port", str(json_port)]),
        subprocess.Popen([sys.executable, RAW, "--port", str(sse_port), "--sse"]),
    ]
    servers: dict[str, dict[str, Any]] = {
        "stdio": {"command": sys.executable, "args": [RAW]},
        "hand": {"url": f"http://127.0.0.1:{json_port}/mcp"},
        "hand_sse": {"url": f"http://127.0.0.1:{sse_port}/mcp"},
        # no session id: calls go through the SDK's client session
        # serves 2026-07-28 requests too: a 2026-07-28 client's calls go to it as such
        "modern": {"url": f"http://127.0.0.1:{json_port}/modern"},
        "sdk": {"url": f"http://127.0.0.1:{json_port}/plain"},
        "sdk_sse": {"url": f"http://127.0.0.1:{sse_port}/plain"},
    }
    for name, spec in servers.items():
        spec.update(timeout=TIMEOUT, prefix=name)
    config = tmp / "toolgate.json"
    config.write_text(json.dumps({"mcpServers": servers, "toolgate": {"separator": "_"}}))
    gw = HttpGateway([*toolgate_argv(), "serve", str(config)], tmp / "gateway.log")
    try:
        for raw, port in zip(raws, (json_port, sse_port), strict=True):
            wait_for_port(port, raw)
        gw.start()
        yield gw
    finally:
        gw.stop()
        for raw in raws:
            raw.kill()
            raw.wait()


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("backend", BACKENDS)
async def test_each_malformed_answer_is_an_error_naming_the_backend_and_the_problem(
    gateway: HttpGateway, backend: str, era: str
) -> None:
    mode = {"mode": "legacy"} if era == "legacy" else {}
    async with Client(StreamableHttpTransport(gateway.url), timeout=TIMEOUT + 10, **mode) as c:
        for shape, problem in PROBLEMS.items():
            result = await c.call_tool(f"{backend}_{shape}", {}, raise_on_error=False)
            text = " ".join(getattr(block, "text", "") for block in result.content)
            assert result.is_error, (shape, text)
            assert f"{backend!r}" in text and problem in text, (shape, text)
            assert "Timed out" not in text and "timed out" not in text
            fine = await c.call_tool(f"{backend}_fine", {})
            assert [getattr(block, "text", "") for block in fine.content] == ["fine"]
