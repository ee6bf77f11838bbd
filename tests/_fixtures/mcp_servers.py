"""MCP servers for end-to-end tests: ``serve_http(app)`` and stdio server scripts.

``serve_http`` (alias ``serve``) runs uvicorn (lifespan on, so the SDK/FastMCP session
manager starts) on a free 127.0.0.1 port inside the test's event loop and stops it
cleanly; ``server_script``/``stdio_env`` run ``tests/servers/*.py`` as subprocesses.
Also the client-side helpers every adapter test shares (``text``, ``structured``,
``tool_names``, ``tool_pages``, the ``Notes`` recorder). Imports the stdlib, uvicorn and
the MCP clients; nothing from toolgate.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import fastmcp
import mcp_types as mt
import uvicorn
from mcp import Client, ClientSession
from pydantic import BaseModel, ConfigDict


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.asynccontextmanager
async def serve_http(app: Any, path: str = "/mcp", **options: Any) -> AsyncIterator[str]:
    """``async with serve_http(app) as url:`` — the MCP endpoint's URL while it runs
    (``options``: more ``uvicorn.Config`` keywords, e.g. its ``http`` protocol)."""
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", **options
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # surface a start-up error
            raise RuntimeError("uvicorn stopped before it started")
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


serve = serve_http

#: Scripts the end-to-end tests run as MCP servers in a subprocess (stdio).
SERVERS = Path(__file__).resolve().parents[1] / "servers"
SRC = Path(__file__).resolve().parents[2] / "src"


def server_script(name: str) -> str:
    """The path of ``tests/servers/<name>.py``."""
    path = SERVERS / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(path)
    return str(path)


def stdio_env() -> dict[str, str]:
    """The environment for a server subprocess: this interpreter's, with ``src`` and
    ``tests/servers`` importable and no FastMCP banner."""
    env = dict(os.environ)
    paths = [str(SRC), str(SERVERS), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env["FASTMCP_SHOW_SERVER_BANNER"] = "false"
    return env


def python() -> str:
    return sys.executable


class Notes:
    """A message handler that records the notifications a client receives."""

    def __init__(self) -> None:
        self.methods: list[str] = []

    async def __call__(self, message: Any) -> None:
        if not isinstance(message, Exception):
            self.methods.append(message.method)

    async def settled(self) -> list[str]:
        await asyncio.sleep(0.05)  # notifications travel beside the response
        seen, self.methods = self.methods, []
        return seen


def text(result: Any) -> str:
    """The text content of a tool result, joined."""
    return "".join(c.text for c in result.content if isinstance(c, mt.TextContent))


def structured(result: Any) -> dict[str, Any]:
    """The structured content of a tool result; fails when there is none."""
    data = result.structured_content
    assert isinstance(data, dict), f"no structured content in {result!r}"
    return data


async def tool_pages(session: ClientSession) -> list[list[str]]:
    """The tool names of every ``tools/list`` page, walking the cursor to the end."""
    out: list[list[str]] = []
    cursor: str | None = None
    while True:
        params = mt.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        out.append([t.name for t in page.tools])
        cursor = page.next_cursor
        if cursor is None:
            return out


async def tool_names(client: ClientSession | Client | fastmcp.Client[Any]) -> list[str]:
    """Every tool name a client sees: ``fastmcp.Client`` walks the pages itself; for an
    ``mcp.Client`` or ``mcp.ClientSession`` the cursor is walked here."""
    if isinstance(client, fastmcp.Client):
        return [t.name for t in await client.list_tools()]
    session = client.session if isinstance(client, Client) else client
    return [name for page in await tool_pages(session) for name in page]


class AnyResult(BaseModel):
    """A JSON-RPC result read as it came: every field kept."""

    model_config = ConfigDict(extra="allow")


async def raw_request(session: ClientSession, request: Any) -> dict[str, Any]:
    """Send a request the SDK has no model for (e.g. ``groups/list``); the raw result."""
    result = await session.send_request(request, AnyResult)
    return dict(result.model_extra or {})
