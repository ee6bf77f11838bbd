"""Progressive disclosure on a FastMCP 4 server: ``ToolgateMiddleware(toolset).attach(mcp)``.

Owns the FastMCP middleware and the SDK-level ``tools/list`` hook, the import of
FastMCP-registered tools into the toolset's catalog, session keys and principals from
the transport, ``list_changed`` delivery, add-on resources (lazy descriptions), the
groups extension, and the wags-compatible ``GroupsMiddleware``.
Adapter layer: imports ``fastmcp``, ``mcp``, ``toolgate.wire`` and the layers below.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as mt
from fastmcp.exceptions import FastMCPError
from fastmcp.resources.base import Resource as FastMCPResource
from fastmcp.resources.base import ResourceContent, ResourceResult
from fastmcp.server.dependencies import get_access_token
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.server.transforms.visibility import is_enabled
from fastmcp.tools.base import InputRequiredToolResult
from fastmcp.tools.base import Tool as FastMCPTool
from fastmcp.tools.base import ToolResult as FastMCPResult
from fastmcp.utilities.versions import version_sort_key
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from toolgate.catalog import ALWAYS, BY_GROUP, CallContext, Group, Tool, ToolResult, Visibility
from toolgate.declare import GROUPS_MARK, TOOL_MARK, ToolOptions, in_group
from toolgate.errors import RegistrationError, ToolgateError
from toolgate.groups_extension import GroupsServerExtension, serves_groups
from toolgate.policy import (
    DEFAULT_POLICY,
    DEFAULT_TRUST_LEVELS,
    Confirmer,
    ConfirmRequest,
    Principal,
)
from toolgate.strategies import Delivery, DeliveryConfig
from toolgate.strategies.base import (
    GROUPS_EXTENSION,
    Addon,
    Request,
    Strategy,
    emit_selection,
    is_stateless,
)
from toolgate.toolset import ToolSet
from toolgate.view import paginate
from toolgate.wire import (
    CONFIRM_SCHEMA,
    Caller,
    IdentityFn,
    IdentityResolver,
    SessionElicitationConfirmer,
    Unauthenticated,
    call_result,
    declared_extensions,
    mcp_error,
    raise_or_result,
    resolve_principal,
    result_from_mcp,
    supports_elicitation,
    tool_model,
    tool_wire,
)

if TYPE_CHECKING:
    from fastmcp import FastMCP

logger = logging.getLogger("toolgate.fastmcp")

SdkContext = ServerRequestContext[Any, Any]
#: ``CallContext.extras`` key under which a toolgate tool handler finds the FastMCP Context.
FASTMCP_CONTEXT = "fastmcp.context"
# FastMCP caches ``ctx.session_id`` under this Connection.state key; sharing it makes
# toolgate's session key equal ``ctx.session_id`` on every legacy transport.
_FASTMCP_SESSION_ID = "_fastmcp_state_prefix"
_LIVE_MARK = "toolgate.fastmcp.live"
LIST_CHANGED = "notifications/tools/list_changed"


# -- identity ------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenCaller(Caller):
    """A ``Caller`` that also carries FastMCP auth's verified access token (or None)."""

    access_token: Any = None


@dataclass(frozen=True)
class ClaimsIdentity(IdentityResolver):
    """A principal from FastMCP auth's access-token claims; ``default`` without a token.

    >>> ClaimsIdentity(id_claim="sub", trust_claim="trust", scope_claim="scope",
    ...                default=Principal(id="local", scope=("default",)))

    A scope claim may be a list or a space-separated string of group names. A trust
    claim naming no level of ``trust_levels`` refuses the request (``Unauthenticated``):
    an unknown trust level is a configuration error, never silently "lowest".
    Claims the token lacks fall back to ``default``'s values.
    """

    id_claim: str = "sub"
    trust_claim: str | None = None
    scope_claim: str | None = None
    class_claim: str | None = None
    default: Principal | None = None
    trust_levels: tuple[str, ...] = DEFAULT_TRUST_LEVELS

    async def resolve(self, caller: Caller) -> Principal | None:
        token = getattr(caller, "access_token", None)
        if token is None:
            return self.default
        base = self.default or Principal()
        claims: Mapping[str, Any] = getattr(token, "claims", None) or {}
        ident = claims.get(self.id_claim) or getattr(token, "subject", None) or token.client_id
        trust = base.trust
        if self.trust_claim is not None and self.trust_claim in claims:
            value = claims[self.trust_claim]
            if value not in self.trust_levels:
                raise Unauthenticated(
                    f"The token's {self.trust_claim!r} claim {value!r} names no trust level "
                    f"(known: {', '.join(self.trust_levels)})"
                )
            trust = str(value)
        scope = base.scope
        if self.scope_claim is not None and self.scope_claim in claims:
            raw = claims[self.scope_claim]
            scope = tuple(raw.split()) if isinstance(raw, str) else tuple(map(str, raw or ()))
        agent_class = base.agent_class
        if self.class_claim is not None and claims.get(self.class_claim) is not None:
            agent_class = str(claims[self.class_claim])
        return Principal(
            id=str(ident),
            trust=trust,
            agent_class=agent_class,
            scope=scope,
            attributes=base.attributes,
            authenticated=True,
        )


def caller_of(ctx: SdkContext) -> TokenCaller:
    """How a request arrived: HTTP headers (all of them) and FastMCP's access token."""
    token = get_access_token()
    headers = getattr(ctx.request, "headers", None)
    if headers is None:
        return TokenCaller("local", {}, token)
    return TokenCaller("http", {k.lower(): v for k, v in headers.items()}, token)


def session_key(ctx: SdkContext) -> str:
    """The legacy-protocol session key, equal to FastMCP's ``ctx.session_id``: the
    streamable-HTTP session id, else an id minted once per connection (stdio, memory)."""
    connection = ctx.session._connection
    key = connection.state.get(_FASTMCP_SESSION_ID)
    if key is None:
        key = connection.session_id
        if key is None and ctx.request is not None:
            key = ctx.request.headers.get("mcp-session-id")
        if key is None:
            import uuid

            key = str(uuid.uuid4())
        connection.state[_FASTMCP_SESSION_ID] = key
    return str(key)


# -- confirmation on 2026-07-28: the multi-round-trip pattern --------------------------


class _InputRequired(Exception):
    """Raised by the round-trip confirmer to end this leg with an input request."""

    def __init__(self, request: ConfirmRequest, state: str) -> None:
        super().__init__(request.message)
        self.request = request
        self.state = state


def _confirm_state(request: ConfirmRequest) -> str:
    """The request state that binds an answer to exactly this tool and these arguments
    (FastMCP seals it, so a client cannot forge it for another call)."""
    args = json.dumps(dict(request.arguments), sort_keys=True, default=str)
    digest = hashlib.sha256(f"{request.tool}\x1f{args}".encode()).hexdigest()[:32]
    return f"toolgate-confirm:{digest}"


@dataclass(frozen=True)
class RoundTripConfirmer:
    """Confirms through SEP-2322 multi-round-trip: the first leg asks, the client's
    retry carries the answer (``input_responses``) and our sealed ``request_state``."""

    responses: Mapping[str, Any] | None
    state: str | None

    async def confirm(self, request: ConfirmRequest) -> bool:
        expected = _confirm_state(request)
        answer = (self.responses or {}).get("confirm")
        if answer is None or self.state != expected:
            raise _InputRequired(request, expected)
        content = getattr(answer, "content", None) or {}
        return getattr(answer, "action", None) == "accept" and content.get("confirm") is True


def _input_required(need: _InputRequired) -> InputRequiredToolResult:
    ask = mt.ElicitRequest(
        params=mt.ElicitRequestFormParams(
            message=need.request.message, requested_schema=CONFIRM_SCHEMA
        )
    )
    return InputRequiredToolResult(
        mt.InputRequiredResult(input_requests={"confirm": ask}, request_state=need.state)
    )


# -- results both ways ---------------------------------------------------------------


def to_fastmcp_result(result: ToolResult) -> FastMCPResult:
    """A toolgate result as the FastMCP ``ToolResult`` a middleware returns."""
    return FastMCPResult.from_mcp_result(call_result(result))


def from_fastmcp_result(result: FastMCPResult) -> ToolResult:
    raw = result.to_mcp_result()
    if isinstance(raw, mt.CallToolResult):
        return result_from_mcp(raw)
    return result_from_mcp(
        mt.CallToolResult(
            content=list(result.content),
            structured_content=result.structured_content,
            is_error=result.is_error,
        )
    )


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


# -- the middleware --------------------------------------------------------------------


@dataclass
class _Live:
    """A legacy session with a channel: what it was last shown, how to reach it."""

    connection: Any
    principal: Principal
    protocol: str | None
    extensions: frozenset[str]
    listed: frozenset[str] | None = None


@dataclass
class _Imported:
    tool: Tool
    signature: str


@dataclass
class _Passthrough:
    """What FastMCP's own call returned, so it goes back to the client untouched."""

    result: ToolResult | None = None
    raw: FastMCPResult | None = None


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
        self.toolset = toolset
        self.delivery = Delivery(toolset, config, addons=addons)
        self.identity = identity
        self.tool_groups = {k: tuple(v) for k, v in (tool_groups or {}).items()}
        self.server: FastMCP[Any] | None = None
        self._imported: dict[str, _Imported] = {}
        self._dirty = True
        self._lock: asyncio.Lock | None = None
        self._syncing = False
        self._live: dict[str, _Live] = {}
        self._models: dict[str, tuple[dict[str, Any], mt.Tool]] = {}
        self._notifier: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        #: the groups extension ``attach`` installed (strategy ``auto`` or ``groups``)
        self.groups_extension: GroupsServerExtension | None = None
        toolset.catalog.on_change(self._catalog_changed)

    # -- wiring ------------------------------------------------------------------------
    def attach(self, server: FastMCP[Any]) -> ToolgateMiddleware:
        """Add this middleware to ``server`` and install the ``tools/list`` hook; when
        the strategy serves the groups extension (``auto``, ``groups``), register
        ``GroupsServerExtension`` too, resolving requests like this middleware does.
        Call it before serving: FastMCP takes extensions only then."""
        if self not in server.middleware:
            server.add_middleware(self)
        self._bind(server)
        self._add_groups_extension(server)
        return self

    def _add_groups_extension(self, server: FastMCP[Any]) -> None:
        if self.groups_extension is not None or not serves_groups(self.delivery):
            return
        if GROUPS_EXTENSION in server._extensions and (
            GROUPS_EXTENSION not in server._auto_extensions
        ):
            logger.warning(
                "toolgate: FastMCP server %r already has a %s extension; toolgate's is "
                "not installed",
                server.name,
                GROUPS_EXTENSION,
            )
            return
        extension = GroupsServerExtension(self.delivery, resolver=self.request_for)
        server.add_extension(extension)  # its _bind adds the legacy advertisement
        self.groups_extension = extension

    def _bind(self, server: FastMCP[Any]) -> None:
        if self.server is server:
            return
        if self.server is not None:
            raise RegistrationError("A ToolgateMiddleware serves one FastMCP server")
        self.server = server
        sdk = server._mcp_server
        # Right after FastMCP's root middleware: its request context (auth token, HTTP
        # request) is bound, and a failure here is still observed by on_message.
        from fastmcp.server.low_level import FastMCPServerMiddleware

        at = next(
            (i + 1 for i, m in enumerate(sdk.middleware) if isinstance(m, FastMCPServerMiddleware)),
            0,
        )
        sdk.middleware.insert(at, self._sdk_list_tools)
        self._watch_local_provider(server)
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

    def _watch_local_provider(self, server: FastMCP[Any]) -> None:
        """Re-import when ``@mcp.tool`` / ``remove_tool`` change FastMCP's own tools."""
        provider = server.local_provider
        for method in ("_add_component", "_remove_component"):
            original = getattr(provider, method)

            def watched(*args: Any, _original: Any = original) -> Any:
                result = _original(*args)
                self._mark_dirty()
                return result

            setattr(provider, method, watched)

    def _mark_dirty(self) -> None:
        if self._syncing:
            return  # the import under way reads FastMCP's tools after this change
        self._dirty = True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # registration before serving: imported at the first request
        task = loop.create_task(self.sync())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- importing FastMCP's tools ---------------------------------------------------------
    async def _registered(self) -> dict[str, FastMCPTool]:
        """FastMCP's tools as the server defines them: providers and server transforms,
        enabled, highest version; no per-session visibility or per-token auth."""
        from fastmcp import FastMCP as _FastMCP

        assert self.server is not None
        listed = await super(_FastMCP, self.server).list_tools()
        best: dict[str, FastMCPTool] = {}
        for t in listed:
            if not is_enabled(t):
                continue
            have = best.get(t.name)
            if have is None or version_sort_key(t) > version_sort_key(have):
                best[t.name] = t
        return best

    def _groups_for(self, fm: FastMCPTool, opts: ToolOptions | None) -> tuple[str, ...]:
        fn = getattr(fm, "fn", None)
        marks: tuple[str, ...] = getattr(fn, GROUPS_MARK, ()) if fn is not None else ()
        known = self.toolset.catalog.groups
        tags = tuple(sorted(t for t in (fm.tags or ()) if t in known))
        return tuple(
            dict.fromkeys(
                (*(opts.groups if opts else ()), *marks, *self.tool_groups.get(fm.name, ()), *tags)
            )
        )

    def _import_one(self, fm: FastMCPTool) -> Tool:
        server = self.server
        assert server is not None
        wire = tool_wire(fm.to_mcp_tool(name=fm.name))
        fn = getattr(fm, "fn", None)
        opts: ToolOptions | None = getattr(fn, TOOL_MARK, None) if fn is not None else None
        name = fm.name

        async def run(arguments: Mapping[str, Any], ctx: CallContext) -> ToolResult:
            # the call_tool dispatcher's path: FastMCP runs the tool, minus the middleware
            return await _run_fastmcp(server.call_tool(name, dict(arguments), run_middleware=False))

        visibility: Visibility = BY_GROUP
        if opts is not None:
            visibility = opts.visibility or (ALWAYS if opts.always else BY_GROUP)
        return Tool(
            name=name,
            description=wire.get("description") or "",
            handler=run,
            input_schema=wire.get("inputSchema") or {"type": "object", "properties": {}},
            title=wire.get("title"),
            summary=opts.summary if opts else None,
            output_schema=wire.get("outputSchema"),
            annotations=wire.get("annotations"),
            groups=self._groups_for(fm, opts),
            visibility=visibility,
            policy=opts.policy if opts else DEFAULT_POLICY,
            stages=frozenset(opts.stages) if opts and opts.stages is not None else None,
            next_stage=opts.next_stage if opts else None,
            doc=opts.doc if opts else None,
            meta=wire.get("_meta"),
            icons=tuple(wire["icons"]) if wire.get("icons") else None,
            source="fastmcp",
        )

    async def prepare(self) -> None:
        """Hook for subclasses: runs at the start of every import, server bound."""

    async def sync(self) -> None:
        """Import FastMCP's registered tools into the toolset (adds, changes, removals).
        Runs at the first request and whenever FastMCP's local tools change; call it
        after changing tools FastMCP cannot report (mounted servers, ``mcp.disable``)."""
        if self.server is None:
            raise RegistrationError("attach() the middleware to a FastMCP server first")
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            self._dirty = False
            self._syncing = True
            try:
                await self._import()
            finally:
                self._syncing = False

    async def _import(self) -> None:
        await self.prepare()
        found = await self._registered()
        catalog = self.toolset.catalog
        gone = [n for n in self._imported if n not in found]
        fresh: list[Tool] = []
        for name, fm in found.items():
            if name in self._imported:
                tool = self._import_one(fm)
                sig = json.dumps([tool.wire(), tool.groups], sort_keys=True, default=str)
                if self._imported[name].signature == sig:
                    continue
                gone.append(name)
            elif catalog.tool(name) is not None:
                raise RegistrationError(
                    f"FastMCP tool {name!r} collides with a toolgate tool of the same name",
                    name=name,
                )
            fresh.append(self._import_one(fm))
        for name in gone:
            if catalog.tool(name) is self._imported[name].tool:
                self.toolset.remove_tool(name)
            del self._imported[name]
        if fresh:
            self.toolset.add_tools(fresh)
        for tool in fresh:
            sig = json.dumps([tool.wire(), tool.groups], sort_keys=True, default=str)
            self._imported[tool.name] = _Imported(tool, sig)
        self.toolset.validate()  # e.g. initial groups over budget: a configuration error now

    async def _ready(self, server: FastMCP[Any] | None) -> None:
        if server is not None and self.server is None:
            self._bind(server)
        if self._dirty:
            await self.sync()

    # -- per request -----------------------------------------------------------------------
    async def _request(
        self, ctx: SdkContext, confirmer: Confirmer | None = None, extras: Any = None
    ) -> tuple[Strategy, Request, _Live | None]:
        protocol = ctx.protocol_version
        session = ctx.session
        extensions = declared_extensions(session.client_capabilities)
        principal = await resolve_principal(self.identity or _DEFAULT_IDENTITY, caller_of(ctx))
        principal = principal or self.toolset.default_principal
        key: str | None = None
        live: _Live | None = None
        if not is_stateless(protocol):
            key = session_key(ctx)
            live = self._remember(key, session._connection, principal, protocol, extensions)
        strategy, req = self.delivery.request(
            session_key=key,
            principal=principal,
            protocol=protocol,
            extensions=extensions,
            confirmer=confirmer,
            extras=extras,
        )
        return strategy, req, live

    async def request_for(self, ctx: SdkContext) -> tuple[Strategy, Request]:
        """The strategy and toolgate request for one SDK request context, resolved as
        for tool calls (principal, session key, declared extensions); the resolver
        ``GroupsServerExtension(delivery, resolver=...)`` takes."""
        await self._ready(None)
        try:
            strategy, req, _ = await self._request(ctx)
        except ToolgateError as exc:
            _raise_jsonrpc(exc)
        return strategy, req

    def _remember(
        self,
        key: str,
        connection: Any,
        principal: Principal,
        protocol: str | None,
        extensions: frozenset[str],
    ) -> _Live:
        live = self._live.get(key)
        if live is None or live.connection is not connection:
            live = _Live(connection, principal, protocol, extensions)
            self._live[key] = live
            if not connection.state.get(_LIVE_MARK):
                connection.state[_LIVE_MARK] = True
                connection.exit_stack.callback(self._forget, key, connection)
        else:
            live.principal, live.extensions = principal, extensions
        return live

    def _forget(self, key: str, connection: Any) -> None:
        live = self._live.get(key)
        if live is not None and live.connection is connection:
            del self._live[key]

    @property
    def live_sessions(self) -> int:
        """Legacy sessions this server can still notify."""
        return len(self._live)

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
        strategy, req, live = await self._request(ctx)
        try:
            wires = await strategy.list_tools(req)
            if cursor is None:  # one tool.selection event per listing, not per page
                emit_selection(req, "list", strategy, wires)
            page = paginate(wires, lambda w: str(w["name"]), cursor, self.toolset.page_size)
        except ToolgateError as exc:
            _raise_jsonrpc(exc)
        if live is not None:
            live.listed = frozenset(str(w["name"]) for w in wires)
        return list(page.items), page.next_cursor

    async def _sdk_list_tools(self, ctx: SdkContext, call_next: Any) -> Any:
        """SDK middleware: toolgate answers ``tools/list`` with its own pages."""
        if ctx.method != "tools/list" or ctx.request_id is None:
            return await call_next(ctx)
        await self._ready(None)
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        cursor = params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise MCPError(code=mt.INVALID_PARAMS, message="Invalid cursor: must be a string")
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
        items, _ = await self._list(rc._srctx, None)
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
        await self._ready(fctx.fastmcp)
        ctx = rc._srctx
        message = context.message
        name = message.name
        caps = ctx.session.client_capabilities
        confirmer: Confirmer | None = None
        if supports_elicitation(caps):
            if is_stateless(ctx.protocol_version):
                confirmer = RoundTripConfirmer(message.input_responses, message.request_state)
            else:
                confirmer = SessionElicitationConfirmer(ctx.session, ctx.request_id)
        strategy, req, live = await self._request(ctx, confirmer, {FASTMCP_CONTEXT: fctx})

        seen = _Passthrough()
        handler = None
        imported = self._imported.get(name)
        if imported is not None and self.toolset.catalog.tool(name) is imported.tool:

            async def handler(arguments: Mapping[str, Any], _: CallContext) -> ToolResult:
                nxt = context
                if arguments is not message.arguments:
                    update = {"arguments": dict(arguments)}
                    nxt = context.copy(message=message.model_copy(update=update))
                raw = await call_next(nxt)
                if isinstance(raw, InputRequiredToolResult):
                    result = ToolResult()  # a guard tool's own ask goes back as it is
                else:
                    result = from_fastmcp_result(raw)
                seen.result, seen.raw = result, raw
                return result

        try:
            reply = await self.delivery.call_tool(strategy, req, name, message.arguments, handler)
        except _InputRequired as need:
            return _input_required(need)
        except ToolgateError as exc:
            return to_fastmcp_result(raise_or_result(exc))
        if reply.list_changed:
            await fctx.send_notification(mt.ToolListChangedNotification())
            if live is not None:
                live.listed = None  # told: the client re-lists before we compare again
        if seen.raw is not None and reply.result is seen.result:
            return seen.raw
        return to_fastmcp_result(reply.result)

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
        try:
            _, req, _ = await self._request(rc._srctx)
            ours = await self.delivery.list_resources(req)
        except ToolgateError as exc:
            _raise_jsonrpc(exc)
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
        try:
            _, req, _ = await self._request(rc._srctx)
            text = await self.delivery.read_resource(req, str(context.message.uri))
        except ToolgateError as exc:
            _raise_jsonrpc(exc)
        if text is None:
            return await call_next(context)
        return ResourceResult([ResourceContent(text, mime_type="application/json")])

    # -- run-time registration ---------------------------------------------------------------
    def _catalog_changed(self, _catalog: Any) -> None:
        if not self._live or self._notifier is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._notifier = loop.create_task(self._notify_changed())

    async def _notify_changed(self) -> None:
        """Tell each live legacy session whose visible list changed (run-time tool or
        group registration). 2026-07-28 has no channel outside a request: nothing to send."""
        await asyncio.sleep(0)  # one notification for a burst of registrations
        self._notifier = None
        for key, live in list(self._live.items()):
            if live.listed is None:
                continue
            try:
                strategy, req = self.delivery.request(
                    session_key=key,
                    principal=live.principal,
                    protocol=live.protocol,
                    extensions=live.extensions,
                )
                names = frozenset(str(w["name"]) for w in await strategy.list_tools(req))
                if names == live.listed:
                    continue
                live.listed = None
                await live.connection.outbound.notify(LIST_CHANGED, None)
            except Exception:  # a closed connection must not stop the others
                logger.debug("toolgate: list_changed to session %s failed", key, exc_info=True)


_DEFAULT_IDENTITY = ClaimsIdentity()


async def _run_fastmcp(call: Awaitable[FastMCPResult]) -> ToolResult:
    """FastMCP's tool-visible failures become error results, as FastMCP reports them."""
    try:
        return from_fastmcp_result(await call)
    except FastMCPError as exc:
        return ToolResult.error(str(exc))


def _raise_jsonrpc(exc: ToolgateError) -> Any:
    err = mcp_error(exc)
    if err is None:
        err = MCPError(code=mt.INTERNAL_ERROR, message=exc.message, data=exc.to_dict())
    raise err from exc


# -- the wags seed's API ---------------------------------------------------------------------


class GroupDefinition(BaseModel):
    """Definition of a tool group (wags)."""

    description: str
    parent: str | None = None


class EnableToolsResult(BaseModel):
    """Structured result from the enable_tools meta-tool (wags)."""

    enabled: list[str]
    enabled_groups: list[str]
    available_tools: list[str]
    available_groups: list[str]
    errors: list[str]


class DisableToolsResult(BaseModel):
    """Structured result from the disable_tools meta-tool (wags)."""

    disabled: list[str]
    enabled_groups: list[str]
    available_tools: list[str]
    errors: list[str]


def _marked_methods(handlers: Any) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for attr in sorted(dir(type(handlers))):
        raw = getattr(type(handlers), attr, None)
        marks = getattr(raw, GROUPS_MARK, None)
        if marks and callable(raw):
            out[attr] = tuple(marks)
    return out


class GroupsMiddleware(ToolgateMiddleware):
    """Drop-in for wags' ``GroupsMiddleware``, with per-session state.

    >>> mcp.add_middleware(GroupsMiddleware(
    ...     groups={"issues": GroupDefinition(description="Issue tracking")},
    ...     handlers=GithubHandlers(), initial_groups=["issues"], max_tools=10))

    The tools of ``handlers`` are the server's tools named like its ``@in_group``
    methods; a method with no such tool is registered on the server from the handler.
    """

    def __init__(
        self,
        groups: Mapping[str, GroupDefinition],
        handlers: Any = None,
        initial_groups: Sequence[str] = (),
        max_tools: int | None = None,
        *,
        identity: IdentityResolver | IdentityFn | None = None,
        toolset: ToolSet | None = None,
    ) -> None:
        ts = toolset or ToolSet(initial_groups=initial_groups, max_tools=max_tools)
        ts.add_groups(Group(name, d.description, parent=d.parent) for name, d in groups.items())
        self.handlers = handlers
        marks = _marked_methods(handlers) if handlers is not None else {}
        super().__init__(
            ts,
            DeliveryConfig(strategy="list_changed", meta_tools="menu"),
            identity=identity,
            tool_groups=marks,
        )

    async def prepare(self) -> None:
        server = self.server
        if server is None or self.handlers is None:
            return
        have = await self._registered()
        for attr in self.tool_groups:
            if attr not in have and self.toolset.catalog.tool(attr) is None:
                server.tool(getattr(self.handlers, attr), name=attr)


__all__ = [
    "FASTMCP_CONTEXT",
    "ClaimsIdentity",
    "DisableToolsResult",
    "EnableToolsResult",
    "GroupDefinition",
    "GroupsMiddleware",
    "RoundTripConfirmer",
    "TokenCaller",
    "ToolgateMiddleware",
    "caller_of",
    "from_fastmcp_result",
    "in_group",
    "session_key",
    "to_fastmcp_result",
]
