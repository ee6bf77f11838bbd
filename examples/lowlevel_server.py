"""The official MCP SDK's low-level ``Server`` with toolgate: ``toolgate.lowlevel.bind``.

Group classes in the tmcp style (``@group`` with ``@tool`` methods and ``@subgroup``
children), namespaced tool names and per-group activator meta-tools
(``files_activate``: the separator is ``_``), an exclusion set, a ``confirm`` policy,
and bearer tokens (by SHA-256) for HTTP; clients that declare the groups extension get
``groups/list`` and ``groups/get``.

    python examples/lowlevel_server.py          # stdio
    python examples/lowlevel_server.py http     # streamable HTTP on 127.0.0.1:8766/mcp

``build()`` returns the server and its binding for tests and in-memory clients.
"""

from __future__ import annotations

import hashlib
import sys
from typing import Any

from mcp.server import Server

from toolgate import HookContext, Policy, Principal, ToolSet, group, subgroup, tool
from toolgate.groups_extension import bind_groups
from toolgate.identity import BearerTokens
from toolgate.lowlevel import Binding, bind
from toolgate.strategies import DeliveryConfig

NOTES: dict[str, str] = {"todo": "buy milk"}
#: The SHA-256 of the bearer token "demo-token"; the config never holds the token itself.
DEMO_TOKEN_SHA256 = hashlib.sha256(b"demo-token").hexdigest()


@group(description="Read and write notes.", on_activate="opened")
class Files:
    def __init__(self) -> None:
        self.opened_by: list[str] = []

    def opened(self, ctx: HookContext) -> None:
        """An activation hook: runs before the group turns on (raise to refuse)."""
        self.opened_by.append(ctx.principal.id)

    @tool
    def read(self, name: str) -> str:
        """Read a note by name."""
        return NOTES.get(name, "")

    @subgroup
    def edit(self) -> Edit:
        return Edit()


@group(description="Change notes.", show_deactivator=False)
class Edit:
    @tool
    def write(self, name: str, text: str) -> str:
        """Write a note."""
        NOTES[name] = text
        return "saved"

    @tool(policy=Policy(decision="confirm"))
    def wipe(self) -> str:
        """Delete every note (asks the human first, through MCP elicitation)."""
        NOTES.clear()
        return "wiped"


@group(description="Add integers and other arithmetic.", exclusive=[("calc", "files")])
class Calc:
    @tool
    def add(self, a: int, b: int) -> int:
        """Add two integers."""
        return a + b


def build() -> tuple[Server[Any], Binding]:
    toolset = ToolSet("notes", namespace_tools=True, separator="_")
    toolset.include(Files())
    toolset.include(Calc())

    @toolset.tool
    def ping() -> str:
        """Check that the server answers."""
        return "pong"

    server: Server[Any] = Server("notes", version="1.0")
    tokens = BearerTokens({DEMO_TOKEN_SHA256: Principal(id="ci-bot", trust="verified")})
    binding = bind(server, toolset, DeliveryConfig(meta_tools="activators"), identity=tokens)
    # clients that declare the io.modelcontextprotocol/groups extension get groups/list
    # and groups/get; the others get the activators (legacy) or the catalog (2026-07-28)
    bind_groups(server, binding.delivery, facts=binding.facts)
    return server, binding


async def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    server, _ = build()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    import anyio

    if sys.argv[1:2] == ["http"]:
        import uvicorn

        _, binding = build()
        uvicorn.run(binding.streamable_http_app(), host="127.0.0.1", port=8766)
    else:
        anyio.run(serve_stdio)
