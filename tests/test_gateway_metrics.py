"""Health, readiness and Prometheus metrics, end to end through ``toolgate serve``.

A real client lists, activates, searches and calls tools through the HTTP gateway;
``/metrics`` is scraped and parsed with ``prometheus_client``'s own parser, and the
counters must say exactly what happened. ``/healthz`` answers while the process runs;
``/readyz`` reports each backend and degrades (200, or 503 with ``?strict``) when one
goes down. Each listing and search is one ``tool.selection`` event of counts only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp.shared.exceptions import MCPError
from prometheus_client.parser import text_string_to_metric_families

from _fixtures.gateway import BOB_TOKEN, HttpGateway, gateway_config, toolgate_argv
from toolgate.gateway.config.model import parse_config
from toolgate.gateway.ops.health import readiness
from toolgate.gateway.serve import Gateway

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    tmp = tmp_path_factory.mktemp("metrics-gateway")
    config = gateway_config(tmp, tokens=True, strategy="list_changed", search=True)
    served = HttpGateway([*toolgate_argv(), "serve", str(config)], tmp / "gateway.log")
    served.start()
    try:
        yield served
    finally:
        served.stop()


async def scrape(gateway: HttpGateway) -> Samples:
    async with httpx.AsyncClient() as http:
        response = await http.get(f"{gateway.origin}/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


async def readyz(gateway: HttpGateway, query: str = "") -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.get(f"{gateway.origin}/readyz{query}")


async def test_healthz_and_readyz_answer_while_every_backend_is_up(gateway: HttpGateway) -> None:
    async with httpx.AsyncClient() as http:
        health = await http.get(f"{gateway.origin}/healthz")
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    ready = await readyz(gateway, "?strict")
    assert ready.status_code == 200
    body = ready.json()
    assert (body["ready"], body["status"], body["tools"]) == (True, "ok", 8)
    assert {n: (b["up"], b["tools"]) for n, b in body["backends"].items()} == {
        "math": (True, 3),
        "notes": (True, 5),
    }


async def test_metrics_count_calls_errors_latency_activations_and_searches(
    gateway: HttpGateway,
) -> None:
    transport = StreamableHttpTransport(gateway.url, auth=BOB_TOKEN)
    async with Client(transport, mode="legacy") as bob:
        await bob.list_tools()
        await bob.call_tool("enable_tools", {"groups": ["notes"]})
        await bob.list_tools()
        added = await bob.call_tool("note_add", {"text": "counted"})
        assert added.is_error is False
        with pytest.raises(MCPError):  # trust "declared" < "verified": unknown to bob
            await bob.session.call_tool("note_delete", {"id": 1})
        with pytest.raises(MCPError):
            await bob.session.call_tool("no_such_tool", {})
        await bob.call_tool("search_tools", {"query": "multiply two numbers"})
        samples = await scrape(gateway)  # while bob's session is open

    calls = "toolgate_tool_calls_total"
    assert value(samples, calls, tool="note_add", outcome="success") == 1
    assert value(samples, calls, tool="note_delete", outcome="blocked") == 1
    assert value(samples, calls, tool="(unknown)", outcome="blocked") == 1
    errors = "toolgate_tool_errors_total"
    assert value(samples, errors, tool="note_delete", reason="trust-too-low") == 1
    assert value(samples, errors, tool="(unknown)", reason="unknown") == 1
    latency = "toolgate_tool_call_duration_seconds"
    assert value(samples, f"{latency}_count", tool="note_add") == 1
    assert value(samples, f"{latency}_bucket", tool="note_add", le="+Inf") == 1
    assert value(samples, f"{latency}_sum", tool="note_add") > 0
    assert value(samples, "toolgate_group_activations_total", group="notes") == 1
    assert value(samples, "toolgate_searches_total") == 1
    assert value(samples, "toolgate_selections_total", kind="list", strategy="list_changed") == 2
    assert value(samples, "toolgate_selections_total", kind="search", strategy="list_changed") == 1
    # 8 tools; bob (declared) may not use note_delete. First listing: the 2 root tools;
    # after enabling notes: + note_add, note_list
    shown = "toolgate_selection_tools_total"
    assert value(samples, shown, kind="list", bucket="shown") == 2 + 4
    assert value(samples, shown, kind="list", bucket="hidden_access") == 1 + 1
    assert value(samples, shown, kind="list", bucket="hidden_discovery") == 5 + 3
    listed = value(samples, "toolgate_list_tokens_total", view="listed")
    flat = value(samples, "toolgate_list_tokens_total", view="flat")
    assert listed > 0 and flat > 0
    assert value(samples, "toolgate_backend_up", backend="notes") == 1
    assert value(samples, "toolgate_backend_up", backend="math") == 1
    assert value(samples, "toolgate_active_sessions") >= 1
    assert value(samples, "toolgate_catalog_tools") == 8


async def test_selection_events_carry_counts_and_never_names(gateway: HttpGateway) -> None:
    transport = StreamableHttpTransport(gateway.url, auth=BOB_TOKEN)
    async with Client(transport, mode="legacy") as bob:
        await bob.list_tools()
    events = [json.loads(line) for line in (gateway.log.parent / "events.jsonl").open()]
    selections = [e for e in events if e["type"] == "tool.selection"]
    assert selections
    last = selections[-1]
    counts = {k: v for k, v in last.items() if k not in ("type", "time", "session", "principal")}
    assert set(counts) == {
        "kind",
        "strategy",
        "candidates",
        "shown",
        "meta",
        "hidden_access",
        "hidden_discovery",
        "tokens_shown",
        "tokens_flat",
        "tokenizer",
    }
    assert (last["principal"], last["kind"], last["strategy"]) == ("bob", "list", "list_changed")
    assert (last["candidates"], last["shown"], last["hidden_access"]) == (8, 2, 1)
    assert (last["hidden_discovery"], last["meta"]) == (
        5,
        7,
    )  # menu, describe and search meta-tools
    assert last["tokens_shown"] > 0 and last["tokens_flat"] > 0
    assert last["tokenizer"] in ("chars/4", "tiktoken:o200k_base")  # the one that counted
    words = ("kind", "strategy", "tokenizer")
    assert all(isinstance(v, int) for k, v in counts.items() if k not in words)


async def test_readyz_degrades_when_a_backend_goes_down(gateway: HttpGateway) -> None:
    (gateway.log.parent / "notes.down").write_text("stay down")
    transport = StreamableHttpTransport(gateway.url, auth=BOB_TOKEN)
    async with Client(transport, mode="legacy") as bob:
        # the backend dies mid-call; how that call ends does not matter here
        with contextlib.suppress(Exception):
            await bob.call_tool("crash", {}, raise_on_error=False)
    body: dict[str, Any] = {}
    for _ in range(100):
        body = (await readyz(gateway)).json()
        if body["status"] == "degraded":
            break
        await asyncio.sleep(0.1)
    assert body["status"] == "degraded"
    assert body["ready"] is True
    assert body["backends"]["notes"]["up"] is False
    assert body["backends"]["math"]["up"] is True
    assert (await readyz(gateway)).status_code == 200
    assert (await readyz(gateway, "?strict")).status_code == 503
    samples = await scrape(gateway)
    assert value(samples, "toolgate_backend_up", backend="notes") == 0
    assert value(samples, "toolgate_backend_up", backend="math") == 1


async def test_health_and_metrics_refuse_a_foreign_host_header(gateway: HttpGateway) -> None:
    async with httpx.AsyncClient() as http:
        for path in ("/healthz", "/readyz", "/metrics"):
            response = await http.get(f"{gateway.origin}{path}", headers={"Host": "evil.example"})
            assert (response.status_code, response.text) == (421, "Invalid Host header")


async def test_metrics_can_be_turned_off_and_readyz_waits_for_the_catalog() -> None:
    cfg = parse_config({"mcpServers": {}, "toolgate": {"metrics": {"enabled": False}}})
    gateway = Gateway(cfg)
    try:
        assert gateway.metrics is None
        assert readiness(gateway)["status"] == "unavailable"  # not built yet
        async with gateway.running():
            app = gateway.http_app()
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
                assert (await http.get("/metrics")).status_code == 404
                ready = await http.get("/readyz")
        assert (ready.status_code, ready.json()["status"], ready.json()["tools"]) == (200, "ok", 0)
    finally:
        await gateway.close()
