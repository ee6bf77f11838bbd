"""Ways to keep hybrid search at or above lexical search, measured against what ships.

Each request of the evaluation sets (``search_eval.py``'s, read the same way) is ranked
once by lexical search and by hybrid search with each embedder; the variants are then
built from those rankings: hybrid's first five keeping lexical search's first ``a``
results (``keep lexical top a``), reciprocal-rank fusion of the two lists (``rrf``),
the two lists taken in turn when no tool covers half the request's idf (``in turn``: a
request of several needs, each list finding some of them), and reciprocal-rank fusion
for long requests only (``rrf ... from N words``: a task told in several steps).
A second table splits hybrid's wins and losses over lexical by how much of the request
lexical search's best match covers (``Holders.coverage``), the signal a confidence
gate would read, and a third by the embedder's own confidence (how far its best cosine
stands above the catalog's, as a z-score), in five bands of equal size. Dev halves by
default; ``--half test`` and ``--half heldout`` read the others once a variant is
chosen. Prints only (``docs/decisions.md``: "Hybrid against lexical, and the re-rank";
"Hybrid against lexical: two more signals looked at"; "Whole tasks: hybrid's and
lexical search's lists in turn, or fused for long requests").
Run: ``.venv/bin/python benchmarks/search_variants.py --git-mirror DIR [--half dev]``
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from search_eval import VECTORS, Dataset, Gold, datasets, judge

from toolgate.catalog import Catalog
from toolgate.search import SearchIndex, SearchSettings
from toolgate.search.analysis import text_length
from toolgate.search.cover import COVER_BELOW

DEPTH = 20
K = 5
BANDS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.7, 1.01)


@dataclass(frozen=True)
class Request:
    """What a variant may read of a request besides the two rankings."""

    covered: float  # the share of its idf the tool covering most of it reaches (best_coverage)
    words: float  # its length in words (``text_length``)


# hybrid's ranking, lexical search's, and the request
Merge = Callable[[Sequence[str], Sequence[str], Request], list[str]]


def keep_lexical(a: int) -> Merge:
    """Hybrid's first ``K - a``, then lexical search's first ``a``, then hybrid's rest."""

    def merge(fused: Sequence[str], lexical: Sequence[str], _request: Request) -> list[str]:
        out = list(fused[: K - a])
        out += [n for n in lexical[:a] if n not in out]
        out += [n for n in fused if n not in out]
        return out[:K]

    return merge


def rrf(lexical_weight: float, c: int, from_words: float = 0.0) -> Merge:
    """Reciprocal-rank fusion of the two rankings, lexical search at ``lexical_weight``,
    for requests of ``from_words`` words or more (hybrid's ranking for the others)."""

    def merge(fused: Sequence[str], lexical: Sequence[str], request: Request) -> list[str]:
        if request.words < from_words:
            return list(fused[:K])
        score: dict[str, float] = defaultdict(float)
        for i, n in enumerate(fused):
            score[n] += (1 - lexical_weight) / (c + i + 1)
        for i, n in enumerate(lexical):
            score[n] += lexical_weight / (c + i + 1)
        return sorted(score, key=lambda n: (-score[n], n))[:K]

    return merge


def in_turn(lexical_first: bool) -> Merge:
    """Where no tool covers ``COVER_BELOW`` of the request (several needs), the two
    rankings' results in turn, each once (lexical search's first if ``lexical_first``);
    else hybrid's."""

    def merge(fused: Sequence[str], lexical: Sequence[str], request: Request) -> list[str]:
        if request.covered >= COVER_BELOW:
            return list(fused[:K])
        first, second = (lexical, fused) if lexical_first else (fused, lexical)
        out: list[str] = []
        for name in [n for pair in zip(first, second, strict=False) for n in pair]:
            if name not in out:  # one place each, when both lists hold it at the same rank
                out.append(name)
        out += [n for n in [*first, *second] if n not in out]
        return out[:K]

    return merge


MERGES: dict[str, Merge] = {
    "hybrid (as shipped)": lambda fused, lexical, _request: list(fused[:K]),
    **{f"keep lexical top {a}": keep_lexical(a) for a in (1, 2, 3)},
    **{f"rrf, lexical {w:g}, c {c}": rrf(w, c) for w in (0.3, 0.5) for c in (5, 60)},
    "in turn, hybrid first": in_turn(False),
    "in turn, lexical first": in_turn(True),
    **{f"rrf, lexical 0.5, c 60, from {n} words": rrf(0.5, 60, n) for n in (20, 30)},
}


def recall(names: Sequence[str], gold: Gold) -> float:
    return judge(list(names[:K]), gold)[2]


def best_coverage(index: SearchIndex, query: str) -> float:
    """The share of the query's idf that lexical search's best-covering match reaches."""
    scored = index._scores(query, index.scope(None))
    if scored.coverage is None:
        return 1.0  # read by no embedder: no fusion to gate
    matched = np.flatnonzero(scored.bm25 > 0)
    return float(scored.coverage[matched].max()) if len(matched) else 0.0


def embedder_confidence(index: SearchIndex, query: str) -> float:
    """How far the embedder's best cosine stands above the rest, as a z-score over the
    searchable tools (nan for a query no embedder reads)."""
    scored = index._scores(query, index.scope(None))
    if scored.semantic is None:
        return float("nan")
    cosine = scored.semantic[scored.hits].astype(np.float64)
    spread = float(cosine.std())
    return float((cosine.max() - cosine.mean()) / spread) if spread > 0 else 0.0


def quintiles(values: Sequence[float], diffs: Sequence[float]) -> str:
    """Hybrid's requests better and worse than lexical's in five equal bands of
    ``values`` (requests with no value left out)."""
    known = [(v, d) for v, d in zip(values, diffs, strict=True) if v == v]
    if not known:
        return "no request read by the embedder"
    edges = np.quantile([v for v, _ in known], [0, 0.2, 0.4, 0.6, 0.8, 1])
    cells = []
    for i in range(5):
        inside = [
            d
            for v, d in known
            if edges[i] <= v and (v < edges[i + 1] or (i == 4 and v <= edges[5]))
        ]
        up, down = sum(d > 0 for d in inside), sum(d < 0 for d in inside)
        cells.append(f"{edges[i]:.2f}-{edges[i + 1]:.2f}: {up} better, {down} worse")
    return "; ".join(cells)


def run(data: Dataset, queries: list[tuple[str, Gold]], embedders: list[str]) -> None:
    catalog = Catalog()
    catalog.add_tools(data.tools)
    lexical = SearchIndex(catalog, SearchSettings("lexical", servers=data.servers))
    lex = {q: [h.name for h in lexical.search(q, limit=DEPTH)] for q, _ in queries}
    base = [recall(lex[q], g) for q, g in queries]
    kinds = sorted({data.kinds.get(q, "all") for q, _ in queries})
    print(f"\n**{data.name}**, {len(queries)} requests; lexical recall@5 {np.mean(base):.4f}")
    for embedder in embedders:
        settings = SearchSettings("hybrid", servers=data.servers, embedder=embedder, cache=VECTORS)
        hybrid = SearchIndex(catalog, settings)
        fused = {q: [h.name for h in hybrid.search(q, limit=DEPTH)] for q, _ in queries}
        facts = {q: Request(best_coverage(hybrid, q), text_length(q)) for q, _ in queries}
        print(f"\n{embedder} | recall@5 | against lexical | requests better / worse | by row")
        for label, merge in MERGES.items():
            got = [recall(merge(fused[q], lex[q], facts[q]), g) for q, g in queries]
            rows = []
            for kind in kinds:
                at = [i for i, (q, _) in enumerate(queries) if data.kinds.get(q, "all") == kind]
                diff = np.mean([got[i] for i in at]) - np.mean([base[i] for i in at])
                rows.append(f"{kind}: {diff:+.3f}")
            better = sum(x > y for x, y in zip(got, base, strict=True))
            worse = sum(x < y for x, y in zip(got, base, strict=True))
            print(
                f"{label} | {np.mean(got):.4f} | {100 * (np.mean(got) - np.mean(base)):+.1f} "
                f"| {better} / {worse} | {'; '.join(rows)}"
            )
        bands: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
        for (q, g), b in zip(queries, base, strict=True):
            c = facts[q].covered
            band = next(i for i in range(len(BANDS) - 1) if c < BANDS[i + 1])
            d = recall(fused[q], g) - b
            bands[band][0] += 1
            bands[band][1] += d > 0
            bands[band][2] += d < 0
        cells = [
            f"{BANDS[i]:g}-{min(BANDS[i + 1], 1):g}: {n} ({up} better, {down} worse)"
            for i, (n, up, down) in sorted(bands.items())
        ]
        print(f"best match's coverage, hybrid against lexical: {'; '.join(cells)}")
        confidence = [embedder_confidence(hybrid, q) for q, _ in queries]
        diffs = [recall(fused[q], g) - b for (q, g), b in zip(queries, base, strict=True)]
        print(f"embedder's confidence, hybrid against lexical: {quintiles(confidence, diffs)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git-mirror", type=Path, default=None)
    parser.add_argument("--sets", type=lambda v: v.split(","), default=["metatool", "agent"])
    parser.add_argument("--half", choices=("dev", "test", "heldout"), default="dev")
    args = parser.parse_args()
    args.mcp_manager = args.mcptoolbench = args.acebench = args.toollens = None
    args.bfcl = args.ultratool = None
    args.limit_queries = None
    sets, _ = datasets(args)
    for data in sets:
        if data.tuned == (args.half == "heldout"):
            continue
        queries = [
            (q, g) for q, g in data.queries if args.half == "heldout" or data.half(q) == args.half
        ]
        # MetaTool is English and 20,000 requests: the multilingual embedder is not run on it
        embedders = ["wordllama"] if data.name == "MetaTool" else ["wordllama", "multilingual"]
        run(data, queries, embedders)


if __name__ == "__main__":
    main()
