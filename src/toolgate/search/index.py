"""``SearchIndex``: tool search over a catalog, following the catalog's version and
re-analysing only the tools that changed; ranks within the caller's view, fuses BM25 with
embedding similarity in hybrid mode, explains a ranking and runs regex search.
The top of ``toolgate.search``: imports ``analysis``, ``postings``, ``lexical``,
``semantic``, ``latest``, ``cover`` and ``regex``. numpy, of the ``search`` extra, is
imported where it runs. No MCP imports.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from toolgate.catalog import Catalog, Group, Tool
from toolgate.embedding import Embedder, VectorCache, load_embedder
from toolgate.errors import ConfigError, InvalidArguments, short
from toolgate.search.analysis import Analyzer
from toolgate.search.cover import COVER_BELOW, COVER_WEIGHT, HYBRID_COVER_WEIGHT, Cover
from toolgate.search.latest import LONG_REQUEST, fuse, readings, tail_scores
from toolgate.search.lexical import (
    ARGUMENT_WEIGHT,
    FEEDBACK_COVERAGE,
    FEEDBACK_DOCS,
    FEEDBACK_TERMS,
    FEEDBACK_WEIGHT,
    FUZZY_SIMILARITY,
    FUZZY_WEIGHT,
    PREFIX_WEIGHT,
    ROOT_WEIGHT,
    Feedback,
    Matching,
)
from toolgate.search.postings import Holders, Postings, Scope
from toolgate.search.regex import check_pattern, compile_linear
from toolgate.search.semantic import Vectors, closest, meaning, standard, trust, unit
from toolgate.search.settings import COVERAGE_POWER, SearchMode, SearchSettings

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

MAX_LIMIT = 50


@dataclass(frozen=True)
class SearchHit:
    """One ranked result: the tool's name and its score (higher is better)."""

    name: str
    score: float


MAX_POPULATIONS = 64  # scopes remembered (one per principal's view)


@dataclass(frozen=True)
class Explanation:
    """Why a tool ranks where it does: its fused score, each signal, each BM25 field."""

    name: str
    score: float
    bm25: float
    semantic: float | None
    fields: Mapping[str, float]
    coverage: float | None = None  # hybrid: the share of the query's idf its words reach
    # lexical: the words of feedback's second query (``FEEDBACK_COVERAGE``), if any,
    # and what the tool gained by it (score = bm25 + gain)
    feedback: tuple[str, ...] = ()
    gain: float | None = None
    # hybrid, a long request (``latest``): the z-score of the tail reading the tool's BM25
    # stands best in, added to its BM25 standing on the whole request (None: read whole)
    latest: float | None = None


@dataclass(frozen=True)
class _Scored:
    """One query's scores over every slot: ``fused`` ranks (BM25 alone in lexical
    mode), ``hits`` are the candidate slots; the terms, weights and scope they came
    from are kept so ``explain`` splits the very scores ``search`` ranked by."""

    scope: Scope
    terms: list[str]
    weights: list[float]
    fused: NDArray[np.float64]
    bm25: NDArray[np.float64]
    semantic: NDArray[np.float32] | None
    hits: NDArray[np.intp]
    names: list[str]
    rank: NDArray[np.int64]
    coverage: NDArray[np.float64] | None = None  # hybrid: the share of the query's idf reached
    feedback: tuple[str, ...] = ()  # lexical: the words of feedback's second query
    gain: NDArray[np.float64] | None = None  # lexical: each slot's gain by feedback (None: none)
    holders: Holders | None = None  # which tools hold each query term or its matches
    trusted: float = 0.0  # the share of the query the embedder read (``trust``; 0: lexical)
    latest: NDArray[np.float64] | None = None  # a long request: each slot's best tail z-score


class SearchIndex:
    """BM25 (and, in hybrid mode, embedding) search over a catalog's tools; follows
    the catalog as it changes.

    >>> index = SearchIndex(catalog)
    >>> index.search("open a pull request", limit=3, allowed=view.is_accessible)
    [SearchHit(name='create_pull_request', score=...), ...]

    On each search the index compares the catalog's version with its own and
    re-analyses (and re-embeds) only the tools whose definition or groups changed.
    """

    def __init__(
        self,
        catalog: Catalog,
        settings: SearchSettings | None = None,
        *,
        prefix_weight: float = PREFIX_WEIGHT,
        root_weight: float = ROOT_WEIGHT,
        argument_weight: float = ARGUMENT_WEIGHT,
        fuzzy_weight: float = FUZZY_WEIGHT,
        fuzzy_similarity: float = FUZZY_SIMILARITY,
        coverage_power: float = COVERAGE_POWER,
        feedback_docs: int = FEEDBACK_DOCS,
        feedback_terms: int = FEEDBACK_TERMS,
        feedback_weight: float = FEEDBACK_WEIGHT,
        feedback_coverage: float = FEEDBACK_COVERAGE,
        cover_below: float = COVER_BELOW,
        cover_weight: float = COVER_WEIGHT,
        hybrid_cover_weight: float = HYBRID_COVER_WEIGHT,
        long_request: float = LONG_REQUEST,
        unseen_groups: frozenset[str] = frozenset(),
    ) -> None:
        try:
            import numpy
        except ImportError as exc:
            raise ConfigError(
                "Tool search needs the 'search' extra: pip install 'toolgate[search]'"
            ) from exc
        self.catalog = catalog
        self.settings = settings = settings or SearchSettings()
        self.unseen_groups = unseen_groups  # groups whose texts no document holds
        self.analyzer = Analyzer()
        self._matching = Matching(
            prefix_weight, root_weight, argument_weight, fuzzy_weight, fuzzy_similarity
        )
        self._coverage_power = coverage_power
        self._feedback = Feedback(feedback_docs, feedback_terms, feedback_weight, feedback_coverage)
        self._cover = Cover(cover_below, cover_weight)
        self._hybrid_cover_weight = hybrid_cover_weight
        self._long_request = long_request
        self._servers = dict(settings.servers)
        self._lock = threading.Lock()
        self._version = -1
        self._postings = Postings()
        # name -> (tool, its groups, slot); tool and groups are compared by identity
        self._docs: dict[str, tuple[Tool, tuple[Group, ...], int]] = {}
        self._slot_names: list[str] = []
        self._name_rank = numpy.zeros(0, dtype=numpy.int64)  # slot -> rank by name
        self._live = numpy.zeros(0, dtype=bool)
        # id(owner of an ``allowed`` check) -> (owner, index version, its scope)
        self._scopes: dict[int, tuple[object, int, Scope]] = {}
        self.reanalysed = 0  # tools re-analysed by the last refresh (for tests and stats)
        self.embedded = 0  # texts the embedder ran on in the last refresh (cache misses)
        self.embedder: Embedder | None = None
        self._vectors: Vectors | None = None  # slot -> unit vector (hybrid mode)
        if settings.mode == "hybrid":
            try:
                self.embedder = load_embedder(settings.embedder)
            except ConfigError as exc:  # named as the config names it
                raise ConfigError(exc.message, key="search.embedder") from exc
            cache = settings.cache
            self._vectors = Vectors(
                self.embedder, None if cache is None else VectorCache(Path(cache).expanduser())
            )

    @property
    def mode(self) -> SearchMode:
        return self.settings.mode

    # -- index maintenance -----------------------------------------------------------
    def refresh(self) -> None:
        """Bring the index up to the catalog's version (a no-op when it already is)."""
        with self._lock:
            if self._version == self.catalog.version:
                return
            version = self.catalog.version
            tools = self.catalog.tools
            group_of = self.catalog.groups
            searched = group_of.keys() - self.unseen_groups  # groups whose texts a tool holds
            postings = self._postings
            for name in [n for n in self._docs if n not in tools]:
                slot = self._docs.pop(name)[2]
                postings.remove(slot)
            reanalysed = 0
            changed: list[tuple[int, Tool]] = []
            for name, tool in tools.items():
                groups = tuple(group_of[g] for g in tool.groups if g in searched)
                old = self._docs.get(name)
                if old is not None:
                    if old[0] is tool and _same(old[1], groups):
                        continue
                    postings.remove(old[2])
                server_title = self._servers.get(tool.source or "", "")
                slot = postings.add(self.analyzer.field_terms(tool, groups, server_title))
                self._docs[name] = (tool, groups, slot)
                changed.append((slot, tool))
                reanalysed += 1
            if self._vectors is not None:
                self.embedded = self._vectors.update(changed, self._servers, postings.capacity)
            self._reorder()
            self.reanalysed = reanalysed
            self._version = version

    def _reorder(self) -> None:
        """Slot -> name and slot -> rank of the name, for results and name-ordered ties."""
        import numpy as np

        names = [""] * self._postings.capacity
        rank = np.full(self._postings.capacity, len(self._docs), dtype=np.int64)
        for i, name in enumerate(sorted(self._docs)):
            slot = self._docs[name][2]
            names[slot] = name
            rank[slot] = i
        self._slot_names, self._name_rank = names, rank
        self._live = rank < len(self._docs)  # slots holding a tool (not freed)

    def __len__(self) -> int:
        self.refresh()
        return len(self._docs)

    # -- querying --------------------------------------------------------------------
    def scope(self, allowed: Callable[[str], bool] | None) -> Scope:
        """What a search by the caller ranks within: the tools ``allowed`` accepts (None:
        every tool) and their statistics. Remembered per ``allowed`` (a view's
        ``is_accessible`` is one per view) while the index is unchanged, so a
        principal's searches pay for the access checks and the statistics once."""
        import numpy as np

        owner = getattr(allowed, "__self__", allowed)
        while True:
            with self._lock:
                names, live, version = self._slot_names, self._live, self._version
                hit = self._scopes.get(id(owner))
                if hit is not None and hit[0] is owner and hit[1] == version:
                    return hit[2]
            mask = None
            if allowed is not None:  # the caller's checks run outside the lock
                mask = np.fromiter(
                    (bool(live[slot]) and allowed(name) for slot, name in enumerate(names)),
                    dtype=bool,
                    count=len(names),
                )
            with self._lock:
                if self._version != version:
                    continue  # the index changed meanwhile and slots moved: again
                scope = self._postings.scope(mask)
                if len(self._scopes) >= MAX_POPULATIONS:
                    self._scopes.pop(next(iter(self._scopes)))
                self._scopes[id(owner)] = (owner, version, scope)
                return scope

    def _scores(self, query: str, scope: Scope) -> _Scored:
        """Every slot's scores for ``query`` within ``scope``.

        Lexical: the BM25 score, plus feedback's gain when the best match covers little
        of the query (``Feedback.gain``); candidates are the tools matching a query term
        or, then, a feedback word. Hybrid: ``w * z(BM25) + (1 - w) * z(cosine)``, each
        signal standardised over the searchable tools (z-scores put a model's cosine
        range and BM25's unbounded scale on one footing; a long request's similarity is
        that of its reading a tool matches best, ``closest``, and its BM25 standing adds
        that of its best tail, ``latest.fuse``); every such tool is a
        candidate, so a query sharing no word with a tool can still find it. Lexical
        search's own score (feedback included) ranks what the embedder cannot read: a
        tool's unread share (``Vectors.known``) in place of its similarity, the request's
        unread share (``trust``) in place of the whole (``settings.HYBRID_WEIGHT``). The scope
        (the tools the caller may see) confines the statistics as well as the
        candidates: tools outside it never move a score inside it.
        """
        import numpy as np

        population = scope.population
        argument_weight = self._matching.argument_weight
        told, trusted = None, 0.0
        if self.embedder is not None:  # what it is given of the request, so how far it counts
            told = meaning(query, argument_weight)
            trusted = trust(told, self.embedder)
        hybrid = trusted > 0
        postings = self._postings
        with self._lock:
            terms, weights, groups = self._matching.weighted_terms(
                query, self.analyzer, postings, population
            )
            # where the embedder reads the request, BM25 reads a long one's tails with it
            tails = None
            if hybrid and self._vectors is not None:
                matched = (terms, weights, groups)
                long = self._long_request
                bm25, tails = tail_scores(
                    query, self.analyzer, self._matching, postings, scope, matched, long
                )
            else:
                bm25 = postings.scores(terms, scope, weights)
            holders = postings.holders(groups, scope)  # coverage, feedback and ``Cover``
            covered = None
            if hybrid and self._coverage_power:
                covered = holders.coverage()
            names, rank = self._slot_names, self._name_rank
            vectors = None if self._vectors is None else self._vectors.matrix
            known = None if self._vectors is None else self._vectors.known
            live = self._live
            # what the embedder cannot read of the request or a tool, lexical search ranks
            unread = trusted < 1 or (known is not None and bool((known[: len(names)] < 1).any()))
            fed = None  # lexical search's own feedback: lexical mode, or a part unread
            if unread:
                fed = self._feedback.gain(postings, scope, terms, holders, bm25, rank)
        if population is not None:
            live = live & population[: len(live)]
        if not hybrid or vectors is None or not live.any():
            added, gain = fed if fed is not None else ((), None)
            fused = bm25 if gain is None else bm25 + gain
            hits = np.flatnonzero(fused > 0)
            ranked = (fused, bm25, None, hits, names, rank, None, added, gain, holders)
            return _Scored(scope, terms, weights, *ranked)
        assert self.embedder is not None and told is not None
        # the same readings as BM25's tails, each less its argument values (the whole
        # request's first: ``told``)
        later = readings(query, self._long_request)[1:]
        read = [told, *(meaning(r, argument_weight) for r in later)]
        qs = unit(np.asarray(self.embedder.embed(read), dtype=np.float32))
        # the caller's rows only: BLAS rounds a row by where it lies among the others,
        # and a long request's readings are compared over the tools the caller may see
        rows, shown = vectors[: len(names)], np.flatnonzero(live)
        cosine = np.zeros(len(names), dtype=rows.dtype)
        similarity = np.zeros(len(names), dtype=rows.dtype)
        cosine[shown], similarity[shown] = closest(rows[shown] @ qs.T)
        lexical = bm25 if covered is None else bm25 * covered**self._coverage_power
        w = self.settings.weight
        latest = None  # a long request: each tool's best tail z-score (``latest.fuse``)
        if tails is not None:
            lexical, latest = fuse(lexical, tails, live)
        lex = standard(lexical, live)
        meant = standard(similarity, live)
        if not unread:
            fused = w * lex + (1 - w) * meant
        else:
            t = 1.0 if known is None else known[: len(names)]
            gain = None if fed is None else fed[1]
            alone = standard(bm25 if gain is None else bm25 + gain, live)
            fused = w * lex + (1 - w) * (t * meant + (1 - t) * alone)
            fused = trusted * fused + (1 - trusted) * alone
        hits = np.flatnonzero(live)
        scored = _Scored(
            scope, terms, weights, fused, bm25, cosine, hits, names, rank, covered, holders=holders
        )
        return replace(scored, trusted=trusted, latest=latest)

    def _ranked(
        self, query: str, limit: int, allowed: Callable[[str], bool] | None
    ) -> tuple[list[int], _Scored]:
        """The best ``limit`` slots ``allowed`` accepts, and the scores they came from."""
        import numpy as np

        if not isinstance(query, str) or not query.strip():
            raise InvalidArguments("Search query must be a non-empty string", query=query)
        _check_limit(limit)
        self.refresh()
        scored = self._scores(query, self.scope(allowed))
        fused, hits, names, rank = scored.fused, scored.hits, scored.names, scored.rank
        cover = self._cover
        if scored.trusted > 0:  # the share the embedder read re-ranks as hybrid, the rest lexically
            mixed = scored.trusted * self._hybrid_cover_weight
            cover = replace(cover, weight=mixed + (1 - scored.trusted) * cover.weight)
        out: list[int] = []
        seen = 0
        wanted, limit = limit, max(limit, cover.pool if cover.weight else 0)
        # Sort only the best few (every tool scores in hybrid mode); widen while the
        # caller's access check leaves fewer than ``limit``.
        want = 4 * limit + 16
        while seen < len(hits) and len(out) < limit:
            want = min(len(hits), want)
            if want < len(hits):
                cut = np.partition(fused[hits], len(hits) - want)[len(hits) - want]
                batch = hits[fused[hits] >= cut]  # ties at the cut come along: exact order
            else:
                batch = hits
            ranked = batch[np.lexsort((rank[batch], -fused[batch]))]
            for slot in ranked[seen:]:
                seen += 1
                if allowed is None or allowed(names[slot]):
                    out.append(int(slot))
                    if len(out) == limit:
                        break
            if len(batch) == len(hits):
                break
            want *= 4
        if len(out) > 1 and cover.weight and scored.holders is not None:
            out = cover.rerank(out, fused, scored.holders, wanted)  # several needs: cover them
        return out[:wanted], scored

    def search(
        self,
        query: str,
        limit: int = 5,
        allowed: Callable[[str], bool] | None = None,
    ) -> list[SearchHit]:
        """The ``limit`` best tools for ``query`` that ``allowed(name)`` accepts.

        Ranked by score (BM25, or BM25 fused with embedding similarity in hybrid
        mode), ties broken by name. Lexical search returns only tools that match a
        query term or, when the best match covers little of the query, a word of the
        best matches (feedback); hybrid search may return any, when its meaning is close.
        """
        slots, scored = self._ranked(query, limit, allowed)
        return [SearchHit(scored.names[s], round(float(scored.fused[s]), 6)) for s in slots]

    def explain(
        self,
        query: str,
        limit: int = 5,
        allowed: Callable[[str], bool] | None = None,
    ) -> list[Explanation]:
        """``search``'s ranking with each tool's BM25 score split by field, and in
        hybrid mode its embedding similarity (cosine; to the reading of a long request it
        matches best, ``readings``) and the share of the query's idf
        its words reach (``coverage``; BM25 times its ``COVERAGE_POWER`` is fused); in
        lexical mode the words feedback searched with and the tool's gain by them
        (``score = bm25 + gain``). In hybrid mode a long request's ``latest`` is the
        z-score of its tail reading the tool's BM25 stands best in (``latest.fuse``).

        A field's share of a query term's BM25F score is its share of that term's
        weighted, length-normalised frequency in the tool, so the fields add up to
        ``bm25`` (a term repeated in the query counts once, a prefix match at
        ``PREFIX_WEIGHT``, a spelling match at ``FUZZY_WEIGHT`` and a shorter word
        that begins a query term at ``ROOT_WEIGHT``, as in ranking:
        the same terms, weights and statistics the ranking used).
        """
        slots, scored = self._ranked(query, limit, allowed)
        semantic, covered = scored.semantic, scored.coverage
        out: list[Explanation] = []
        for slot in slots:
            total: Counter[str] = Counter()
            with self._lock:
                for term, weight in zip(scored.terms, scored.weights, strict=True):
                    found = self._postings.field_scores(term, slot, scored.scope)
                    total.update({f: weight * v for f, v in found.items()})
            out.append(
                Explanation(
                    name=scored.names[slot],
                    score=round(float(scored.fused[slot]), 6),
                    bm25=round(float(scored.bm25[slot]), 6),
                    semantic=None if semantic is None else round(float(semantic[slot]), 6),
                    fields={f: round(v, 6) for f, v in total.items() if v},
                    coverage=None if covered is None else round(float(covered[slot]), 6),
                    feedback=scored.feedback,
                    gain=None if scored.gain is None else round(float(scored.gain[slot]), 6),
                    latest=None if scored.latest is None else round(float(scored.latest[slot]), 6),
                )
            )
        return out

    def search_regex(
        self,
        pattern: str,
        limit: int = 5,
        allowed: Callable[[str], bool] | None = None,
    ) -> list[SearchHit]:
        """Tools whose name, title or description match ``pattern`` (case-insensitive).

        Score: 3 for a name match, 2 for title, 1 for description, summed; ties by name.
        """
        check_pattern(pattern)
        _check_limit(limit)
        regex = compile_linear(pattern)
        self.refresh()
        with self._lock:
            tools = [doc[0] for doc in self._docs.values()]
        scored: list[tuple[int, str]] = []
        # only tools the caller may see are matched: the time taken says nothing about
        # what the hidden ones say
        for tool in tools:
            if allowed is not None and not allowed(tool.name):
                continue
            if score := regex.score(tool):
                scored.append((-score, tool.name))
        scored.sort()
        return [SearchHit(name, float(-neg)) for neg, name in scored[:limit]]


def _same(a: tuple[Group, ...], b: tuple[Group, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _check_limit(limit: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidArguments(
            f"limit must be an integer from 1 to {MAX_LIMIT}, got {short(repr(limit), 64)}",
            limit=limit,
        )
