"""Search latency, index build time and memory on a synthetic 10,000-tool, 1,000-group
catalog, for the lexical and the hybrid mode (``--embedder multilingual`` or ``--embedder
bert:FOLDER``: hybrid mode with that model instead, in a section of its own).

The catalog is generated deterministically (fixed seed): 50 services x 20 resources
make the 1,000 groups, 10 verbs per resource the tools, with sentence descriptions and
2-4 documented arguments. Writes to ``benchmarks/RESULTS.md`` between the
``search-latency`` markers. A benchmark, not a test; imports only toolgate.

Run: ``.venv/bin/python benchmarks/bench_search.py [--embedder multilingual|bert:FOLDER]``
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
from typing import Any

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
from toolgate.embedding import load_embedder  # noqa: E402
from toolgate.errors import ConfigError  # noqa: E402
from toolgate.search import SearchIndex, SearchMode, SearchSettings  # noqa: E402
from toolgate.search.analysis import text_length  # noqa: E402
from toolgate.search.latest import readings  # noqa: E402

BEGIN, END = "<!-- search-latency:begin -->", "<!-- search-latency:end -->"
SECTIONS = {  # --embedder -> its section's markers and the model's name in the table
    None: (BEGIN, END, "the WordLlama 256-d model"),
    "multilingual": (
        "<!-- search-latency-multilingual:begin -->",
        "<!-- search-latency-multilingual:end -->",
        'the multilingual model (`embedder: "multilingual"`)',
    ),
    "minilm": (
        "<!-- search-latency-bert:begin -->",
        "<!-- search-latency-bert:end -->",
        'all-MiniLM-L6-v2 in toolgate\'s numpy BERT encoder (`embedder: "bert:FOLDER"`, the '
        "folder `toolgate fetch minilm` fetches)",
    ),
}
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


def synthetic_catalog(seed: int = 7, extra_sentences: int = 1) -> Catalog:
    """The catalog; ``extra_sentences`` of ``EXTRAS`` close each description (1: about
    20 words a description; 6: about 60, as in large real catalogs)."""
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
                extras = " ".join(f"{e}." for e in rng.sample(EXTRAS, extra_sentences))
                description = f"{template.format(r=words)} in {svc.title()}. {extras}"
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


def queries(n: int, seed: int = 11, told_otherwise: bool = False) -> list[str]:
    """Search requests; ``told_otherwise`` mixes in as many that are mostly words the
    catalog lacks, which the best match covers poorly (lexical search's feedback runs)."""
    rng = random.Random(seed)
    forms = [
        "{v} {r} in {s}",
        "how do I {v} a {r}",
        "{s} {r}s",
        "{v} {r}s by status",
        "export {r}s to csv",
        "{r} comments",
    ]
    if told_otherwise:
        forms += [
            "{v} the {r} my manager mentioned yesterday afternoon",
            "where did that {r} about the offsite in Lisbon go",
            "I need last quarter's {r} for the budget review",
            "grab whatever {r} the intern touched before lunch",
            "the {r} the auditors flagged, {s} maybe",
            "tidy up stale {r}s before the holidays",
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


def conversations(n: int, seed: int = 13) -> list[str]:
    """Long requests: a conversation so far, ``queries``' requests as its sentences
    until it runs to 70 words, so hybrid search reads each by its latest parts too
    (``readings``)."""
    pool = iter(queries(40 * n, seed=seed, told_otherwise=True))
    out = []
    for _ in range(n):
        said: list[str] = []
        while text_length(" ".join(said)) < 70:
            q = next(pool)
            said.append(f"{q[0].upper()}{q[1:]}.")
        out.append(" ".join(said))
        if len(readings(out[-1])) < 2:
            raise SystemExit(f"not a long request: {out[-1]!r}")
    return out


def measure(
    rounds: int,
    mode: SearchMode,
    cache: Path | None = None,
    *,
    long_text: bool = False,
    conversation: bool = False,
    embedder: str | None = None,
) -> dict[str, float]:
    """One column: ``long_text`` measures ~60-word descriptions and requests half of
    which the catalog covers poorly; ``conversation`` requests of 70 words and more;
    ``embedder`` the hybrid mode's model (None: the default)."""
    sentences = 6 if long_text else 1
    catalog = synthetic_catalog(extra_sentences=sentences)
    settings = SearchSettings(mode, cache=cache, embedder=embedder)
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
    qs = conversations(rounds) if conversation else queries(rounds, told_otherwise=long_text)
    for q in qs[:50]:  # warm caches (stems, numpy)
        index.search(q, limit=5, allowed=allowed_set.__contains__)
    timings = []
    for q in qs:
        t0 = time.perf_counter()
        index.search(q, limit=5, allowed=allowed_set.__contains__)
        timings.append(time.perf_counter() - t0)
    timings.sort()
    out: dict[str, Any] = {
        "mode": mode,
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
    fresh = SearchSettings(mode, embedder=embedder)  # no vector cache: every text embedded
    SearchIndex(synthetic_catalog(extra_sentences=sentences), fresh).refresh()
    out["peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return out


def table(
    rows: dict[str, dict[str, Any]], model: str = SECTIONS[None][2], command: str = ""
) -> str:
    first = next(iter(rows.values()))
    columns = {  # what a column's label names, said once if any column is such
        "long text": ' "Long text": the same catalog with ~60-word descriptions (six '
        "sentences more per tool), and half the requests mostly in words the catalog "
        "lacks, so lexical search's feedback runs on them.",
        "long requests": ' "Long requests": each a conversation of requests (70 words and '
        "more), which hybrid search also reads by its last eight sentences' tails "
        "(`toolgate.search.latest.readings`).",
    }
    lines = [
        f"`SearchIndex.search()` on a synthetic catalog of {first['tools']:,} tools in "
        f"{first['groups']:,} groups (limit 5, an `allowed` check admitting 80% of tools), "
        f"{first['rounds']:,} queries per mode; hybrid uses {model} and a "
        "vector cache file; one BLAS thread. Memory: peak traced allocation while building "
        f"the index (catalog included). Load average when measured: {os.getloadavg()[0]:.1f} "
        f"on this shared 2-CPU machine. `python benchmarks/bench_search.py{command}`."
        + "".join(text for key, text in columns.items() if any(key in label for label in rows)),
        "",
        "| measure | " + " | ".join(rows) + " |",
        "|---|" + "---:|" * len(rows),
    ]

    def row(label: str, cell: Callable[[dict[str, Any], str], str]) -> None:
        lines.append(f"| {label} | " + " | ".join(cell(m, m["mode"]) for m in rows.values()) + " |")

    def median(m: dict[str, Any], mode: str) -> str:
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
    parser.add_argument(
        "--embedder",
        default=None,
        help="hybrid mode with this model only, in a section of its own: 'multilingual', "
        "'minilm' (after toolgate fetch minilm) or 'bert:FOLDER' (all-MiniLM-L6-v2's folder)",
    )
    args = parser.parse_args()
    spec = args.embedder
    # a folder of all-MiniLM-L6-v2 given by path measures in the minilm section
    kind = "minilm" if spec and spec.startswith("bert:") and spec[5:].strip() else spec
    if kind not in SECTIONS:
        parser.error(f"--embedder {spec!r}: use 'multilingual', 'minilm' or 'bert:FOLDER'")
    if spec:
        try:  # a model that cannot load is named here, not in a traceback mid-measure
            load_embedder(spec)
        except ConfigError as exc:
            parser.error(f"--embedder {spec!r}: {exc.message}")
    begin, end, model = SECTIONS[kind]
    shown = "bert:FOLDER" if spec and spec.startswith("bert:") else args.embedder
    with tempfile.TemporaryDirectory() as tmp:
        vectors = Path(tmp) / "vectors.sqlite"
        if args.embedder:
            label = f"hybrid ({'all-MiniLM-L6-v2' if kind == 'minilm' else args.embedder})"
            rows = {
                label: measure(args.rounds, "hybrid", vectors, embedder=args.embedder),
                f"{label}, long requests": measure(
                    args.rounds, "hybrid", vectors, conversation=True, embedder=args.embedder
                ),
            }
        else:
            rows = {
                "lexical": measure(args.rounds, "lexical"),
                "hybrid": measure(args.rounds, "hybrid", vectors),
                "lexical, long text": measure(args.rounds, "lexical", long_text=True),
                "lexical, long requests": measure(args.rounds, "lexical", conversation=True),
                "hybrid, long requests": measure(args.rounds, "hybrid", vectors, conversation=True),
            }
    md = table(rows, model, f" --embedder {shown}" if args.embedder else "")
    print(md)
    if not args.no_write:
        write_section(RESULTS, begin, end, md)
        print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
