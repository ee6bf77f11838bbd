"""Progressive disclosure on the official SDK: ``bind(server, toolset)``.

Installs toolgate's ``tools/list`` / ``tools/call`` (and, with add-ons, ``resources/*``)
handlers on an ``mcp.server.Server`` or ``MCPServer`` and derives each request's
session key, principal and confirmer from the transport. Adapter layer: imports
``mcp``, ``toolgate.wire`` and the delivery layer below it; never ``fastmcp``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import mcp_types as mt
from mcp.server import MCPServer, NotificationOptions, Server
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import HandlerEntry
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette

from toolgate.catalog import CallContext, Tool, ToolResult
from toolgate.errors import ToolgateError
from toolgate.policy import Principal
from toolgate.strategies import Addon, Delivery, DeliveryConfig
from toolgate.strategies.base import Request, Strategy, is_stateless
from toolgate.toolset import ToolSet
from toolgate.wire import (
    RESOURCE_NOT_FOUND,
    BearerTokens,
    Caller,
    IdentityFn,
    IdentityResolver,
    SessionElicitationConfirmer,
    call_result,
    declared_extensions,
    mcp_error,
    raise_or_result,
    resolve_principal,
    result_from_mcp,
    supports_elicitation,
    tool_models,
)

logger = logging.getLogger("toolgate.lowlevel")

Context = ServerRequestContext[Any, Any]

#: ``CallContext.extras`` key under which a tool handler finds the SDK request context.
REQUEST_CONTEXT = "mcp.request_context"
_SESSION_KEY = "toolgate.session_key"  # per-connection key, kept in Connection.state


def session_key(ctx: Context) -> str:
    """The legacy-protocol session key: the transport session id (streamable HTTP),
    else a key minted once per connection (stdio, in-memory)."""
    connection = ctx.session._connection
    if connection.session_id:
        return str(connection.session_id)
    key = connection.state.get(_SESSION_KEY)
    if key is None:
        key = connection.state[_SESSION_KEY] = f"conn:{uuid.uuid4().hex}"
    return str(key)


def caller_of(ctx: Context) -> Caller:
    """How the request arrived: HTTP headers when there is an HTTP request."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    if headers is None:
        return Caller("local")
    return Caller("http", {k.lower(): v for k, v in headers.items()})


def _fail(exc: ToolgateError) -> NoReturn:
    """Raise the JSON-RPC error for ``exc`` where a result cannot carry it."""
    err = mcp_error(exc)
    if err is None:
        err = MCPError(code=mt.INTERNAL_ERROR, message=exc.message, data=exc.to_dict())
    raise err from exc


def _with_list_changed(server: Server[Any]) -> None:
    """Advertise ``tools.listChanged`` on the legacy protocol from every entry point
    (``run``, ``streamable_http_app``, in-process ``mcp.Client``), which call
    ``create_initialization_options()`` without notification options."""
    original = server.create_initialization_options

    def create_initialization_options(
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions()
        options.tools_changed = True
        return original(options, experimental_capabilities, extensions)

    server.create_initialization_options = create_initialization_options  # type: ignore[method-assign]


@dataclass
class Binding:
    """A toolset served by one SDK server. Built by ``bind``; its handlers are installed."""

    server: Server[Any]
    delivery: Delivery
    identity: IdentityResolver | IdentityFn | None = None
    # the server's own resources handlers, chained after the add-ons'
    _resources_list: HandlerEntry[Any] | None = field(default=None, init=False, repr=False)
    _resources_read: HandlerEntry[Any] | None = field(default=None, init=False, repr=False)

    @property
    def toolset(self) -> ToolSet:
        return self.delivery.toolset

    # -- per request -------------------------------------------------------------------
    async def principal(self, ctx: Context) -> Principal | None:
        try:
            return await resolve_principal(self.identity, caller_of(ctx))
        except ToolgateError as exc:
            _fail(exc)

    async def request_for(self, ctx: Context) -> tuple[Strategy, Request]:
        """The strategy and toolgate request for one MCP request."""
        protocol = ctx.protocol_version
        caps = ctx.session.client_capabilities
        legacy = not is_stateless(protocol)
        confirmer = None
        if legacy and supports_elicitation(caps):
            confirmer = SessionElicitationConfirmer(ctx.session, ctx.request_id)
        return self.delivery.request(
            session_key=session_key(ctx) if legacy else None,
            principal=await self.principal(ctx),
            protocol=protocol,
            extensions=declared_extensions(caps),
            confirmer=confirmer,
            extras={REQUEST_CONTEXT: ctx},
        )

    # -- handlers ----------------------------------------------------------------------
    async def list_tools(
        self, ctx: Context, params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        strategy, request = await self.request_for(ctx)
        cursor = params.cursor if params is not None else None
        try:
            page = await self.delivery.list_tools(strategy, request, cursor)
        except ToolgateError as exc:
            _fail(exc)
        return mt.ListToolsResult(tools=tool_models(page.items), next_cursor=page.next_cursor)

    async def call_tool(self, ctx: Context, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        strategy, request = await self.request_for(ctx)
        try:
            reply = await self.delivery.call_tool(strategy, request, params.name, params.arguments)
        except ToolgateError as exc:
            return call_result(raise_or_result(exc))
        if reply.list_changed:
            # on the request's own stream: the only route both protocol eras deliver
            await ctx.session.send_notification(
                mt.ToolListChangedNotification(), related_request_id=ctx.request_id
            )
        return call_result(reply.result)

    async def list_resources(
        self, ctx: Context, params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourcesResult:
        _, request = await self.request_for(ctx)
        try:
            ours = await self.delivery.list_resources(request)
        except ToolgateError as exc:
            _fail(exc)
        resources = [mt.Resource.model_validate(r) for r in ours]
        if self._resources_list is not None:
            theirs = await self._resources_list.handler(ctx, params)
            resources += mt.ListResourcesResult.model_validate(theirs).resources
        return mt.ListResourcesResult(resources=resources)

    async def read_resource(self, ctx: Context, params: mt.ReadResourceRequestParams) -> Any:
        _, request = await self.request_for(ctx)
        uri = str(params.uri)
        try:
            text = await self.delivery.read_resource(request, uri)
        except ToolgateError as exc:
            _fail(exc)
        if text is not None:
            contents = mt.TextResourceContents(uri=uri, mime_type="application/json", text=text)
            return mt.ReadResourceResult(contents=[contents])
        if self._resources_read is not None:
            return await self._resources_read.handler(ctx, params)
        raise MCPError(
            code=RESOURCE_NOT_FOUND, message=f"Resource not found: {uri}", data={"uri": uri}
        )

    # -- serving -----------------------------------------------------------------------
    def streamable_http_app(
        self, *, host: str = "127.0.0.1", issuer_url: str | None = None, **options: Any
    ) -> Starlette:
        """The server's streamable HTTP app. With ``BearerTokens`` (and no anonymous
        principal) the SDK's bearer middleware refuses unknown or missing tokens with
        HTTP 401 before any MCP message is read; ``issuer_url`` fills the SDK's
        required ``AuthSettings.issuer_url`` (unused without an OAuth provider)."""
        tokens = self.identity
        if (
            isinstance(tokens, BearerTokens)
            and tokens.anonymous is None
            and "token_verifier" not in options
        ):
            options["token_verifier"] = tokens
            issuer = issuer_url or f"http://{host}"
            options.setdefault("auth", AuthSettings(issuer_url=issuer, resource_server_url=None))
        return self.server.streamable_http_app(host=host, **options)

    # -- installation ------------------------------------------------------------------
    def _install(self) -> None:
        server = self.server
        server.add_request_handler("tools/list", mt.PaginatedRequestParams, self.list_tools)
        server.add_request_handler("tools/call", mt.CallToolRequestParams, self.call_tool)
        if self.delivery.addons:
            self._resources_list = server.get_request_handler("resources/list")
            self._resources_read = server.get_request_handler("resources/read")
            server.add_request_handler(
                "resources/list", mt.PaginatedRequestParams, self.list_resources
            )
            server.add_request_handler(
                "resources/read", mt.ReadResourceRequestParams, self.read_resource
            )
        _with_list_changed(server)


def _adopt_tools(mcp_server: MCPServer[Any], toolset: ToolSet) -> None:
    """Register an ``MCPServer``'s own tools as root tools of ``toolset`` (a tool the
    toolset already names keeps the toolset's definition). They still run through
    the MCPServer's ``tools/call`` handler, with the live request context."""
    entry = mcp_server._lowlevel_server.get_request_handler("tools/call")
    if entry is None:
        return
    handler = entry.handler
    adopted = []
    for info in mcp_server._tool_manager.list_tools():
        if toolset.catalog.tool(info.name) is not None:
            continue

        async def run(
            arguments: Mapping[str, Any], call: CallContext, name: str = info.name
        ) -> ToolResult:
            params = mt.CallToolRequestParams(name=name, arguments=dict(arguments))
            result = await handler(call.extras[REQUEST_CONTEXT], params)
            if not isinstance(result, mt.CallToolResult):
                return ToolResult.error(
                    f"Tool {name!r} asked for input, which toolgate cannot relay"
                )
            return result_from_mcp(result)

        annotations = (
            info.annotations.model_dump(by_alias=True, exclude_none=True)
            if info.annotations
            else None
        )
        adopted.append(
            Tool(
                info.name,
                info.description or "",
                handler=run,
                input_schema=info.parameters,
                title=info.title,
                output_schema=info.output_schema,
                annotations=annotations,
                source="mcpserver",
            )
        )
    toolset.add_tools(adopted)


def bind(
    server: Server[Any] | MCPServer[Any],
    toolset: ToolSet,
    config: DeliveryConfig | None = None,
    *,
    identity: IdentityResolver | IdentityFn | None = None,
    addons: Sequence[Addon] = (),
) -> Binding:
    """Serve ``toolset`` through ``server`` with progressive disclosure.

    >>> binding = bind(Server("files"), toolset, identity=BearerTokens({...}))

    Replaces the server's ``tools/list`` and ``tools/call`` handlers (the toolset is
    the source of tools; an ``MCPServer``'s own tools are adopted as root tools),
    serves add-on resources, and advertises ``tools.listChanged``. ``identity`` maps a
    request to a principal (default: the toolset's default principal). This is the
    entry point: there is no ``ToolSet.bind`` sugar, because the core must not import
    ``mcp`` and import-linter counts imports inside functions too.
    """
    if isinstance(server, MCPServer):
        # The SDK's Extension API cannot replace tools/list; its lowlevel server can.
        _adopt_tools(server, toolset)
        lowlevel: Server[Any] = server._lowlevel_server
    elif isinstance(server, Server):
        lowlevel = server
    else:
        raise TypeError(f"bind() takes an mcp Server or MCPServer, not {type(server).__name__}")
    if identity is None:
        logger.warning(
            "toolgate: no identity resolver configured for server %r: every request gets "
            "the default principal %r, and on protocol 2026-07-28 no session state is kept",
            lowlevel.name,
            toolset.default_principal.id,
        )
    binding = Binding(lowlevel, Delivery(toolset, config, addons=addons), identity)
    binding._install()
    for addon in binding.delivery.addons:
        for line in addon.startup_warnings():
            logger.warning("toolgate: %s", line)
    return binding


__all__ = [
    "REQUEST_CONTEXT",
    "BearerTokens",
    "Binding",
    "Caller",
    "IdentityResolver",
    "bind",
    "caller_of",
    "session_key",
]
