"""OpenTelemetry sink for toolgate events (the optional ``otel`` extra).

``OtelSink`` turns each event into one finished span named after the event type,
carrying session, principal and the event's data as ``toolgate.*`` attributes. Without
a configured tracer provider it builds one that exports to an OTLP endpoint (when the
exporter is installed and ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set) or to stderr. Edge.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.util.types import AttributeValue

from toolgate.events import Event, Sink

_SCALARS = (str, bool, int, float)


def attribute(value: Any) -> AttributeValue:
    """An OTel attribute value: scalars as they are, lists of scalars, else JSON text."""
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        return [str(v) for v in value]
    return json.dumps(value, default=str, sort_keys=True)


def attributes(event: Event) -> dict[str, AttributeValue]:
    out: dict[str, AttributeValue] = {"toolgate.event": event.type}
    if event.session is not None:
        out["toolgate.session"] = event.session
    if event.principal is not None:
        out["toolgate.principal"] = event.principal
    for key, value in event.data.items():
        if value is not None:
            out[f"toolgate.{key}"] = attribute(value)
    return out


def default_tracer_provider() -> trace.TracerProvider:
    """The global provider when one is configured; else an SDK provider of our own."""
    current = trace.get_tracer_provider()
    if not isinstance(current, trace.ProxyTracerProvider):
        return current
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SpanExporter,
    )

    provider = TracerProvider(resource=Resource.create({"service.name": "toolgate"}))
    exporter: SpanExporter = ConsoleSpanExporter(out=sys.stderr)
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                OTLPSpanExporter,
            )

            exporter = OTLPSpanExporter()
        except ImportError:
            pass
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


class OtelSink(Sink):
    """One span per event (``toolgate.events.EventBus(...).add_sink(OtelSink())``)."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        self.provider = tracer_provider or default_tracer_provider()
        self.tracer = self.provider.get_tracer("toolgate", "0.1.0")

    def handle(self, event: Event) -> None:
        start = int(event.time * 1e9)
        span = self.tracer.start_span(
            event.type,
            kind=trace.SpanKind.INTERNAL,
            attributes=attributes(event),
            start_time=start,
        )
        if event.data.get("outcome") == "error":
            span.set_status(trace.Status(trace.StatusCode.ERROR, str(event.data.get("reason", ""))))
        span.end(end_time=start)

    def close(self) -> None:
        shutdown = getattr(self.provider, "force_flush", None)
        if callable(shutdown):
            shutdown()
