"""Which embedder for hybrid search: quality, query latency and memory, measured.

Candidates that run here without a download: WordLlama's shipped ``l2_supercat`` model
at 256 and 64 dimensions (the ``wordllama`` wheel), and all-MiniLM-L6-v2 (the folder
``toolgate fetch minilm`` fetches, given as ``--minilm``) in toolgate's numpy BERT encoder
(``embedder: "bert:FOLDER"``). Each is measured alone (embeddings only) and fused
(``HYBRID_WEIGHT``) on the test halves of both sets of ``search_eval.py``. Prints a
table for ``docs/decisions.md``; a benchmark, nothing in ``src/`` imports it.

Run: ``python benchmarks/embedder_compare.py --minilm PATH [--git-mirror DIR] [--queries N]``.
Every set of ``search_eval.py`` ranks with the same model as one more hybrid row:
``python benchmarks/search_eval.py --embedder 'all-MiniLM-L6-v2=bert:PATH'``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from search_eval import Dataset, datasets, evaluate, split, toolgate_ranker

from toolgate.embedding import BertEmbedder, WordLlamaEmbedder
from toolgate.search import HYBRID_WEIGHT, SearchSettings


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(label: str, make: Any, sets: list[Dataset], limit: int) -> list[str]:
    before = rss_mb()
    started = time.perf_counter()
    embedder = make()
    load_s = time.perf_counter() - started
    probe = ["find a flight from paris to london tomorrow"] * 200
    started = time.perf_counter()
    for text in probe:
        embedder.embed([text])
    query_ms = 1000 * (time.perf_counter() - started) / len(probe)
    cells = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "vectors.sqlite"  # the second index reuses the first's vectors
        for data in sets:
            test = [(q, g) for q, g in data.queries if split(q) == "test"]
            test = test[:: max(1, len(test) // limit)][:limit]  # spread over the whole set
            for weight in (0.0, HYBRID_WEIGHT):
                settings = SearchSettings("hybrid", embedder, cache, weight, data.servers)
                rank, _ = toolgate_ranker(data, settings)
                cells.append(f"{evaluate(rank, test)['recall@5']:.3f}")
    memory = rss_mb() - before
    return [label, *cells, f"{query_ms:.2f}", f"{load_s:.1f}", f"{memory:.0f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minilm", type=Path, required=True, help="extracted all-MiniLM-L6-v2")
    parser.add_argument("--queries", type=int, default=2000, help="per set (test half)")
    parser.add_argument("--git-mirror", type=Path, default=None, help="as search_eval.py's")
    args = parser.parse_args()
    sets, _ = datasets(
        argparse.Namespace(
            sets=["metatool", "mcp-manager"],
            limit_queries=None,
            mcp_manager=None,
            mcptoolbench=None,
            acebench=None,
            git_mirror=args.git_mirror,
        )
    )
    rows = [
        measure("WordLlama l2_supercat 256-d", WordLlamaEmbedder, sets, args.queries),
        measure("WordLlama l2_supercat 64-d", lambda: TruncatedWordLlama(64), sets, args.queries),
        measure("all-MiniLM-L6-v2 (bert)", lambda: BertEmbedder(args.minilm), sets, args.queries),
    ]
    head = ["embedder"]
    for data in sets:
        head += [f"{data.name} alone", f"{data.name} hybrid"]
    head += ["ms/query embed", "load s", "RSS MB (approx.)"]
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    for row in rows:
        print("| " + " | ".join(row) + " |")


class TruncatedWordLlama(WordLlamaEmbedder):
    """The shipped 256-d model cut to its first ``dim`` (Matryoshka) dimensions."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self.model_id = f"wordllama:l2_supercat:256:{dim}"

    def embed(self, texts: Sequence[str]) -> Any:
        return super().embed(texts)[:, : self.dim]


if __name__ == "__main__":
    main()
