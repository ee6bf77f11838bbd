"""What the gateway tells its operator as it serves: the event sinks its config names
(logging, a JSONL file, OpenTelemetry) and the log line for every request refused because
the session store failed. Operations layer: imports the core's events, the config and
``mcp``'s request context.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from mcp.server.context import CallNext, HandlerResult
from mcp.shared.exceptions import MCPError

from toolgate.errors import ConfigError, StoreUnavailable
from toolgate.events import EventBus, JsonlSink, LoggingSink
from toolgate.gateway.config.model import GatewayConfig
from toolgate.request import Context

logger = logging.getLogger("toolgate.gateway")


def event_bus(cfg: GatewayConfig) -> EventBus:
    """The configured sinks: ``logging``, a JSONL file, OpenTelemetry."""
    bus = EventBus()
    events = cfg.toolgate.events
    if events.logging:
        bus.add_sink(LoggingSink())
    if events.jsonl:
        try:
            bus.add_sink(JsonlSink(cfg.resolve(events.jsonl)))
        except ConfigError as exc:  # the config's key, not the sink's argument
            message = f"toolgate.events.jsonl: {exc.message}"
            raise ConfigError(message, key="toolgate.events.jsonl") from None
    if events.otel:  # the optional extra: imported only when configured
        from toolgate.gateway.ops.otel import OtelSink

        bus.add_sink(OtelSink())
    return bus


async def log_store_failures(ctx: Context, call_next: CallNext) -> HandlerResult:
    """``ServerMiddleware``: an operator sees in the log every request refused because
    the session store failed (the client gets the retryable JSON-RPC error)."""
    try:
        return await call_next(ctx)
    except MCPError as exc:
        data = exc.error.data
        if isinstance(data, Mapping) and data.get("code") == StoreUnavailable.code:
            logger.error("%s refused (retryable): %s", ctx.method, exc.error.message)
        raise


__all__ = ["event_bus", "log_store_failures"]
