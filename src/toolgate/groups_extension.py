"""The ``io.modelcontextprotocol/groups`` extension on the MCP wire, for FastMCP and the SDK.

``GroupsEndpoint`` serves ``groups/list`` / ``groups/get`` from a ``Delivery``'s
``GroupsStrategy``, advertises the extension (also on the legacy protocol, whose
initialize result the SDK would strip) and sends ``notifications/groups/list_changed``.
Adapter layer: imports ``mcp`` and ``fastmcp``; the rules live in the strategy.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as mt
from fastmcp.server.extensions import MethodBinding as FastMCPMethodBinding
from fastmcp.server.extensions import ServerExtension
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension
from mcp.server.extension import MethodBinding as SDKMethodBinding
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from toolgate.errors import ConfigError, ToolgateError
from toolgate.policy import Principal
from toolgate.strategies import Delivery
from toolgate.strategies.base import GROUPS_EXTENSION, Request, Strategy, is_stateless
from toolgate.strategies.groups import GROUPS_LIST_CHANGED, GroupsStrategy
from toolgate.wire import declared_extensions, extensions_from_meta, mcp_error

SETTINGS: Mapping[str, Any] = {"listChanged": True}

Context = ServerRequestContext[Any, Any]
PrincipalOf = Callable[[Context], Principal | None]
"""Who is asking, from the request (HTTP auth, ...); ``None``: the toolset's default."""
Resolver = Callable[[Context], Awaitable[tuple[Strategy, Request]]]
"""An adapter's own request -> (strategy, Request) resolution (identity, session keys)."""


class ListGroupsParams(mt.PaginatedRequestParams):
    """``groups/list`` params: ``cursor`` and ``_meta``."""


class GetGroupParams(mt.RequestParams):
    """``groups/get`` params: the group's wire ``name``."""

    name: str


# -- request -> (strategy, Request) ----------------------------------------------------
def request_extensions(ctx: Context) -> frozenset[str]:
    """Extensions this request declares: the legacy initialize capabilities and the
    per-request ``_meta`` client capabilities (2026-07-28), whichever are present."""
    caps = getattr(ctx.session, "client_capabilities", None)
    params = ctx.params if isinstance(ctx.params, Mapping) else {}
    meta = params.get("_meta")
    return declared_extensions(caps) | extensions_from_meta(
        meta if isinstance(meta, Mapping) else None
    )


def transport_session_id(ctx: Context) -> str | None:
    """The legacy transport's session id (``Mcp-Session-Id``); None elsewhere."""
    connection = getattr(ctx.session, "_connection", None)
    session_id = getattr(connection, "session_id", None)
    return session_id if isinstance(session_id, str) else None


def resolve(
    delivery: Delivery, ctx: Context, principal_of: PrincipalOf | None = None
) -> tuple[Strategy, Request]:
    """The strategy and toolgate request for one SDK request context."""
    return delivery.request(
        session_key=transport_session_id(ctx),
        principal=principal_of(ctx) if principal_of is not None else None,
        protocol=ctx.protocol_version,
        extensions=request_extensions(ctx),
    )


def serves_groups(delivery: Delivery) -> bool:
    """Whether ``delivery`` gives a client that declares the extension ``groups``."""
    return isinstance(delivery.choose(None, frozenset({GROUPS_EXTENSION})), GroupsStrategy)


# -- notifications ---------------------------------------------------------------------
@dataclass
class _Watch:
    principal: Principal
    extensions: frozenset[str]
    fingerprint: str


class GroupsListNotifier:
    """Tells connections that used the extension when their ``groups/list`` changed.

    Legacy connections only: they have a standalone channel. A 2026-07-28 client has
    no connection to notify outside a request (that needs ``subscriptions/listen``).
    """

    def __init__(self, strategy: GroupsStrategy) -> None:
        self.strategy = strategy
        self._watched: weakref.WeakKeyDictionary[Any, _Watch] = weakref.WeakKeyDictionary()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[int]] = set()

    def watch(self, ctx: Context, request: Request) -> None:
        """Remember the connection behind ``ctx`` and what its groups/list shows now."""
        connection = getattr(ctx.session, "_connection", None)
        if connection is None or is_stateless(ctx.protocol_version):
            return
        if not getattr(connection, "has_standalone_channel", False):
            return
        principal = request.session.principal
        fp = self.strategy.fingerprint(principal, request.extensions)
        self._watched[connection] = _Watch(principal, request.extensions, fp)
        self._loop = asyncio.get_running_loop()

    def catalog_changed(self, _catalog: object = None) -> None:
        """A ``Catalog.on_change`` listener: schedule :meth:`flush` on the serving loop."""
        loop = self._loop
        if loop is None or not self._watched or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._spawn()
        else:
            loop.call_soon_threadsafe(self._spawn)

    def _spawn(self) -> None:
        task = asyncio.get_running_loop().create_task(self.flush())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def flush(self) -> int:
        """Notify every watched connection whose groups/list changed; how many were."""
        sent = 0
        for connection, watch in list(self._watched.items()):
            fp = self.strategy.fingerprint(watch.principal, watch.extensions)
            if fp == watch.fingerprint:
                continue
            watch.fingerprint = fp
            await connection.notify(GROUPS_LIST_CHANGED, None)  # never raises
            sent += 1
        return sent


# -- the two methods -------------------------------------------------------------------
class GroupsEndpoint:
    """``groups/list`` and ``groups/get`` handlers over one ``Delivery``.

    >>> endpoint = bind_groups(server, delivery)   # or GroupsServerExtension(delivery)
    """

    def __init__(
        self,
        delivery: Delivery,
        *,
        principal_of: PrincipalOf | None = None,
        resolver: Resolver | None = None,
    ) -> None:
        if not serves_groups(delivery):
            raise ConfigError(
                "The groups extension needs a Delivery whose strategy serves it "
                f"('auto' or 'groups'), not {delivery.config.strategy!r}",
                key="strategy",
            )
        strategy = delivery.strategies["groups"]
        assert isinstance(strategy, GroupsStrategy)
        self.delivery = delivery
        self.strategy = strategy
        self.principal_of = principal_of
        self.resolver = resolver
        self.notifier = GroupsListNotifier(strategy)
        delivery.toolset.catalog.on_change(self.notifier.catalog_changed)

    async def _request(self, ctx: Context, method: str) -> Request:
        if self.resolver is not None:
            strategy, request = await self.resolver(ctx)
        else:
            strategy, request = resolve(self.delivery, ctx, self.principal_of)
        if strategy is not self.strategy:
            # the draft: no groups/* from a client that did not declare the extension;
            # its tools/list is flat, so a group's placement would be a lie to it
            raise MCPError(
                code=mt.METHOD_NOT_FOUND,
                message=f"Method not found: {method} (declare the {GROUPS_EXTENSION} "
                "extension in the client capabilities to use it)",
            )
        return request

    async def list_groups(self, ctx: Context, params: ListGroupsParams) -> dict[str, Any]:
        request = await self._request(ctx, "groups/list")
        try:
            result = self.strategy.groups_list(request, params.cursor)
        except ToolgateError as exc:
            raise _rpc_error(exc) from exc
        self.notifier.watch(ctx, request)
        return result

    async def get_group(self, ctx: Context, params: GetGroupParams) -> dict[str, Any]:
        request = await self._request(ctx, "groups/get")
        try:
            return await self.strategy.groups_get(request, params.name)
        except ToolgateError as exc:
            raise _rpc_error(exc) from exc

    def method_table(self) -> list[tuple[str, type[BaseModel], Any]]:
        return [
            ("groups/list", ListGroupsParams, self.list_groups),
            ("groups/get", GetGroupParams, self.get_group),
        ]

    async def advertise_on_legacy(self, ctx: Context, call_next: CallNext) -> HandlerResult:
        """``ServerMiddleware``: put the extension into the legacy ``initialize``
        result's capabilities, which the SDK's per-version sieve removes."""
        result = await call_next(ctx)
        if ctx.method != "initialize":
            return result
        data = (
            result.model_dump(by_alias=True, exclude_none=True)
            if isinstance(result, BaseModel)
            else dict(result or {})
        )
        caps = dict(data.get("capabilities") or {})
        extensions = dict(caps.get("extensions") or {})
        extensions.setdefault(GROUPS_EXTENSION, dict(SETTINGS))
        caps["extensions"] = extensions
        data["capabilities"] = caps
        return data


def _rpc_error(exc: ToolgateError) -> Exception:
    err = mcp_error(exc)
    return err if err is not None else MCPError(code=mt.INTERNAL_ERROR, message=exc.message)


def _install(lowlevel: Any, endpoint: GroupsEndpoint) -> None:
    middleware = lowlevel.middleware
    if not any(getattr(m, "__self__", None) is endpoint for m in middleware):
        middleware.insert(0, endpoint.advertise_on_legacy)


# -- the official SDK --------------------------------------------------------------------
def bind_groups(
    server: Any,
    delivery: Delivery,
    *,
    principal_of: PrincipalOf | None = None,
    resolver: Resolver | None = None,
) -> GroupsEndpoint:
    """Serve the extension on an SDK ``Server`` (lowlevel) or an ``MCPServer``.

    Registers ``groups/list`` and ``groups/get`` with ``add_request_handler``, sets
    ``server.extensions[...]`` and the legacy advertisement middleware. ``resolver``:
    the adapter's own request resolution (``toolgate.lowlevel.Binding.request_for``).
    """
    lowlevel = getattr(server, "_lowlevel_server", server)
    endpoint = GroupsEndpoint(delivery, principal_of=principal_of, resolver=resolver)
    for method, params_type, handler in endpoint.method_table():
        lowlevel.add_request_handler(method, params_type, handler)
    lowlevel.extensions[GROUPS_EXTENSION] = dict(SETTINGS)
    _install(lowlevel, endpoint)
    return endpoint


class GroupsExtension(Extension):
    """The extension for ``MCPServer(extensions=[...])``.

    The SDK gives extensions no middleware hook: pass ``middleware=[ext.legacy_advert]``
    too, or legacy (2025-11-25) clients will not see the advertisement.
    """

    identifier = GROUPS_EXTENSION

    def __init__(
        self,
        delivery: Delivery,
        *,
        principal_of: PrincipalOf | None = None,
        resolver: Resolver | None = None,
    ) -> None:
        self.endpoint = GroupsEndpoint(delivery, principal_of=principal_of, resolver=resolver)
        self.legacy_advert = self.endpoint.advertise_on_legacy

    def settings(self) -> dict[str, Any]:
        return dict(SETTINGS)

    def methods(self) -> list[SDKMethodBinding]:
        return [SDKMethodBinding(m, p, h) for m, p, h in self.endpoint.method_table()]


# -- FastMCP 4 ----------------------------------------------------------------------------
class GroupsServerExtension(ServerExtension):
    """The extension for FastMCP: ``mcp.add_extension(GroupsServerExtension(delivery))``.

    Registering it also installs the legacy advertisement on the server's SDK layer.
    """

    identifier = GROUPS_EXTENSION

    def __init__(
        self,
        delivery: Delivery,
        *,
        principal_of: PrincipalOf | None = None,
        resolver: Resolver | None = None,
    ) -> None:
        self.endpoint = GroupsEndpoint(delivery, principal_of=principal_of, resolver=resolver)

    def settings(self) -> dict[str, Any]:
        return dict(SETTINGS)

    def methods(self) -> list[Any]:
        return [FastMCPMethodBinding(m, p, h) for m, p, h in self.endpoint.method_table()]

    def clone(self) -> GroupsServerExtension:
        # a deep copy would copy the toolset; an extension shares its delivery
        endpoint = self.endpoint
        return GroupsServerExtension(
            endpoint.delivery, principal_of=endpoint.principal_of, resolver=endpoint.resolver
        )

    def _bind(self, server: Any) -> None:
        super()._bind(server)
        _install(server._mcp_server, self.endpoint)
