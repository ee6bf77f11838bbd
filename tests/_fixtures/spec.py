"""One catalog, three adapters: the fixture behind ``tests/test_adapter_spec.py``.

``SPEC`` is a small catalog (root tools, a parent/child pair of groups, an exclusion
set, a trust-gated tool, a stage flow, icons and ``_meta``) written once as data, and
served three ways: ``toolgate.lowlevel.bind`` on an SDK ``MCPServer``, the FastMCP
middleware (``toolgate.fastmcp.ToolgateMiddleware(...).attach``), and the gateway
(``toolgate.gateway.serve.Gateway``) in front of a real backend MCP server (SDK
low-level, streamable HTTP on 127.0.0.1) that offers the same tools, with groups,
policies and stages from a gateway config. In each, the tool ``status`` is the host's
own (an ``MCPServer`` / FastMCP tool, a backend tool); the others come from the catalog.
Only public entry points of toolgate are used here.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import fastmcp
import mcp_types as mt
import pytest
from fastmcp.client.transports import FastMCPTransport
from mcp import Client, ClientSession
from mcp.server import MCPServer, Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from _fixtures.mcp_servers import Notes, serve_http
from toolgate import CallContext, Flow, Group, Policy, Principal, Tool, ToolSet
from toolgate.client import GroupsClientExtension
from toolgate.fastmcp import ToolgateMiddleware
from toolgate.gateway.config.model import parse_config
from toolgate.gateway.ingress.app import server_options
from toolgate.gateway.serve import Gateway
from toolgate.groups_extension import bind_groups
from toolgate.lowlevel import bind
from toolgate.strategies import DeliveryConfig
from toolgate.strategies.lazy import LazyDescriptions

AdapterName = Literal["lowlevel", "fastmcp", "gateway", "gateway-http", "gateway-http-sdk"]
Era = Literal["legacy", "2026"]
ClientKind = Literal["sdk", "fastmcp"]
ADAPTERS: tuple[AdapterName, ...] = ("lowlevel", "fastmcp", "gateway")
#: the gateway's real HTTP app (uvicorn with the gateway's own protocol, the guard, the
#: session cap), with its fast path for ``tools/call`` and without it: the shared
#: scenarios run over both, so the two paths answer alike
HTTP_ADAPTERS: tuple[AdapterName, ...] = ("gateway-http", "gateway-http-sdk")
ERAS: tuple[Era, ...] = ("legacy", "2026")
PROTOCOL: dict[Era, str] = {"legacy": "2025-11-25", "2026": "2026-07-28"}
#: every client library on every era, for tests that compare answers across them
CLIENTS: tuple[tuple[ClientKind, Era], ...] = (
    ("sdk", "legacy"),
    ("sdk", "2026"),
    ("fastmcp", "legacy"),
    ("fastmcp", "2026"),
)
GROUPS_EXTENSION = "io.modelcontextprotocol/groups"

ICON: dict[str, Any] = {
    "src": "data:image/png;base64,iVBORw0KGgo=",
    "mimeType": "image/png",
    "sizes": ["16x16"],
}
META: dict[str, Any] = {"io.example/owner": "spec-team", "io.example/rank": 3}
PATH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
}
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class SpecTool:
    """One catalog tool: its MCP wire form and where it lives."""

    name: str
    description: str
    groups: tuple[str, ...] = ()
    schema: Mapping[str, Any] = field(default_factory=lambda: dict(EMPTY_SCHEMA))
    min_trust: str | None = None
    decision: Literal["allow", "confirm"] = "allow"
    stages: tuple[str, ...] | None = None
    icons: tuple[Mapping[str, Any], ...] | None = None
    meta: Mapping[str, Any] | None = None
    #: a typical call's arguments (valid for ``schema``)
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": dict(self.schema),
        }
        if self.icons:
            out["icons"] = [dict(i) for i in self.icons]
        if self.meta:
            out["_meta"] = dict(self.meta)
        return out


GROUPS: dict[str, dict[str, Any]] = {
    "code": {"description": "Code and repositories"},
    "repos": {"description": "Repository admin", "parent": "code"},
    "issues": {
        "description": "Issue tracker",
        "title": "Issues",
        "instructions": "Search before you file.",
    },
    "read_mode": {"description": "Read-only notes"},
    "write_mode": {"description": "Writable notes"},
}
EXCLUSIVE = [["read_mode", "write_mode"]]
STAGES: dict[str, Any] = {
    "initial": "browse",
    "stages": [
        {"name": "browse", "transitions": [{"on": "cart_add", "to": "checkout"}]},
        {"name": "checkout", "enables": ["browse"]},
    ],
}
SPEC: tuple[SpecTool, ...] = (
    SpecTool("ping", "Answer pong."),
    SpecTool("cart_add", "Put an item in the cart."),
    SpecTool("wipe", "Wipe the scratch space.", decision="confirm"),
    SpecTool("checkout", "Pay for the cart.", stages=("checkout",)),
    SpecTool(
        "get_file",
        "Get a file.",
        groups=("code",),
        schema=PATH_SCHEMA,
        icons=(ICON,),
        meta=META,
        arguments={"path": "README"},
    ),
    SpecTool("fork_repo", "Fork a repository.", groups=("repos",)),
    SpecTool("delete_repo", "Delete a repository.", groups=("repos",), min_trust="verified"),
    SpecTool("list_issues", "List issues.", groups=("issues",)),
    SpecTool("read_notes", "Read notes.", groups=("read_mode",)),
    SpecTool("write_notes", "Write notes.", groups=("write_mode",)),
)
#: the host's own root tool (MCPServer / FastMCP decorator, or just another backend tool)
STATUS = SpecTool("status", "Report the server status.", icons=(ICON,), meta=META)
BY_NAME = {t.name: t for t in (*SPEC, STATUS)}
STATUS_TEXT = "all systems go"

#: the principal every adapter serves unless a test names another
DEFAULT_PRINCIPAL = Principal(id="local", trust="declared", scope=("*",))


def echo(name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """What every catalog tool answers, whichever adapter runs it."""
    return {"tool": name, "args": dict(arguments)}


# -- the catalog as a ToolSet ---------------------------------------------------------------
def spec_toolset(
    *,
    page_size: int = 100,
    hidden_tool_errors: Literal["hint", "opaque"] = "hint",
    principal: Principal = DEFAULT_PRINCIPAL,
) -> ToolSet:
    ts = ToolSet(
        "spec",
        flow=Flow.from_mapping(STAGES),
        page_size=page_size,
        hidden_tool_errors=hidden_tool_errors,
        default_principal=principal,
    )
    ts.add_groups(
        Group(
            name,
            g["description"],
            title=g.get("title"),
            parent=g.get("parent"),
            instructions=g.get("instructions"),
        )
        for name, g in GROUPS.items()
    )
    for members in EXCLUSIVE:
        ts.exclusive(*members)

    def handler(name: str) -> Any:
        def run(arguments: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
            return echo(name, arguments)

        return run

    ts.add_tools(
        Tool(
            t.name,
            t.description,
            handler=handler(t.name),
            input_schema=dict(t.schema),
            groups=t.groups,
            policy=Policy(min_trust=t.min_trust, decision=t.decision),
            stages=frozenset(t.stages) if t.stages is not None else None,
            icons=t.icons,
            meta=t.meta,
        )
        for t in SPEC
    )
    return ts


# -- the catalog as a gateway config over a backend -----------------------------------------
def gateway_config(
    backend_url: str,
    *,
    page_size: int = 100,
    meta_tools: str = "menu",
    hidden_tool_errors: str = "hint",
    lazy: bool = False,
    principal: Principal = DEFAULT_PRINCIPAL,
    fast_path: bool = True,
) -> dict[str, Any]:
    groups = {
        name: {**g, "tools": [f"spec:{t.name}" for t in SPEC if name in t.groups]}
        for name, g in GROUPS.items()
    }
    return {
        "mcpServers": {"spec": {"url": backend_url}},
        "toolgate": {
            "strategy": "auto",
            "meta_tools": meta_tools,
            "hidden_tool_errors": hidden_tool_errors,
            "page_size": page_size,
            "groups": groups,
            "exclusive": EXCLUSIVE,
            "policies": [
                {"tools": [t.name], "min_trust": t.min_trust, "decision": t.decision}
                for t in SPEC
                if t.min_trust or t.decision != "allow"
            ],
            "stages": {
                **STAGES,
                "tool_stages": {t.name: list(t.stages) for t in SPEC if t.stages is not None},
            },
            "descriptions": {"mode": "lazy" if lazy else "full"},
            "identity": {
                "default": {
                    "id": principal.id,
                    "trust": principal.trust,
                    "scope": list(principal.scope),
                }
            },
            "events": {"logging": False},
            "http": {"fast_path": fast_path},
        },
    }


def backend_server() -> Server[Any]:
    """The backend the gateway fronts: every SPEC tool plus ``status``, on the SDK."""
    listing = [mt.Tool.model_validate(t.wire()) for t in (*SPEC, STATUS)]

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=listing)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: mt.CallToolRequestParams
    ) -> mt.CallToolResult:
        if params.name == STATUS.name:
            return mt.CallToolResult(content=[mt.TextContent(type="text", text=STATUS_TEXT)])
        if params.name not in BY_NAME:
            raise MCPError(code=mt.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        data = echo(params.name, params.arguments or {})
        return mt.CallToolResult(
            content=[mt.TextContent(type="text", text=json.dumps(data))], structured_content=data
        )

    return Server("spec-backend", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


# -- serving and connecting ------------------------------------------------------------------
@dataclass(frozen=True)
class Options:
    """What a scenario may vary; each adapter maps it onto its own configuration."""

    page_size: int = 100
    meta_tools: Literal["menu", "activators"] = "menu"
    hidden_tool_errors: Literal["hint", "opaque"] = "hint"
    lazy: bool = False
    principal: Principal = DEFAULT_PRINCIPAL


@dataclass
class Wire:
    """One connected client: the SDK session every scenario talks through, the outer
    client that opened it, and the notifications it received."""

    adapter: AdapterName
    era: Era
    session: ClientSession
    client: Client | fastmcp.Client[Any]
    notes: Notes

    @property
    def legacy(self) -> bool:
        return self.era == "legacy"

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> mt.CallToolResult:
        """``tools/call``: the result (errors in it stay results; JSON-RPC errors raise)."""
        return await self.session.call_tool(name, dict(arguments or {}))


@dataclass
class Human:
    """Answers a confirmation question (MCP elicitation) and remembers what was asked,
    through either client library's elicitation hook."""

    action: Literal["accept", "decline"]
    asked: list[str] = field(default_factory=list)

    def answer(self, message: str) -> mt.ElicitResult:
        self.asked.append(message)
        content = {"confirm": True} if self.action == "accept" else None
        return mt.ElicitResult(action=self.action, content=content)

    async def sdk_callback(self, context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        return self.answer(params.message)

    async def fastmcp_handler(
        self, message: str, response_type: Any, params: Any, context: Any
    ) -> mt.ElicitResult:
        return self.answer(message)


@dataclass
class Served:
    """One adapter serving the catalog; ``connect`` opens as many clients as a test needs."""

    adapter: AdapterName
    target: Any  # what the client connects to: a server in memory, or a URL
    toolset: ToolSet

    @asynccontextmanager
    async def connect(
        self,
        era: Era = "legacy",
        *,
        groups: bool = False,
        client: ClientKind | None = None,
        human: Human | None = None,
    ) -> AsyncIterator[Wire]:
        """A client on ``era``; ``client`` picks the library (by default ``fastmcp.Client``
        for the FastMCP server, ``mcp.Client`` for the others); with ``human``, the
        client supports elicitation and the human answers every question that way."""
        notes = Notes()
        mode = "legacy" if era == "legacy" else "auto"
        extensions = [GroupsClientExtension()] if groups else None
        kind = client or ("fastmcp" if self.adapter == "fastmcp" else "sdk")
        if kind == "fastmcp":
            target = self.target
            if isinstance(target, Server):  # fastmcp.Client infers no transport for it
                target = FastMCPTransport(type("Shim", (), {"_mcp_server": target})())
            fm: fastmcp.Client[Any] = fastmcp.Client(
                target,
                mode=mode,
                message_handler=notes,
                extensions=extensions,
                elicitation_handler=human.fastmcp_handler if human else None,
            )
            async with fm:
                yield Wire(self.adapter, era, fm.session, fm, notes)
            return
        target = self.target
        if isinstance(target, fastmcp.FastMCP):
            target = target._mcp_server
        sdk = Client(
            target,
            mode=mode,
            message_handler=notes,
            extensions=extensions,
            elicitation_callback=human.sdk_callback if human else None,
        )
        async with sdk:
            assert sdk.session.protocol_version == PROTOCOL[era]
            yield Wire(self.adapter, era, sdk.session, sdk, notes)


def _no_identity(caller: Any) -> None:
    """Every request is the toolset's default principal (configured, like stdio)."""
    return None


@asynccontextmanager
async def serve_lowlevel(options: Options) -> AsyncIterator[Served]:
    ts = spec_toolset(
        page_size=options.page_size,
        hidden_tool_errors=options.hidden_tool_errors,
        principal=options.principal,
    )
    server: MCPServer[Any] = MCPServer("spec-lowlevel")

    @server.tool(icons=[mt.Icon.model_validate(ICON)], meta=dict(META))
    def status() -> str:
        """Report the server status."""
        return STATUS_TEXT

    addons = [LazyDescriptions(ts)] if options.lazy else []
    binding = bind(
        server,
        ts,
        DeliveryConfig(strategy="auto", meta_tools=options.meta_tools),
        identity=_no_identity,
        addons=addons,
    )
    bind_groups(server, binding.delivery, facts=binding.facts)
    yield Served("lowlevel", server, ts)
    await ts.close()


@asynccontextmanager
async def serve_fastmcp(options: Options) -> AsyncIterator[Served]:
    ts = spec_toolset(
        page_size=options.page_size,
        hidden_tool_errors=options.hidden_tool_errors,
        principal=options.principal,
    )
    server: fastmcp.FastMCP[Any] = fastmcp.FastMCP("spec-fastmcp")

    @server.tool(icons=[mt.Icon.model_validate(ICON)], meta=dict(META))
    def status() -> str:
        """Report the server status."""
        return STATUS_TEXT

    addons = [LazyDescriptions(ts)] if options.lazy else []
    ToolgateMiddleware(
        ts,
        DeliveryConfig(strategy="auto", meta_tools=options.meta_tools),
        identity=_no_identity,
        addons=addons,
    ).attach(server)
    yield Served("fastmcp", server, ts)
    await ts.close()


@asynccontextmanager
async def _gateway(options: Options, *, fast_path: bool = True) -> AsyncIterator[Gateway]:
    async with serve_http(backend_server().streamable_http_app()) as url:
        cfg = parse_config(
            gateway_config(
                url,
                page_size=options.page_size,
                meta_tools=options.meta_tools,
                hidden_tool_errors=options.hidden_tool_errors,
                lazy=options.lazy,
                principal=options.principal,
                fast_path=fast_path,
            )
        )
        gateway = Gateway(cfg)
        try:
            async with gateway.running():
                assert gateway.report.errors == []
                yield gateway
        finally:
            await gateway.close()


@asynccontextmanager
async def serve_gateway(options: Options) -> AsyncIterator[Served]:
    async with _gateway(options) as gateway:
        yield Served("gateway", gateway.server, gateway.toolset)


@asynccontextmanager
async def _serve_gateway_http(options: Options, *, fast_path: bool) -> AsyncIterator[Served]:
    async with _gateway(options, fast_path=fast_path) as gateway:
        app = gateway.http_app()
        protocol = server_options(gateway.cfg, host="127.0.0.1", port=0)["http"]
        async with serve_http(app, http=protocol) as url:
            yield Served("gateway-http" if fast_path else "gateway-http-sdk", url, gateway.toolset)
        assert (gateway.fast_path is not None) is fast_path


def serve_gateway_http(options: Options) -> AbstractAsyncContextManager[Served]:
    return _serve_gateway_http(options, fast_path=True)


def serve_gateway_http_sdk(options: Options) -> AbstractAsyncContextManager[Served]:
    return _serve_gateway_http(options, fast_path=False)


SERVERS = {
    "lowlevel": serve_lowlevel,
    "fastmcp": serve_fastmcp,
    "gateway": serve_gateway,
    "gateway-http": serve_gateway_http,
    "gateway-http-sdk": serve_gateway_http_sdk,
}


@dataclass(frozen=True)
class Adapter:
    """The ``adapter`` fixture: serve the SPEC catalog (``serve(**options)``, then
    ``connect`` as many clients as needed) or serve and connect one (``connect``)."""

    name: AdapterName

    def serve(self, **options: Any) -> AbstractAsyncContextManager[Served]:
        return SERVERS[self.name](Options(**options))

    @asynccontextmanager
    async def connect(
        self, era: Era = "legacy", *, groups: bool = False, **options: Any
    ) -> AsyncIterator[Wire]:
        async with self.serve(**options) as served, served.connect(era, groups=groups) as wire:
            yield wire

    def __str__(self) -> str:
        return self.name


@pytest.fixture(params=ADAPTERS)
def adapter(request: pytest.FixtureRequest) -> Adapter:
    """Each way of serving the SPEC catalog in memory (see the module docstring);
    ``tests/test_adapter_spec_http.py`` runs the same scenarios over the gateway's real
    HTTP app, with and without its fast path."""
    return Adapter(request.param)


#: an adapter's arguments of the wrong kind (``bind``, ``ToolgateMiddleware``) and what
#: each is refused with, before the adapter changes anything
WRONG_ADAPTER_ARGUMENTS: list[tuple[dict[str, Any], str]] = [
    ({"toolset": "notes"}, "toolset must be a ToolSet, got str 'notes'"),
    (
        {"config": {"strategy": "catalog"}},
        "config must be a DeliveryConfig, got dict {'strategy': 'catalog'}",
    ),
    (
        {"identity": "bearer"},
        "identity must be an IdentityResolver (BearerTokens, ClaimsIdentity) or a "
        "function of a Caller, got str 'bearer'",
    ),
]
