"""The least an MCP relay built on the official SDK does: a low-level ``Server`` whose
``tools/list`` and ``tools/call`` are forwarded over one kept-open ``ClientSession`` to
one backend, served over streamable HTTP. No policy, no disclosure, no relaying of
anything else: the floor ``bench_gateway.py`` measures toolgate and FastMCP's proxy
against, the SDK's own server + client cost per call.
Run: ``python benchmarks/peer_sdk_relay.py BACKEND_URL --port N``.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import mcp_types as mt
import uvicorn
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server


def relay(url: str) -> Server[ClientSession]:
    @contextlib.asynccontextmanager
    async def lifespan(_: Server[ClientSession]) -> AsyncIterator[ClientSession]:
        async with (
            httpx2.AsyncClient(timeout=60) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session

    async def list_tools(
        ctx: ServerRequestContext[ClientSession], params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        return await ctx.lifespan_context.list_tools()

    async def call_tool(
        ctx: ServerRequestContext[ClientSession], params: mt.CallToolRequestParams
    ) -> mt.CallToolResult:
        return await ctx.lifespan_context.call_tool(params.name, params.arguments)

    server: Any = Server(
        "sdk-relay", lifespan=lifespan, on_list_tools=list_tools, on_call_tool=call_tool
    )
    return server  # type: ignore[no-any-return]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--port", type=int, required=True)
    ns = parser.parse_args()
    app = relay(ns.url).streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=ns.port, log_level="warning")
