"""Lexical matching over the BM25F index (``postings``): how far a query's words reach
the index's (prefix, root, spelling, argument values), and lexical search's
pseudo-relevance feedback. Imports ``analysis`` and ``postings`` of ``toolgate.search``,
never ``semantic``, ``regex`` or ``index``. numpy, of the ``search`` extra, is imported
where it runs, so the package imports without it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolgate.search.analysis import Analyzer, argument_values
from toolgate.search.postings import MIN_PREFIX, Holders, Postings, Scope

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# A query word of at least MIN_PREFIX characters also matches the longer index words it
# begins, at PREFIX_WEIGHT of a full match ("crypto" -> "cryptocurrencies", "auth" ->
# "authentication"): compounds and derived forms the stemmer leaves apart. PREFIX_WEIGHT
# was chosen on the development halves of the evaluation sets (search_eval.py --tune sweeps
# it); MIN_PREFIX (``postings``) = 4 was set by hand (3-letter words prefix too much),
# not swept.
PREFIX_WEIGHT = 0.4
# The other way round: a query word also matches the shorter index words (of at least
# MIN_ROOT characters) that begin it and leave at least ROOT_REST of its letters, at
# ROOT_WEIGHT ("cryptocurrencies" -> "crypto", "screenshots" -> "screen", "weatherman"
# -> "weather"; "report" does not reach "repo"): a tool that names the root of a
# compound or derived word the query uses. ROOT_WEIGHT was chosen on the development
# halves of the evaluation sets (benchmarks/search_eval.py --tune sweeps it); MIN_ROOT
# and ROOT_REST (``postings``) were compared by hand there (3 and 3 against 4 and 1-2).
ROOT_WEIGHT = 0.5
# A query word of at least MIN_PREFIX characters that matches no tool of the caller's
# view, not even as a prefix, is replaced by the index words sharing at least
# FUZZY_SIMILARITY of their character trigrams with it (Jaccard), at FUZZY_WEIGHT:
# misspellings and spelling variants ("analyse" -> "analyz", "colour" -> "color",
# "summarise" -> "summar") that neither the stemmer nor a prefix joins. Chosen on the
# development halves of the evaluation sets (benchmarks/search_eval.py --tune).
FUZZY_SIMILARITY = 0.4
FUZZY_WEIGHT = 0.4
# Lexical search's pseudo-relevance feedback (Rocchio, as in RM3): when the best match
# reaches less than FEEDBACK_COVERAGE of the query's idf (``Holders.coverage``), the
# query is likely told in other words than the catalog's ("track my meals" for a diet
# tool), and the FEEDBACK_TERMS most telling words of the FEEDBACK_DOCS best matches
# (each word's idf, summed over those tools in proportion to their scores) join it at
# up to FEEDBACK_WEIGHT of a query word. A query the catalog answers well is left as it
# is, so feedback cannot pull it off course. Chosen on the development halves of the
# evaluation sets (benchmarks/search_eval.py --tune sweeps them); hybrid search has the
# embedding for meaning and takes none.
FEEDBACK_DOCS = 3
FEEDBACK_TERMS = 20
FEEDBACK_WEIGHT = 0.5
FEEDBACK_COVERAGE = 0.35
# A query word found only in argument values (``analysis.argument_values``) counts for
# ARGUMENT_WEIGHT of a query word. Chosen on the development halves of the evaluation
# sets (benchmarks/search_eval.py --tune sweeps it).
ARGUMENT_WEIGHT = 0.3


@dataclass(frozen=True)
class Matching:
    """How far a query's words reach into the index: a prefix, root and spelling match
    and a word only in argument values each count for their weight of a query word (0:
    not at all); a spelling match shares ``fuzzy_similarity`` of its trigrams."""

    prefix_weight: float = PREFIX_WEIGHT
    root_weight: float = ROOT_WEIGHT
    argument_weight: float = ARGUMENT_WEIGHT
    fuzzy_weight: float = FUZZY_WEIGHT
    fuzzy_similarity: float = FUZZY_SIMILARITY

    def reach(self, term: str, word: str) -> float:
        """What a query term's weight counts for in a word of its group (``weighted_terms``):
        all of it in itself, then as a prefix, a root, or else a spelling match."""
        if word == term:
            return 1.0
        if word.startswith(term):
            return self.prefix_weight
        return self.root_weight if term.startswith(word) else self.fuzzy_weight

    def weighted_terms(
        self,
        query: str,
        analyzer: Analyzer,
        postings: Postings,
        population: NDArray[np.bool_] | None = None,
    ) -> tuple[list[str], list[float], list[list[str]]]:
        """The query's terms (weight 1, ``argument_weight`` for a term only found in
        argument values), the longer index words they begin (``prefix_weight``), for a
        term that reaches no tool of ``population`` either way the index words spelled
        like it (``fuzzy_weight``), then the shorter index words that begin a term
        (``root_weight``); each term once, a match through a term at that term's weight
        times the match's. Also each query term's group: it and the words it matches
        through (for ``Postings.holders``). Call with the index's lock held."""
        terms = analyzer.query_terms(query)
        weights = [1.0] * len(terms)
        rest, values = argument_values(query)
        if values and self.argument_weight != 1.0:
            told = set(analyzer.query_terms(rest))
            weights = [1.0 if t in told else self.argument_weight for t in terms]
        groups = [[t] for t in terms]
        seen = set(terms)

        def extend(found: Iterable[str], weight: float, group: list[str]) -> None:
            for other in found:
                group.append(other)
                if other not in seen:
                    seen.add(other)
                    terms.append(other)
                    weights.append(weight)

        asked = list(zip(terms, weights, groups, strict=True))
        for term, weight, group in asked:
            longer = postings.extensions(term) if self.prefix_weight else []
            extend(longer, weight * self.prefix_weight, group)
            if (
                self.fuzzy_weight
                and len(term) >= MIN_PREFIX
                and not postings.matches(term, population)
                and not any(postings.matches(t, population) for t in longer)
            ):
                similar = postings.similar(term, self.fuzzy_similarity)
                extend(similar, weight * self.fuzzy_weight, group)
        if self.root_weight:
            for term, weight, group in asked:
                extend(postings.roots(term), weight * self.root_weight, group)
        return terms, weights, groups


@dataclass(frozen=True)
class Feedback:
    """Lexical search's pseudo-relevance feedback: the ``terms`` most telling words of
    the ``docs`` best matches, at up to ``weight`` of a query word, for a query whose
    best match reaches less than ``coverage`` of its idf (``FEEDBACK_*``)."""

    docs: int = FEEDBACK_DOCS
    terms: int = FEEDBACK_TERMS
    weight: float = FEEDBACK_WEIGHT
    coverage: float = FEEDBACK_COVERAGE

    def gain(
        self,
        postings: Postings,
        scope: Scope,
        terms: list[str],
        holders: Holders,
        bm25: NDArray[np.float64],
        name_rank: NDArray[np.int64],
    ) -> tuple[tuple[str, ...], NDArray[np.float64]] | None:
        """Feedback for the lexical scores ``bm25``: when the best match reaches less
        than ``coverage`` of the query's idf, the most telling words of the ``docs``
        best matches (``Postings.related``) are scored as a second query, the most
        telling at ``weight`` of a query word and the others in proportion, and each
        tool's score for them is added to its own. The best matches the words came
        from are credited with the most any tool gained, so they keep their places and
        feedback ranks the tools after them: it widens what is found without
        reordering what the request itself found. Returns the words and each slot's
        gain (None: no feedback). The best matches are the scope's (only its tools
        score), ties by name (``name_rank``); ``holders`` tells which tools hold each of
        the query's words (``Postings.holders``). Call with the index's lock held."""
        import numpy as np

        hits = np.flatnonzero(bm25 > 0)
        if not self.weight or not self.terms or not self.docs or not len(hits):
            return None
        if len(hits) > self.docs:  # the few best first (ties at the cut come along)
            cut = np.partition(bm25[hits], len(hits) - self.docs)[len(hits) - self.docs]
            hits = hits[bm25[hits] >= cut]
        best = hits[np.lexsort((name_rank[hits], -bm25[hits]))][: self.docs]
        if holders.coverage(best[:1])[0] >= self.coverage:
            return None
        top = bm25[best]
        shares = [float(x) for x in top / top.sum()]
        related = postings.related([int(x) for x in best], shares, scope, terms, self.terms)
        if not related:
            return None
        strongest = related[0][1]
        added = [term for term, _ in related]
        gain = postings.scores(added, scope, [self.weight * w / strongest for _, w in related])
        gain[best] = gain.max()
        return tuple(added), gain
