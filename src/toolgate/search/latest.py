"""Long requests read by their latest part too. A request of many words over several
sentences (a conversation so far, a task told step by step) is also read from each of its
last sentence starts: the tool it now needs answers its last sentences, while one reading
of a hundred words stands for all of them. The readings (``readings``); in hybrid search
the embedder reads each (``semantic.closest`` keeps, per tool, the one it matches best),
and the BM25 fused with it scores each tail by the request's words it holds
(``tail_scores``) and adds the best tail's standing to the whole request's (``fuse``).
Lexical search reads a request whole. Imports ``analysis``, ``lexical`` and ``semantic``
of ``toolgate.search``; numpy where it runs. No MCP imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolgate.search.analysis import Analyzer, sentences, text_length
from toolgate.search.semantic import standard

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from toolgate.search.lexical import Postings, Scope

# From LONG_REQUEST words over several sentences, a request is also read as its tail from
# each of its last MAX_READINGS sentence starts. Chosen on the development halves of the
# evaluation sets for the embedder; for BM25 the same threshold is the lowest that loses
# no set (docs/decisions.md, "Long requests read by their latest part too" and "BM25
# reads a long request's tails where the embedder reads them").
LONG_REQUEST = 60.0
MAX_READINGS = 8


def starts(text: str, long_request: float = LONG_REQUEST) -> tuple[list[str], range]:
    """``text``'s sentences, and the indexes of those a tail reading starts at: its last
    ``MAX_READINGS`` after the first when ``text`` is ``long_request`` words or longer
    (``text_length``; 0: never) and has several sentences, else none."""
    if not long_request or text_length(text) < long_request:
        return [], range(0)
    said = sentences(text)
    return said, range(max(1, len(said) - MAX_READINGS), len(said))


def readings(text: str, long_request: float = LONG_REQUEST) -> list[str]:
    """What the query embedding reads: ``text``, then its tail from each sentence start
    of ``starts``, longest first.

    >>> readings("Find the report. Move it to temp.", long_request=5)
    ['Find the report. Move it to temp.', 'Move it to temp.']
    """
    said, tails = starts(text, long_request)
    return [text, *(" ".join(said[i:]) for i in tails)]


def tail_scores(
    query: str,
    analyzer: Analyzer,
    postings: Postings,
    scope: Scope,
    matched: tuple[list[str], list[float], list[list[str]]],
    long_request: float = LONG_REQUEST,
) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
    """BM25F of every slot for the whole request and, for a long one, for each tail of
    ``starts`` (a row each, longest first; None for a request read whole).

    ``matched`` is ``Matching.weighted_terms`` of the whole request: each query term and
    the index words it reaches through (its group). A tail holds the query terms of its
    sentences, each with its group at the whole request's weights, so the words are
    matched and scored once: each term's scores go to the last sentence holding it, and
    a tail sums its sentences' (the whole request sums them all)."""
    import numpy as np

    terms, weights, groups = matched
    said, tails = starts(query, long_request)
    if not tails:
        return postings.scores(terms, scope, weights), None
    first = tails[0]
    last: dict[str, int] = {}  # query term -> the last sentence holding it, of the tails'
    for i in tails:
        last.update(dict.fromkeys(analyzer.query_terms(said[i]), i))
    # index word -> the last sentence of a query term reaching it (first - 1: none of
    # the tails', so the whole request alone holds it)
    reach: dict[str, int] = {}
    for group in groups:
        held = last.get(group[0], first - 1)
        for term in group:
            reach[term] = max(reach.get(term, held), held)
    rows: dict[int, list[int]] = {}  # row (0: before the tails) -> its terms' positions
    for k, term in enumerate(terms):
        rows.setdefault(reach.get(term, first - 1) - first + 1, []).append(k)
    by_sentence = np.zeros((len(said) - first + 1, postings.capacity))
    for row, picked in rows.items():
        chosen, weighed = [terms[k] for k in picked], [weights[k] for k in picked]
        by_sentence[row] = postings.scores(chosen, scope, weighed)
    totals = np.cumsum(by_sentence[::-1], axis=0)[::-1]  # row r: its sentence and after
    return totals[0], totals[1:]


def fuse(
    whole: NDArray[np.floating], tails: NDArray[np.float64], live: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """A long request's lexical score: the whole request's score as a z-score over the
    ``live`` slots (the caller's tools) plus the z-score of the tail a tool stands best
    in; and that best tail z-score per slot. A tail's few words spread its scores wider
    than the whole request's, so each reading is put on one footing first."""
    import numpy as np

    best = np.max(np.vstack([standard(row, live) for row in tails]), axis=0)
    return standard(whole, live) + best, best
