"""``dashboard_app(source)``: the operator dashboard as a Starlette sub-application.

An overview (backends' health, the token chart), live sessions (read from the store, so
every replica sees them), the group tree with token costs, the explained view of a
principal or session, and a live event stream (server-sent events from an ``EventRing``
on the bus, filtered by type and principal). Every route but the login form and static
assets needs the operator token. Edge layer: Starlette and Jinja2.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from toolgate.errors import ConfigError
from toolgate.events import EventBus
from toolgate.gateway.commands.check import Snapshot
from toolgate.gateway.commands.inspect import describe, parse_principal
from toolgate.gateway.config.build import BuildReport
from toolgate.gateway.config.model import GatewayConfig
from toolgate.gateway.ops.dashboard.auth import COOKIE, OperatorAuth
from toolgate.gateway.ops.dashboard.chart import Bar, bar_chart
from toolgate.gateway.ops.dashboard.events import EventFilter, EventRing, RingEvent
from toolgate.gateway.ops.dashboard.sessions import session_rows
from toolgate.gateway.ops.operator import no_store
from toolgate.gateway.relay.access import Relayed
from toolgate.policy import Principal
from toolgate.state.base import StateStore
from toolgate.strategies import Delivery
from toolgate.toolset import ToolSet

if TYPE_CHECKING:
    import jinja2
    from markupsafe import Markup

HERE = Path(__file__).parent
EVENT_PREFIXES = ("tool.", "group.", "budget.")
Listed = Callable[[], Mapping[str, Sequence[Mapping[str, Any]]]]
#: the prompts, resources and templates the gateway relays now (``Relay.namespace.items``)
Primitives = Callable[[], Sequence[Relayed]]
#: ``toolgate.gateway.ops.health.readiness``'s answer: ``status`` and ``backends``
Health = Callable[[], Mapping[str, Any]]


@dataclass(frozen=True)
class DashboardSource:
    """What the dashboard reads: the config the gateway serves now (``current``, read on
    every request, so a reload shows at once), its delivery (and through it the toolset,
    store and event bus), what each backend lists, the prompts and resources it relays
    and, from a running gateway, each backend's health (without it a backend that listed
    tools counts as up).

    >>> DashboardSource.from_gateway(gateway)
    """

    current: Callable[[], GatewayConfig]
    delivery: Delivery
    listed: Listed = field(default=dict)
    health: Health | None = None
    relayed: Primitives = field(default=tuple)

    @property
    def config(self) -> GatewayConfig:
        """The gateway's config now: after a reload the new one, after a refusal the old."""
        return self.current()

    @property
    def toolset(self) -> ToolSet:
        return self.delivery.toolset

    @property
    def store(self) -> StateStore:
        return self.toolset.store

    @property
    def events(self) -> EventBus:
        return self.toolset.events

    @classmethod
    def from_gateway(cls, gateway: Any) -> DashboardSource:
        """From a built ``toolgate.gateway.serve.Gateway``."""
        from toolgate.gateway.ops.health import readiness

        return cls(
            lambda: gateway.cfg,
            gateway.delivery,
            gateway.listed,
            lambda: readiness(gateway),
            lambda: gateway.relay.namespace.items,
        )


class _Guard:
    """ASGI middleware: no operator token or cookie → 401, except for the login form and
    static assets (``Host`` and ``Origin`` are the gateway's guard's, on every route).
    Every answer but a static asset's is ``Cache-Control: no-store``: pages, JSON and
    refusals are the operator's, for no cache to keep."""

    def __init__(self, app: ASGIApp, auth: OperatorAuth, page: Any) -> None:
        self.app = app
        self.auth = auth
        self.page = page

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        path = scope["path"].removeprefix(scope.get("root_path", ""))
        if path.startswith("/static/"):
            await self.app(scope, receive, send)
            return
        send = no_store(send)
        if path == "/login":
            await self.app(scope, receive, send)
            return
        if not self.auth.allows(conn.headers, conn.cookies):
            response: Response
            if path.startswith("/api/"):
                response = JSONResponse(
                    {"error": "operator token required"},
                    401,
                    headers={"WWW-Authenticate": 'Bearer realm="toolgate-dashboard"'},
                )
            else:
                response = self.page(conn, "login.html", {"failed": False}, 401)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _templates() -> jinja2.Environment:
    try:  # an optional dependency: only an enabled dashboard needs it
        import jinja2
        from markupsafe import Markup
    except ImportError:
        raise ConfigError(
            "toolgate.dashboard: the dashboard needs Jinja2: pip install 'toolgate[dashboard]'",
            key="toolgate.dashboard",
        ) from None
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["json"] = lambda v: Markup(json.dumps(v).replace("</", "<\\/"))
    return env


def dashboard_app(
    source: DashboardSource,
    *,
    ring: EventRing | None = None,
    refresh_s: float = 2.0,
) -> Starlette:
    """The dashboard, to mount at ``/dashboard`` next to the MCP endpoint.

    >>> app.routes.append(Mount("/dashboard", dashboard_app(source)))

    Needs at least one operator token digest in ``toolgate.dashboard.tokens``
    (``ConfigError`` otherwise). Serve it behind the gateway's guard
    (``toolgate.gateway.ingress.guard``), which checks ``Host`` and ``Origin`` on every
    route. The event ring is added to the toolset's bus here.
    """
    auth = OperatorAuth(source.config.toolgate.dashboard.tokens)
    ring = ring if ring is not None else EventRing()
    source.events.add_sink(ring)
    env = _templates()

    def page(
        conn: HTTPConnection, name: str, values: dict[str, Any], status: int = 200
    ) -> Response:
        base = conn.scope.get("root_path", "").rstrip("/")
        html = env.get_template(name).render(base=base, refresh_s=refresh_s, **values)
        return HTMLResponse(html, status, headers={"Cache-Control": "no-store"})

    # -- logging in -------------------------------------------------------------------
    async def login_form(request: Request) -> Response:
        return page(request, "login.html", {"failed": False})

    async def login(request: Request) -> Response:
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        token = (form.get("token") or [""])[0].strip()
        if not auth.token_ok(token):
            return page(request, "login.html", {"failed": True}, 401)
        base = request.scope.get("root_path", "").rstrip("/")
        response = RedirectResponse(f"{base}/", 303)
        response.set_cookie(
            COOKIE,
            auth.cookie_for(token),
            max_age=auth.max_age,
            path=base or "/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    async def logout(request: Request) -> Response:
        base = request.scope.get("root_path", "").rstrip("/")
        response = RedirectResponse(f"{base}/login", 303)
        response.delete_cookie(COOKIE, path=base or "/")
        return response

    # -- data ---------------------------------------------------------------------------
    async def sessions_data() -> list[dict[str, Any]]:
        return [row.to_dict() for row in await session_rows(source.toolset)]

    async def groups_data() -> dict[str, Any]:
        ts = source.toolset
        snap = Snapshot(
            source.config,
            ts,
            source.delivery,
            BuildReport(),
            {k: [dict(w) for w in v] for k, v in source.listed().items()},
            relayed=tuple(source.relayed()),
        )
        data = await describe(snap, ts.default_principal, ts.token_counter)
        return {k: data[k] for k in ("tokenizer", "backends", "root", "groups", "totals")}

    async def health_data(groups: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Overall status (None when unknown) and each backend's status, tools, error;
        without the gateway's health, from what ``groups_data`` says was listed."""
        if source.health is not None:
            health = source.health()
            return {"status": health["status"], "backends": dict(health["backends"])}
        listed = (groups or await groups_data())["backends"]
        backends = {
            name: {"status": b["status"], "tools": b["tools"], "error": b.get("error")}
            for name, b in listed.items()
        }
        return {"status": None, "backends": backends}

    async def overview_data(groups: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Health and the live session count (cheap: polled by an open overview)."""
        return {
            "health": await health_data(groups),
            "sessions": len(await session_rows(source.toolset)),
        }

    async def explain_data(request: Request) -> dict[str, Any]:
        """``?session=KEY`` (that session's principal and state) or ``?principal=SPEC``
        (a new session of ``default``, a token principal's id, or ``id=x,trust=y``)."""
        ts = source.toolset
        key = request.query_params.get("session")
        principal: Principal
        if key:
            row = next((r for r in await session_rows(ts) if r.key == key), None)
            if row is None or row.principal is None:
                raise ConfigError(f"no recorded live session {key!r}", key="session")
            principal, state, label = row.principal, row.state, f"session {key}"
        else:
            spec = request.query_params.get("principal") or "default"
            principal = parse_principal(source.config, spec, "principal")
            state, label = ts.initial_state(), "a new session"
        view = ts.view(principal, state)
        return {
            "principal": {
                "id": principal.id,
                "trust": principal.trust,
                "agent_class": principal.agent_class,
                "scope": list(principal.scope),
            },
            "of": label,
            "session": key,
            "active_groups": sorted(state.active),
            "stage": ts.catalog.flow.current(state.stage),
            "visible": len(view.visible),
            "tools": [
                {
                    "name": s.name,
                    "visible": s.visible,
                    "reason": str(s.reason),
                    "access": "denied" if s.access_denied else "allowed",
                    "groups": list(s.tool.groups) if s.tool else [],
                }
                for s in view.explain()
            ],
        }

    def principals() -> list[str]:
        tokens = source.config.toolgate.identity.tokens.values()
        return ["default", *sorted({p.id for p in tokens})]

    # -- pages ----------------------------------------------------------------------------
    async def overview_page(request: Request) -> Response:
        groups = await groups_data()
        data = {**await overview_data(groups), "groups": groups}
        values = {"nav": "overview", "data": data, "chart": chart(groups)}
        return page(request, "overview.html", values)

    async def sessions_page(request: Request) -> Response:
        return page(request, "sessions.html", {"nav": "sessions", "rows": await sessions_data()})

    async def groups_page(request: Request) -> Response:
        data = await groups_data()
        return page(request, "groups.html", {"nav": "groups", "data": data, "chart": chart(data)})

    async def explain_page(request: Request) -> Response:
        values: dict[str, Any] = {"nav": "explain", "principals": principals(), "error": None}
        status = 200
        try:
            values["data"] = await explain_data(request)
        except ConfigError as exc:
            values["data"], values["error"] = None, exc.message
            status = _explain_status(exc)
        return page(request, "explain.html", values, status)

    def event_filter(request: Request) -> EventFilter:
        params = request.query_params
        return EventFilter.from_query({k: params.getlist(k) for k in ("types", "principal", "q")})

    def filtered(wanted: EventFilter) -> list[dict[str, Any]]:
        return [e.to_dict() for e in reversed(ring.recent()) if wanted.matches(e)]

    async def events_page(request: Request) -> Response:
        wanted = event_filter(request)
        seen = {e.event.principal for e in ring.recent() if e.event.principal}
        values = {
            "nav": "events",
            "events": filtered(wanted),
            "kinds": EVENT_PREFIXES,
            "filter": wanted,
            "principals": sorted(seen | set(principals()) - {"default"}),
        }
        return page(request, "events.html", values)

    # -- JSON and the event stream ----------------------------------------------------
    async def api_overview(request: Request) -> Response:
        return JSONResponse(await overview_data())

    async def api_sessions(request: Request) -> Response:
        return JSONResponse({"sessions": await sessions_data()})

    async def api_groups(request: Request) -> Response:
        return JSONResponse(await groups_data())

    async def api_explain(request: Request) -> Response:
        try:
            return JSONResponse(await explain_data(request))
        except ConfigError as exc:
            return JSONResponse({"error": exc.message}, _explain_status(exc))

    async def api_events(request: Request) -> Response:
        return JSONResponse({"events": filtered(event_filter(request))})

    async def api_stream(request: Request) -> Response:
        wanted = event_filter(request)
        header = request.headers.get("last-event-id")
        after_text = header or request.query_params.get("after")
        after = None
        if after_text:
            # ASCII digits only: str.isdigit() also passes '²', which int() refuses
            if not re.fullmatch(r"[0-9]{1,18}", after_text):
                where = "the Last-Event-ID header" if header else "'after'"
                why = f"{where} must be an event id (up to 18 digits 0-9), not {after_text[:40]!r}"
                return JSONResponse({"error": why}, 400)
            after = int(after_text)
        return StreamingResponse(
            _stream(ring, wanted, after),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    routes = [
        Route("/", overview_page),
        Route("/sessions", sessions_page),
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/groups", groups_page),
        Route("/explain", explain_page),
        Route("/events", events_page),
        Route("/api/overview", api_overview),
        Route("/api/sessions", api_sessions),
        Route("/api/groups", api_groups),
        Route("/api/explain", api_explain),
        Route("/api/events", api_events),
        Route("/api/events/stream", api_stream),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    guard = Middleware(_Guard, auth=auth, page=page)
    return Starlette(routes=routes, middleware=[guard])


def _explain_status(exc: ConfigError) -> int:
    """404 for a session or principal that is not there, 400 for a spec written wrong."""
    return 404 if exc.details.get("key") in ("session", "principal") else 400


async def _stream(
    ring: EventRing,
    wanted: EventFilter,
    after: int | None,
    heartbeat: float = 15.0,
    lifetime: float = 60.0,
) -> AsyncIterator[str]:
    """Server-sent events: the buffered ones after ``after`` (when given), then live.

    A stream ends after ``lifetime`` seconds and the browser reconnects with
    ``Last-Event-ID`` (nothing is lost): an open dashboard never holds up a shutdown
    for long."""
    queue = ring.subscribe()
    item: RingEvent | None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + lifetime
    try:
        yield "retry: 1000\n\n"
        if after is not None:
            for item in ring.recent(after):
                if wanted.matches(item):
                    yield _sse(item.id, item.to_dict())
        while (left := deadline - loop.time()) > 0:
            try:
                item = await asyncio.wait_for(queue.get(), min(heartbeat, left))
            except TimeoutError:
                yield ": keep-alive\n\n"
                continue
            if item is None:
                return
            if wanted.matches(item):
                yield _sse(item.id, item.to_dict())
    finally:
        ring.unsubscribe(queue)


def _sse(event_id: int, data: Mapping[str, Any]) -> str:
    return f"id: {event_id}\nevent: toolgate\ndata: {json.dumps(data, default=str)}\n\n"


def chart(data: Mapping[str, Any]) -> Markup:
    """Flat vs disclosed totals, then what each group adds when enabled."""
    from markupsafe import Markup

    totals = data["totals"]
    bars = [
        Bar(
            "flat: every tool it may use",
            int(totals["flat"]["tokens"]),
            "flat",
            note=f" ({totals['flat']['tools']} tools)",
        ),
        Bar(
            "disclosed: a new session",
            int(totals["disclosed"]["tokens"]),
            "disclosed",
            note=f" ({totals['disclosed']['tools']} tools)",
        ),
        Bar("(root: always listed)", int(data["root"]["tokens"]), "root"),
    ]

    def walk(nodes: Sequence[Mapping[str, Any]], depth: int) -> None:
        for g in nodes:
            bars.append(
                Bar(
                    g["name"],
                    int(g["tokens"]),
                    "group",
                    depth,
                    note=f" ({g['tool_count']} tools)",
                )
            )
            walk(g["children"], depth + 1)

    walk(data["groups"], 0)
    title = f"Token cost ({data['tokenizer']}): flat vs disclosed, and per group"
    return Markup(bar_chart(bars, title=title))
