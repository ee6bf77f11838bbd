"""The frameworks' private names toolgate reads are all there, on live objects.

``toolgate.sdk_internals`` (the MCP SDK) and ``toolgate.fastmcp_internals`` (FastMCP)
are the only modules that read a framework's private names. When a framework release
drops one, these tests fail naming the framework's version and the missing name, and
nothing else in the source reads a private name of theirs (checked here too).
"""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import fastmcp
import pytest
from fastmcp.server.context import Context as FastMCPContext
from mcp.server import MCPServer, ServerRequestContext

from _fixtures.paths import PROJECT_ROOT
from toolgate import sdk_internals
from toolgate.fastmcp_internals import (
    PRIVATE_ATTRIBUTES,
    has_foreign_extension,
    mounted_origin,
    sdk_context,
    sdk_server,
    watch_components,
)
from toolgate.sdk_internals import (
    fast_path_missing,
    lowlevel_of,
    registered_tools,
    session_manager,
)

SRC = PROJECT_ROOT / "src" / "toolgate"


def _missing(framework: str, names: list[str]) -> str:
    return f"{framework} {version(framework)} lacks {', '.join(names)}"


def test_the_sdk_has_every_private_name_the_fast_path_runs() -> None:
    assert sdk_internals.MISSING == (), _missing("mcp", list(sdk_internals.MISSING))


async def test_the_sdk_objects_carry_the_private_attributes_read() -> None:
    server: MCPServer = MCPServer("probe")

    @server.tool()
    def ping() -> str:
        return "pong"

    lowlevel = lowlevel_of(server)
    assert lowlevel.get_request_handler("tools/call") is not None
    assert [t.name for t in registered_tools(server)] == ["ping"]
    lowlevel.streamable_http_app()
    manager = session_manager(lowlevel)
    assert manager is not None, _missing("mcp", ["Server._session_manager"])
    missing = fast_path_missing(manager)
    assert missing == (), _missing("mcp", list(missing))
    del manager._session_owners  # an SDK whose manager keeps its owners elsewhere
    assert fast_path_missing(manager) == ("StreamableHTTPSessionManager._session_owners",)


async def test_fastmcp_objects_carry_the_private_attributes_read() -> None:
    server = fastmcp.FastMCP("probe")
    missing = [
        name
        for name in PRIVATE_ATTRIBUTES
        if name.startswith("FastMCP.") and not hasattr(server, name.split(".", 1)[1])
    ]
    assert not missing, _missing("fastmcp", missing)
    assert sdk_server(server) is not None
    assert has_foreign_extension(server, "io.example/none") is False
    seen: list[object] = []

    @server.tool()
    def probe(ctx: FastMCPContext) -> str:
        rc = ctx.request_context
        assert rc is not None
        seen.append(sdk_context(rc))
        return "ok"

    async with fastmcp.Client(server) as client:
        await client.call_tool("probe", {})
    assert len(seen) == 1
    assert isinstance(seen[0], ServerRequestContext), _missing("fastmcp", ["RequestContext._srctx"])


async def test_a_mounted_servers_tool_names_the_server_and_name_it_comes_from() -> None:
    child = fastmcp.FastMCP("child")

    @child.tool()
    def ping() -> str:
        return "pong"

    parent = fastmcp.FastMCP("parent")
    parent.mount(child, namespace="kid")
    (lent,) = await parent.list_tools()
    names = [n for n in PRIVATE_ATTRIBUTES if n.startswith("FastMCPProviderTool.")]
    missing = [n for n in names if not hasattr(lent, n.split(".", 1)[1])]
    assert not missing, _missing("fastmcp", missing)
    assert (lent.name, mounted_origin(lent)) == ("kid_ping", (child, "ping"))


def test_a_servers_own_added_and_removed_tools_are_reported() -> None:
    server = fastmcp.FastMCP("watched")
    names = [n for n in PRIVATE_ATTRIBUTES if n.startswith("LocalProvider.")]
    missing = [n for n in names if not hasattr(server.local_provider, n.split(".", 1)[1])]
    assert not missing, _missing("fastmcp", missing)
    changes: list[int] = []
    watch_components(server.local_provider, lambda: changes.append(1))

    @server.tool()
    def ping() -> str:
        return "pong"

    server.local_provider.remove_tool("ping")
    assert len(changes) == 2


PRIVATE_MCP = re.compile(r"\b(from|import) (mcp|fastmcp)[\w.]*\._\w")
PRIVATE_ATTRIBUTE = re.compile(
    r"\.(_connection|_server_instances|_session_owners|_lifespan_state|_idle_timeout"
    r"|_requests_in_flight|_exit_callbacks|_on_notify|_on_request|_lowlevel_server"
    r"|_tool_manager|_srctx|_mcp_server|_auto_extensions|_extensions|_session_manager)\b"
    r"|getattr\([^,()]+, \"_[a-z]\w*\""
    # a private name read by its string (getattr in a loop, setattr): "_add_component"
    r"|[\"'](_add_component|_remove_component|_original_name|_server|_components)[\"']"
)


@pytest.mark.parametrize(
    "path",
    sorted(p for p in SRC.rglob("*.py") if not p.name.endswith("_internals.py")),
    ids=lambda p: str(p.relative_to(SRC)),
)
def test_no_other_module_reads_a_framework_private_name(path: Path) -> None:
    text = path.read_text()
    found = PRIVATE_MCP.findall(text) + PRIVATE_ATTRIBUTE.findall(text)
    assert not found, f"{path.name} reads {found}: go through toolgate.sdk_internals"
