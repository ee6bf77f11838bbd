"""Whole-task queries: when no single tool covers much of a request ("find the cheapest
flight to Tokyo and add it to my calendar"), the top results are re-ranked so that
together they cover the request's words (xQuAD over the query's terms). Imports
``postings`` of ``toolgate.search`` for its types only; numpy where it runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from toolgate.search.postings import Holders

# A query whose best result reaches less than COVER_BELOW of the query's idf
# (``Holders.coverage``) is taken for several needs in one sentence: the best
# COVER_POOL results are re-ranked, each next pick scoring (1 - COVER_WEIGHT) of its
# relevance (share of the pool's best) plus COVER_WEIGHT of the idf share of the query
# words it covers that no pick above it covers. A request one tool answers well is left
# as ranked. Chosen on the development halves of the evaluation sets
# (benchmarks/search_eval.py --tune sweeps them; docs/decisions.md, "UltraTool's whole
# tasks as a tuned set").
COVER_BELOW = 0.5
COVER_WEIGHT = 0.25
COVER_POOL = 20
# In hybrid mode the pool is ranked by the fused score, whose top holds tools that match
# the request in meaning but share few of its words: more of its requests fall below
# COVER_BELOW and the word-coverage novelty would push those tools down. Its weight is
# chosen apart, on the same development halves (the re-rank hurt MetaTool at 0.5). A
# query the embedder reads in part (``trust``) takes the two weights by its read share:
# what it cannot read re-ranks as lexical search does.
HYBRID_COVER_WEIGHT = 0.25


@dataclass(frozen=True)
class Cover:
    """The whole-task re-rank's settings (``COVER_*``); ``weight`` 0 turns it off."""

    below: float = COVER_BELOW
    weight: float = COVER_WEIGHT
    pool: int = COVER_POOL

    def rerank(
        self,
        ranked: Sequence[int],
        relevance: NDArray[np.float64],
        holders: Holders,
        places: int | None = None,
    ) -> list[int]:
        """``ranked`` (best first), unchanged when its first slot covers at least
        ``below`` of the query's idf, else with its first ``pool`` slots re-ordered greedily
        after the first: each pick maximises ``(1 - weight) * relevance / best + weight * novelty``,
        novelty being the idf share of the query groups (a query term with the words
        it matches through) the slot holds and no earlier pick holds (``holders``). With
        ``places``, only that many are picked so; the rest of the pool follows in its
        order (for a caller that reads no further)."""
        import numpy as np

        pool = np.asarray(ranked[: self.pool], dtype=np.int64)
        if self.weight <= 0 or len(pool) < 2 or not len(holders.held):
            return list(ranked)
        covers = np.ascontiguousarray(holders.held[:, pool].T)  # a row per pick
        # a word no tool holds is no need any tool can meet
        idf = np.asarray(
            [w if df else 0.0 for w, df in zip(holders.idf(), holders.documents, strict=True)]
        )
        if idf.sum() <= 0:
            return list(ranked)
        share = idf / idf.sum()
        if float(covers[0] @ share) >= self.below:
            return list(ranked)  # the best result covers the request: one need
        rel = relevance[pool].astype(np.float64)
        low, high = float(rel.min()), float(rel.max())
        rel = (rel - low) / (high - low) if high > low else np.ones(len(pool))
        open_ = ~covers[0]  # the best result keeps its place
        left = list(range(1, len(pool)))
        order = [0]
        while left and (places is None or len(order) < places):
            novelty = (covers[left] & open_) @ share
            value = (1 - self.weight) * rel[left] + self.weight * novelty
            pick = left[int(np.argmax(value))]  # first of equals: the earlier rank
            order.append(pick)
            open_ &= ~covers[pick]
            left.remove(pick)
        return [int(pool[i]) for i in order + left] + list(ranked[self.pool :])
