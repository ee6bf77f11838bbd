"""Search latency, index build time and memory on a synthetic 10,000-tool, 1,000-group
catalog, for the lexical and the hybrid mode.

The catalog is generated deterministically (fixed seed): 50 services x 20 resources
make the 1,000 groups, 10 verbs per resource the tools, with sentence descriptions and
2-4 documented arguments. Writes to ``benchmarks/RESULTS.md`` between the
``search-latency`` markers. A benchmark, not a test; imports only toolgate.

Run: ``.venv/bin/python benchmarks/bench_search.py``
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

# One BLAS thread (unless the caller sets it): a search is one matrix-vector product of
# ~10k x 256, and on a busy machine BLAS threads contending for the cores made hybrid
# searches ten times slower (15 ms against 1.6 ms median at a load average of 6).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from search_eval import RESULTS, write_section  # noqa: E402

from toolgate.catalog import Catalog, Group, Tool  # noqa: E402
from toolgate.search import SearchIndex, SearchMode, SearchSettings  # noqa: E402

BEGIN, END = "<!-- search-latency:begin -->", "<!-- search-latency:end -->"
TARGET_MS = {"lexical": 5.0, "hybrid": 30.0}

SERVICES = """github gitlab bitbucket jira linear asana trello notion confluence slack discord
teams zoom gmail outlook calendar drive dropbox box s3 gcs azure stripe paypal shopify
square quickbooks xero salesforce hubspot zendesk intercom freshdesk twilio sendgrid
mailchimp segment mixpanel amplitude datadog sentry pagerduty grafana postgres mysql
redis mongodb snowflake bigquery airtable""".split()  # noqa: SIM905
RESOURCES = """issue pull_request branch commit release invoice payment customer order product
ticket message channel user team file folder event report dashboard""".split()  # noqa: SIM905
VERBS = {
    "get": "Get one {r} by its id, with all of its fields",
    "list": "List {r}s, newest first, with pagination",
    "search": "Search {r}s by keyword, status or owner",
    "create": "Create a new {r}",
    "update": "Update fields of an existing {r}",
    "delete": "Delete a {r} permanently",
    "archive": "Archive a {r} so it no longer shows in default views",
    "export": "Export {r}s to CSV or JSON for reporting",
    "assign": "Assign a {r} to a user or team",
    "comment": "Add a comment to a {r}",
}
EXTRAS = [
    "Requires write access",
    "Supports filtering by date range",
    "Results are cached for a minute",
    "Use the id returned by the list tool",
    "Rate limited to 100 calls per minute",
    "Works on archived items too",
    "Returns an empty list when nothing matches",
    "Times are UTC",
]
ARGS = {
    "id": "The {r} identifier",
    "owner": "Account or organization that owns the {r}",
    "query": "Free-text search terms",
    "status": "Filter by status: open, closed or all",
    "since": "Only {r}s changed after this ISO 8601 time",
    "page": "Page number, starting at 1",
    "per_page": "Results per page, at most 100",
    "body": "Markdown text of the {r}",
}


def synthetic_catalog(seed: int = 7) -> Catalog:
    rng = random.Random(seed)
    catalog = Catalog()
    groups = [
        Group(
            f"{svc}-{res.replace('_', '-')}",
            f"{svc.title()} {res.replace('_', ' ')}s: read and manage them",
        )
        for svc in SERVICES
        for res in RESOURCES
    ]
    catalog.add_groups(groups)
    tools = []
    for svc in SERVICES:
        for res in RESOURCES:
            words = res.replace("_", " ")
            for verb, template in VERBS.items():
                arg_names = rng.sample(sorted(ARGS), rng.randint(2, 4))
                props = {
                    a: {"type": "string", "description": ARGS[a].format(r=words)} for a in arg_names
                }
                description = (
                    f"{template.format(r=words)} in {svc.title()}. {rng.choice(EXTRAS).strip()}."
                )
                tools.append(
                    Tool(
                        f"{svc}_{verb}_{res}",
                        description,
                        input_schema={"type": "object", "properties": props},
                        groups=(f"{svc}-{res.replace('_', '-')}",),
                    )
                )
    catalog.add_tools(tools)
    return catalog


def queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    forms = [
        "{v} {r} in {s}",
        "how do I {v} a {r}",
        "{s} {r}s",
        "{v} {r}s by status",
        "export {r}s to csv",
        "{r} comments",
    ]
    out = []
    for _ in range(n):
        out.append(
            rng.choice(forms).format(
                v=rng.choice(list(VERBS)),
                r=rng.choice(RESOURCES).replace("_", " "),
                s=rng.choice(SERVICES),
            )
        )
    return out


def measure(rounds: int, mode: SearchMode, cache: Path | None = None) -> dict[str, float]:
    catalog = synthetic_catalog()
    settings = SearchSettings(mode, cache=cache)
    index = SearchIndex(catalog, settings)
    started = time.perf_counter()
    index.refresh()
    build_s = time.perf_counter() - started

    catalog.add_tool(Tool("github_merge_pull_request", "Merge a pull request in GitHub."))
    started = time.perf_counter()
    index.refresh()
    incremental_s = time.perf_counter() - started

    names = catalog.sorted_names()
    allowed_set = frozenset(names[::5]) ^ frozenset(names)  # 80% of tools accessible
    qs = queries(rounds)
    for q in qs[:50]:  # warm caches (stems, numpy)
        index.search(q, limit=5, allowed=allowed_set.__contains__)
    timings = []
    for q in qs:
        t0 = time.perf_counter()
        index.search(q, limit=5, allowed=allowed_set.__contains__)
        timings.append(time.perf_counter() - t0)
    timings.sort()
    out = {
        "tools": len(catalog.tools),
        "groups": len(catalog.groups),
        "build_s": build_s,
        "incremental_s": incremental_s,
        "median_ms": 1000 * statistics.median(timings),
        "p95_ms": 1000 * timings[int(0.95 * len(timings)) - 1],
        "max_ms": 1000 * timings[-1],
        "rounds": len(timings),
    }
    if cache is not None:  # a restart: a new index over the same catalog, vectors on disk
        again = SearchIndex(catalog, settings)
        started = time.perf_counter()
        again.refresh()
        out["restart_s"] = time.perf_counter() - started
    # memory apart: tracing slows the build it measures
    tracemalloc.start()
    SearchIndex(synthetic_catalog(), SearchSettings(mode)).refresh()
    out["peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return out


def table(rows: dict[str, dict[str, float]]) -> str:
    first = next(iter(rows.values()))
    lines = [
        f"`SearchIndex.search()` on a synthetic catalog of {first['tools']:,} tools in "
        f"{first['groups']:,} groups (limit 5, an `allowed` check admitting 80% of tools), "
        f"{first['rounds']:,} queries per mode; hybrid uses the WordLlama 256-d model and a "
        "vector cache file; one BLAS thread. Memory: peak traced allocation while building "
        f"the index (catalog included). Load average when measured: {os.getloadavg()[0]:.1f} "
        "on this shared 2-CPU machine. `python benchmarks/bench_search.py`.",
        "",
        "| measure | " + " | ".join(rows) + " |",
        "|---|" + "---:|" * len(rows),
    ]

    def row(label: str, cell: Callable[[dict[str, float], str], str]) -> None:
        lines.append(f"| {label} | " + " | ".join(cell(m, mode) for mode, m in rows.items()) + " |")

    def median(m: dict[str, float], mode: str) -> str:
        verdict = "meets" if m["median_ms"] <= TARGET_MS[mode] else "MISSES"
        return f"{m['median_ms']:.2f} ms ({verdict} {TARGET_MS[mode]:.0f} ms)"

    row("search median", median)
    row("search p95", lambda m, _: f"{m['p95_ms']:.2f} ms")
    row("search max", lambda m, _: f"{m['max_ms']:.2f} ms")
    row("index build (all tools)", lambda m, _: f"{m['build_s']:.2f} s")
    row("refresh after adding one tool", lambda m, _: f"{1000 * m['incremental_s']:.0f} ms")
    row(
        "rebuild on restart (vectors cached)",
        lambda m, _: f"{m['restart_s']:.2f} s" if "restart_s" in m else "n/a",
    )
    row("memory (peak, build)", lambda m, _: f"{m['peak_mb']:.0f} MB")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = {
            "lexical": measure(args.rounds, "lexical"),
            "hybrid": measure(args.rounds, "hybrid", Path(tmp) / "vectors.sqlite"),
        }
    md = table(rows)
    print(md)
    if not args.no_write:
        write_section(RESULTS, BEGIN, END, md)
        print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
