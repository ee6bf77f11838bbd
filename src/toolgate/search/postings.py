"""The BM25F inverted index over a tool's fields, kept a tool at a time: scores within
a caller's scope, which of a query's words each tool holds (``Holders``), and the lookups
a query word reaches other index words by (prefix, root, spelling). Imports nothing of
``toolgate.search``; numpy, of the ``search`` extra, is imported where it runs. No MCP
imports.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# How a query word reaches the index's other words (``toolgate.search.lexical`` weighs
# each way): as a prefix of the longer words it begins from MIN_PREFIX characters (also
# the shortest word with trigrams for spelling matches), and as the longer form of the
# words of at least MIN_ROOT characters that begin it and leave ROOT_REST of its letters.
MIN_PREFIX = 4
MIN_ROOT = 3
ROOT_REST = 3
SIMILAR_MEMO = 4096  # spelling matches remembered (``Postings.similar``)

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


def idf(documents: int, holding: int) -> float:
    """Lucene's idf of a word ``holding`` of ``documents`` documents hold."""
    return math.log(1 + (documents - holding + 0.5) / (holding + 0.5))


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
    of slots; None: every tool), their number and the field x slot factor on a raw
    term frequency (field weight over length normalisation). Made once per view while
    the index is unchanged. ``frequencies`` keeps the document frequencies in the
    scope counted so far (``Postings.frequency``)."""

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
        # term -> (slots, (field, frequencies) for each field holding it), made lazily
        self._arrays: dict[str, tuple[NDArray[np.int64], _Columns]] = {}
        self._terms: dict[int, tuple[str, ...]] = {}
        self._lengths = np.zeros((64, len(self.fields)))
        self._free: list[int] = []
        self._next = 0
        self._total = np.zeros(len(self.fields))
        self._vocabulary: list[str] | None = []  # sorted terms; None: to be re-sorted
        # character trigram -> the terms (of MIN_PREFIX characters or more) holding it
        self._trigrams: dict[str, set[str]] = {}
        self._grams: dict[str, int] = {}  # such a term -> how many trigrams it has
        # (word, threshold) -> ``similar``'s answer, while the vocabulary is unchanged: a
        # conversation sends its misspellings again with every request
        self._similar: dict[tuple[str, float], list[str]] = {}

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
                self._similar.clear()
                grams = trigrams(term)
                for gram in grams:
                    self._trigrams.setdefault(gram, set()).add(term)
                if grams:
                    self._grams[term] = len(grams)
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
                self._similar.clear()
                self._grams.pop(term, None)
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
        known = self._similar.get((term, threshold))
        if known is not None:
            return list(known)
        grams = trigrams(term)
        if not grams:
            return []
        shared: Counter[str] = Counter()
        for gram in grams:
            shared.update(self._trigrams.get(gram, ()))
        found = []
        for other, common in shared.items():
            similarity = common / (len(grams) + self._grams[other] - common)
            if similarity >= threshold and other != term:
                found.append((-similarity, other))
        if len(self._similar) >= SIMILAR_MEMO:
            self._similar.clear()
        self._similar[term, threshold] = answer = [other for _, other in sorted(found)]
        return list(answer)

    def matches(self, term: str, population: NDArray[np.bool_] | None = None) -> bool:
        """Whether ``term`` occurs in any document (of ``population``, when given)."""
        if population is None:
            return bool(self._postings.get(term))
        arrays = self._arrays_of(term)
        return arrays is not None and bool(population[arrays[0]].any())

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
        scale = self._weights / np.where(norm > 0, norm, 1.0)
        return Scope(population, n, np.ascontiguousarray(scale.T))  # a field's row: one read

    def field_scores(self, term: str, slot: int, scope: Scope) -> dict[str, float]:
        """One term's BM25F score in one slot, split by field in proportion to each
        field's share of the term's weighted frequency (empty when absent)."""
        import numpy as np

        posting = self._postings.get(term)
        if not posting or slot not in posting:
            return {}
        scaled = np.asarray(posting[slot]) * scope.scale[:, slot]
        tf = float(scaled.sum())
        if tf <= 0:
            return {}
        score = (
            idf(scope.documents, self.frequency(term, scope)) * tf * (self.k1 + 1) / (tf + self.k1)
        )
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
            slots, columns = arrays
            df = self.frequency(term, scope)
            if not df:
                continue
            inside = None if population is None else population[slots]
            # the fields in order, those without the term left out (adding 0 is exact)
            f, tfs = columns[0]
            tf = tfs * scale[f].take(slots)
            for f, tfs in columns[1:]:
                tf += tfs * scale[f].take(slots)
            score = weight * idf(n, df) * tf * (self.k1 + 1) / (tf + self.k1)
            if inside is not None:
                score *= inside  # a tool outside the scope scores 0
            out[slots] += score
        return out

    def holders(self, groups: Sequence[Sequence[str]], scope: Scope) -> Holders:
        """Which tools of ``scope`` hold each of a query's ``groups`` (a query term with
        the index words it matches through): any of the group's words, in any field."""
        import numpy as np

        held = np.zeros((len(groups), self._next), dtype=bool)
        for row, group in zip(held, groups, strict=True):
            for term in group:
                arrays = self._arrays_of(term)
                if arrays is not None:
                    row[arrays[0]] = True
        population = scope.population
        if population is not None:  # the scope's mask, over every slot
            visible = np.zeros(self._next, dtype=bool)
            shared = min(self._next, len(population))
            visible[:shared] = population[:shared]
            held &= visible
        return Holders(held, [int(x) for x in held.sum(axis=1)], scope.documents)

    def frequency(self, term: str, scope: Scope) -> int:
        """How many tools of ``scope`` hold ``term`` (remembered in the scope, which
        lives as long as the index is unchanged)."""
        import numpy as np

        population = scope.population
        if population is None:
            return len(self._postings.get(term, ()))
        df = scope.frequencies.get(term)
        if df is None:
            arrays = self._arrays_of(term)
            if arrays is None:
                return 0
            df = scope.frequencies[term] = int(np.count_nonzero(population[arrays[0]]))
        return df

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
        weights = {
            term: share * idf(n, self.frequency(term, scope)) for term, share in held.items()
        }
        ranked = sorted(weights.items(), key=lambda item: (-item[1], item[0]))
        return ranked[:count]

    def _arrays_of(self, term: str) -> tuple[NDArray[np.int64], _Columns] | None:
        """A term's postings as arrays: its slots, and for each field holding it (in
        field order) the field's index and the term's frequency there per slot. Made once
        per term and kept until the term's postings change."""
        arrays = self._arrays.get(term)
        if arrays is None:
            posting = self._postings.get(term)
            if posting is None:
                return None
            import numpy as np

            frequencies = np.asarray(list(posting.values()), dtype=np.float64)
            arrays = (
                np.fromiter(posting.keys(), dtype=np.int64, count=len(posting)),
                tuple(
                    (f, np.ascontiguousarray(frequencies[:, f]))
                    for f in range(len(self.fields))
                    if frequencies[:, f].any()
                ),
            )
            self._arrays[term] = arrays
        return arrays


@dataclass(frozen=True)
class Holders:
    """Which tools of a scope hold each of a query's groups (``Postings.holders``):
    ``held`` a row per group over every slot, ``documents`` how many tools each row
    holds, ``total`` how many tools the scope has. Lexical search reads its coverage,
    the whole-task re-rank (``cover``) which needs each tool meets."""

    held: NDArray[np.bool_]
    documents: list[int]
    total: int

    def idf(self) -> list[float]:
        """Each group's idf in the scope."""
        return [idf(self.total, df) for df in self.documents]

    def coverage(self, slots: NDArray[np.intp] | None = None) -> NDArray[np.float64]:
        """Per slot (of ``slots``, when given), the share of the query's information its
        words reach: the idf of each group it holds over the sum of all groups' (a group
        no tool holds counts too: the query asked for it).

        A coordination factor, weighted by idf so a tool is not rewarded for sharing
        the query's common words. Statistics and candidates are the scope's only."""
        import numpy as np

        held = self.held if slots is None else self.held[:, slots]
        reached = np.zeros(held.shape[1])
        total = 0.0
        for row, weight in zip(held, self.idf(), strict=True):
            reached[row] += weight
            total += weight
        return reached / total if total > 0 else reached


_Columns = tuple[tuple[int, "NDArray[np.float64]"], ...]
