"""What operating the gateway costs: metrics on listings, JWT validation, scraping.

Listing: GitHub's MCP server catalog (117 tools, ``../shared/data/catalogs``) through
``Delivery.list_tools`` (``flat``), without event sinks and with the gateway's
Prometheus ``Metrics`` sink (which makes every listing a ``tool.selection`` event).
OAuth: ``OAuthResolver.validate`` on an RS256 token from a local JWKS file, first
sight (signature checked) and again (remembered). Scrape: ``Metrics.render()`` after
the listings. Medians of many runs; writes ``benchmarks/RESULTS.md`` between the
``ops`` markers.

Run: ``.venv/bin/python benchmarks/bench_ops.py``
"""

from __future__ import annotations

import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import jwt  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: E402
from jwt.algorithms import RSAAlgorithm  # noqa: E402
from search_eval import RESULTS, write_section  # noqa: E402

from toolgate import Tool, ToolSet  # noqa: E402
from toolgate.events import EventBus  # noqa: E402
from toolgate.gateway.ops.metrics import Live, Metrics  # noqa: E402
from toolgate.oauth import OAuthResolver, OAuthSettings  # noqa: E402
from toolgate.strategies import Delivery, DeliveryConfig  # noqa: E402

CATALOG = ROOT.parent / "shared" / "data" / "catalogs" / "github-mcp-server.json"
BEGIN, END = "<!-- ops:begin -->", "<!-- ops:end -->"
RUNS = 2000


def tools() -> list[Tool]:
    return [
        Tool(d["name"], d.get("description", ""), input_schema=d["inputSchema"])
        for d in json.loads(CATALOG.read_text("utf-8"))
    ]


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def listing(with_metrics: bool) -> tuple[float, Metrics | None]:
    bus = EventBus()
    ts = ToolSet(events=bus)
    ts.add_tools(tools())
    metrics = None
    if with_metrics:
        metrics = Metrics(known_tool=lambda n: n in ts.catalog.tools, live=Live)
        bus.add_sink(metrics)
    delivery = Delivery(ts, DeliveryConfig(strategy="flat"))
    strategy, request = delivery.request(session_key="s")
    for _ in range(50):
        await delivery.list_tools(strategy, request)
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        await delivery.list_tools(strategy, request)
        samples.append(time.perf_counter() - start)
    return median_ms(samples), metrics


async def oauth() -> tuple[float, float]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = {**RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": "k1"}
    with tempfile.TemporaryDirectory() as tmp:
        keys = Path(tmp) / "jwks.json"
        keys.write_text(json.dumps({"keys": [public]}))
        settings = OAuthSettings(
            issuer="https://id.example", audience=("https://gw.example/mcp",), keys_file=keys
        )
        claims = {"iss": "https://id.example", "aud": "https://gw.example/mcp", "sub": "bench"}
        now = int(time.time())
        first, again = [], []
        for i in range(RUNS // 4):
            token = jwt.encode(
                {**claims, "exp": now + 600, "jti": str(i), "scope": "a b"},
                key,
                algorithm="RS256",
                headers={"kid": "k1"},
            )
            resolver = OAuthResolver(settings)
            await resolver.keys.refresh()
            start = time.perf_counter()
            await resolver.validate(token)
            first.append(time.perf_counter() - start)
            start = time.perf_counter()
            await resolver.validate(token)
            again.append(time.perf_counter() - start)
    return median_ms(first), median_ms(again)


def scrape(metrics: Metrics) -> float:
    samples = []
    for _ in range(RUNS // 4):
        start = time.perf_counter()
        metrics.render()
        samples.append(time.perf_counter() - start)
    return median_ms(samples)


async def main() -> None:
    bare, _ = await listing(False)
    measured, metrics = await listing(True)
    assert metrics is not None
    first, again = await oauth()
    render = scrape(metrics)
    count = len(tools())
    body = "\n".join(
        [
            "## Operating the gateway (`benchmarks/bench_ops.py`)",
            "",
            f"GitHub's MCP server catalog ({count} tools), `flat` delivery, median of "
            f"{RUNS:,} runs after warm-up. Python {platform.python_version()}, "
            f"{platform.machine()}; measured {time.strftime('%Y-%m-%d')}.",
            "",
            "| measure | median |",
            "|---|---:|",
            f"| `tools/list` ({count} tools), no event sinks | {bare:.3f} ms |",
            f"| `tools/list` ({count} tools), Prometheus `Metrics` sink "
            f"(one `tool.selection` event) | {measured:.3f} ms |",
            f"| metrics overhead per listing | {measured - bare:+.3f} ms |",
            f"| OAuth: validate an RS256 JWT, first sight (signature) | {first:.3f} ms |",
            f"| OAuth: the same token again (remembered until `exp`) | {again:.4f} ms |",
            f"| `/metrics` render (`Metrics.render()`) | {render:.3f} ms |",
        ]
    )
    write_section(RESULTS, BEGIN, END, body)
    print(body)


if __name__ == "__main__":
    asyncio.run(main())
