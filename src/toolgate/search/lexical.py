"""The lexical index: BM25F postings over a tool's fields, kept a tool at a time; how a
query's words reach the index's (prefix, root, spelling, argument values); and lexical
search's pseudo-relevance feedback. Imports ``analysis`` of ``toolgate.search``, never
``semantic``, ``regex`` or ``index``. numpy, of the ``search`` extra, is imported where
it runs, so the package imports without it.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from toolgate.search.analysis import Analyzer, argument_values

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# A query word of at least MIN_PREFIX characters also matches the longer index words it
# begins, at PREFIX_WEIGHT of a full match ("crypto" -> "cryptocurrencies", "auth" ->
# "authentication"): compounds and derived forms the stemmer leaves apart. PREFIX_WEIGHT
# was chosen on the development halves of the evaluation sets (search_eval.py --tune sweeps
# it); MIN_PREFIX = 4 was set by hand (3-letter words prefix too much), not swept.
MIN_PREFIX = 4
PREFIX_WEIGHT = 0.4
# The other way round: a query word also matches the shorter index words (of at least
# MIN_ROOT characters) that begin it and leave at least ROOT_REST of its letters, at
# ROOT_WEIGHT ("cryptocurrencies" -> "crypto", "screenshots" -> "screen", "weatherman"
# -> "weather"; "report" does not reach "repo"): a tool that names the root of a
# compound or derived word the query uses. ROOT_WEIGHT was chosen on the development
# halves of the evaluation sets (benchmarks/search_eval.py --tune sweeps it); MIN_ROOT
# and ROOT_REST were compared by hand there (3 and 3 against 4 and 1-2).
MIN_ROOT = 3
ROOT_REST = 3
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
# reaches less than FEEDBACK_COVERAGE of the query's idf (``Postings.coverage``), the
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

# A field's weight in BM25F, BM25's saturation (K1) and length normalisation (B). Other
# weights, k1 0.9 to 2.0 and b 0.5 to 0.9 were measured on the development halves of the
# evaluation sets: none was better on all of them (docs/decisions.md, "Tool search").
FIELD_WEIGHTS: Mapping[str, float] = {
    "name": 3.0,
    "title": 2.0,
    "description": 1.0,
    "arguments": 1.0,
    "groups": 1.0,
    "server": 1.0,
}
K1 = 1.2
B = 0.75


def trigrams(term: str) -> frozenset[str]:
    """A term's character trigrams, for terms of ``MIN_PREFIX`` characters or more.

    >>> sorted(trigrams("colour"))
    ['col', 'lou', 'olo', 'our']
    """
    if len(term) < MIN_PREFIX:
        return frozenset()
    return frozenset(term[i : i + 3] for i in range(len(term) - 2))


@dataclass(frozen=True)
class Scope:
    """What a search ranks within: the caller's tools (``population``, a boolean mask
    of slots; None: every tool), their number and the slot x field factor on a raw
    term frequency (field weight over length normalisation). Made once per view while
    the index is unchanged. ``frequencies`` keeps the document frequencies in the
    scope that feedback has counted (``Postings.related``)."""

    population: NDArray[np.bool_] | None
    documents: int
    scale: NDArray[np.float64]
    frequencies: dict[str, int] = field(default_factory=dict, compare=False, repr=False)


class Postings:
    """An inverted index scored with BM25F, updated one document at a time.

    Each document is a set of fields (name, description, ...). A term's frequency in a
    field is normalised by that field's length against the field's average length, the
    fields' normalised frequencies are summed with their weights, and the sum saturates
    once (BM25F, Robertson & Zaragoza 2009). So a long argument list does not dilute a
    match in the name, and a word repeated across fields still counts with diminishing
    returns. Idf is Lucene's. Documents live in slots; adding or removing one touches only
    its own terms, so a catalog change costs what changed, not the catalog size.
    """

    def __init__(
        self, weights: Mapping[str, float] = FIELD_WEIGHTS, k1: float = K1, b: float = B
    ) -> None:
        import numpy as np

        self.fields = tuple(weights)
        self.k1, self.b = k1, b
        self._weights = np.asarray([float(weights[f]) for f in self.fields])
        # term -> {slot: frequency per field}
        self._postings: dict[str, dict[int, tuple[int, ...]]] = {}
        # term -> (slots, tf matrix), made lazily
        self._arrays: dict[str, tuple[NDArray[np.int64], NDArray[np.float64]]] = {}
        self._terms: dict[int, tuple[str, ...]] = {}
        self._lengths = np.zeros((64, len(self.fields)))
        self._free: list[int] = []
        self._next = 0
        self._total = np.zeros(len(self.fields))
        self._vocabulary: list[str] | None = []  # sorted terms; None: to be re-sorted
        # character trigram -> the terms (of MIN_PREFIX characters or more) holding it
        self._trigrams: dict[str, set[str]] = {}

    def __len__(self) -> int:
        return len(self._terms)

    @property
    def capacity(self) -> int:
        return self._next

    def add(self, fields: Mapping[str, list[str]]) -> int:
        """A new document from its fields' terms (fields this index lacks are ignored)."""
        import numpy as np

        slot = self._free.pop() if self._free else self._next
        if slot == self._next:
            self._next += 1
            if self._next > len(self._lengths):
                self._lengths = np.concatenate([self._lengths, np.zeros_like(self._lengths)])
        counts = [Counter(fields.get(f, ())) for f in self.fields]
        terms = set().union(*counts)
        for term in terms:
            if term not in self._postings:
                self._vocabulary = None
                for gram in trigrams(term):
                    self._trigrams.setdefault(gram, set()).add(term)
            self._postings.setdefault(term, {})[slot] = tuple(c[term] for c in counts)
            self._arrays.pop(term, None)
        self._terms[slot] = tuple(terms)
        lengths = np.asarray([sum(c.values()) for c in counts], dtype=float)
        self._lengths[slot] = lengths
        self._total += lengths
        return slot

    def remove(self, slot: int) -> None:
        for term in self._terms.pop(slot):
            posting = self._postings[term]
            del posting[slot]
            if not posting:
                del self._postings[term]
                self._vocabulary = None
                for gram in trigrams(term):
                    holders = self._trigrams[gram]
                    holders.discard(term)
                    if not holders:
                        del self._trigrams[gram]
            self._arrays.pop(term, None)
        self._total -= self._lengths[slot]
        self._lengths[slot] = 0
        self._free.append(slot)

    def extensions(self, term: str) -> list[str]:
        """Indexed terms that begin with ``term`` and are longer (``term`` of at least
        ``MIN_PREFIX`` characters): "crypto" reaches "cryptocurr", "auth" "authent"."""
        if len(term) < MIN_PREFIX:
            return []
        if self._vocabulary is None:
            self._vocabulary = sorted(self._postings)
        vocabulary = self._vocabulary
        out = []
        for i in range(bisect.bisect_right(vocabulary, term), len(vocabulary)):
            if not vocabulary[i].startswith(term):
                break
            out.append(vocabulary[i])
        return out

    def roots(self, term: str) -> list[str]:
        """Indexed terms of at least ``MIN_ROOT`` characters that begin ``term`` and
        leave at least ``ROOT_REST`` of its characters, longest first: "cryptocurr"
        reaches "crypto", "report" not "repo"."""
        found = (term[:n] for n in range(len(term) - ROOT_REST, MIN_ROOT - 1, -1))
        return [root for root in found if root in self._postings]

    def similar(self, term: str, threshold: float) -> list[str]:
        """Indexed terms other than ``term`` whose character trigrams overlap its own
        by at least ``threshold`` (Jaccard), most similar first, ties by term."""
        grams = trigrams(term)
        if not grams:
            return []
        shared: Counter[str] = Counter()
        for gram in grams:
            shared.update(self._trigrams.get(gram, ()))
        found = []
        for other, common in shared.items():
            similarity = common / (len(grams) + len(trigrams(other)) - common)
            if similarity >= threshold and other != term:
                found.append((-similarity, other))
        return [other for _, other in sorted(found)]

    def matches(self, term: str, population: NDArray[np.bool_] | None = None) -> bool:
        """Whether ``term`` occurs in any document (of ``population``, when given)."""
        posting = self._postings.get(term)
        if not posting:
            return False
        return population is None or any(population[slot] for slot in posting)

    def scope(self, population: NDArray[np.bool_] | None = None) -> Scope:
        """The statistics of the index, or of the documents in ``population`` (a boolean
        mask of slots): what ``scores`` and ``field_scores`` rank within."""
        import numpy as np

        if population is None:
            n, total = len(self._terms), self._total
        else:
            live = population[: self._next]
            n, total = int(live.sum()), self._lengths[: self._next][live].sum(axis=0)
        average = np.where(total > 0, total / max(n, 1), 1.0)
        norm = 1 - self.b + self.b * self._lengths[: self._next] / average
        return Scope(population, n, self._weights / np.where(norm > 0, norm, 1.0))

    def field_scores(self, term: str, slot: int, scope: Scope) -> dict[str, float]:
        """One term's BM25F score in one slot, split by field in proportion to each
        field's share of the term's weighted frequency (empty when absent)."""
        import numpy as np

        posting = self._postings.get(term)
        if not posting or slot not in posting:
            return {}
        n, population = scope.documents, scope.population
        df = len(posting) if population is None else sum(1 for s in posting if population[s])
        scaled = np.asarray(posting[slot]) * scope.scale[slot]
        tf = float(scaled.sum())
        if tf <= 0:
            return {}
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        score = idf * tf * (self.k1 + 1) / (tf + self.k1)
        return {f: score * float(x) / tf for f, x in zip(self.fields, scaled, strict=True) if x}

    def scores(
        self, terms: Sequence[str], scope: Scope, weights: Sequence[float] = ()
    ) -> NDArray[np.float64]:
        """BM25F score of every slot for ``terms`` (a repeated term counts again), each
        term's score times its entry in ``weights`` when given.

        Only the documents of ``scope`` are scored and the statistics (document count,
        average field lengths, document frequencies) are theirs, so what lies outside
        it cannot move a score inside it."""
        import numpy as np

        out = np.zeros(self._next)
        n, scale, population = scope.documents, scope.scale, scope.population
        if not n:
            return out
        for i, term in enumerate(terms):
            weight = weights[i] if weights else 1.0
            arrays = self._arrays_of(term)
            if arrays is None:
                continue
            slots, tfs = arrays
            if population is not None:
                inside = population[slots]
                slots, tfs = slots[inside], tfs[inside]
            df = len(slots)
            if not df:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            tf = (tfs * scale[slots]).sum(axis=1)
            out[slots] += weight * idf * tf * (self.k1 + 1) / (tf + self.k1)
        return out

    def coverage(self, groups: Sequence[Sequence[str]], scope: Scope) -> NDArray[np.float64]:
        """Per slot, the share of a query's information its words reach: each group (a
        query term with the index words it matches through) counts its idf in the
        scope, the idf of every slot holding any of its words, over the sum of all.

        A coordination factor, weighted by idf so a tool is not rewarded for sharing
        the query's common words. Statistics and candidates are the scope's only."""
        import numpy as np

        reached = np.zeros(self._next)
        n, population = scope.documents, scope.population
        visible = None
        if population is not None:  # the scope's mask, over every slot
            visible = np.zeros(self._next, dtype=bool)
            shared = min(self._next, len(population))
            visible[:shared] = population[:shared]
        total = 0.0
        for group in groups:
            hit = np.zeros(self._next, dtype=bool)
            for term in group:
                arrays = self._arrays_of(term)
                if arrays is not None:
                    hit[arrays[0]] = True
            if visible is not None:
                hit &= visible
            df = int(hit.sum())
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            reached[hit] += idf
            total += idf
        return reached / total if total > 0 else reached

    def related(
        self,
        slots: Sequence[int],
        shares: Sequence[float],
        scope: Scope,
        exclude: Iterable[str],
        count: int,
    ) -> list[tuple[str, float]]:
        """The ``count`` most telling words of the documents in ``slots`` (a query's
        best matches, each with its ``shares`` of their scores) less ``exclude``: each
        word's idf in the scope, summed over the documents holding it by their share,
        highest first (ties by word), with that sum.

        A document outside the scope is never read, and idf is the scope's, so what
        lies outside it cannot change what is added."""
        n, population = scope.documents, scope.population
        skip = set(exclude)
        held: dict[str, float] = {}  # word -> the shares of the documents holding it
        for slot, share in zip(slots, shares, strict=True):
            if population is not None and not (slot < len(population) and population[slot]):
                continue
            for term in self._terms.get(slot, ()):
                if term not in skip:
                    held[term] = held.get(term, 0.0) + share
        weights: dict[str, float] = {}
        for term, share in held.items():
            if population is None:
                df = len(self._postings[term])
            elif (df := scope.frequencies.get(term, -1)) < 0:
                arrays = self._arrays_of(term)
                assert arrays is not None  # a word of an indexed document
                holders = arrays[0]
                df = int(population[holders[holders < len(population)]].sum())
                scope.frequencies[term] = df
            weights[term] = share * math.log(1 + (n - df + 0.5) / (df + 0.5))
        ranked = sorted(weights.items(), key=lambda item: (-item[1], item[0]))
        return ranked[:count]

    def _arrays_of(self, term: str) -> tuple[NDArray[np.int64], NDArray[np.float64]] | None:
        """A term's postings as arrays (its slots, their frequencies per field), made
        once per term and kept until the term's postings change."""
        arrays = self._arrays.get(term)
        if arrays is None:
            posting = self._postings.get(term)
            if posting is None:
                return None
            import numpy as np

            arrays = (
                np.fromiter(posting.keys(), dtype=np.int64, count=len(posting)),
                np.asarray(list(posting.values()), dtype=np.float64),
            )
            self._arrays[term] = arrays
        return arrays


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
        through (for ``Postings.coverage``). Call with the index's lock held."""
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
        groups: list[list[str]],
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
        score), ties by name (``name_rank``). Call with the index's lock held."""
        import numpy as np

        hits = np.flatnonzero(bm25 > 0)
        if not self.weight or not self.terms or not self.docs or not len(hits):
            return None
        best = hits[np.lexsort((name_rank[hits], -bm25[hits]))][: self.docs]
        if postings.coverage(groups, scope)[best[0]] >= self.coverage:
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
