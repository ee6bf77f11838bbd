"""npm's ``server-filesystem`` and ``server-memory`` behind the real gateway: the same
tools and the same results as asked directly, with ``mcp.Client`` and ``fastmcp.Client``
on both protocol eras.

One ``toolgate serve`` (HTTP, strategy ``flat``) per module in front of both servers;
the direct answers come from the same servers over stdio, each against its own copy of
the folder and its own memory file, so both sides start from the same state.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastmcp
import mcp_types as mt
import pytest
from fastmcp.client.transports import StreamableHttpTransport
from mcp import Client, ClientSession, StdioServerParameters, stdio_client

from _fixtures.gateway import HttpGateway, toolgate_argv
from _fixtures.npm_servers import NpmServers, ensure_npm_servers
from _fixtures.spec import CLIENTS, PROTOCOL, ClientKind, Era


def seed(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("first line\nsecond line\n", "utf-8")
    (folder / "sub").mkdir()
    (folder / "sub" / "data.json").write_text('{"answer": 42}\n', "utf-8")
    return folder


def stdio_entry(npm: NpmServers, name: str, *args: str, memory: Path | None = None) -> Any:
    entry: dict[str, Any] = npm.command(name, *args)
    if memory is not None:
        entry["env"] = {"MEMORY_FILE_PATH": str(memory)}
    return entry


@dataclass
class Served:
    gateway: HttpGateway
    npm: NpmServers
    folder: Path  # the gateway's filesystem backend serves this folder
    direct_folder: Path  # the directly asked server serves this copy
    direct_memory: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    npm = ensure_npm_servers()
    tmp = tmp_path_factory.mktemp("npm-tools")
    folder = seed(tmp / "via-gateway" / "files")
    direct_folder = tmp / "direct" / "files"
    shutil.copytree(folder, direct_folder)
    config = {
        "mcpServers": {
            "filesystem": stdio_entry(npm, "filesystem", str(folder)),
            "memory": stdio_entry(npm, "memory", memory=tmp / "gateway-memory.jsonl"),
        },
        "toolgate": {"strategy": "flat"},
    }
    path = tmp / "toolgate.json"
    path.write_text(json.dumps(config, indent=2))
    gateway = HttpGateway([*toolgate_argv(), "serve", str(path)], tmp / "gateway.log")
    gateway.start()
    try:
        yield Served(gateway, npm, folder, direct_folder, tmp / "direct-memory.jsonl")
    finally:
        gateway.stop()


@asynccontextmanager
async def direct(served: Served, name: str) -> AsyncIterator[ClientSession]:
    if name == "filesystem":
        argv = served.npm.argv("filesystem", str(served.direct_folder))
        env = None
    else:
        argv = served.npm.argv("memory")
        env = {"MEMORY_FILE_PATH": str(served.direct_memory), "PATH": "/usr/bin:/bin"}
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def through(served: Served, kind: ClientKind, era: Era) -> AsyncIterator[ClientSession]:
    """The gateway's client session of ``kind`` on ``era``."""
    mode = "legacy" if era == "legacy" else "auto"
    if kind == "fastmcp":
        client: fastmcp.Client[Any] = fastmcp.Client(
            StreamableHttpTransport(served.gateway.url), mode=mode
        )
        async with client:
            assert client.session.protocol_version == PROTOCOL[era]
            yield client.session
        return
    async with Client(served.gateway.url, mode=mode) as sdk:
        assert sdk.session.protocol_version == PROTOCOL[era]
        yield sdk.session


def tool_defs(tools: list[mt.Tool]) -> dict[str, dict[str, Any]]:
    return {
        t.name: {
            "description": t.description,
            "inputSchema": t.input_schema,
            "annotations": t.annotations.model_dump(exclude_none=True) if t.annotations else None,
        }
        for t in tools
    }


def result(res: mt.CallToolResult, *, root: Path | None = None) -> dict[str, Any]:
    """A call's result as the model reads it; a served folder's path is made neutral."""
    text = json.dumps(
        {
            "content": [c.model_dump(by_alias=True, exclude_none=True) for c in res.content],
            "structured": res.structured_content,
            "is_error": bool(res.is_error),
        },
        sort_keys=True,
    )
    if root is not None:
        text = text.replace(str(root), "<root>")
    return dict(json.loads(text))


async def test_the_gateway_lists_the_servers_tools_as_they_define_them(served: Served) -> None:
    async with direct(served, "filesystem") as fs, direct(served, "memory") as mem:
        expected = tool_defs((await fs.list_tools()).tools)
        expected |= tool_defs((await mem.list_tools()).tools)
    assert len(expected) >= 20 and "read_text_file" in expected and "read_graph" in expected
    for kind, era in CLIENTS:
        async with through(served, kind, era) as session:
            listed = tool_defs((await session.list_tools()).tools)
        assert listed == expected, (kind, era)


@pytest.mark.parametrize(("kind", "era"), CLIENTS)
async def test_filesystem_calls_answer_as_the_server_does(
    served: Served, kind: ClientKind, era: Era
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read_text_file", {"path": "notes.txt"}),
        ("read_text_file", {"path": "notes.txt", "head": 1}),
        ("list_directory", {"path": "."}),
        ("directory_tree", {"path": "."}),
        ("search_files", {"path": ".", "pattern": "*.json"}),
        ("read_text_file", {"path": "missing.txt"}),  # the server's own error
        ("list_allowed_directories", {}),
    ]

    def absolute(args: dict[str, Any], root: Path) -> dict[str, Any]:
        return {k: str(root / v) if k == "path" else v for k, v in args.items()}

    async with direct(served, "filesystem") as fs, through(served, kind, era) as gw:
        for tool, args in calls:
            want = result(
                await fs.call_tool(tool, absolute(args, served.direct_folder)),
                root=served.direct_folder,
            )
            got = result(
                await gw.call_tool(tool, absolute(args, served.folder)), root=served.folder
            )
            assert got == want, tool


@pytest.mark.parametrize(("kind", "era"), CLIENTS)
async def test_memory_calls_answer_as_the_server_does(
    served: Served, kind: ClientKind, era: Era
) -> None:
    entity = f"{kind}-{era}"
    calls: list[tuple[str, dict[str, Any]]] = [
        (
            "create_entities",
            {"entities": [{"name": entity, "entityType": "client", "observations": ["speaks"]}]},
        ),
        ("add_observations", {"observations": [{"entityName": entity, "contents": ["listens"]}]}),
        ("search_nodes", {"query": entity}),
        ("open_nodes", {"names": [entity]}),
        ("delete_entities", {"entityNames": [entity]}),
        ("search_nodes", {"query": entity}),
    ]
    async with direct(served, "memory") as mem, through(served, kind, era) as gw:
        for tool, args in calls:
            want = result(await mem.call_tool(tool, args))
            got = result(await gw.call_tool(tool, args))
            assert got == want, tool
