"""Prometheus metrics for the gateway, in the text format ``/metrics`` serves.

``Metrics`` owns one ``CollectorRegistry`` per gateway (no process-global state). It is
an event ``Sink``: calls, errors, latency, activations, listings, searches and tokens
are counted from events; backends up and active sessions are read at scrape time.
Labels stay bounded: unknown tool names and free-text reasons are folded. Edge layer:
imports ``prometheus_client`` and the core's events, nothing of MCP.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from toolgate.events import Event, Sink

#: ``Content-Type`` of the Prometheus text exposition format.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
UNKNOWN_TOOL = "(unknown)"
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
#: error reasons that are free text (an exception's message) become this label value
ERROR_REASONS = {"invalid-arguments": "invalid-arguments", "tool reported error": "tool-error"}


@dataclass(frozen=True)
class Live:
    """What is read at scrape time: each backend's state, and open sessions."""

    backends: Mapping[str, bool] = field(default_factory=dict)
    sessions: int = 0
    tools: int = 0


def reason_label(outcome: str, reason: object) -> str:
    """A bounded label for why a call failed: a blocked call's rule name (the part
    before ``:``), a known error kind, or ``exception``."""
    text = str(reason or "")
    if outcome == "blocked":
        return text.split(":", 1)[0] or "blocked"
    return ERROR_REASONS.get(text, "exception")


class _LiveCollector(Collector):
    def __init__(self, read: Callable[[], Live]) -> None:
        self.read = read

    def collect(self) -> Iterator[Metric]:
        live = self.read()
        up = GaugeMetricFamily(
            "toolgate_backend_up",
            "Whether a backend is connected (1) or not (0).",
            labels=["backend"],
        )
        for name in sorted(live.backends):
            up.add_metric([name], 1.0 if live.backends[name] else 0.0)
        yield up
        yield GaugeMetricFamily(
            "toolgate_active_sessions",
            "Open MCP sessions on the streamable HTTP transport (legacy protocol).",
            value=live.sessions,
        )
        yield GaugeMetricFamily(
            "toolgate_catalog_tools", "Tools in the gateway's catalog.", value=live.tools
        )


class Metrics(Sink):
    """The gateway's metrics: ``EventBus.add_sink(metrics)``, then ``metrics.render()``.

    >>> metrics = Metrics(known_tool=lambda n: n in catalog, live=lambda: Live())
    ... # doctest: +SKIP
    """

    def __init__(self, *, known_tool: Callable[[str], bool], live: Callable[[], Live]) -> None:
        self.known_tool = known_tool
        self.registry = CollectorRegistry()
        r = self.registry
        self.calls = Counter(
            "toolgate_tool_calls",
            "Tool calls by tool and outcome (success, error, blocked).",
            ["tool", "outcome"],
            registry=r,
        )
        self.errors = Counter(
            "toolgate_tool_errors",
            "Failed or refused tool calls by tool and reason.",
            ["tool", "reason"],
            registry=r,
        )
        self.latency = Histogram(
            "toolgate_tool_call_duration_seconds",
            "How long tools that ran took, by tool.",
            ["tool"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.activations = Counter(
            "toolgate_group_activations", "Group activations by group.", ["group"], registry=r
        )
        self.deactivations = Counter(
            "toolgate_group_deactivations", "Group deactivations by group.", ["group"], registry=r
        )
        self.selections = Counter(
            "toolgate_selections",
            "Tool listings, searches and opened groups (tool.selection events), by kind "
            "and strategy.",
            ["kind", "strategy"],
            registry=r,
        )
        self.searches = Counter("toolgate_searches", "Tool searches run.", registry=r)
        self.selected = Counter(
            "toolgate_selection_tools",
            "Catalog tools per selection: shown, hidden_access, hidden_discovery.",
            ["kind", "bucket"],
            registry=r,
        )
        self.tokens = Counter(
            "toolgate_list_tokens",
            "Tokens of tools/list results as listed, and as a flat listing would cost.",
            ["view"],
            registry=r,
        )
        self.budget = Counter(
            "toolgate_budget_exceeded", "Activations or reveals refused by a budget.", registry=r
        )
        self.auth_refusals = Counter(
            "toolgate_auth_refusals",
            "Bearer tokens refused at the HTTP layer, by reason.",
            ["reason"],
            registry=r,
        )
        r.register(_LiveCollector(live))
        self._children: dict[tuple[str, str], tuple[Any, Any]] = {}

    def _per_call(self, tool: str, outcome: str) -> tuple[Any, Any]:
        """The call counter and latency histogram of ``tool`` and ``outcome``, looked
        up once (a call's metrics are updated on its way back to the client)."""
        key = (tool, outcome)
        pair = self._children.get(key)
        if pair is None:
            pair = self._children[key] = (
                self.calls.labels(tool, outcome),
                self.latency.labels(tool),
            )
        return pair

    def _tool(self, name: object) -> str:
        text = str(name)
        return text if self.known_tool(text) else UNKNOWN_TOOL

    def handle(self, event: Event) -> None:
        d = event.data
        kind = event.type
        if kind == "tool.executed":
            tool, outcome = self._tool(d.get("tool")), str(d.get("outcome"))
            calls, latency = self._per_call(tool, outcome)
            calls.inc()
            if outcome != "success":
                self.errors.labels(tool, reason_label(outcome, d.get("reason"))).inc()
            took = d.get("duration_s")
            if isinstance(took, int | float):
                latency.observe(float(took))
        elif kind == "group.activated":
            self.activations.labels(str(d.get("group"))).inc()
        elif kind == "group.deactivated":
            self.deactivations.labels(str(d.get("group"))).inc()
        elif kind == "budget.exceeded":
            self.budget.inc()
        elif kind == "tool.selection":
            self._selection(d)

    def _selection(self, d: Mapping[str, object]) -> None:
        kind = str(d.get("kind"))
        self.selections.labels(kind, str(d.get("strategy"))).inc()
        if kind == "search":
            self.searches.inc()
        for bucket in ("shown", "hidden_access", "hidden_discovery"):
            count = d.get(bucket)
            if isinstance(count, int):
                self.selected.labels(kind, bucket).inc(count)
        if kind == "list":
            for view, key in (("listed", "tokens_shown"), ("flat", "tokens_flat")):
                count = d.get(key)
                if isinstance(count, int):
                    self.tokens.labels(view).inc(count)

    def auth_refused(self, reason: str) -> None:
        """Count a refused bearer token (``OAuthResolver(on_refused=...)``)."""
        self.auth_refusals.labels(reason).inc()

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)


__all__ = ["CONTENT_TYPE", "Live", "Metrics", "reason_label"]
