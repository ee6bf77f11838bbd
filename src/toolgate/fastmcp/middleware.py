"""Progressive disclosure on a FastMCP 4 server: ``ToolgateMiddleware(toolset).attach(mcp)``.

Owns the FastMCP hooks and the SDK-level ``tools/list`` hook: each request's facts
(``toolgate.request``), ``list_changed`` delivery, add-on resources (lazy descriptions)
and the groups extension. Importing FastMCP's tools is ``importer``'s, confirmation on
2026-07-28 ``confirm``'s. Adapter layer: imports ``fastmcp``, ``mcp`` and the layers below.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NoReturn

import mcp_types as mt
from fastmcp.resources.base import Resource as FastMCPResource
from fastmcp.resources.base import ResourceContent, ResourceResult
from fastmcp.server.dependencies import get_access_token
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.server.middleware.dereference import DereferenceRefsMiddleware
from fastmcp.server.transforms.visibility import get_visibility_rules
from fastmcp.tools.base import Tool as FastMCPTool
from fastmcp.tools.base import ToolResult as FastMCPResult
from mcp.server.context import ServerRequestContext

from toolgate.catalog import CallContext, ToolResult
from toolgate.errors import RegistrationError, ToolgateError
from toolgate.fastmcp.auth import FASTMCP_AUTH, refused_tools, refusing
from toolgate.fastmcp.confirm import InputRequired, RoundTripConfirmer
from toolgate.fastmcp.groups import GroupsServerExtension
from toolgate.fastmcp.importer import (
    FastMCPTools,
    checked_tool_groups,
    run_fastmcp,
    running,
    to_fastmcp_result,
)
from toolgate.fastmcp_internals import has_foreign_extension, sdk_context, sdk_server
from toolgate.groups_extension import serves_groups
from toolgate.identity import (
    Caller,
    ClaimsIdentity,
    IdentityFn,
    IdentityResolver,
    check_identity,
)
from toolgate.policy import Confirmer
from toolgate.request import (
    TOOLS_LIST_CHANGED,
    LiveConnections,
    RequestFacts,
    ToolListWatch,
    request_facts,
    supports_elicitation,
)
from toolgate.request import caller_of as sdk_caller_of
from toolgate.strategies import Delivery, DeliveryConfig
from toolgate.strategies.base import GROUPS_EXTENSION, Addon, Request, Strategy
from toolgate.toolset import ToolSet
from toolgate.wire import (
    RAW_RESULT,
    PageParams,
    RawResult,
    check_params,
    cursor_of,
    mcp_error,
    raise_or_result,
    tool_model,
)

if TYPE_CHECKING:
    from fastmcp import FastMCP

logger = logging.getLogger("toolgate.fastmcp")

SdkContext = ServerRequestContext[Any, Any]
#: ``CallContext.extras`` key under which a toolgate tool handler finds the FastMCP Context.
FASTMCP_CONTEXT = "fastmcp.context"
LIST_CHANGED = TOOLS_LIST_CHANGED
_DEFAULT_IDENTITY = ClaimsIdentity()


def caller_of(ctx: SdkContext) -> Caller:
    """How a request arrived: HTTP headers (all of them) and FastMCP's access token."""
    return sdk_caller_of(ctx, get_access_token())


def _fail(exc: ToolgateError) -> NoReturn:
    raise mcp_error(exc) from exc


class _WireTool(FastMCPTool):
    """A toolgate definition in FastMCP's listing path (before the SDK hook is installed)."""

    wire_model: Any = None

    def to_mcp_tool(self, **overrides: Any) -> mt.Tool:
        model: mt.Tool = self.wire_model
        return model


class _WireResource(FastMCPResource):
    """An add-on's resource in FastMCP's ``resources/list``; reads never reach it
    (``on_read_resource`` answers them), and it lists exactly its wire definition."""

    wire_model: Any = None

    def to_mcp_resource(self, **overrides: Any) -> mt.Resource:
        model: mt.Resource = self.wire_model
        return model


def _wire_resource(wire: Mapping[str, Any]) -> _WireResource:
    model = mt.Resource.model_validate(wire)
    return _WireResource(
        uri=model.uri,
        name=model.name,
        title=model.title,
        description=model.description,
        mime_type=model.mime_type,
        wire_model=model,
    )


class ToolgateMiddleware(Middleware):
    """Serves a FastMCP server's tools through a toolgate ``ToolSet``.

    >>> mcp = FastMCP("srv")
    >>> ToolgateMiddleware(toolset, DeliveryConfig(meta_tools="menu")).attach(mcp)

    Tools declared with ``@mcp.tool`` join the toolset's catalog (groups from
    ``@in_group`` marks, ``tool_groups``, or tags naming registered groups) and still run
    through FastMCP; toolgate tools run their own handlers. ``tools/list`` is served by
    an SDK-level hook with toolgate's cursors and page size.
    """

    def __init__(
        self,
        toolset: ToolSet,
        config: DeliveryConfig | None = None,
        *,
        identity: IdentityResolver | IdentityFn | None = None,
        tool_groups: Mapping[str, Sequence[str]] | None = None,
        addons: Sequence[Addon] = (),
    ) -> None:
        check_identity(identity)
        self.tool_groups = checked_tool_groups(tool_groups)  # before Delivery reserves names
        self.toolset = toolset
        self.delivery = Delivery(toolset, config, addons=addons)  # checks the arguments
        # groups for a declaring client only once an extension of ours serves it
        self.delivery.groups_served = False
        if FASTMCP_AUTH not in toolset.rules:  # FastMCP's per-tool auth, in the view
            toolset.rules = (*toolset.rules, FASTMCP_AUTH)
        self.identity = identity
        self.server: FastMCP[Any] | None = None
        #: FastMCP's own tools, imported into the toolset
        self.tools = FastMCPTools(toolset, self.tool_groups, self.prepare)
        #: legacy sessions this server can notify
        self.live = LiveConnections()
        self._models: dict[str, tuple[dict[str, Any], mt.Tool]] = {}
        #: the groups extension ``attach`` installed (strategy ``auto`` or ``groups``)
        self.groups_extension: GroupsServerExtension | None = None
        self._middleware_checked = False
        self._visibility_warned = False
        #: ``tools/list_changed`` to the sessions whose listing a run-time change altered
        self.watch = ToolListWatch(self.delivery, self.live)

    # -- wiring ------------------------------------------------------------------------
    def attach(self, server: FastMCP[Any]) -> ToolgateMiddleware:
        """Add this middleware to ``server`` and install the ``tools/list`` hook; when
        the strategy serves the groups extension (``auto``, ``groups``), register
        ``GroupsServerExtension`` too, reading requests like this middleware does.
        Call it before serving: FastMCP takes extensions only then."""
        from fastmcp import FastMCP  # the type check needs it at run time

        if not isinstance(server, FastMCP):
            raise TypeError(f"attach() takes a FastMCP server, not {type(server).__name__}")
        if self not in server.middleware:
            server.add_middleware(self)
        self._bind(server)
        self._add_groups_extension(server)
        return self

    def _add_groups_extension(self, server: FastMCP[Any]) -> None:
        if self.groups_extension is not None or not serves_groups(self.delivery):
            return
        if has_foreign_extension(server, GROUPS_EXTENSION):
            logger.warning(
                "toolgate: FastMCP server %r already has a %s extension; toolgate's is "
                "not installed",
                server.name,
                GROUPS_EXTENSION,
            )
            return
        extension = GroupsServerExtension(self.delivery, facts=self.facts)
        server.add_extension(extension)  # its _bind adds the legacy advertisement
        self.groups_extension = extension

    def _bind(self, server: FastMCP[Any]) -> None:
        if self.server is server:
            return
        if self.server is not None:
            raise RegistrationError("A ToolgateMiddleware serves one FastMCP server")
        self.server = server
        sdk = sdk_server(server)
        # Right after FastMCP's root middleware: its request context (auth token, HTTP
        # request) is bound, and a failure here is still observed by on_message.
        from fastmcp.server.low_level import FastMCPServerMiddleware

        at = next(
            (i + 1 for i, m in enumerate(sdk.middleware) if isinstance(m, FastMCPServerMiddleware)),
            0,
        )
        # check_params first: a malformed cursor or params named, as on the SDK adapter
        sdk.middleware[at:at] = [check_params, self._sdk_list_tools]
        self.tools.bind(server)
        if getattr(server, "auth", None) is None:
            logger.warning(
                "toolgate: FastMCP server %r has no auth. Clients on protocol 2026-07-28 "
                "send no session, so without an authenticated principal their activated "
                "groups, stages, described tools and per-client rate limits cannot "
                "persist across requests (served with the stateless catalog view).",
                server.name,
            )
        for addon in self.delivery.addons:
            for line in addon.startup_warnings():
                logger.warning("toolgate: %s", line)

    async def prepare(self) -> None:
        """Hook for subclasses: runs at the start of every import, server bound."""

    async def sync(self) -> None:
        """Import FastMCP's registered tools into the toolset (adds, changes, removals).
        Runs at the first request and whenever FastMCP's local tools change; call it
        after changing tools FastMCP cannot report (mounted servers, ``mcp.disable``)."""
        await self.tools.sync()

    async def _ready(self, server: FastMCP[Any] | None) -> None:
        if server is not None and self.server is None:
            self._bind(server)
        if not self._middleware_checked and self.server is not None:
            self._middleware_checked = True  # at the first request: all middleware added
            self._warn_list_hooks(self.server)
        await self.tools.ready()

    def _warn_list_hooks(self, server: FastMCP[Any]) -> None:
        """Log each other middleware with an ``on_list_tools`` of its own: toolgate
        answers ``tools/list`` itself, so that hook never runs."""
        for other in server.middleware:
            hook = getattr(type(other), "on_list_tools", Middleware.on_list_tools)
            if isinstance(other, DereferenceRefsMiddleware) or other is self:
                continue  # the import inlines $ref as it would (importer.dereferenced)
            if hook is not Middleware.on_list_tools:
                logger.warning(
                    "toolgate: %s.on_list_tools does not run on FastMCP server %r: toolgate "
                    "answers tools/list itself, so tools that hook adds, hides or changes "
                    "are not in toolgate's list. Gate tools with toolgate's groups, scopes "
                    "and policies, or with FastMCP's mcp.disable() and per-tool auth.",
                    type(other).__name__,
                    server.name,
                )

    # -- per request -----------------------------------------------------------------------
    async def facts(self, ctx: SdkContext) -> RequestFacts:
        """This request's facts (principal, session key, declared extensions), read once
        per request; its legacy connection is remembered for ``list_changed``. The
        reader ``GroupsServerExtension(delivery, facts=...)`` takes."""
        await self._ready(None)
        try:
            identity = self.identity or _DEFAULT_IDENTITY
            facts = await request_facts(ctx, identity, access_token=get_access_token())
        except ToolgateError as exc:
            _fail(exc)
        if self.tools.guarded and self.server is not None:
            principal = facts.principal or self.toolset.default_principal
            refused = await refused_tools(self.server, self.tools.guarded)
            facts = replace(facts, principal=refusing(principal, refused))
        self.live.remember(ctx, facts)
        return facts

    async def request_for(self, ctx: SdkContext) -> tuple[Strategy, Request]:
        """The strategy and toolgate request for one SDK request context."""
        return (await self.facts(ctx)).request(self.delivery)

    @property
    def live_sessions(self) -> int:
        """Legacy sessions this server can still notify."""
        return len(self.live)

    def _tool_models(self, wires: Sequence[Mapping[str, Any]]) -> list[mt.Tool]:
        """MCP models for wire dicts, reusing the model while a definition is unchanged."""
        out = []
        cache = self._models
        for w in wires:
            hit = cache.get(w["name"])
            if hit is None or hit[0] != w:
                hit = (dict(w), tool_model(w))
                cache[w["name"]] = hit
            out.append(hit[1])
        return out

    async def _list(
        self, ctx: SdkContext, cursor: str | None
    ) -> tuple[list[Mapping[str, Any]], str | None]:
        facts = await self.facts(ctx)
        strategy, req = facts.request(self.delivery)

        def listed(wires: list[dict[str, Any]]) -> None:
            self.watch.listed(ctx, facts, wires)

        try:
            page = await self.delivery.list_tools(strategy, req, cursor, listed)
        except ToolgateError as exc:
            _fail(exc)
        return list(page.items), page.next_cursor

    async def _sdk_list_tools(self, ctx: SdkContext, call_next: Any) -> Any:
        """SDK middleware: toolgate answers ``tools/list`` with its own pages."""
        if ctx.method != "tools/list" or ctx.request_id is None:
            return await call_next(ctx)
        await self._ready(None)
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        cursor = cursor_of(PageParams(cursor=params.get("cursor")))
        items, next_cursor = await self._list(ctx, cursor)
        return mt.ListToolsResult(tools=self._tool_models(items), next_cursor=next_cursor)

    # -- FastMCP hooks ---------------------------------------------------------------------
    async def on_message(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        fctx = context.fastmcp_context
        if self.server is None and fctx is not None:
            self._bind(fctx.fastmcp)
        return await call_next(context)

    async def on_list_tools(
        self,
        context: MiddlewareContext[mt.ListToolsRequest],
        call_next: CallNext[mt.ListToolsRequest, Sequence[FastMCPTool]],
    ) -> Sequence[FastMCPTool]:
        """Only before the SDK hook is installed (FastMCP pages this list itself)."""
        fctx = context.fastmcp_context
        rc = fctx.request_context if fctx is not None else None
        if fctx is None or rc is None:
            return await call_next(context)
        await self._ready(fctx.fastmcp)
        items, _ = await self._list(sdk_context(rc), None)
        models = self._tool_models(items)
        return [
            _WireTool(name=m.name, parameters=dict(m.input_schema), wire_model=m) for m in models
        ]

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, FastMCPResult],
    ) -> FastMCPResult:
        fctx = context.fastmcp_context
        rc = fctx.request_context if fctx is not None else None
        if fctx is None or rc is None:
            return await call_next(context)  # server code calling its own tool
        if running(context.message.name):
            return await call_next(context)  # call_tool's run of a tool toolgate admitted
        await self._ready(fctx.fastmcp)
        ctx = sdk_context(rc)
        message = context.message
        name = message.name
        facts = await self.facts(ctx)
        confirmer: Confirmer | None = facts.confirmer
        if not facts.legacy and supports_elicitation(ctx.session.client_capabilities):
            confirmer = RoundTripConfirmer(message.input_responses, message.request_state)
        raw = RawResult()  # what FastMCP returned, sent back untouched
        extras = {FASTMCP_CONTEXT: fctx, RAW_RESULT: raw}
        strategy, req = facts.request(self.delivery, confirmer=confirmer, extras=extras)
        handler = None
        if self.tools.owns(name):

            async def handler(arguments: Mapping[str, Any], call: CallContext) -> ToolResult:
                nxt = context
                if arguments is not message.arguments:
                    update = {"arguments": dict(arguments)}
                    nxt = context.copy(message=message.model_copy(update=update))
                return await run_fastmcp(call_next(nxt), name, call.extras)

        try:
            reply = await self.delivery.call_tool(strategy, req, name, message.arguments, handler)
        except InputRequired as need:
            return need.result()
        except ToolgateError as exc:
            return to_fastmcp_result(raise_or_result(exc))
        finally:
            await self._warn_session_visibility(fctx)
        if reply.list_changed:
            await fctx.send_notification(mt.ToolListChangedNotification())
            self.watch.told(ctx, facts)
        own: FastMCPResult | None = raw.reply(reply.result)
        return own if own is not None else to_fastmcp_result(reply.result)

    async def _warn_session_visibility(self, fctx: Any) -> None:
        """Warn once when a session set FastMCP's own per-session visibility
        (``ctx.enable_components`` / ``disable_components``): toolgate's lists do not
        follow it (docs/guides/fastmcp.md, "FastMCP's per-session visibility")."""
        if self._visibility_warned:
            return
        try:
            rules = await get_visibility_rules(fctx)
        except Exception:  # no session to scope rules to: none were set
            return
        if not rules:
            return
        self._visibility_warned = True
        logger.warning(
            "toolgate: a session of FastMCP server %r changed its own tool visibility "
            "(ctx.enable_components / ctx.disable_components). toolgate's tools/list does "
            "not follow FastMCP's per-session visibility: a tool a session disabled stays "
            "listed (and FastMCP refuses its calls), one it enabled stays unlisted. Gate "
            "tools per session with toolgate's groups (enable_tools) instead.",
            self.server.name if self.server is not None else "?",
        )

    async def on_list_resources(
        self,
        context: MiddlewareContext[mt.ListResourcesRequest],
        call_next: CallNext[mt.ListResourcesRequest, Sequence[FastMCPResource]],
    ) -> Sequence[FastMCPResource]:
        """FastMCP's own resources, then the add-ons' (the lazy descriptions resource)."""
        theirs = await call_next(context)
        fctx = context.fastmcp_context
        rc = fctx.request_context if fctx is not None else None
        if fctx is None or rc is None or not self.delivery.addons:
            return theirs
        await self._ready(fctx.fastmcp)
        _, req = await self.request_for(sdk_context(rc))
        try:
            ours = await self.delivery.list_resources(req)
        except ToolgateError as exc:
            _fail(exc)
        return [*theirs, *(_wire_resource(w) for w in ours)]

    async def on_read_resource(
        self,
        context: MiddlewareContext[mt.ReadResourceRequestParams],
        call_next: CallNext[mt.ReadResourceRequestParams, ResourceResult],
    ) -> ResourceResult:
        """An add-on's resource as JSON text; any other URI is FastMCP's to read."""
        fctx = context.fastmcp_context
        rc = fctx.request_context if fctx is not None else None
        if fctx is None or rc is None or not self.delivery.addons:
            return await call_next(context)
        await self._ready(fctx.fastmcp)
        _, req = await self.request_for(sdk_context(rc))
        try:
            text = await self.delivery.read_resource(req, str(context.message.uri))
        except ToolgateError as exc:
            _fail(exc)
        if text is None:
            return await call_next(context)
        return ResourceResult([ResourceContent(text, mime_type="application/json")])
