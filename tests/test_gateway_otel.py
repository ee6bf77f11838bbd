"""The OpenTelemetry event sink: one finished span per toolgate event.

Uses the OpenTelemetry SDK's in-memory exporter; drives a real ``ToolSet`` so the spans
come from real activations and calls.
"""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from toolgate import Group, Tool, ToolSet
from toolgate.events import Event, EventBus
from toolgate.gateway.ops.otel import OtelSink, attributes


def provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    return tracer_provider, exporter


async def test_otel_sink_emits_a_span_per_event_with_toolgate_attributes() -> None:
    tracer_provider, exporter = provider()
    bus = EventBus()
    bus.add_sink(OtelSink(tracer_provider))
    toolset = ToolSet(events=bus)
    toolset.add_group(Group("files", "File tools"))
    toolset.add_tool(Tool("read", "Read.", handler=lambda a, c: "ok", groups=("files",)))
    session = toolset.session("s1")
    await session.activate(["files"])
    await session.call("read", {})
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == [
        "tool.registered",
        "group.activated",
        "tool.surfaced",
        "tool.executed",
    ]
    executed = spans[-1]
    attrs = dict(executed.attributes or {})
    took = attrs.pop("toolgate.duration_s")
    assert isinstance(took, float) and took >= 0
    assert attrs == {
        "toolgate.event": "tool.executed",
        "toolgate.session": "s1",
        "toolgate.principal": "local",
        "toolgate.tool": "read",
        "toolgate.outcome": "success",
    }
    assert executed.start_time == executed.end_time


def test_otel_sink_marks_failed_executions_as_errors() -> None:
    tracer_provider, exporter = provider()
    sink = OtelSink(tracer_provider)
    sink.handle(Event("tool.executed", "s", "p", {"tool": "t", "outcome": "error", "reason": "x"}))
    (span,) = exporter.get_finished_spans()
    assert (span.status.status_code, span.status.description) == (StatusCode.ERROR, "x")


def test_otel_attributes_keep_string_lists_and_encode_the_rest_as_json() -> None:
    event = Event("tool.registered", None, None, {"groups": ["a", "b"], "detail": {"n": 1}})
    assert attributes(event) == {
        "toolgate.event": "tool.registered",
        "toolgate.groups": ["a", "b"],
        "toolgate.detail": '{"n": 1}',
    }
