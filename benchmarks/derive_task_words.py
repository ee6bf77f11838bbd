"""Derive ``toolgate.search.analysis.TASK_WORDS`` from the development half of MetaTool.

A task word is one that queries use often but that says nothing about which tool they
need: across the development queries containing it, the gold tools are spread like
the gold tools of all queries. Measured as the KL divergence of P(tool | word) from
P(tool); kept: words in at least 0.5% of the queries with a divergence under 0.5 nats.
Only the development half (``search_eval.split``) is read, never the evaluation half
nor any other set. Prints the list, sorted.

Run: ``python benchmarks/derive_task_words.py``
"""

from __future__ import annotations

import math
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from search_eval import load_metatool, split

from toolgate.search import STOP_WORDS, words

MIN_SHARE = 0.005
MAX_DIVERGENCE = 0.5


def derive() -> list[str]:
    _, queries = load_metatool()
    dev = [(q, gold) for q, gold in queries if split(q) == "dev"]
    prior: Counter[str] = Counter()
    by_word: dict[str, Counter[str]] = defaultdict(Counter)
    for query, gold in dev:
        for tool in gold:
            prior[tool] += 1 / len(gold)
        for word in set(words(query)):
            if len(word) > 1 and word not in STOP_WORDS:
                for tool in gold:
                    by_word[word][tool] += 1 / len(gold)
    total = sum(prior.values())
    out = []
    for word, tools in by_word.items():
        n = sum(tools.values())
        if n < MIN_SHARE * len(dev):
            continue
        kl = sum((c / n) * math.log((c / n) / (prior[t] / total)) for t, c in tools.items())
        if kl < MAX_DIVERGENCE:
            out.append(word)
    return sorted(out)


if __name__ == "__main__":
    print(" ".join(derive()))
