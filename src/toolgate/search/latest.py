"""Long requests read by their latest part too. A request of many words over several
sentences (a conversation so far, a task told step by step) is also read from each of its
last sentence starts: the tool it now needs answers its last sentences, while one reading
of a hundred words stands for all of them. The readings (``readings``); in hybrid search
the embedder reads each (``semantic.closest`` keeps, per tool, the one it matches best),
and the BM25 fused with it scores each tail by the request's words it holds
(``tail_scores``) and adds the best tail's standing to the whole request's (``fuse``).
Lexical search reads a request whole. Imports ``analysis``, ``lexical``, ``postings`` and
``semantic`` of ``toolgate.search``; numpy where it runs. No MCP imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolgate.search.analysis import Analyzer, argument_values, sentences, text_length
from toolgate.search.semantic import standard

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from toolgate.search.lexical import Matching
    from toolgate.search.postings import Postings, Scope

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
    """How a request is read: ``text``, then its tail from each sentence start of
    ``starts``, longest first (the embedder reads each; BM25 scores each, ``tail_scores``).

    >>> readings("Find the report. Move it to temp.", long_request=5)
    ['Find the report. Move it to temp.', 'Move it to temp.']
    """
    said, tails = starts(text, long_request)
    return [text, *(" ".join(said[i:]) for i in tails)]


def tail_scores(
    query: str,
    analyzer: Analyzer,
    matching: Matching,
    postings: Postings,
    scope: Scope,
    matched: tuple[list[str], list[float], list[list[str]]],
    long_request: float = LONG_REQUEST,
) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
    """BM25F of every slot for the whole request and, for a long one, for each tail of
    ``starts`` (a row each, longest first; None for a request read whole).

    ``matched`` is ``matching.weighted_terms`` of the whole request: its terms, their
    weights and each query term's group (it and the index words it reaches). A tail
    weighs each word as reading the tail alone would: a query term of its sentences at
    1, or at the argument weight where those sentences hold it only in argument values,
    and a word it reaches at that times the prefix, root or spelling weight (the most,
    when several reach it). So the words are matched and scored once: a word's weight
    in the tail from sentence s less its weight in the tail after it goes to sentence
    s's row, the rest of its whole-request weight to the row before the tails, and a
    tail sums its rows from its start (the whole request sums them all)."""
    import numpy as np

    terms, weights, groups = matched
    said, tails = starts(query, long_request)
    if not tails:
        return postings.scores(terms, scope, weights), None
    first, end = tails[0], len(said)
    told: dict[str, int] = {}  # query term -> the last tail sentence saying it plainly
    held: dict[str, int] = {}  # ... or in argument values only
    for i in tails:
        rest, values = argument_values(said[i])
        plain = rest if values and matching.argument_weight != 1.0 else said[i]
        held.update(dict.fromkeys(analyzer.query_terms(said[i]), i))
        told.update(dict.fromkeys(analyzer.query_terms(plain), i))

    def term_weight(term: str, start: int) -> float:
        """A query term's weight in the tail from sentence ``start``."""
        if told.get(term, -1) >= start:
            return 1.0
        return matching.argument_weight if held.get(term, -1) >= start else 0.0

    reached: dict[str, list[tuple[str, float]]] = {}  # word -> (query term, how far)
    for group in groups:
        for word in group:
            reached.setdefault(word, []).append((group[0], matching.reach(group[0], word)))
    rows: dict[int, tuple[list[str], list[float]]] = {}  # 0: before the tails
    for term, whole in zip(terms, weights, strict=True):
        tail = [
            max((term_weight(q, start) * how for q, how in reached.get(term, ())), default=0.0)
            for start in range(first, end)
        ]
        parts = [whole - tail[0], *(a - b for a, b in zip(tail, [*tail[1:], 0.0], strict=True))]
        for row, part in enumerate(parts):
            if part:
                rows.setdefault(row, ([], []))[0].append(term)
                rows[row][1].append(part)
    by_sentence = np.zeros((end - first + 1, postings.capacity))
    for row, (chosen, weighed) in rows.items():
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
