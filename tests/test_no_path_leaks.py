"""No disclosure path shows, describes, counts or runs a tool an identity may not access.

Bob may use part of ``repos`` (not ``repo_list``, a near-typo of his ``repos_list``),
nothing of ``admin`` (in his scope, every tool above his trust) nor ``billing`` (out of
his scope; it also holds his ``repos_fork``), and not the root tool ``shutdown``. One
script walks every path as bob on that catalog and on one where those tools (and the
groups holding only them) never existed: any difference is a leak. As alice it must
differ, or the script never reached them. Real clients on both eras; the SDK adapter,
the FastMCP middleware and ``toolgate serve`` over HTTP with two bearer tokens.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import fastmcp
import httpx2
import mcp_types as mt
import pytest
from fastmcp.client.transports import FastMCPTransport, StreamableHttpTransport
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer
from mcp.shared.exceptions import MCPError

from _fixtures.gateway import SERVERS, HttpGateway, sha256, toolgate_argv, wait_for_port
from toolgate import CallContext, Flow, Group, Policy, Principal, Tool, ToolSet
from toolgate.client import GroupsClientExtension
from toolgate.client.extension import (
    RAW,
    GetGroupParams,
    GetGroupRequest,
    ListGroupsParams,
    ListGroupsRequest,
)
from toolgate.fastmcp import ToolgateMiddleware
from toolgate.groups_extension import bind_groups
from toolgate.lowlevel import bind
from toolgate.sdk_internals import lowlevel_of
from toolgate.search import SearchSettings
from toolgate.strategies import DeliveryConfig
from toolgate.strategies.lazy import LazyDescriptions

Era = Literal["legacy", "2026"]
NUMBER: dict[str, Any] = {
    "type": "object",
    "properties": {"number": {"type": "integer", "description": "The issue number."}},
    "required": ["number"],
}

#: group -> (description, parent); bob sees issues and repos, not admin nor billing
GROUPS: dict[str, tuple[str, str | None]] = {
    "issues": ("github: open, list and close issues", None),
    "repos": ("github: list and fork repositories", None),
    "hooks": ("github: repository webhooks", "repos"),
    "admin": ("ops: users, audit logs and repository deletion", None),
    "billing": ("ops: invoices and plans for the organisation", None),
}
#: (name, description, groups, min_trust, schema)
TOOLS: tuple[tuple[str, str, tuple[str, ...], str | None, Mapping[str, Any] | None], ...] = (
    ("ping", "Answer pong to check the server is up.", (), None, None),
    ("shutdown", "Shut the server down and list every open issue first.", (), "verified", None),
    ("issues_list", "List open issues of a repository.", ("issues",), None, None),
    ("issues_close", "Close an issue by its number.", ("issues",), None, NUMBER),
    ("repos_list", "List repositories of the organisation.", ("repos",), None, None),
    ("repos_fork", "Fork a repository.", ("billing", "repos"), None, None),
    ("repo_list", "List private repositories and their secrets.", ("repos",), "verified", None),
    ("hooks_list", "List the webhooks of a repository.", ("hooks",), None, None),
    ("hooks_purge", "Delete every webhook of every repository.", ("hooks",), "verified", None),
    ("admin_users", "List users and reset their passwords.", ("admin",), "verified", None),
    ("admin_audit", "Read the audit log of repository issues.", ("admin",), "verified", None),
    ("billing_invoices", "List invoices of the organisation.", ("billing",), None, None),
)
HIDDEN_FROM_BOB = {
    "shutdown",
    "repo_list",
    "hooks_purge",
    "admin_users",
    "admin_audit",
    "billing_invoices",
}
#: groups whose every tool bob may not use: to him they do not exist
GONE_FOR_BOB = {"admin", "billing"}
#: a flow: bob's hooks_list and his hidden shutdown wait for the "review" stage
STAGES: dict[str, Any] = {"initial": "work", "stages": [{"name": "work"}, {"name": "review"}]}
STAGED = {"hooks_list": frozenset({"review"}), "shutdown": frozenset({"review"})}
ALICE = Principal(id="alice", trust="verified", scope=("*",))
BOB = Principal(id="bob", trust="declared", scope=("default", "issues", "repos", "admin"))

#: names every script asks about: every tool and group, plus ones that never existed
TOOL_NAMES = [t[0] for t in TOOLS] + ["repos_lst", "no_such_tool"]
GROUP_NAMES = [*GROUPS, "no_such_group"]
QUERIES = [
    "list repositories",
    "repo list",
    "delete repository",
    "audit log",
    "invoices",
    "close issue",
    "reset passwords of users",
]
PATTERNS = ["repo", "list", "^admin", "invoice|audit"]


# -- the catalog, with or without what bob may not use ------------------------------------
def catalog(principal: Principal, *, reference: bool, hybrid: bool = False) -> ToolSet:
    """The catalog served to ``principal``; ``reference``: as if the tools hidden from
    bob (and the groups holding only them) had never been registered."""
    ts = ToolSet(
        "acl",
        page_size=3,
        default_principal=principal,
        search=SearchSettings("hybrid") if hybrid else None,
        flow=Flow.from_mapping(STAGES),
    )
    for name, (description, parent) in GROUPS.items():
        if not (reference and name in GONE_FOR_BOB):
            ts.add_group(Group(name, description, parent=parent))

    def echo(name: str) -> Any:
        def run(arguments: Mapping[str, Any], ctx: CallContext) -> str:
            return f"{name} ran with {json.dumps(dict(arguments), sort_keys=True)}"

        return run

    for name, description, groups, trust, schema in TOOLS:
        if reference and name in HIDDEN_FROM_BOB:
            continue
        ts.add_tool(
            Tool(
                name,
                description,
                handler=echo(name),
                groups=tuple(g for g in groups if not (reference and g in GONE_FOR_BOB)),
                input_schema=dict(schema or {"type": "object", "properties": {}}),
                policy=Policy(min_trust=trust),
                stages=STAGED.get(name),
            )
        )
    return ts


@dataclass(frozen=True)
class Style:
    """A server configuration: which meta-tools, lazy descriptions, which search."""

    meta_tools: Literal["menu", "activators"]
    lazy: bool
    hybrid: bool

    def __str__(self) -> str:
        return f"{self.meta_tools}{'-lazy' if self.lazy else ''}{'-hybrid' if self.hybrid else ''}"


STYLES = (Style("menu", lazy=False, hybrid=False), Style("activators", lazy=True, hybrid=True))


def _default_principal(caller: Any) -> None:
    return None  # in memory: every request is the toolset's default principal


def serve(adapter: str, style: Style, principal: Principal, *, reference: bool) -> Any:
    ts = catalog(principal, reference=reference, hybrid=style.hybrid)
    addons = [LazyDescriptions(ts)] if style.lazy else []
    config = DeliveryConfig(strategy="auto", meta_tools=style.meta_tools, search=True)
    if adapter == "lowlevel":
        server: MCPServer[Any] = MCPServer("acl")
        binding = bind(server, ts, config, identity=_default_principal, addons=addons)
        bind_groups(server, binding.delivery, facts=binding.facts)
        return server
    app: fastmcp.FastMCP[Any] = fastmcp.FastMCP("acl")
    ToolgateMiddleware(ts, config, identity=_default_principal, addons=addons).attach(app)
    return app


# -- the script every path is walked with -------------------------------------------------
def _content(result: mt.CallToolResult) -> Any:
    texts = [c.text for c in result.content if isinstance(c, mt.TextContent)]
    return {"error": result.is_error, "structured": result.structured_content, "text": texts}


def paged(cursor: str | None) -> mt.PaginatedRequestParams | None:
    return mt.PaginatedRequestParams(cursor=cursor) if cursor else None


async def every_page(fetch: Callable[[str | None], Awaitable[Any]], field: str) -> list[Any]:
    """A paged list's pages as sent (their items and cursors), walked to the end."""
    out = []
    cursor: str | None = None
    while True:
        page = await fetch(cursor)
        data = page if isinstance(page, dict) else page.model_dump(by_alias=True, mode="json")
        out.append({"items": data.get(field), "nextCursor": data.get("nextCursor")})
        cursor = data.get("nextCursor")
        if cursor is None:
            return out


class Script:
    """Runs the requests of every disclosure path through one client session and keeps
    what came back, in order: JSON-RPC errors as their code and message."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self.seen: list[tuple[str, Any]] = []

    async def ask(self, what: str, request: Any) -> Any:
        try:
            answer = await request
        except MCPError as exc:
            self.seen.append((what, {"rpc_error": exc.error.code, "message": exc.error.message}))
            return None
        self.seen.append((what, answer))
        return answer

    async def tools_list(self) -> list[str]:
        """Every page, walked by its cursor: definitions and cursors as sent."""
        cursor: str | None = None
        names: list[str] = []
        while True:
            params = mt.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await self.session.list_tools(params=params)
            data = page.model_dump(by_alias=True, exclude_none=True, mode="json")
            data.pop("_meta", None)
            data.pop("resultType", None)
            self.seen.append(("tools/list", data))
            names += [t.name for t in page.tools]
            cursor = page.next_cursor
            if cursor is None:
                return names

    async def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        async def run() -> Any:
            return _content(await self.session.call_tool(name, dict(arguments or {})))

        return await self.ask(f"call {name} {json.dumps(arguments, sort_keys=True)}", run())

    async def groups(self, wire_names: list[str]) -> None:
        session: Any = self.session  # the extension's requests are no ClientRequest

        async def listed() -> Any:
            async def page(cursor: str | None) -> Any:
                req = ListGroupsRequest(params=ListGroupsParams(cursor=cursor))
                return dict(await session.send_request(req, RAW))

            return await every_page(page, "groups")

        async def got(name: str) -> Any:
            req = GetGroupRequest(params=GetGroupParams(name=name))
            data = dict(await session.send_request(req, RAW))
            return {k: v for k, v in data.items() if k not in ("_meta", "resultType")}

        await self.ask("groups/list", listed())
        for name in wire_names:
            await self.ask(f"groups/get {name}", got(name))

    async def resources(self) -> None:
        async def listed() -> Any:
            return await every_page(
                lambda c: self.session.list_resources(params=paged(c)), "resources"
            )

        async def read(uri: str) -> Any:
            found = await self.session.read_resource(uri)
            return [
                c.model_dump(by_alias=True, exclude_none=True, mode="json") for c in found.contents
            ]

        async def templates() -> Any:
            found = await self.session.list_resource_templates()
            return [
                t.model_dump(by_alias=True, exclude_none=True) for t in found.resource_templates
            ]

        await self.ask("resources/list", listed())
        await self.ask("resources/templates/list", templates())
        base = "resource:///tool_descriptions"
        for name in [*sorted(HIDDEN_FROM_BOB), "repos_list", "repos_lst", "no_such_tool"]:
            await self.ask(f"read {name}", read(f"{base}?tools={name}"))
        await self.ask("read all", read(f"{base}?tools={','.join(TOOL_NAMES)}"))
        await self.ask("read none", read(base))


async def walk(session: ClientSession, *, extension: bool) -> list[tuple[str, Any]]:
    """Every disclosure path a client of this session can take, in one fixed order."""
    s = Script(session)
    listed = await s.tools_list()
    for name in ("repos_fork", "hooks_list"):  # before any group is on: the hint names which
        await s.call(name)
    await s.call("list_groups")
    for group in GROUP_NAMES:
        await s.call("get_group", {"name": group})
    await s.call("get_group", {"name": "repos", "detail": "full"})
    for group in GROUP_NAMES:
        for suffix in ("activate", "deactivate"):
            if f"{group}.{suffix}" in listed or group in GONE_FOR_BOB:
                await s.call(f"{group}.{suffix}")
    await s.call("enable_tools", {"groups": GROUP_NAMES})
    await s.call("enable_tools", {"groups": ["repos", "hooks"], "detail": "full"})
    await s.tools_list()  # a legacy client re-lists after list_changed
    for group in GROUP_NAMES:
        await s.call("enable_tools", {"groups": [group]})
    await s.call("list_groups")
    await s.call("describe_tools", {"tools": TOOL_NAMES})
    for name in TOOL_NAMES:
        await s.call("describe_tools", {"tools": [name]})
    await s.call("describe_tools", {"tools": []})
    for query in QUERIES:  # scores and ranks of the whole list; a compact index's lines
        await s.call("search_tools", {"query": query, "limit": 20, "detail": "full"})
        await s.call("search_tools", {"query": query, "limit": 3})
    await s.call("search_tools", {"query": QUERIES[0], "queries": QUERIES[1:], "limit": 4})
    for pattern in PATTERNS:
        await s.call("search_tools_regex", {"pattern": pattern, "limit": 20})
    for name in TOOL_NAMES:
        await s.call(name, {"number": 7} if name == "issues_close" else {})
        await s.call("call_tool", {"name": name, "arguments": {}})
    await s.call("issues_close", {"numbr": 7})  # a misspelt argument: no close names offered
    await s.call("disable_tools", {"groups": GROUP_NAMES})
    await s.tools_list()
    await s.resources()
    if extension:
        await s.groups([g.replace("_", "-") for g in GROUP_NAMES])
    return s.seen


@asynccontextmanager
async def connected(
    target: Any, era: Era, kind: str, *, extension: bool = False, **http: Any
) -> AsyncIterator[ClientSession]:
    mode = "legacy" if era == "legacy" else "auto"
    extensions = [GroupsClientExtension()] if extension else None
    if kind == "fastmcp":
        if isinstance(target, MCPServer):  # fastmcp.Client infers no transport for it
            target = FastMCPTransport(type("Shim", (), {"_mcp_server": lowlevel_of(target)})())
        async with fastmcp.Client(target, mode=mode, extensions=extensions, **http) as fm:
            yield fm.session
        return
    if isinstance(target, fastmcp.FastMCP):
        target = target._mcp_server
    async with Client(target, mode=mode, extensions=extensions, **http) as sdk:
        yield sdk.session


def _where(a: Any, b: Any, path: str = "") -> list[str]:
    """The paths inside two answers where they differ, with both values there."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [
            p for k in sorted({*a, *b}, key=str) for p in _where(a.get(k), b.get(k), f"{path}.{k}")
        ]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            p
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for p in _where(x, y, f"{path}[{i}]")
        ]
    if a == b:
        return []
    return [f"{path}: {json.dumps(a, default=str)[:300]} != {json.dumps(b, default=str)[:300]}"]


def diff(served: list[tuple[str, Any]], reference: list[tuple[str, Any]]) -> list[str]:
    """Where each step's answers differ (the first ten places); a script that took
    other steps (a list of another length has other pages) differs at its first."""
    out: list[str] = []
    for (what, a), (other, b) in zip(served, reference, strict=False):
        if what != other:
            return [*out, f"the served script went on with {what!r}, the reference with {other!r}"]
        out += [f"{what} {p}" for p in _where(a, b)]
    if len(served) != len(reference):
        out.append(f"{len(served)} steps served, {len(reference)} in the reference")
    return out[:10]


# -- the library: the SDK adapter and the FastMCP middleware --------------------------------
ADAPTERS = ("lowlevel", "fastmcp")
#: each client library on each era, once without and once with the groups extension:
#: (style, client, era, extension), every client on every era for each adapter
LIBRARY_CASES = [
    (STYLES[0], "sdk", "legacy", False),
    (STYLES[0], "fastmcp", "2026", True),
    (STYLES[1], "fastmcp", "legacy", True),
    (STYLES[1], "sdk", "2026", False),
]
CASE_IDS = [
    f"{s}-{kind}-{era}{'-groups-ext' if ext else ''}" for s, kind, era, ext in LIBRARY_CASES
]


@pytest.fixture(scope="module")
def servers() -> dict[tuple[str, str, str], Any]:
    """(adapter, style, who) -> server; who: bob, ref (bob's reference), alice."""
    out: dict[tuple[str, str, str], Any] = {}
    for adapter in ADAPTERS:
        for style in STYLES:
            out[adapter, str(style), "bob"] = serve(adapter, style, BOB, reference=False)
            out[adapter, str(style), "ref"] = serve(adapter, style, BOB, reference=True)
            out[adapter, str(style), "alice"] = serve(adapter, style, ALICE, reference=False)
    return out


@pytest.mark.parametrize(("style", "kind", "era", "extension"), LIBRARY_CASES, ids=CASE_IDS)
@pytest.mark.parametrize("adapter", ADAPTERS)
async def test_every_path_answers_bob_as_if_his_hidden_tools_never_existed(
    servers: dict[tuple[str, str, str], Any],
    adapter: str,
    style: Style,
    kind: str,
    era: Era,
    extension: bool,
) -> None:
    transcripts = {}
    for who in ("bob", "ref", "alice"):
        target = servers[adapter, str(style), who]
        async with connected(target, era, kind, extension=extension) as session:
            transcripts[who] = await walk(session, extension=extension)
    assert diff(transcripts["bob"], transcripts["ref"]) == []
    assert transcripts["alice"] != transcripts["bob"]  # the script reaches the hidden tools


# -- the gateway: toolgate serve over HTTP, two bearer tokens ------------------------------
ALICE_TOKEN, BOB_TOKEN, OPERATOR_TOKEN = "alice-acl-token", "bob-acl-token", "operator-acl-token"
PROMPTS = ["prompt_default", *(f"prompt_{g}" for g in GROUPS)]
RESOURCES = ["acl://default/readme", *(f"acl://{g}/readme" for g in GROUPS)]


def gateway_config(tmp: Path, *, reference: bool) -> Path:
    """The catalog behind ``toolgate serve``: groups, policies and prompts from the config,
    tools from a backend; ``reference``: without what bob may not use."""
    gone = HIDDEN_FROM_BOB if reference else set()
    groups_gone = GONE_FOR_BOB if reference else set()
    tools = [
        {
            "name": n,
            "description": d,
            "inputSchema": dict(s or {"type": "object", "properties": {}}),
        }
        for n, d, _, _, s in TOOLS
        if n not in gone
    ]
    prompts = [p for p in PROMPTS if p.removeprefix("prompt_") not in groups_gone]
    resources = [u for u in RESOURCES if u.split("/")[2] not in groups_gone]
    backend = {"tools": tools, "prompts": prompts, "resources": resources}
    (tmp / "backend.json").write_text(json.dumps(backend))
    groups: dict[str, Any] = {}
    for name, (description, parent) in GROUPS.items():
        if name in groups_gone:
            continue
        members = [f"acl:{n}" for n, _, g, _, _ in TOOLS if name in g and n not in gone]
        groups[name] = {
            "description": description,
            **({"parent": parent} if parent else {}),
            "tools": members,
            "prompts": [f"acl:prompt_{name}"],
            "resources": [f"acl://{name}/*"],
        }
    trusted = [n for n, _, _, trust, _ in TOOLS if trust and n not in gone]
    identity = {
        sha256(token): {"id": p.id, "trust": p.trust, "scope": list(p.scope)}
        for token, p in ((ALICE_TOKEN, ALICE), (BOB_TOKEN, BOB))
    }
    config = {
        "mcpServers": {
            "acl": {
                "command": sys.executable,
                "args": [str(SERVERS / "gw_acl.py"), str(tmp / "backend.json")],
            }
        },
        "toolgate": {
            "strategy": "auto",
            "page_size": 3,
            "groups": groups,
            "policies": [{"tools": trusted, "min_trust": "verified"}] if trusted else [],
            "search": {"mode": "lexical"},
            "descriptions": {"mode": "lazy"},
            "identity": {
                "default": {"id": "local", "trust": "detected", "scope": []},
                "tokens": identity,
            },
            "events": {"jsonl": str(tmp / "events.jsonl")},
            "dashboard": {"enabled": True, "tokens": [sha256(OPERATOR_TOKEN)]},
        },
    }
    path = tmp / "toolgate.json"
    path.write_text(json.dumps(config))
    return path


@pytest.fixture(scope="module")
def gateways(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, HttpGateway]]:
    """``toolgate serve`` of the full catalog and of the reference, both running."""
    out: dict[str, HttpGateway] = {}
    try:
        for name, reference in (("served", False), ("ref", True)):
            tmp = tmp_path_factory.mktemp(f"acl-{name}")
            config = gateway_config(tmp, reference=reference)
            out[name] = HttpGateway([*toolgate_argv(), "serve", str(config)], tmp / "gateway.log")
            out[name].launch()
        for gateway in out.values():
            assert gateway.proc is not None
            wait_for_port(gateway.port, gateway.proc)
        yield out
    finally:
        for gateway in out.values():
            gateway.stop()


@asynccontextmanager
async def over_http(
    url: str,
    token: str,
    era: Era,
    kind: str,
    *,
    extension: bool = False,
    toolsets: str | None = None,
) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"}
    if toolsets is not None:
        headers["X-MCP-Toolsets"] = toolsets
    mode = "legacy" if era == "legacy" else "auto"
    extensions = [GroupsClientExtension()] if extension else None
    if kind == "fastmcp":
        transport = StreamableHttpTransport(url, headers=headers)
        async with fastmcp.Client(transport, mode=mode, extensions=extensions) as fm:
            yield fm.session
        return
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(
            streamable_http_client(url, http_client=http), mode=mode, extensions=extensions
        ) as sdk,
    ):
        yield sdk.session


async def walk_gateway(session: ClientSession, *, extension: bool) -> list[tuple[str, Any]]:
    """The library's script, then the paths only the gateway has: prompts and resources
    in groups (their lists are in the script already)."""
    seen = await walk(session, extension=extension)
    s = Script(session)

    async def prompts() -> Any:
        return await every_page(lambda c: session.list_prompts(params=paged(c)), "prompts")

    await s.ask("prompts/list", prompts())
    for name in [*PROMPTS, "prompt_nope"]:

        async def got(name: str = name) -> Any:
            answer = await session.get_prompt(name)
            return answer.model_dump(
                by_alias=True, exclude_none=True, mode="json", exclude={"meta"}
            )

        await s.ask(f"prompts/get {name}", got())
    for uri in [*RESOURCES, "acl://nope/readme"]:

        async def read(uri: str = uri) -> Any:
            found = await session.read_resource(uri)
            return [c.model_dump(by_alias=True, exclude_none=True) for c in found.contents]

        await s.ask(f"resources/read {uri}", read())
    return seen + s.seen


@pytest.mark.parametrize(
    ("kind", "era", "extension"),
    [("sdk", "legacy", False), ("fastmcp", "2026", True)],
    ids=["sdk-legacy", "fastmcp-2026-groups-ext"],
)
async def test_the_gateway_answers_bob_as_if_his_hidden_tools_never_existed(
    gateways: dict[str, HttpGateway], kind: str, era: Era, extension: bool
) -> None:
    transcripts = {}
    for who, gateway, token in (
        ("bob", "served", BOB_TOKEN),
        ("ref", "ref", BOB_TOKEN),
        ("alice", "served", ALICE_TOKEN),
    ):
        async with over_http(
            gateways[gateway].url, token, era, kind, extension=extension
        ) as session:
            transcripts[who] = await walk_gateway(session, extension=extension)
    assert diff(transcripts["bob"], transcripts["ref"]) == []
    assert transcripts["alice"] != transcripts["bob"]


async def test_a_view_per_request_names_no_group_bob_may_not_see(
    gateways: dict[str, HttpGateway],
) -> None:
    transcripts = {}
    for who, gateway in (("bob", "served"), ("ref", "ref")):
        s: list[tuple[str, Any]] = []
        for toolsets, query in [
            ("repos", False),
            ("admin", False),
            ("billing", True),
            ("no_such_group", False),
            ("repos,admin", True),
            ("issues,billing", False),
        ]:
            # the header, or ?toolsets= on the endpoint
            url = gateways[gateway].url + (f"?toolsets={toolsets}" if query else "")
            header = None if query else toolsets
            async with over_http(url, BOB_TOKEN, "2026", "sdk", toolsets=header) as session:
                script = Script(session)
                try:
                    await script.tools_list()
                except MCPError as exc:
                    script.seen.append(
                        ("tools/list", {"rpc_error": exc.error.code, "message": exc.error.message})
                    )
                await script.call("repo_list")
                await script.call("repos_list")
                s += [(f"{toolsets} {what}", answer) for what, answer in script.seen]
        transcripts[who] = s
    assert diff(transcripts["bob"], transcripts["ref"]) == []


async def test_metrics_readiness_and_the_dashboard_tell_bob_nothing_they_tell_the_operator(
    gateways: dict[str, HttpGateway],
) -> None:
    base = gateways["served"].url.removesuffix("/mcp")
    async with over_http(gateways["served"].url, ALICE_TOKEN, "legacy", "sdk") as session:
        await session.call_tool("admin_users", {})  # a call bob may not know of
    paths = (
        "/metrics",
        "/readyz",
        "/dashboard/",
        "/dashboard/api/overview",
        "/dashboard/api/events",
    )
    answers = {}
    for who, token in (("bob", BOB_TOKEN), ("nobody", None), ("operator", OPERATOR_TOKEN)):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers) as http:
            answers[who] = {path: await http.get(f"{base}{path}") for path in paths}
    for who in ("bob", "nobody"):
        got = answers[who]
        assert [got[p].status_code for p in ("/metrics", "/readyz")] == [
            403 if who == "bob" else 401,
            200,
        ]
        assert got["/readyz"].json() == {
            "ready": True,
            "status": "ok",
            "backends": {"acl": {"status": "up", "up": True, "error": None}},
        }
        for path in paths:
            assert "admin_users" not in got[path].text, (who, path)
    operator = answers["operator"]
    assert 'tool="admin_users"' in operator["/metrics"].text
    assert operator["/readyz"].json()["tools"] == len(TOOLS)
