"""Health, readiness and metrics over HTTP: ``/healthz``, ``/readyz`` and ``/metrics``.

Reads a running gateway through ``ServedGateway``, the little of it operations need,
so nothing here imports ``toolgate.gateway.serve``. Operations layer: imports
Starlette, the ingress's OAuth routes and the metrics sink.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from toolgate.events import EventBus
from toolgate.gateway.backends.backend import Backend
from toolgate.gateway.config.model import GatewayConfig
from toolgate.gateway.ingress.auth import metadata_routes
from toolgate.gateway.ingress.drain import Drain
from toolgate.gateway.ops.operator import NO_STORE, refused
from toolgate.identity import IdentityResolver
from toolgate.lowlevel import Binding
from toolgate.oauth import OAuthResolver
from toolgate.sdk_internals import live_transports, session_manager
from toolgate.toolset import ToolSet

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from toolgate.gateway.ops.metrics import Live, Metrics


class ServedGateway(Protocol):
    """What operations read of a running gateway (``toolgate.gateway.serve.Gateway``)."""

    cfg: GatewayConfig
    events: EventBus
    identity: IdentityResolver
    metrics: Metrics | None
    binding: Binding | None
    drain: Drain

    @property
    def server(self) -> Server[Any]: ...
    @property
    def backends(self) -> Mapping[str, Backend]: ...
    @property
    def toolset(self) -> ToolSet: ...


def live(gateway: ServedGateway) -> Live:
    """Backends up, open HTTP sessions and catalog size, read now."""
    from toolgate.gateway.ops.metrics import Live

    manager = session_manager(gateway.server)
    sessions = live_transports(manager) if manager is not None else {}
    tools = len(gateway.toolset.catalog.tools) if gateway.binding is not None else 0
    return Live({n: b.up for n, b in gateway.backends.items()}, len(sessions), tools)


def gateway_metrics(gateway: ServedGateway) -> Metrics | None:
    """The gateway's ``Metrics`` sink on its event bus (None when disabled)."""
    if not gateway.cfg.toolgate.metrics.enabled:
        return None
    from toolgate.gateway.ops.metrics import Metrics

    def known_tool(name: str) -> bool:
        return gateway.binding is not None and gateway.toolset.catalog.tool(name) is not None

    metrics = Metrics(known_tool=known_tool, live=lambda: live(gateway))
    gateway.events.add_sink(metrics)
    if isinstance(gateway.identity, OAuthResolver):
        gateway.identity.on_refused = metrics.auth_refused
    return metrics


def readiness(gateway: ServedGateway) -> dict[str, Any]:
    """What ``/readyz`` answers: ``ready`` when the catalog is built, at least one
    backend is up and the gateway is not stopping; ``status`` is ``ok``, ``degraded``
    (some down), ``unavailable``, or ``draining`` (stopping: send nothing new here)."""
    backends = {
        name: {"status": b.status, "up": b.up, "tools": len(b.tools), "error": b.last_error}
        for name, b in sorted(gateway.backends.items())
    }
    up = sum(1 for b in gateway.backends.values() if b.up)
    built = gateway.binding is not None
    if built and up == len(backends):
        status = "ok"
    elif built and up:
        status = "degraded"
    else:
        status = "unavailable"
    if gateway.drain.draining:
        status = "draining"
    return {
        "ready": status not in ("unavailable", "draining"),
        "status": status,
        "backends": backends,
        "tools": len(gateway.toolset.catalog.tools) if built else 0,
    }


REALM = "toolgate-ops"


def without_counts(body: Mapping[str, Any]) -> dict[str, Any]:
    """A readiness answer without the catalog's tool counts (total and per backend)."""
    out = {k: v for k, v in body.items() if k != "tools"}
    out["backends"] = {
        name: {k: v for k, v in b.items() if k != "tools"} for name, b in body["backends"].items()
    }
    return out


def ops_routes(gateway: ServedGateway) -> list[Route]:
    """``/healthz`` (the process answers, also while it drains), ``/readyz`` (backends,
    JSON; 503 when not ready or draining, or with ``?strict`` when any backend is down)
    and ``/metrics``; behind the gateway's guard, like every route (a foreign ``Host``
    gets 421). Where operator tokens are configured, ``/metrics`` and ``/readyz``'s tool
    counts are the operator's (``toolgate.gateway.ops.operator``): a caller of the MCP
    endpoint may not learn from them the tools it may not see."""

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        body = readiness(gateway)
        strict = "strict" in request.query_params
        ok = body["status"] == "ok" if strict else body["ready"]
        if refused(gateway.cfg, request, REALM) is not None:
            body = without_counts(body)  # a probe's answer; the catalog's size is the operator's
        # backends' errors, and the operator's counts: for no cache to keep
        return JSONResponse(body, status_code=200 if ok else 503, headers=NO_STORE)

    routes = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
    ]
    metrics = gateway.metrics
    if metrics is not None:
        from toolgate.gateway.ops.metrics import CONTENT_TYPE

        async def scrape(request: Request) -> Response:
            # tool names and counts of every caller: the operator's, never a caller's
            refusal = refused(gateway.cfg, request, REALM)
            if refusal is not None:
                return refusal
            return Response(metrics.render(), media_type=CONTENT_TYPE, headers=NO_STORE)

        routes.append(Route("/metrics", scrape, methods=["GET"]))
    return [*routes, *metadata_routes(gateway.cfg)]


__all__ = ["ServedGateway", "gateway_metrics", "live", "ops_routes", "readiness"]
