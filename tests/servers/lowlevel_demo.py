"""A toolgate catalog served by the SDK's low-level ``Server`` (or ``MCPServer``).

Imported by the low-level adapter tests and run as a subprocess for stdio:
``python tests/servers/lowlevel_demo.py stdio [strategy] [meta_tools] [page_size]``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import anyio
from mcp.server import MCPServer, Server

from toolgate import CallContext, Group, Policy, Principal, Tool, ToolSet
from toolgate.exiting import quick_exit
from toolgate.identity import IdentityResolver
from toolgate.lowlevel import Binding, bind
from toolgate.strategies import DeliveryConfig

PATH_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
}


def echo(name: str) -> Any:
    def run(args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
        return {"tool": name, "args": dict(args)}

    return run


def whoami(args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    p = ctx.principal
    return {"id": p.id, "trust": p.trust, "scope": list(p.scope), "session": ctx.session_key}


def build_toolset(*, page_size: int = 100) -> ToolSet:
    ts = ToolSet("lowlevel-demo", page_size=page_size)
    ts.add_groups(
        [
            Group("code", "Code and repositories"),
            Group("repos", "Repository admin", parent="code"),
            Group("issues", "Issue tracker"),
            Group("read_mode", "Read-only notes"),
            Group("write_mode", "Writable notes"),
        ]
    )
    ts.exclusive("read_mode", "write_mode")
    ts.add_tools(
        [
            Tool("ping", "Answer pong.", handler=lambda a, c: {"pong": True}),
            Tool("whoami", "Who is calling.", handler=whoami),
            Tool(
                "wipe",
                "Wipe the scratch space.",
                handler=echo("wipe"),
                policy=Policy(decision="confirm"),
            ),
            Tool(
                "get_file",
                "Get a file.",
                handler=echo("get_file"),
                groups=("code",),
                input_schema=PATH_SCHEMA,
            ),
            Tool("fork_repo", "Fork a repository.", handler=echo("fork_repo"), groups=("repos",)),
            Tool(
                "delete_repo",
                "Delete a repository.",
                handler=echo("delete_repo"),
                groups=("repos",),
                policy=Policy(min_trust="verified"),
            ),
            Tool("list_issues", "List issues.", handler=echo("list_issues"), groups=("issues",)),
            Tool(
                "create_issue", "Create an issue.", handler=echo("create_issue"), groups=("issues",)
            ),
            Tool("read_notes", "Read notes.", handler=echo("read_notes"), groups=("read_mode",)),
            Tool(
                "write_notes", "Write notes.", handler=echo("write_notes"), groups=("write_mode",)
            ),
        ]
    )
    return ts


def build_server(
    *,
    kind: str = "lowlevel",
    strategy: str = "auto",
    meta_tools: str = "menu",
    page_size: int = 100,
    identity: IdentityResolver | None = None,
) -> tuple[Server[Any] | MCPServer[Any], Binding]:
    """A fresh server and its binding (``kind``: ``"lowlevel"`` or ``"mcpserver"``)."""
    ts = build_toolset(page_size=page_size)
    server: Server[Any] | MCPServer[Any]
    if kind == "mcpserver":
        mcp_server: MCPServer[Any] = MCPServer("mcpserver-demo")

        @mcp_server.tool()
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        server = mcp_server
    else:
        server = Server("lowlevel-demo", version="1.0")
    config = DeliveryConfig(strategy=strategy, meta_tools=meta_tools)
    binding = bind(server, ts, config, identity=identity or IdentityResolver())
    return server, binding


class LocalAdmin(IdentityResolver):
    """The stdio script's configured identity: a verified local operator."""

    async def resolve(self, caller: Any) -> Principal | None:
        return Principal(id="local-admin", trust="verified")


async def serve_stdio(strategy: str, meta_tools: str, page_size: int) -> None:
    from mcp.server.stdio import stdio_server

    server, _ = build_server(
        strategy=strategy, meta_tools=meta_tools, page_size=page_size, identity=LocalAdmin()
    )
    assert isinstance(server, Server)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__" and sys.argv[1:2] == ["stdio"]:
    rest = sys.argv[2:]
    anyio.run(
        serve_stdio,
        rest[0] if rest else "auto",
        rest[1] if len(rest) > 1 else "menu",
        int(rest[2]) if len(rest) > 2 else 100,
    )
    quick_exit()  # end without collecting the heap (toolgate.exiting)
