"""Tool search over a catalog: BM25F over name parts, title, description, arguments,
group text and the backend server, optionally fused with embeddings; plus a regex variant
run by RE2 (linear time, no catastrophic patterns).

``SearchIndex`` owns the analysis (name-part splitting, CJK n-grams, stop words,
stemming, prefix, root and spelling matches, argument values in queries), an index that
follows the catalog's version re-analysing only tools that changed, and the fusion with
``toolgate.embedding`` vectors in hybrid mode.
Access is the caller's: ``allowed(name)`` filters every result. Core: no MCP imports.
"""

from __future__ import annotations

import bisect
import importlib
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import re2  # type: ignore[import-untyped]

from toolgate.catalog import Catalog, Group, Tool
from toolgate.embedding import Embedder, VectorCache, load_embedder
from toolgate.errors import ConfigError, InvalidArguments

MAX_LIMIT = 50

# A query word of at least MIN_PREFIX characters also matches the longer index words it
# begins, at PREFIX_WEIGHT of a full match ("crypto" -> "cryptocurrencies", "auth" ->
# "authentication"): compounds and derived forms the stemmer leaves apart. PREFIX_WEIGHT
# was chosen on the development halves of the evaluation sets (benchmarks/search_eval.py
# --tune sweeps it); MIN_PREFIX = 4 was set by hand (3-letter words prefix too much) and
# is not swept.
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
MAX_PATTERN_LENGTH = 500

# What a term's (length-normalised) frequency in each field counts for in BM25F, and
# BM25's saturation (K1) and length normalisation (B). Other weights, k1 from 0.9 to 2.0
# and b from 0.5 to 0.9 were measured on the development halves of the evaluation sets
# and none was better on all of them (docs/decisions.md, "Tool search").
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

# A general English stop list: function words, pronouns and auxiliaries that say
# nothing about what a tool does ("Can you help me ...", "How do I ...").
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves please want need let
    """.split()  # noqa: SIM905 -- a word list reads better as words
)

# Words of task-shaped queries that say how a request is phrased, not which tool it
# needs ("I'm looking for ...", "could you provide some ..."): dropped from queries only.
# Derived, not hand-picked: benchmarks/derive_task_words.py keeps the frequent query
# words whose gold tools are spread evenly (normalised entropy >= 0.9) on the
# development half of MetaTool (never the evaluation halves or other sets).
TASK_WORDS = frozenset(
    """
    detailed help including like looking provide specific specifically
    """.split()  # noqa: SIM905 -- a word list reads better as words
)

# Scripts written without spaces between words (Han, kana, Hangul syllables, Thai, Lao,
# Tibetan, Myanmar, Khmer): their runs are indexed as character unigrams and bigrams,
# the usual CJK analysis, since there are no word boundaries to split on.
_UNSPACED = (
    "\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
)
_SEGMENT = re.compile(f"([{_UNSPACED}]+)|([^{_UNSPACED}]+)")
_UNSPACED_RUN = re.compile(f"[{_UNSPACED}]+")

# Argument values in a task-shaped query: quoted text, URLs, paths and file names ("edit
# './src/app.py'", "open https://example.com"). They are what the tool is to be called
# with, not what it does, so their words count for ARGUMENT_WEIGHT of a query word and
# stay out of the query's embedding. Chosen on the development halves of the
# evaluation sets (benchmarks/search_eval.py --tune sweeps it).
ARGUMENT_WEIGHT = 0.3
_ARGUMENT = re.compile(
    r"""(?<![\w'"`])(['"`])(?:(?!\1).)+\1(?![\w'"`])"""  # 'quoted', "quoted", `quoted`
    r"|\S*://\S*"  # URLs
    r"|\S*[/\\]\S*"  # paths
    r"|\b[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}\b"  # file and host names: app.py, example.com
)
_RUN = re.compile(r"[^\W_]+")  # letters and digits; "_", "-", ".", "&", ... separate
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def argument_values(query: str) -> tuple[str, str]:
    """``query`` without its argument values (quoted text, URLs, paths, file names),
    and those values.

    >>> argument_values("Replace 'foo' with 'bar' in ./src/app.py")
    ('Replace   with   in  ', "'foo' 'bar' ./src/app.py")
    """
    values = " ".join(m.group(0) for m in _ARGUMENT.finditer(query))
    return _ARGUMENT.sub(" ", query), values


def name_parts(text: str) -> list[str]:
    """Split identifiers into lowercase words: snake, kebab, camel, dots, digits.

    >>> name_parts("getHTTPResponse2xx.list_items-v2")
    ['get', 'http', 'response', '2', 'xx', 'list', 'items', 'v', '2']
    """
    out: list[str] = []
    for run in _runs(text):
        if (run.isalpha() and run.islower()) or run.isdigit() or not run.isascii():
            out.append(run.lower())
        else:
            out.extend(p.lower() for p in _PART.findall(run))
    return out


def _runs(text: str) -> Iterable[str]:
    """Letter-and-digit runs of ``text``; runs of unspaced scripts become n-grams."""
    for run in _RUN.findall(text):
        if run.isascii():
            yield run
            continue
        for unspaced, spaced in _SEGMENT.findall(run):
            if spaced:
                yield spaced
            else:
                yield from char_ngrams(unspaced)


def trigrams(term: str) -> frozenset[str]:
    """A term's character trigrams, for terms of ``MIN_PREFIX`` characters or more.

    >>> sorted(trigrams("colour"))
    ['col', 'lou', 'olo', 'our']
    """
    if len(term) < MIN_PREFIX:
        return frozenset()
    return frozenset(term[i : i + 3] for i in range(len(term) - 2))


def char_ngrams(text: str) -> list[str]:
    """Character unigrams and bigrams of a run without word boundaries.

    >>> char_ngrams("搜索网页")
    ['搜', '索', '网', '页', '搜索', '索网', '网页']
    """
    return list(text) + [text[i : i + 2] for i in range(len(text) - 1)]


def words(text: str) -> list[str]:
    """Lowercase words of free text; a mixed-case word also yields its parts.

    ``"GitHub pull_request"`` gives ``github, git, hub, pull, request``, so a query
    spelled either way meets a document spelled either way.
    """
    out: list[str] = []
    for run in _runs(text):
        out.append(run.lower())
        if (run.isalpha() and run.islower()) or run.isdigit() or not run.isascii():
            continue
        parts = _PART.findall(run)
        if len(parts) > 1:
            out.extend(p.lower() for p in parts)
    return out


@dataclass(frozen=True)
class SearchHit:
    """One ranked result: the tool's name and its score (higher is better)."""

    name: str
    score: float


class Analyzer:
    """Text to index terms: stop words dropped, Snowball English stems (PyStemmer)."""

    def __init__(
        self, stop_words: Iterable[str] = STOP_WORDS, task_words: Iterable[str] = TASK_WORDS
    ) -> None:
        try:
            stemmer_module = importlib.import_module("Stemmer")  # PyStemmer ships no types
        except ImportError as exc:
            raise ConfigError(
                "Tool search needs the 'search' extra: pip install 'toolgate[search]'"
            ) from exc
        self._stemmer: Any = stemmer_module.Stemmer("english")
        self._stop = frozenset(stop_words)
        self._task_words = frozenset(task_words)
        self._stems: dict[str, str] = {}
        # Catalogs repeat texts (argument docs, group text per member): analyse each once.
        self._texts: dict[tuple[bool, str], list[str]] = {}

    def text_terms(self, text: str, *, name: bool = False) -> list[str]:
        """Index terms of ``text``; ``name=True`` splits it as an identifier."""
        key = (name, text)
        cached = self._texts.get(key)
        if cached is None:
            if len(self._texts) >= 100_000:
                self._texts.clear()
            cached = self.terms(name_parts(text) if name else words(text))
            self._texts[key] = cached
        return cached

    def terms(self, tokens: Iterable[str]) -> list[str]:
        """Stems of ``tokens`` less stop words and one-letter tokens (a lone CJK
        character is a word, so it stays)."""
        kept = [t for t in tokens if t not in self._stop and (len(t) > 1 or _is_unspaced(t))]
        missing = [t for t in dict.fromkeys(kept) if t not in self._stems]
        if missing:
            self._stems.update(zip(missing, self._stemmer.stemWords(missing), strict=True))
        return [self._stems[t] for t in kept]

    def query_terms(self, query: str) -> list[str]:
        """A query's terms, each once, less task boilerplate (``TASK_WORDS``).

        Counting a term once keeps a word repeated in a long task from outweighing the
        rest; dropping phrasing words keeps "could you find me ..." from matching
        every tool that says "find".
        """
        tokens = [t for t in words(query) if t not in self._task_words]
        return list(dict.fromkeys(self.terms(tokens)))


def _is_unspaced(token: str) -> bool:
    return _UNSPACED_RUN.fullmatch(token) is not None


def schema_text(schema: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(argument names, argument descriptions) from ``properties``, one nesting level deep."""
    names: list[str] = []
    descriptions: list[str] = []

    def walk(props: Any, depth: int) -> None:
        if not isinstance(props, Mapping):
            return
        for key, spec in props.items():
            names.append(str(key))
            if not isinstance(spec, Mapping):
                continue
            for key_ in ("title", "description"):
                if isinstance(spec.get(key_), str):
                    descriptions.append(spec[key_])
            if depth == 0:
                inner = spec.get("items", spec)
                if isinstance(inner, Mapping):
                    walk(inner.get("properties"), depth + 1)

    walk(schema.get("properties"), 0)
    return names, descriptions


def tool_fields(
    tool: Tool, groups: Iterable[Group], server_title: str = ""
) -> dict[str, list[tuple[str, bool]]]:
    """Each searchable field of ``tool`` as ``(text, is_identifier)`` pieces.

    ``server`` is the backend the tool comes from (``Tool.source``, the gateway's
    server key) and that server's title, when known.
    """
    arg_names, arg_descriptions = schema_text(tool.input_schema)
    group_texts: list[tuple[str, bool]] = []
    for g in groups:
        group_texts += [(g.name, True), (g.title or "", False), (g.description, False)]
    server: list[tuple[str, bool]] = []
    if tool.source:
        server = [(tool.source, True), (server_title, False)]
    return {
        "name": [(tool.name, True)],
        "title": [(tool.title or "", False)],
        "description": [(tool.description, False)],
        "arguments": [(n, True) for n in arg_names] + [(d, False) for d in arg_descriptions],
        "groups": group_texts,
        "server": server,
    }


# What each part of a tool's text weighs in its vector (hybrid mode): the parts are
# embedded apart and their unit vectors summed with these weights, so a long
# description does not drown the name, and a server's name, shared by all its tools,
# does not make them all alike. Compared on the development halves of the evaluation
# sets by hand (one text against parts, a few weightings); --tune does not sweep them.
EMBEDDING_PARTS: Mapping[str, float] = {
    "name": 1.0,
    "description": 2.0,
    "server": 0.5,
    "arguments": 0.5,
}
# The ``tool_fields`` each embedded part is made of (group text is not embedded: it is
# shared by every member, like the server, and says what the group is, not the tool).
_PART_FIELDS: Mapping[str, tuple[str, ...]] = {
    "name": ("name", "title"),
    "description": ("description",),
    "server": ("server",),
    "arguments": ("arguments",),
}


def embedding_texts(tool: Tool, server_title: str = "", max_chars: int = 2000) -> dict[str, str]:
    """The texts a tool's vector is made of, by part (``EMBEDDING_PARTS``), from the
    same ``tool_fields`` lexical search indexes: identifiers as words, empty parts
    left out.

    >>> embedding_texts(Tool("send_email", "Send an email."))
    {'name': 'send email', 'description': 'Send an email.'}
    """
    fields = tool_fields(tool, (), server_title)
    out = {}
    for part, names in _PART_FIELDS.items():
        pieces = [
            " ".join(name_parts(text)) if is_name else text.strip()
            for field_name in names
            for text, is_name in fields[field_name]
        ]
        text = " ".join(p for p in pieces if p)[:max_chars]
        if text:
            out[part] = text
    return out


@dataclass(frozen=True)
class Scope:
    """What a search ranks within: the caller's tools (``population``, a boolean mask
    of slots; None: every tool), their number and the slot x field factor on a raw
    term frequency (field weight over length normalisation). Made once per view while
    the index is unchanged. ``frequencies`` keeps the document frequencies in the
    scope that feedback has counted (``Postings.related``)."""

    population: Any
    documents: int
    scale: Any
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
        self, np: Any, fields: Sequence[str], weights: Mapping[str, float], k1: float, b: float
    ) -> None:
        self._np = np
        self.fields = tuple(fields)
        self.k1, self.b = k1, b
        self._weights = np.asarray([float(weights.get(f, 1.0)) for f in self.fields])
        # term -> {slot: frequency per field}
        self._postings: dict[str, dict[int, tuple[int, ...]]] = {}
        self._arrays: dict[str, tuple[Any, Any]] = {}  # term -> (slots, tf matrix), lazily
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
        np = self._np
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

    def matches(self, term: str, population: Any = None) -> bool:
        """Whether ``term`` occurs in any document (of ``population``, when given)."""
        posting = self._postings.get(term)
        if not posting:
            return False
        return population is None or any(population[slot] for slot in posting)

    def scope(self, population: Any = None) -> Scope:
        """The statistics of the index, or of the documents in ``population`` (a boolean
        mask of slots): what ``scores`` and ``field_scores`` rank within."""
        np = self._np
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
        posting = self._postings.get(term)
        if not posting or slot not in posting:
            return {}
        n, population = scope.documents, scope.population
        df = len(posting) if population is None else sum(1 for s in posting if population[s])
        scaled = self._np.asarray(posting[slot]) * scope.scale[slot]
        tf = float(scaled.sum())
        if tf <= 0:
            return {}
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        score = idf * tf * (self.k1 + 1) / (tf + self.k1)
        return {f: score * float(x) / tf for f, x in zip(self.fields, scaled, strict=True) if x}

    def scores(self, terms: Sequence[str], scope: Scope, weights: Sequence[float] = ()) -> Any:
        """BM25F score of every slot for ``terms`` (a repeated term counts again), each
        term's score times its entry in ``weights`` when given.

        Only the documents of ``scope`` are scored and the statistics (document count,
        average field lengths, document frequencies) are theirs, so what lies outside
        it cannot move a score inside it."""
        np = self._np
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

    def coverage(self, groups: Sequence[Sequence[str]], scope: Scope) -> Any:
        """Per slot, the share of a query's information its words reach: each group (a
        query term with the index words it matches through) counts its idf in the
        scope, the idf of every slot holding any of its words, over the sum of all.

        A coordination factor, weighted by idf so a tool is not rewarded for sharing
        the query's common words. Statistics and candidates are the scope's only."""
        np = self._np
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

    def _arrays_of(self, term: str) -> tuple[Any, Any] | None:
        """A term's postings as arrays (its slots, their frequencies per field), made
        once per term and kept until the term's postings change."""
        arrays = self._arrays.get(term)
        if arrays is None:
            posting = self._postings.get(term)
            if posting is None:
                return None
            np = self._np
            arrays = (
                np.fromiter(posting.keys(), dtype=np.int64, count=len(posting)),
                np.asarray(list(posting.values()), dtype=np.float64),
            )
            self._arrays[term] = arrays
        return arrays


SearchMode = Literal["lexical", "hybrid"]

# Hybrid score = HYBRID_WEIGHT * z(BM25 * coverage ** COVERAGE_POWER)
#              + (1 - HYBRID_WEIGHT) * z(cosine),
# coverage being the share of the query's idf a tool's words reach (``Postings.coverage``),
# so the lexical signal favours the tools that cover the request over one that shares a
# single rare word with it. Both chosen on the development halves of the evaluation sets
# (benchmarks/search_eval.py --tune), among the settings that beat lexical search and the
# setting before on every set (docs/decisions.md, "Coverage in hybrid search").
HYBRID_WEIGHT = 0.2
COVERAGE_POWER = 2.0
MAX_POPULATIONS = 64  # scopes remembered (one per principal's view)


@dataclass(frozen=True)
class SearchSettings:
    """How ``search_tools`` ranks: ``lexical`` (BM25) or ``hybrid`` (BM25 + embeddings).

    ``embedder`` is an ``Embedder`` or a spec for ``load_embedder`` (default: the
    WordLlama model the ``semantic`` extra ships); ``cache`` a file for tool vectors
    (none: vectors live in memory only); ``servers`` maps a backend's key to its title.

    >>> ToolSet(search=SearchSettings("hybrid", cache="~/.cache/toolgate/vectors.sqlite"))
    """

    mode: SearchMode = "lexical"
    embedder: Embedder | str | None = None
    cache: str | Path | None = None
    weight: float = HYBRID_WEIGHT
    servers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mode not in ("lexical", "hybrid"):
            raise ConfigError(
                f"search mode must be 'lexical' or 'hybrid', got {self.mode!r}", key="search.mode"
            )
        if isinstance(self.weight, bool) or not isinstance(self.weight, int | float):
            raise ConfigError(f"search weight must be a number, got {self.weight!r}")
        if not 0.0 <= self.weight <= 1.0:
            raise ConfigError(f"search weight must be from 0 to 1, got {self.weight!r}")


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


@dataclass(frozen=True)
class _Scored:
    """One query's scores over every slot: ``fused`` ranks (BM25 alone in lexical
    mode), ``hits`` are the candidate slots; the terms, weights and scope they came
    from are kept so ``explain`` splits the very scores ``search`` ranked by."""

    scope: Scope
    terms: list[str]
    weights: list[float]
    fused: Any
    bm25: Any
    semantic: Any
    hits: Any
    names: list[str]
    rank: Any
    coverage: Any = None  # hybrid: the share of the query's idf each slot reaches
    feedback: tuple[str, ...] = ()  # lexical: the words of feedback's second query
    gain: Any = None  # lexical: what each slot gained by feedback (None: no feedback)


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
    ) -> None:
        try:
            import numpy
        except ImportError as exc:
            raise ConfigError(
                "Tool search needs the 'search' extra: pip install 'toolgate[search]'"
            ) from exc
        self._np: Any = numpy
        self.catalog = catalog
        self.settings = settings = settings or SearchSettings()
        self.analyzer = Analyzer()
        self._prefix_weight = prefix_weight
        self._root_weight = root_weight
        self._argument_weight = argument_weight
        self._fuzzy_weight = fuzzy_weight
        self._fuzzy_similarity = fuzzy_similarity
        self._coverage_power = coverage_power
        self._feedback = (feedback_docs, feedback_terms, feedback_weight, feedback_coverage)
        self._servers = dict(settings.servers)
        self._lock = threading.Lock()
        self._version = -1
        self._postings = Postings(numpy, list(FIELD_WEIGHTS), FIELD_WEIGHTS, K1, B)
        # name -> (tool, its groups, slot); tool and groups are compared by identity
        self._docs: dict[str, tuple[Tool, tuple[Group, ...], int]] = {}
        self._slot_names: list[str] = []
        self._name_rank: Any = numpy.zeros(0, dtype=numpy.int64)  # slot -> rank by name
        self._live: Any = numpy.zeros(0, dtype=bool)
        # id(owner of an ``allowed`` check) -> (owner, index version, its scope)
        self._scopes: dict[int, tuple[Any, int, Scope]] = {}
        self.reanalysed = 0  # tools re-analysed by the last refresh (for tests and stats)
        self.embedded = 0  # texts the embedder ran on in the last refresh (cache misses)
        self.embedder: Embedder | None = None
        self._cache: VectorCache | None = None
        self._vectors: Any = None  # slot -> unit vector (hybrid mode)
        if settings.mode == "hybrid":
            self.embedder = load_embedder(settings.embedder)
            if settings.cache is not None:
                self._cache = VectorCache(Path(settings.cache).expanduser())

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
            postings = self._postings
            for name in [n for n in self._docs if n not in tools]:
                slot = self._docs.pop(name)[2]
                postings.remove(slot)
            reanalysed = 0
            changed: list[tuple[int, Tool]] = []
            for name, tool in tools.items():
                groups = tuple(group_of[g] for g in tool.groups if g in group_of)
                old = self._docs.get(name)
                if old is not None:
                    if old[0] is tool and _same(old[1], groups):
                        continue
                    postings.remove(old[2])
                slot = postings.add(self._field_terms(tool, groups))
                self._docs[name] = (tool, groups, slot)
                changed.append((slot, tool))
                reanalysed += 1
            if self.embedder is not None:
                self._embed(changed)
            self._reorder()
            self.reanalysed = reanalysed
            self._version = version

    def _embed(self, changed: list[tuple[int, Tool]]) -> None:
        """Vectors for the changed tools' slots, each the weighted sum of its parts'
        unit vectors (``EMBEDDING_PARTS``); a part's vector comes from the cache, else
        from the embedder."""
        np = self._np
        assert self.embedder is not None
        model = self.embedder.model_id
        parts = {
            slot: embedding_texts(t, self._servers.get(t.source or "", "")) for slot, t in changed
        }
        texts = list(dict.fromkeys(text for p in parts.values() for text in p.values()))
        keys = {text: VectorCache.key(model, text) for text in texts}
        cached = self._cache.get(list(keys.values())) if self._cache else {}
        found: dict[str, Any] = {
            t: np.frombuffer(cached[k], dtype=np.float32) for t, k in keys.items() if k in cached
        }
        missing = [t for t in texts if t not in found]
        if missing:
            rows = _unit(np, np.asarray(self.embedder.embed(missing), dtype=np.float32))
            if rows.shape[0] != len(missing):
                raise ConfigError(
                    f"embedder {model!r} returned {rows.shape[0]} vectors for {len(missing)} texts"
                )
            fresh = dict(zip(missing, rows, strict=True))
            if self._cache is not None:
                self._cache.put([(keys[t], v.tobytes()) for t, v in fresh.items()])
            found.update(fresh)
        self.embedded = len(missing)
        vectors: dict[int, Any] = {}
        for slot, by_part in parts.items():
            if not by_part:  # a tool with no text at all: the zero vector matches nothing
                vectors[slot] = None
                continue
            total = sum(
                EMBEDDING_PARTS.get(part, 1.0) * found[text] for part, text in by_part.items()
            )
            vectors[slot] = _unit(np, np.asarray([total], dtype=np.float32))[0]
        capacity = self._postings.capacity
        dims = [v.shape[0] for v in vectors.values() if v is not None]
        if dims and (self._vectors is None or self._vectors.shape[1] != dims[0]):
            self._vectors = np.zeros((capacity, dims[0]), dtype=np.float32)
        if self._vectors is not None and self._vectors.shape[0] < capacity:
            grown = np.zeros((capacity, self._vectors.shape[1]), dtype=np.float32)
            grown[: self._vectors.shape[0]] = self._vectors
            self._vectors = grown
        if self._vectors is not None:
            for slot, vector in vectors.items():
                self._vectors[slot] = 0.0 if vector is None else vector

    def _reorder(self) -> None:
        """Slot -> name and slot -> rank of the name, for results and name-ordered ties."""
        np = self._np
        names = [""] * self._postings.capacity
        rank = np.full(self._postings.capacity, len(self._docs), dtype=np.int64)
        for i, name in enumerate(sorted(self._docs)):
            slot = self._docs[name][2]
            names[slot] = name
            rank[slot] = i
        self._slot_names, self._name_rank = names, rank
        self._live = rank < len(self._docs)  # slots holding a tool (not freed)

    def _field_terms(self, tool: Tool, groups: tuple[Group, ...]) -> dict[str, list[str]]:
        server_title = self._servers.get(tool.source or "", "")
        out: dict[str, list[str]] = {}
        for field_name, pieces in tool_fields(tool, groups, server_title).items():
            terms: list[str] = []
            for text, is_name in pieces:
                terms += self.analyzer.text_terms(text, name=is_name)
            out[field_name] = terms
        return out

    def __len__(self) -> int:
        self.refresh()
        return len(self._docs)

    # -- querying --------------------------------------------------------------------
    def scope(self, allowed: Callable[[str], bool] | None) -> Scope:
        """What a search by the caller ranks within: the tools ``allowed`` accepts (None:
        every tool) and their statistics. Remembered per ``allowed`` (a view's
        ``is_accessible`` is one per view) while the index is unchanged, so a
        principal's searches pay for the access checks and the statistics once."""
        owner = getattr(allowed, "__self__", allowed)
        np = self._np
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

    def _weighted_terms(
        self, query: str, population: Any = None
    ) -> tuple[list[str], list[float], list[list[str]]]:
        """The query's terms (weight 1, ``ARGUMENT_WEIGHT`` for a term only found in
        argument values), the longer index words they begin (``PREFIX_WEIGHT``), for a
        term that reaches no tool of ``population`` either way the index words spelled
        like it (``FUZZY_WEIGHT``), then the shorter index words that begin a term
        (``ROOT_WEIGHT``); each term once, a match through a term at that term's weight
        times the match's. Also each query term's group: it and the words it matches
        through (for ``Postings.coverage``). Call with the lock held."""
        postings = self._postings
        terms = self.analyzer.query_terms(query)
        weights = [1.0] * len(terms)
        rest, values = argument_values(query)
        if values and self._argument_weight != 1.0:
            told = set(self.analyzer.query_terms(rest))
            weights = [1.0 if t in told else self._argument_weight for t in terms]
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
            longer = postings.extensions(term) if self._prefix_weight else []
            extend(longer, weight * self._prefix_weight, group)
            if (
                self._fuzzy_weight
                and len(term) >= MIN_PREFIX
                and not postings.matches(term, population)
                and not any(postings.matches(t, population) for t in longer)
            ):
                similar = postings.similar(term, self._fuzzy_similarity)
                extend(similar, weight * self._fuzzy_weight, group)
        if self._root_weight:
            for term, weight, group in asked:
                extend(postings.roots(term), weight * self._root_weight, group)
        return terms, weights, groups

    def _meaning(self, query: str) -> str:
        """What the query embedding reads: the query less its argument values (all of
        it when that leaves no words)."""
        if self._argument_weight == 1.0:
            return query
        rest, values = argument_values(query)
        return rest if values and words(rest) else query

    def _scores(self, query: str, scope: Scope) -> _Scored:
        """Every slot's scores for ``query`` within ``scope``.

        Lexical: the BM25 score, plus feedback's gain when the best match covers little
        of the query (``_fed_back``); candidates are the tools matching a query term or,
        then, a feedback word. Hybrid:
        ``w * z(BM25) + (1 - w) * z(cosine)``, each signal standardised over the
        searchable tools (z-scores put a model's cosine range and BM25's unbounded
        scale on one footing); every such tool is a candidate, so a query sharing no
        word with a tool can still find it. The scope (the tools the caller may see)
        confines the statistics as well as the candidates: tools outside it never move
        a score inside it.
        """
        np = self._np
        population = scope.population
        hybrid = self.embedder is not None
        with self._lock:
            terms, weights, groups = self._weighted_terms(query, population)
            bm25 = self._postings.scores(terms, scope, weights)
            covered = None
            if hybrid and self._coverage_power:
                covered = self._postings.coverage(groups, scope)
            names, rank = self._slot_names, self._name_rank
            vectors, live = self._vectors, self._live
            fed = None if hybrid else self._fed_back(scope, terms, groups, bm25)
        if population is not None:
            live = live & population[: len(live)]
        if not hybrid or vectors is None or not live.any():
            added, gain = fed if fed is not None else ((), None)
            fused = bm25 if gain is None else bm25 + gain
            hits = np.flatnonzero(fused > 0)
            return _Scored(
                scope, terms, weights, fused, bm25, None, hits, names, rank, None, added, gain
            )
        assert self.embedder is not None
        embedded = self.embedder.embed([self._meaning(query)])
        q = _unit(np, np.asarray(embedded, dtype=np.float32))[0]
        cosine = vectors[: len(names)] @ q
        lexical = bm25 if covered is None else bm25 * covered**self._coverage_power
        w = self.settings.weight
        fused = w * _standard(np, lexical, live) + (1 - w) * _standard(np, cosine, live)
        return _Scored(
            scope,
            terms,
            weights,
            fused,
            bm25,
            cosine,
            np.flatnonzero(live),
            names,
            rank,
            covered,
        )

    def _fed_back(
        self, scope: Scope, terms: list[str], groups: list[list[str]], bm25: Any
    ) -> tuple[tuple[str, ...], Any] | None:
        """Pseudo-relevance feedback for the lexical scores ``bm25``: when the best
        match reaches less than ``FEEDBACK_COVERAGE`` of the query's idf, the most
        telling words of the ``FEEDBACK_DOCS`` best matches (``Postings.related``) are
        scored as a second query, the most telling at ``FEEDBACK_WEIGHT`` of a query
        word and the others in proportion, and each tool's score for them is added to
        its own. The best matches the words came from are credited with the most any
        tool gained, so they keep their places and feedback ranks the tools after
        them: it widens what is found without reordering what the request itself
        found. Returns the words and each slot's gain (None: no feedback). The best
        matches are the scope's (only its tools score), ties by name. Call with the
        lock held."""
        np = self._np
        docs, count, weight, threshold = self._feedback
        hits = np.flatnonzero(bm25 > 0)
        if not weight or not count or not docs or not len(hits):
            return None
        best = hits[np.lexsort((self._name_rank[hits], -bm25[hits]))][:docs]
        if self._postings.coverage(groups, scope)[best[0]] >= threshold:
            return None
        top = bm25[best]
        shares = [float(x) for x in top / top.sum()]
        related = self._postings.related([int(x) for x in best], shares, scope, terms, count)
        if not related:
            return None
        strongest = related[0][1]
        added = [term for term, _ in related]
        gain = self._postings.scores(added, scope, [weight * w / strongest for _, w in related])
        gain[best] = gain.max()
        return tuple(added), gain

    def _ranked(
        self, query: str, limit: int, allowed: Callable[[str], bool] | None
    ) -> tuple[list[int], _Scored]:
        """The best ``limit`` slots ``allowed`` accepts, and the scores they came from."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidArguments("Search query must be a non-empty string", query=query)
        _check_limit(limit)
        self.refresh()
        np = self._np
        scored = self._scores(query, self.scope(allowed))
        fused, hits, names, rank = scored.fused, scored.hits, scored.names, scored.rank
        out: list[int] = []
        seen = 0
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
        return out, scored

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
        hybrid mode its embedding similarity (cosine) and the share of the query's idf
        its words reach (``coverage``; BM25 times its ``COVERAGE_POWER`` is fused); in
        lexical mode the words feedback searched with and the tool's gain by them
        (``score = bm25 + gain``).

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
        if not isinstance(pattern, str) or not pattern.strip():
            raise InvalidArguments("Search pattern must be a non-empty string", pattern=pattern)
        if len(pattern) > MAX_PATTERN_LENGTH:
            raise InvalidArguments(
                f"Search pattern is {len(pattern)} characters; the limit is {MAX_PATTERN_LENGTH}",
                pattern=pattern[:64],
            )
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
            score = (
                3 * regex.matches(tool.name)
                + 2 * regex.matches(tool.title or "")
                + regex.matches(tool.description)
            )
            if score:
                scored.append((-score, tool.name))
        scored.sort()
        return [SearchHit(name, float(-neg)) for neg, name in scored[:limit]]


@dataclass(frozen=True)
class LinearRegex:
    """A case-insensitive pattern run by RE2: time linear in the text, whatever the
    pattern (no backtracking, so no catastrophic patterns; no backreferences either)."""

    compiled: Any

    def matches(self, text: str) -> int:
        """1 when the pattern occurs in ``text``, else 0."""
        if not text:
            return 0
        try:
            return int(self.compiled.search(text) is not None)
        except UnicodeEncodeError:  # text RE2 cannot take (a lone surrogate) never matches
            return 0


def compile_linear(pattern: str) -> LinearRegex:
    """``pattern`` for RE2, or ``InvalidArguments`` naming what is wrong with it."""
    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False
    try:
        return LinearRegex(re2.compile(pattern, options))
    except UnicodeEncodeError:
        raise InvalidArguments(
            f"Invalid regular expression {pattern!r}: it holds a character that is not "
            "valid Unicode (a lone surrogate)",
            pattern=pattern[:64],
        ) from None
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise InvalidArguments(
            f"Invalid regular expression {pattern!r}: {reason} (RE2 syntax: no "
            "backreferences or lookaround)",
            pattern=pattern[:64],
        ) from None


def _standard(np: Any, x: Any, live: Any) -> Any:
    """``x`` as z-scores over the live slots (all zero when ``x`` is constant there)."""
    n = int(live.sum())
    mean = float((x * live).sum()) / n
    std = float(np.sqrt((((x - mean) ** 2) * live).sum() / n))
    return (x - mean) / std if std > 0 else np.zeros(len(x))


def _unit(np: Any, rows: Any) -> Any:
    """Rows scaled to unit length (zero rows stay zero)."""
    if rows.ndim != 2:
        raise ConfigError(f"an embedder must return a 2-D array, got shape {rows.shape}")
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms > 0, norms, 1.0)


def _same(a: tuple[Group, ...], b: tuple[Group, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _check_limit(limit: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidArguments(
            f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}", limit=limit
        )
