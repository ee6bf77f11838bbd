"""The gateway keeps its connection to an HTTP backend open and reuses it.

``toolgate serve`` (the real command, streamable HTTP) fronts ``gw_math.py`` served over
streamable HTTP, reached through a TCP relay in the test that counts the connections the
backend accepts. Once the gateway's session with the backend is set up, calls through
the gateway open no new TCP connection per request: pooled keep-alive connections carry
them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from _fixtures.gateway import SERVERS, HttpGateway, toolgate_argv, wait_for_port
from _fixtures.mcp_servers import free_port, text


class CountingRelay:
    """A TCP relay to ``port`` that counts the connections it accepts."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.accepted = 0
        self.server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        port: int = self.server.sockets[0].getsockname()[1]
        return port

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while chunk := await reader.read(65536):
                writer.write(chunk)
                await writer.drain()
        with contextlib.suppress(OSError):
            writer.close()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[CountingRelay]:
        self.server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        try:
            yield self
        finally:
            self.server.close()


@pytest.fixture
def http_backend(tmp_path: Path) -> Iterator[int]:
    """``gw_math.py`` over streamable HTTP; yields its port."""
    port = free_port()
    with (tmp_path / "backend.log").open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, str(SERVERS / "gw_math.py"), "--http", "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for_port(port, proc)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_calls_reuse_one_pooled_connection_to_an_http_backend(
    tmp_path: Path, http_backend: int
) -> None:
    async with CountingRelay(http_backend).running() as relay:
        config = tmp_path / "toolgate.json"
        config.write_text(
            json.dumps(
                {
                    "mcpServers": {"math": {"url": f"http://127.0.0.1:{relay.port}/mcp"}},
                    "toolgate": {"strategy": "flat"},
                }
            )
        )
        gateway = HttpGateway([*toolgate_argv(), "serve", str(config)], tmp_path / "gw.log")
        try:
            await asyncio.to_thread(gateway.start)
            client = Client(StreamableHttpTransport(gateway.url), mode="legacy")
            async with client:
                for _ in range(5):  # the session's set-up and first calls open the pool
                    warm = await client.call_tool("echo", {"text": "warm"})
                    assert text(warm) == "warm"
                settled = relay.accepted
                assert settled >= 1
                for i in range(40):
                    echoed = await client.call_tool("echo", {"text": f"call {i}"})
                    assert text(echoed) == f"call {i}"
                # a health ping overlapping a call may add one pooled connection; one
                # connection per request would add forty
                assert relay.accepted - settled <= 2, (
                    f"40 calls opened {relay.accepted - settled} new connections to the backend"
                )
        finally:
            await asyncio.to_thread(gateway.stop)
