"""``toolgate serve``: one toolgate catalog in front of every configured backend.

``Gateway`` starts the backends, builds the catalog (``build.py``), binds it to an SDK
low-level ``Server`` (``toolgate.lowlevel``) and serves it over stdio or streamable
HTTP. When a backend's tools change, the live catalog is synced in place (sessions keep
their state) and every legacy session and 2026-07-28 listen stream (``listen.Listen``)
whose list changed is notified. The backends' prompts, resources and completions are
relayed by ``relay.Relay`` (``Gateway.relay``), through the ``PrimitiveAccess`` in
``Gateway.access``. Optional HTTP apps (WebMCP, health and metrics, the dashboard) are
``GatewayApp``s in ``Gateway.apps``; the serving process (HTTP or stdio), its signals
and its stop are ``process.py``'s. Edge layer: the top of ``toolgate.gateway``; nothing in the
gateway package imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from mcp.server import Server
from mcp.server.context import ServerMiddleware
from mcp.shared.inbound import x_mcp_header_map
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount

from toolgate.catalog import CallContext, Handler, ToolResult
from toolgate.errors import ConfigError
from toolgate.events import EventBus
from toolgate.gateway.backends.backend import Backend, Timing
from toolgate.gateway.backends.fleet import Fleet
from toolgate.gateway.config.build import (
    BackendTool,
    BuildReport,
    build_toolset,
    delivery_config,
    open_config_store,
)
from toolgate.gateway.config.identity import identity_of
from toolgate.gateway.config.model import GatewayConfig
from toolgate.gateway.ingress.app import http_app
from toolgate.gateway.ingress.drain import Drain
from toolgate.gateway.ingress.fast_path import FastPath
from toolgate.gateway.ops.admin import mount_admin
from toolgate.gateway.ops.health import gateway_metrics, ops_routes
from toolgate.gateway.ops.observe import event_bus, log_store_failures
from toolgate.gateway.relay.access import PrimitiveAccess
from toolgate.gateway.relay.calls import CallRelay
from toolgate.gateway.relay.exposure import BackendAudience, GroupExposure
from toolgate.gateway.relay.listen import Listen
from toolgate.gateway.relay.primitives import Relay, attach
from toolgate.lowlevel import Binding, bind
from toolgate.request import Context, Live, LiveConnections, RequestFacts
from toolgate.state.base import StateStore
from toolgate.state.memory import MemoryStore
from toolgate.strategies import Addon, Delivery
from toolgate.toolset import ToolSet

logger = logging.getLogger("toolgate.gateway")

LIST_CHANGED = "notifications/tools/list_changed"
#: An optional app served beside ``/mcp``: given the built gateway, the bind host and the
#: extra allowed host names, the routes to add at the root of the HTTP app (none: off).
GatewayApp = Callable[["Gateway", str, Sequence[str]], Sequence[BaseRoute]]


def mount_webmcp(gateway: Gateway, host: str, allowed_hosts: Sequence[str]) -> Sequence[BaseRoute]:
    """``/webmcp.js`` and ``/webmcp/*`` (``toolgate.webmcp``), always on: they refuse
    every caller without a configured bearer token."""
    from toolgate.webmcp import webmcp_routes

    return webmcp_routes(gateway.delivery, gateway.identity, recorder=gateway.recorder)


def mount_ops(gateway: Gateway, host: str, allowed_hosts: Sequence[str]) -> Sequence[BaseRoute]:
    """``/healthz``, ``/readyz``, ``/metrics`` and the OAuth protected-resource metadata
    (``toolgate.gateway.ops.health``)."""
    return ops_routes(gateway)


def mount_dashboard(
    gateway: Gateway, host: str, allowed_hosts: Sequence[str]
) -> Sequence[BaseRoute]:
    """``/dashboard`` (``toolgate.gateway.ops.dashboard``) when ``toolgate.dashboard.enabled``."""
    if not gateway.cfg.toolgate.dashboard.enabled:
        return []
    from toolgate.gateway.ops.dashboard import DashboardSource, dashboard_app

    source = DashboardSource.from_gateway(gateway)
    return [Mount("/dashboard", dashboard_app(source))]


class Gateway:
    """Backends + catalog + SDK server. ``async with gateway.running(): ...``.

    >>> gateway = Gateway(load_config("toolgate.json"))
    >>> asyncio.run(gateway.serve_stdio())          # doctest: +SKIP
    """

    #: what ``http_app`` serves beside ``/mcp``, in order (set on an instance to change)
    apps: Sequence[GatewayApp] = (mount_webmcp, mount_ops, mount_dashboard, mount_admin)

    def __init__(
        self,
        cfg: GatewayConfig,
        *,
        timing: Timing | None = None,
        errlog: TextIO | None = None,
        store: StateStore | None = None,
        events: EventBus | None = None,
        access: PrimitiveAccess | None = None,
        config_path: str | Path | None = None,
    ) -> None:
        self.cfg = cfg
        #: the file a reload reads (as given: a symlink swapped by a deploy is followed)
        self.config_path = Path(config_path) if config_path is not None else cfg.source
        self.events = events if events is not None else event_bus(cfg)
        self.store = store if store is not None else open_config_store(cfg)
        self.identity = identity_of(cfg)
        # Prometheus metrics from events (toolgate.gateway.ops.health)
        self.metrics = gateway_metrics(self)
        self.timing = timing or Timing.from_env()
        self.fleet = Fleet(cfg, timing=self.timing, on_tools=self._tools_changed, errlog=errlog)
        self.backends: dict[str, Backend] = self.fleet.backends
        self.server: Server[Any] = Server(
            "toolgate",
            version="0.1.0",
            instructions=(
                "Tools are disclosed progressively: call list_groups to see what is "
                "available and enable_tools to turn a group on."
            ),
        )
        self._sdk_middleware = tuple(self.server.middleware)  # the SDK's own (tracing)
        self._middleware: list[ServerMiddleware[Any]] = []  # the gateway's, by ``build()``
        # progress, cancellation, logging, sampling/elicitation/roots: both ways
        self.calls = CallRelay(self.backends)
        #: the backends' prompts, resources and completions (``access``: who sees which;
        #: by default ``GroupExposure``, set by ``build()``: they follow their groups)
        self.relay = Relay(cfg, self.backends, access=access)
        self._own_access = access is not None
        attach(self.relay, self.backends.values())
        #: ``subscriptions/listen`` (2026-07-28): its streams hear what legacy sessions do
        self.listen = Listen(self.relay, facts=self._facts, connections=self._live)
        self.listen.install(self.server)
        self.binding: Binding | None = None
        #: ``tools/call`` over HTTP beside the SDK's transport (set by ``http_app``)
        self.fast_path: FastPath | None = None
        self.lazy: Addon | None = None
        self.report = BuildReport()
        self._handlers: dict[tuple[str, str], Handler] = {}
        self._sync_lock = asyncio.Lock()
        self.reload_lock = asyncio.Lock()  # one reload at a time (``ops.reload``)
        self._tasks: set[asyncio.Task[Any]] = set()
        self.syncs = 0  # how many times backend changes were synced (tests, logs)
        self.drain = Drain()  # the stop (``toolgate.gateway.process``)

    # -- the catalog ----------------------------------------------------------------------
    @property
    def access(self) -> PrimitiveAccess:
        """Who may list and use the relayed prompts and resources: the one given to the
        constructor, else ``GroupExposure`` once built (``OpenAccess`` before)."""
        return self.relay.access

    @access.setter
    def access(self, access: PrimitiveAccess) -> None:
        self.relay.access = access
        self._own_access = True

    @property
    def toolset(self) -> ToolSet:
        if self.binding is None:
            raise RuntimeError("the gateway has not been built yet")
        return self.binding.toolset

    @property
    def delivery(self) -> Delivery:
        if self.binding is None:
            raise RuntimeError("the gateway has not been built yet")
        return self.binding.delivery

    def listed(self) -> dict[str, list[dict[str, Any]]]:
        return {n: list(b.tools) for n, b in self.backends.items() if b.listed}

    def live(self) -> set[str]:
        return {n for n, b in self.backends.items() if b.up}

    def handler_for(self, tool: BackendTool) -> Handler:
        """One handler per backend tool, the same object across rebuilds (so an
        unchanged tool compares equal and is left alone when the catalog is synced)."""
        key = (tool.server, tool.name)
        handler = self._handlers.get(key)
        if handler is None:
            backends, server, name, calls = self.backends, tool.server, tool.name, self.calls

            async def handler(arguments: Mapping[str, Any], ctx: CallContext) -> ToolResult:
                # looked up per call: a reload may reconnect or replace the backend
                return await calls.call(backends[server], name, arguments, ctx)

            self._handlers[key] = handler
        return handler

    def build(self) -> BuildReport:
        """Build the catalog from what the backends listed and bind it to the server."""
        tg = self.cfg.toolgate
        toolset, report = build_toolset(
            self.cfg,
            self.listed(),
            self.handler_for,
            live=self.live(),
            store=self.store,
            events=self.events,
        )
        if report.fatal:  # content problems are logged below: the gateway serves the rest
            message = "; ".join(e.message for e in report.fatal)
            raise ConfigError(message, key=report.errors[0].details.get("key", ""))
        for e in report.errors:
            logger.warning("config: %s (serving the rest)", e.message)
        for w in report.warnings:
            logger.warning("config: %s", w)
        addons: list[Addon] = []
        if tg.descriptions.mode == "lazy":
            from toolgate.strategies.lazy import LazyDescriptions

            docs_dir = self.cfg.resolve(tg.descriptions.dir) if tg.descriptions.dir else None
            lazy = LazyDescriptions(
                toolset, schema=tg.descriptions.schema_mode, docs_dir=docs_dir, check_names=False
            )
            try:
                lazy.check_docs()
            except ConfigError as exc:
                logger.warning("descriptions: %s", exc.message)
            addons.append(lazy)  # bind() logs its start-up warnings
            self.lazy = lazy
        config = delivery_config(self.cfg)
        # before bind(): the lazy add-on's own resources chain after the relayed ones
        self.relay.install(self.server, facts=self._facts, connections=self._live)
        self.binding = bind(self.server, toolset, config, identity=self.identity, addons=addons)
        self._header_params(toolset)
        exposure: GroupExposure | None = None
        if not self._own_access:  # prompts and resources follow their groups' scope
            exposure = GroupExposure(self.cfg, self.binding.delivery)
            self.relay.access = exposure
        advertise: list[ServerMiddleware[Any]] = []
        if tg.strategy in ("auto", "groups"):
            from toolgate.groups_extension import bind_groups

            groups = bind_groups(
                self.server,
                self.binding.delivery,
                facts=self.binding.facts,
                contents=exposure.contents(lambda: self.relay.namespace.items)
                if exposure is not None
                else None,
            )
            advertise = [groups.advertise_on_legacy]  # the extension on the legacy era
        # a backend's log messages outside calls reach the sessions whose principal it serves
        audience = BackendAudience(
            self.binding.delivery,
            access=lambda: self.relay.access,
            items=lambda: self.relay.namespace.items,
        )
        self.calls.install(self.server, facts=self._facts, audience=audience, events=self.events)
        # who each session is, in the store: the dashboard lists it, WebMCP adds to it
        from toolgate.gateway.ops.dashboard.sessions import SessionRecorder, record_sessions

        self.recorder = SessionRecorder(toolset)
        # the MCP middleware, in the order a request passes it
        self._middleware = [
            log_store_failures,  # a request refused for the store's failure, logged
            *advertise,
            *self._sdk_middleware,
            *self.binding.middleware,  # params of a wrong shape refused, naming the field
            *self.calls.middleware,  # input_required's state sealed, its rounds
            record_sessions(self.binding, self.recorder),  # who each session is, stored
        ]
        self._place_middleware()
        self.report = report
        logger.info(
            "catalog: %d tools from %d backends (%s up), %d groups, strategy %s",
            len(toolset.catalog.tools),
            len(self.backends),
            ", ".join(sorted(self.live())) or "none",
            len(toolset.catalog.groups),
            tg.strategy,
        )
        return report

    def _place_middleware(self) -> None:
        """The server's middleware, placed in one statement: the fast path's first (it
        meets each legacy session on the SDK path), then the gateway's order from
        ``build()``; what a piece put there itself (``bind``, the groups extension) is
        replaced by it."""
        learn = [self.fast_path.learn] if self.fast_path is not None else []
        self.server.middleware[:] = [*learn, *self._middleware]

    async def _facts(self, ctx: Context) -> RequestFacts:
        """A relayed request's facts, read by the binding like a tool request's."""
        if self.binding is None:
            raise RuntimeError("the gateway has not been built yet")
        return await self.binding.facts(ctx)

    def _live(self) -> LiveConnections | None:
        return self.binding.live if self.binding is not None else None

    # -- following the backends -----------------------------------------------------------
    async def _tools_changed(self, backend: Backend) -> None:
        if self.binding is None:
            return  # the first build reads every backend's tools itself
        task = asyncio.get_running_loop().create_task(self.sync(reason=backend.name))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def sync(self, reason: str = "") -> int:
        """Bring the live catalog in line with the backends' current tools; notify the
        legacy sessions and listen streams whose tools/list changed. Returns how many
        were notified."""
        async with self._sync_lock:
            toolset = self.toolset
            scratch, report = build_toolset(
                self.cfg,
                self.listed(),
                self.handler_for,
                live=self.live(),
                store=MemoryStore(),
                events=EventBus(),
            )
            for e in report.errors:
                logger.warning("config after %s changed: %s", reason or "a backend", e.message)
            before = await self._lists()
            for name in toolset.reconfigure(scratch):  # the one way the catalog changes
                logger.warning("tool %r not served: a meta-tool has its name", name)
            self._header_params(toolset)
            after = await self._lists()
            self.syncs += 1

            async def changed(live: Live) -> bool:
                was = before.get(live.connection)
                return was is not None and after.get(live.connection) != was

            sent = await self._connections().notify(LIST_CHANGED, changed)
            logger.info(
                "catalog synced after %s changed: %d tools; notified %d session(s)",
                reason or "a backend",
                len(toolset.catalog.tools),
                sent,
            )
            return sent

    def _header_params(self, toolset: ToolSet) -> None:
        """2026-07-28 ``Mcp-Param-*`` header checks: while no tool declares an
        ``x-mcp-header`` there is nothing to check, and the SDK is told so rather than
        running the caller's whole ``tools/list`` for every ``tools/call``; once one
        does, the SDK's listing is back (the check stays scoped to what the caller sees)."""
        # the SDK's own reading of a schema's declarations, as its check reads them
        declared = any(x_mcp_header_map(t.input_schema) for t in toolset.catalog.tools.values())
        self.server.get_tool_input_schema = None if declared else _nothing_to_check

    def _connections(self) -> LiveConnections:
        if self.binding is None:
            raise RuntimeError("the gateway has not been built yet")
        return self.binding.live

    async def _lists(self) -> dict[Any, list[dict[str, Any]]]:
        """What each live legacy connection's (and listen stream's) tools/list shows now."""
        out: dict[Any, list[dict[str, Any]]] = {}
        for live in self._connections():
            try:
                strategy, request = live.facts.request(self.delivery)
                out[live.connection] = await strategy.list_tools(request)
            except Exception as exc:  # a session we cannot evaluate is not notified
                logger.debug("cannot compute the list of a session: %s", exc)
        return out

    # -- running --------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        """Start the backends and build from those up once each made its first attempt
        or ``Timing.start_grace`` after the first one came up, whichever is first (see
        ``backends.running``); stop them on exit.

        A backend still starting joins later: its first tool list syncs the catalog
        (``sync``), which notifies the legacy sessions whose list changed."""
        names = ", ".join(self.backends) or "none"
        logger.info("starting %d backend(s): %s", len(self.backends), names)
        async with self.fleet.running():
            starting = sorted(n for n, b in self.backends.items() if not b.ready.is_set())
            failed = sorted(n for n, b in self.backends.items() if b.ready.is_set() and not b.up)
            if starting:
                logger.info(
                    "backend(s) still starting: %s; serving the others now, their tools "
                    "appear when they are up",
                    ", ".join(starting),
                )
            if failed:
                logger.warning(
                    "backend(s) failed to start: %s; serving the others, retrying with backoff",
                    ", ".join(failed),
                )
            self.build()
            try:
                yield self
            finally:
                for task in list(self._tasks):
                    task.cancel()
                self.listen.close()
                await self.relay.close()
                await self.calls.close()
        logger.info("backends stopped")

    async def serve_stdio(self, *, exiting: bool = False) -> None:
        """Serve over stdio until stdin closes or SIGTERM/SIGINT; ``exiting``: this process
        ends after it, stop signals are ignored from the end of serving to its exit."""
        from toolgate.gateway.process import serve_stdio

        await serve_stdio(self, exiting=exiting)

    def http_app(self, *, host: str = "127.0.0.1", allowed_hosts: Sequence[str] = ()) -> Starlette:
        """The streamable HTTP app (``/mcp`` and the optional apps in ``apps``) behind the
        ingress (``toolgate.gateway.ingress.app``). Local binds get DNS-rebinding
        protection (foreign ``Host`` → 421, foreign ``Origin`` → 403); other binds must
        name the host names clients use in ``allowed_hosts``."""
        binding = self.binding
        if binding is None:
            raise RuntimeError("build() the gateway before asking for its HTTP app")
        routes = [r for mount in self.apps for r in mount(self, host, allowed_hosts)]
        app, self.fast_path = http_app(
            binding,
            self.cfg,
            self.identity,
            routes=routes,
            host=host,
            allowed_hosts=allowed_hosts,
            drain=self.drain,
        )
        self._place_middleware()  # this app's fast path learns sessions, none before it
        return app

    async def serve_http(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 8765,
        allowed_hosts: Sequence[str] = (),
        exiting: bool = False,
    ) -> None:
        """Serve over streamable HTTP until SIGTERM/SIGINT, then drain; ``exiting`` as in
        ``serve_stdio``."""
        from toolgate.gateway.process import serve_http

        await serve_http(self, host=host, port=port, allowed_hosts=allowed_hosts, exiting=exiting)

    async def close(self) -> None:
        await self.store.close()
        self.events.close()


def _nothing_to_check(name: str) -> None:
    """No tool declares an ``Mcp-Param-*`` header: there is nothing to validate."""
    return None


async def serve(
    cfg: GatewayConfig,
    *,
    path: str | Path | None = None,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    allowed_hosts: Sequence[str] = (),
) -> None:
    """Run a gateway for ``cfg`` as this process's whole job (``toolgate serve``): from
    the end of serving to the process's exit, stop signals are ignored (``obeying``)."""
    gateway = Gateway(cfg, config_path=path)
    try:
        if transport == "stdio":
            await gateway.serve_stdio(exiting=True)
        else:
            await gateway.serve_http(
                host=host, port=port, allowed_hosts=allowed_hosts, exiting=True
            )
    finally:
        await gateway.close()


__all__ = ["Gateway", "GatewayApp", "mount_dashboard", "mount_webmcp", "serve"]
