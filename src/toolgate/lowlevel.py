"""Progressive disclosure on the official SDK: ``bind(server, toolset)``.

Installs toolgate's ``tools/list`` / ``tools/call`` (and, with add-ons, ``resources/*``)
handlers on an ``mcp.server.Server`` or ``MCPServer``; each request is read once
(``toolgate.request``). Adapter layer: imports ``mcp``, ``toolgate.request``,
``toolgate.wire`` and the delivery layer below them; never ``fastmcp``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, ClassVar, NoReturn

import mcp_types as mt
from mcp.server import MCPServer, NotificationOptions, Server
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import ServerMiddleware
from mcp.server.lowlevel.server import HandlerEntry
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette

from toolgate.catalog import CallContext, Tool, ToolResult
from toolgate.errors import ConfigError, RegistrationError, ToolgateError
from toolgate.identity import BearerTokens, IdentityFn, IdentityResolver, check_identity
from toolgate.request import (
    Context,
    LiveConnections,
    RequestFacts,
    ToolListWatch,
    request_facts,
)
from toolgate.sdk_internals import lowlevel_of, registered_tools, watch_tools
from toolgate.strategies import Addon, Delivery, DeliveryConfig
from toolgate.strategies.base import Request, Strategy
from toolgate.strategies.delivery import check_delivery_arguments
from toolgate.toolset import ToolSet
from toolgate.wire import (
    RAW_RESULT,
    RESOURCE_NOT_FOUND,
    PageParams,
    RawResult,
    call_result_wire,
    check_params,
    cursor_of,
    keep_input_required,
    mcp_error,
    raise_or_result,
    result_from_mcp,
    tool_models,
    tool_wire,
)

logger = logging.getLogger("toolgate.lowlevel")

#: (facts, binding, its strategy and request) of the request this task is serving
_REQUEST: ContextVar[tuple[RequestFacts, Binding, tuple[Strategy, Request]] | None] = ContextVar(
    "toolgate.binding_request", default=None
)

#: ``CallContext.extras`` key under which a tool handler finds the SDK request context.
REQUEST_CONTEXT = "mcp.request_context"


def _fail(exc: ToolgateError) -> NoReturn:
    """Raise the JSON-RPC error for ``exc`` where a result cannot carry it."""
    raise mcp_error(exc) from exc


@dataclass(frozen=True)
class _TokenVerifier:
    """``BearerTokens`` as the SDK's ``TokenVerifier``, so its HTTP layer answers 401."""

    tokens: BearerTokens

    async def verify_token(self, token: str) -> AccessToken | None:
        principal = self.tokens.principal_for(token)
        if principal is None:
            return None
        return AccessToken(token=self.tokens.digest(token), client_id=principal.id, scopes=[])


def advertise_list_changed(server: Server[Any], *lists: str) -> None:
    """Advertise ``listChanged`` for ``lists`` (``"tools"``, ``"prompts"``,
    ``"resources"``) on the legacy protocol from every entry point (``run``,
    ``streamable_http_app``, in-process ``mcp.Client``), which call
    ``create_initialization_options()`` without notification options."""
    unknown = set(lists) - {"tools", "prompts", "resources"}
    if unknown:
        raise ValueError(f"no listChanged flag for {sorted(unknown)}")
    original = server.create_initialization_options

    def create_initialization_options(
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions()
        for name in lists:
            setattr(options, f"{name}_changed", True)
        return original(options, experimental_capabilities, extensions)

    server.create_initialization_options = create_initialization_options  # type: ignore[method-assign]


@dataclass
class Binding:
    """A toolset served by one SDK server. Built by ``bind``; its handlers are installed."""

    server: Server[Any]
    delivery: Delivery
    identity: IdentityResolver | IdentityFn | None = None
    #: the legacy connections served, for notifications outside a request
    live: LiveConnections = field(default_factory=LiveConnections, init=False)
    #: the MCP middleware a binding needs on its server (``bind`` appends it; a host that
    #: declares its server's middleware, like the gateway, places it)
    middleware: ClassVar[tuple[ServerMiddleware[Any], ...]] = (check_params,)
    # the server's own resources handlers, chained after the add-ons'
    _resources_list: HandlerEntry[Any] | None = field(default=None, init=False, repr=False)
    _resources_read: HandlerEntry[Any] | None = field(default=None, init=False, repr=False)
    #: ``tools/list_changed`` to the connections whose listing a run-time change altered
    watch: ToolListWatch = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.watch = ToolListWatch(self.delivery, self.live)

    @property
    def toolset(self) -> ToolSet:
        return self.delivery.toolset

    # -- per request -------------------------------------------------------------------
    async def facts(self, ctx: Context) -> RequestFacts:
        """The request's facts (read once per request); its connection is remembered."""
        try:
            facts = await request_facts(ctx, self.identity)
        except ToolgateError as exc:
            _fail(exc)
        self.live.remember(ctx, facts)
        return facts

    async def request_for(self, ctx: Context) -> tuple[Strategy, Request]:
        """The strategy and toolgate request for one MCP request (made once per request:
        its handler and the middleware around it share them)."""
        facts = await self.facts(ctx)
        made = _REQUEST.get()
        if made is not None and made[0] is facts and made[1] is self:
            return made[2]
        extras = {REQUEST_CONTEXT: ctx, RAW_RESULT: RawResult()}
        pair = facts.request(self.delivery, extras=extras)
        _REQUEST.set((facts, self, pair))
        return pair

    # -- handlers ----------------------------------------------------------------------
    async def list_tools(
        self, ctx: Context, params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        cursor = cursor_of(params)
        facts = await self.facts(ctx)
        strategy, request = await self.request_for(ctx)

        def listed(wires: list[dict[str, Any]]) -> None:
            self.watch.listed(ctx, facts, wires)

        try:
            page = await self.delivery.list_tools(strategy, request, cursor, listed)
        except ToolgateError as exc:
            _fail(exc)
        return mt.ListToolsResult(tools=tool_models(page.items), next_cursor=page.next_cursor)

    async def call_tool(self, ctx: Context, params: mt.CallToolRequestParams) -> Any:
        """The call's result in its wire form, which the SDK's kernel validates and
        shapes per protocol version (``call_result_wire``); an ``MCPServer`` tool's
        ``input_required`` leg as the ``MCPServer`` returned it."""
        strategy, request = await self.request_for(ctx)
        try:
            reply = await self.delivery.call_tool(strategy, request, params.name, params.arguments)
        except ToolgateError as exc:
            return call_result_wire(raise_or_result(exc))
        if reply.list_changed:
            # on the request's own stream: the only route both protocol eras deliver
            await ctx.session.send_notification(
                mt.ToolListChangedNotification(), related_request_id=ctx.request_id
            )
            self.watch.told(ctx, await self.facts(ctx))
        raw = request.extras.get(RAW_RESULT)
        own = raw.reply(reply.result) if isinstance(raw, RawResult) else None
        return own if own is not None else call_result_wire(reply.result)

    async def list_resources(
        self, ctx: Context, params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourcesResult:
        cursor = cursor_of(params)
        _, request = await self.request_for(ctx)
        try:
            ours = await self.delivery.list_resources(request)
        except ToolgateError as exc:
            _fail(exc)
        # ours on the first page; the server's own pages (and their cursor) after them
        resources = [mt.Resource.model_validate(r) for r in ours] if cursor is None else []
        next_cursor = None
        if self._resources_list is not None:
            theirs = mt.ListResourcesResult.model_validate(
                await self._resources_list.handler(ctx, params)
            )
            resources += theirs.resources
            next_cursor = theirs.next_cursor
        return mt.ListResourcesResult(resources=resources, next_cursor=next_cursor)

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
            options["token_verifier"] = _TokenVerifier(tokens)
            issuer = issuer_url or f"http://{host}"
            options.setdefault("auth", AuthSettings(issuer_url=issuer, resource_server_url=None))
        return self.server.streamable_http_app(host=host, **options)

    # -- installation ------------------------------------------------------------------
    def _install(self) -> None:
        server = self.server
        server.add_request_handler("tools/list", PageParams, self.list_tools)
        server.add_request_handler("tools/call", mt.CallToolRequestParams, self.call_tool)
        if self.delivery.addons:
            self._resources_list = server.get_request_handler("resources/list")
            self._resources_read = server.get_request_handler("resources/read")
            server.add_request_handler("resources/list", PageParams, self.list_resources)
            server.add_request_handler(
                "resources/read", mt.ReadResourceRequestParams, self.read_resource
            )
        advertise_list_changed(server, "tools")
        server.middleware.extend([m for m in self.middleware if m not in server.middleware])


class _Adopted:
    """An ``MCPServer``'s own tools as root tools of a toolset (a tool the toolset
    already names keeps the toolset's definition), followed while serving: a tool the
    MCPServer registers or removes after ``bind`` is added or removed too. They still
    run through the MCPServer's ``tools/call`` handler, with the live request context."""

    def __init__(self, mcp_server: MCPServer[Any], toolset: ToolSet) -> None:
        self.server = mcp_server
        self.toolset = toolset
        # the MCPServer's own tools/call, before bind replaces it
        entry = lowlevel_of(mcp_server).get_request_handler("tools/call")
        assert entry is not None  # an MCPServer answers tools/call
        self.handler = entry.handler
        #: name -> (the MCPServer's tool object, the catalog tool made of it)
        self.tools: dict[str, tuple[Any, Tool]] = {}

    def adopt(self) -> list[str]:
        """Adopt every registered tool, all or nothing (``bind``: a refused one is a
        ``RegistrationError`` there); the adopted names."""
        made = [(info, self._tool(info)) for info in self._new()]
        self.toolset.add_tools([tool for _, tool in made])
        for info, tool in made:
            self.tools[tool.name] = (info, tool)
        return [tool.name for _, tool in made]

    def watch(self) -> None:
        """Follow the MCPServer's registrations from now on (``follow``)."""
        watch_tools(self.server, self.follow)

    def _new(self) -> list[Any]:
        """The registered tools not adopted as they are, that the toolset does not name."""
        out = []
        for info in registered_tools(self.server):
            had = self.tools.get(info.name)
            if had is not None and had[0] is info:
                continue
            if had is None and self.toolset.catalog.tool(info.name) is not None:
                continue
            out.append(info)
        return out

    def follow(self) -> None:
        """After the MCPServer added or removed a tool: adopt what is new (a refused
        tool is logged by name and left out), then drop what it no longer has."""
        catalog = self.toolset.catalog
        for info in self._new():
            had = self.tools.pop(info.name, None)
            if had is not None and catalog.tool(info.name) is had[1]:
                self.toolset.remove_tool(info.name)
            try:
                tool = self._tool(info)
                self.toolset.add_tool(tool)
            except (RegistrationError, ConfigError) as exc:
                logger.error(
                    "toolgate: MCPServer tool %r is not served: %s", info.name, exc.message
                )
                continue
            self.tools[info.name] = (info, tool)
        names = {info.name for info in registered_tools(self.server)}
        for name in [n for n in self.tools if n not in names]:
            _, tool = self.tools.pop(name)
            if catalog.tool(name) is tool:
                self.toolset.remove_tool(name)

    def _tool(self, info: Any) -> Tool:
        handler = self.handler

        async def run(
            arguments: Mapping[str, Any], call: CallContext, name: str = info.name
        ) -> ToolResult:
            ctx: Context = call.extras[REQUEST_CONTEXT]
            # a 2026-07-28 retry's answers and state go to the tool that asked for them,
            # whether it is called directly or through call_tool
            answers = mt.InputResponseRequestParams.model_validate(ctx.params or {})
            params = mt.CallToolRequestParams(
                name=name,
                arguments=dict(arguments),
                input_responses=answers.input_responses,
                request_state=answers.request_state,
            )
            result = await handler(ctx, params)
            if isinstance(result, mt.InputRequiredResult):
                return keep_input_required(call.extras, name, result)
            return result_from_mcp(mt.CallToolResult.model_validate(result))

        wire = mt.Tool(
            name=info.name,
            title=info.title,
            description=info.description,
            input_schema=info.parameters,
            output_schema=info.output_schema,
            annotations=info.annotations,
            icons=info.icons,
            _meta=info.meta,
        )
        # the MCPServer validates with pydantic, in its lax mode
        return Tool.from_wire(tool_wire(wire), run, source="mcpserver", lax_arguments=True)


def _own_tool_handlers(server: Server[Any]) -> list[str]:
    """The tool requests a low-level ``server`` answers with handlers of its own (a
    binding's, from an earlier ``bind``, are not its own)."""
    own = []
    for method in ("tools/list", "tools/call"):
        entry = server.get_request_handler(method)
        if entry is not None and not isinstance(getattr(entry.handler, "__self__", None), Binding):
            own.append(method)
    return own


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
    the source of tools; an ``MCPServer``'s own tools are adopted as root tools, also
    those it registers or removes later; a low-level ``Server`` with tool handlers of
    its own is a ``RegistrationError``), serves add-on resources, and advertises
    ``tools.listChanged``. The groups extension is ``bind_groups``'s: until it is
    served, a client that declares it gets the strategy of one that does not. ``identity`` maps a
    request to a principal (default: the toolset's default principal). This is the
    entry point: there is no ``ToolSet.bind`` sugar, because the core must not import
    ``mcp`` and import-linter counts imports inside functions too.
    """
    check_delivery_arguments(toolset, config)  # before an MCPServer's tools are adopted
    check_identity(identity)
    adopted: list[str] = []
    adopter: _Adopted | None = None
    if isinstance(server, MCPServer):
        # The SDK's Extension API cannot replace tools/list; its lowlevel server can.
        adopter = _Adopted(server, toolset)
        adopted = adopter.adopt()
        lowlevel: Server[Any] = lowlevel_of(server)
    elif isinstance(server, Server):
        own = _own_tool_handlers(server)
        if own:
            # their tools would vanish without a word: toolgate answers these requests
            raise RegistrationError(
                f"Server {server.name!r} already answers {' and '.join(own)} with its own "
                "handlers, which bind() replaces: its tools would be lost. Declare them "
                "in the toolset (Tool(..., handler=...)), or bind an MCPServer, whose own "
                "tools toolgate adopts"
            )
        lowlevel = server
    else:
        raise TypeError(f"bind() takes an mcp Server or MCPServer, not {type(server).__name__}")
    try:  # the delivery checks the adopted tools too (a meta-tool name one of them has)
        delivery = Delivery(toolset, config, addons=addons)
    except BaseException:
        for name in adopted:  # a bind that fails leaves the toolset's tools as they were
            toolset.remove_tool(name)
        raise
    # groups for a declaring client only once bind_groups serves the extension
    delivery.groups_served = False
    if adopter is not None:
        adopter.watch()
    if identity is None:
        logger.warning(
            "toolgate: no identity resolver configured for server %r: every request gets "
            "the default principal %r, and on protocol 2026-07-28 no session state is kept",
            lowlevel.name,
            toolset.default_principal.id,
        )
    binding = Binding(lowlevel, delivery, identity)
    binding._install()
    for addon in binding.delivery.addons:
        for line in addon.startup_warnings():
            logger.warning("toolgate: %s", line)
    return binding


__all__ = [
    "REQUEST_CONTEXT",
    "Binding",
    "advertise_list_changed",
    "bind",
]
