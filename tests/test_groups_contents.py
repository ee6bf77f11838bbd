"""``groups/get`` carries the prompts, resources and resource templates a group holds,
through real clients on both protocol eras, from a ``contents`` provider.

The catalog comes from a gateway config whose groups have ``prompts:`` / ``resources:``
patterns; the provider is ``GroupExposure.contents`` over a fixed list of relayed
primitives (what the gateway's relay gives it), served by FastMCP's ``ServerExtension``,
the SDK's lowlevel ``Server`` (an async provider) and ``MCPServer`` in memory.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import fastmcp
import pytest
import pytest_asyncio
from fastmcp.client.transports import StreamableHttpTransport
from mcp import Client as SDKClient
from mcp.client.extension import advertise
from mcp.server import MCPServer, Server
from mcp.shared.exceptions import MCPError

from _fixtures.mcp_servers import serve
from toolgate.catalog import CallContext, Handler, ToolResult
from toolgate.client import GroupsClientExtension
from toolgate.client.extension import RAW, GetGroupParams, GetGroupRequest
from toolgate.fastmcp import GroupsServerExtension
from toolgate.gateway.config.build import BackendTool, build_toolset, delivery_config
from toolgate.gateway.config.model import parse_config
from toolgate.gateway.relay.access import Relayed
from toolgate.gateway.relay.exposure import GroupExposure
from toolgate.groups_extension import GroupsExtension, bind_groups
from toolgate.identity import Caller
from toolgate.policy import Principal
from toolgate.request import RequestFacts
from toolgate.strategies import Delivery

EXT = "io.modelcontextprotocol/groups"
MODES = ["legacy", "auto"]  # 2025-11-25 with initialize; 2026-07-28 stateless
PRINCIPALS = {"coder": Principal(id="coder", scope=("code",))}
pytestmark = pytest.mark.asyncio(loop_scope="module")

CONFIG = {
    "mcpServers": {"gh": {"command": "unused"}, "kb": {"command": "unused"}},
    "toolgate": {
        "strategy": "groups",
        "groups": {
            "code": {
                "description": "Code review.",
                "tools": ["code_search"],
                "prompts": ["review_*"],
                "resources": ["repo://*"],
            },
            "code_admin": {
                "description": "Repository admin.",
                "parent": "code",
                "tools": ["gh:reset_repo"],
                "prompts": ["gh:admin_*"],
            },
            "notes": {"description": "Notes.", "tools": ["kb:*"], "resources": ["kb:notes://*"]},
        },
    },
}


def relayed(kind: Any, backend: str, key: str, **wire: Any) -> Relayed:
    field = {"prompt": "name", "resource": "uri", "template": "uriTemplate"}[kind]
    return Relayed(kind, backend, key, key, {field: key, **wire})


ITEMS = [
    relayed("prompt", "gh", "review_pr", description="Review a pull request."),
    relayed("prompt", "gh", "review_file", arguments=[{"name": "path", "required": True}]),
    relayed("prompt", "gh", "admin_reset"),
    relayed("prompt", "kb", "greet"),  # top-level: no pattern holds it
    relayed("resource", "gh", "repo://readme", name="readme", mimeType="text/markdown"),
    relayed("template", "gh", "repo://files/{path}", name="file"),
    relayed("resource", "kb", "notes://today", name="today"),
    relayed("resource", "kb", "top://motd", name="motd"),
]


def wire_of(key: str) -> dict[str, Any]:
    return next(dict(i.wire) for i in ITEMS if i.name == key)


def handler_for(tool: BackendTool) -> Handler:
    def run(arguments: Mapping[str, Any], ctx: CallContext) -> ToolResult:
        return ToolResult.text(tool.name)

    return run


def build() -> tuple[Delivery, GroupExposure]:
    cfg = parse_config(CONFIG, environ={})
    listed: dict[str, list[dict[str, Any]]] = {
        "gh": [
            {"name": n, "inputSchema": {"type": "object"}} for n in ("code_search", "reset_repo")
        ],
        "kb": [{"name": "note_add", "inputSchema": {"type": "object"}}],
    }
    toolset, report = build_toolset(cfg, listed, handler_for)
    assert not report.errors, report.errors
    delivery = Delivery(toolset, delivery_config(cfg))
    return delivery, GroupExposure(cfg, delivery)


def identity(caller: Caller) -> Principal | None:
    name = caller.headers.get("x-principal")
    return PRINCIPALS.get(name) if name else None


def fastmcp_app(delivery: Delivery, exposure: GroupExposure) -> Any:
    server = fastmcp.FastMCP("contents-test")
    contents = exposure.contents(lambda: ITEMS)
    server.add_extension(GroupsServerExtension(delivery, identity=identity, contents=contents))
    return server.http_app(path="/mcp")


def lowlevel_app(delivery: Delivery, exposure: GroupExposure) -> Any:
    async def unused(ctx: Any, params: Any) -> Any:
        raise AssertionError("no tools are used here")

    async def contents(facts: RequestFacts, group: str) -> list[Relayed]:
        return exposure.in_group(facts, group, ITEMS)  # an async provider is awaited

    server = Server("contents-test", on_list_tools=unused, on_call_tool=unused)
    bind_groups(server, delivery, identity=identity, contents=contents)
    return server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def urls() -> AsyncIterator[dict[str, str]]:
    async with contextlib.AsyncExitStack() as stack:
        out = {}
        for name, make in (("fastmcp", fastmcp_app), ("lowlevel", lowlevel_app)):
            out[name] = await stack.enter_async_context(serve(make(*build())))
        yield out


def connect(url: str, mode: str, principal: str | None = None) -> fastmcp.Client[Any]:
    headers = {"x-principal": principal} if principal else None
    transport = StreamableHttpTransport(url, headers=headers, verify=False)
    return fastmcp.Client(transport, mode=mode, extensions=[GroupsClientExtension()])


async def groups_get(client: Any, name: str) -> dict[str, Any]:
    req = GetGroupRequest(params=GetGroupParams(name=name))
    result = dict(await client.session.send_request(req, RAW))
    return {k: v for k, v in result.items() if k not in ("resultType", "_meta")}


def tool_names(result: Mapping[str, Any]) -> list[str]:
    return [t["name"] for t in result["contents"]["tools"]]


SERVERS = ["fastmcp", "lowlevel"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("server", SERVERS)
async def test_groups_get_holds_the_groups_prompts_resources_and_templates(
    urls: dict[str, str], server: str, mode: str
) -> None:
    async with connect(urls[server], mode) as c:
        got = await groups_get(c, "code")
    assert tool_names(got) == ["code_search"]
    contents = got["contents"]
    assert contents["prompts"] == [wire_of("review_file"), wire_of("review_pr")]
    assert contents["resources"] == [wire_of("repo://readme")]
    assert contents["resourceTemplates"] == [wire_of("repo://files/{path}")]
    assert contents["groups"] == [{"name": "code-admin", "description": "Repository admin."}]
    assert set(contents) == {"tools", "prompts", "resources", "resourceTemplates", "groups"}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("server", SERVERS)
async def test_a_child_group_holds_its_own_prompts_under_its_wire_name(
    urls: dict[str, str], server: str, mode: str
) -> None:
    async with connect(urls[server], mode) as c:
        got = await groups_get(c, "code-admin")
    assert got["contents"] == {
        "tools": got["contents"]["tools"],
        "prompts": [wire_of("admin_reset")],
        "groups": [],
    }
    assert tool_names(got) == ["reset_repo"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("server", SERVERS)
async def test_a_group_without_prompts_has_no_prompts_key(
    urls: dict[str, str], server: str, mode: str
) -> None:
    async with connect(urls[server], mode) as c:
        got = await groups_get(c, "notes")
    assert set(got["contents"]) == {"tools", "resources", "groups"}
    assert got["contents"]["resources"] == [wire_of("notes://today")]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("server", SERVERS)
async def test_a_group_out_of_scope_shows_no_contents_and_is_unknown(
    urls: dict[str, str], server: str, mode: str
) -> None:
    async with connect(urls[server], mode, principal="coder") as c:
        child = await groups_get(c, "code-admin")  # in scope through its parent
        with pytest.raises(MCPError) as raised:
            await groups_get(c, "notes")
    assert child["contents"]["prompts"] == [wire_of("admin_reset")]
    assert raised.value.error.code == -32002
    assert raised.value.error.message == "Unknown group: notes"


@pytest.mark.parametrize("mode", MODES)
async def test_mcpserver_passes_contents_through_its_extension_api(mode: str) -> None:
    delivery, exposure = build()
    ext = GroupsExtension(delivery, contents=exposure.contents(lambda: ITEMS))
    server = MCPServer("contents-test", extensions=[ext], middleware=[ext.legacy_advert])
    async with SDKClient(server, mode=mode, extensions=[advertise(EXT)]) as c:
        got = await groups_get(c, "notes")
    assert got["contents"]["resources"] == [wire_of("notes://today")]


async def test_without_a_provider_contents_are_tools_and_groups_only() -> None:
    delivery, _ = build()
    server = MCPServer("contents-test", extensions=[GroupsExtension(delivery)])
    async with SDKClient(server, extensions=[advertise(EXT)]) as c:
        got = await groups_get(c, "code")
    assert set(got["contents"]) == {"tools", "groups"}
