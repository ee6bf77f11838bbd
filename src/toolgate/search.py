"""Tool search over a catalog: BM25 over name parts, title, description, arguments and
group text, plus a regex variant run by RE2 (linear time, no catastrophic patterns).

``SearchIndex`` owns the analysis (name-part splitting, stop words, stemming) and an
index that follows the catalog's version, re-analysing only tools that changed.
Access is the caller's: ``allowed(name)`` filters every result. Core: no MCP imports.
"""

from __future__ import annotations

import importlib
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import re2  # type: ignore[import-untyped]

from toolgate.catalog import Catalog, Group, Tool
from toolgate.errors import ConfigError, InvalidArguments

MAX_LIMIT = 50
MAX_PATTERN_LENGTH = 500

# How many times each field's tokens count in a tool's document (BM25 over one document
# per tool; repeating a field is the simple form of BM25F field weights).
FIELD_WEIGHTS: Mapping[str, int] = {
    "name": 3,
    "title": 2,
    "description": 1,
    "arguments": 1,
    "groups": 1,
}

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

_RUN = re.compile(r"[^\W_]+")  # letters and digits; "_", "-", ".", "&", ... separate
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def name_parts(text: str) -> list[str]:
    """Split identifiers into lowercase words: snake, kebab, camel, dots, digits.

    >>> name_parts("getHTTPResponse2xx.list_items-v2")
    ['get', 'http', 'response', '2', 'xx', 'list', 'items', 'v', '2']
    """
    out: list[str] = []
    for run in _RUN.findall(text):
        if (run.isalpha() and run.islower()) or run.isdigit() or not run.isascii():
            out.append(run.lower())
        else:
            out.extend(p.lower() for p in _PART.findall(run))
    return out


def words(text: str) -> list[str]:
    """Lowercase words of free text; a mixed-case word also yields its parts.

    ``"GitHub pull_request"`` gives ``github, git, hub, pull, request``, so a query
    spelled either way meets a document spelled either way.
    """
    out: list[str] = []
    for run in _RUN.findall(text):
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

    def __init__(self, stop_words: Iterable[str] = STOP_WORDS) -> None:
        try:
            stemmer_module = importlib.import_module("Stemmer")  # PyStemmer ships no types
        except ImportError as exc:
            raise ConfigError(
                "Tool search needs the 'search' extra: pip install 'toolgate[search]'"
            ) from exc
        self._stemmer: Any = stemmer_module.Stemmer("english")
        self._stop = frozenset(stop_words)
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
        kept = [t for t in tokens if t not in self._stop]
        missing = [t for t in dict.fromkeys(kept) if t not in self._stems]
        if missing:
            self._stems.update(zip(missing, self._stemmer.stemWords(missing), strict=True))
        return [self._stems[t] for t in kept]

    def query_terms(self, query: str) -> list[str]:
        return self.terms(words(query))


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
            for field in ("title", "description"):
                if isinstance(spec.get(field), str):
                    descriptions.append(spec[field])
            if depth == 0:
                inner = spec.get("items", spec)
                if isinstance(inner, Mapping):
                    walk(inner.get("properties"), depth + 1)

    walk(schema.get("properties"), 0)
    return names, descriptions


def tool_fields(tool: Tool, groups: Iterable[Group]) -> dict[str, list[tuple[str, bool]]]:
    """Each searchable field of ``tool`` as ``(text, is_identifier)`` pieces."""
    arg_names, arg_descriptions = schema_text(tool.input_schema)
    group_texts: list[tuple[str, bool]] = []
    for g in groups:
        group_texts += [(g.name, True), (g.title or "", False), (g.description, False)]
    return {
        "name": [(tool.name, True)],
        "title": [(tool.title or "", False)],
        "description": [(tool.description, False)],
        "arguments": [(n, True) for n in arg_names] + [(d, False) for d in arg_descriptions],
        "groups": group_texts,
    }


class Postings:
    """An inverted index scored with BM25 (Okapi, Lucene's idf), updated one doc at a time.

    Documents live in slots; adding or removing one touches only its own terms, so a
    catalog change costs what changed, not the catalog size. Scoring reads the posting
    arrays of the query's terms only.
    """

    def __init__(self, np: Any, k1: float, b: float) -> None:
        self._np = np
        self.k1, self.b = k1, b
        self._postings: dict[str, dict[int, int]] = {}  # term -> {slot: term frequency}
        self._arrays: dict[str, tuple[Any, Any]] = {}  # term -> (slots, tfs), built lazily
        self._terms: dict[int, Counter[str]] = {}
        self._lengths = np.zeros(64)
        self._free: list[int] = []
        self._next = 0
        self._total = 0

    def __len__(self) -> int:
        return len(self._terms)

    @property
    def capacity(self) -> int:
        return self._next

    def add(self, terms: list[str]) -> int:
        slot = self._free.pop() if self._free else self._next
        if slot == self._next:
            self._next += 1
            if self._next > len(self._lengths):
                self._lengths = self._np.concatenate([self._lengths, self._np.zeros(self._next)])
        counts = Counter(terms)
        for term, tf in counts.items():
            self._postings.setdefault(term, {})[slot] = tf
            self._arrays.pop(term, None)
        self._terms[slot] = counts
        self._lengths[slot] = len(terms)
        self._total += len(terms)
        return slot

    def remove(self, slot: int) -> None:
        counts = self._terms.pop(slot)
        for term in counts:
            posting = self._postings[term]
            del posting[slot]
            if not posting:
                del self._postings[term]
            self._arrays.pop(term, None)
        self._total -= int(self._lengths[slot])
        self._lengths[slot] = 0
        self._free.append(slot)

    def scores(self, terms: list[str]) -> Any:
        """BM25 score of every slot for ``terms`` (a repeated term counts again)."""
        np = self._np
        out = np.zeros(self._next)
        n = len(self._terms)
        if not n:
            return out
        norm = self.k1 * (1 - self.b + self.b * self._lengths[: self._next] * n / self._total)
        for term in terms:
            arrays = self._arrays.get(term)
            if arrays is None:
                posting = self._postings.get(term)
                if posting is None:
                    continue
                arrays = (
                    np.fromiter(posting.keys(), dtype=np.int64, count=len(posting)),
                    np.fromiter(posting.values(), dtype=np.float64, count=len(posting)),
                )
                self._arrays[term] = arrays
            slots, tfs = arrays
            df = len(slots)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            out[slots] += idf * tfs * (self.k1 + 1) / (tfs + norm[slots])
        return out


class SearchIndex:
    """BM25 search over a catalog's tools; follows the catalog as it changes.

    >>> index = SearchIndex(catalog)
    >>> index.search("open a pull request", limit=3, allowed=view.is_accessible)
    [SearchHit(name='create_pull_request', score=...), ...]

    On each search the index compares the catalog's version with its own and
    re-analyses only the tools whose definition or groups changed.
    """

    def __init__(
        self,
        catalog: Catalog,
        *,
        field_weights: Mapping[str, int] = FIELD_WEIGHTS,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> None:
        try:
            import numpy
        except ImportError as exc:
            raise ConfigError(
                "Tool search needs the 'search' extra: pip install 'toolgate[search]'"
            ) from exc
        self._np: Any = numpy
        self.catalog = catalog
        self.analyzer = Analyzer()
        self._weights = dict(field_weights)
        self._lock = threading.Lock()
        self._version = -1
        self._postings = Postings(numpy, k1, b)
        # name -> (tool, its groups, slot); tool and groups are compared by identity
        self._docs: dict[str, tuple[Tool, tuple[Group, ...], int]] = {}
        self._slot_names: list[str] = []
        self._name_rank: Any = numpy.zeros(0, dtype=numpy.int64)  # slot -> rank by name
        self.reanalysed = 0  # tools re-analysed by the last refresh (for tests and stats)

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
                postings.remove(self._docs.pop(name)[2])
            reanalysed = 0
            for name, tool in tools.items():
                groups = tuple(group_of[g] for g in tool.groups if g in group_of)
                old = self._docs.get(name)
                if old is not None:
                    if old[0] is tool and _same(old[1], groups):
                        continue
                    postings.remove(old[2])
                slot = postings.add(self._document(tool, groups))
                self._docs[name] = (tool, groups, slot)
                reanalysed += 1
            self._reorder()
            self.reanalysed = reanalysed
            self._version = version

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

    def _document(self, tool: Tool, groups: tuple[Group, ...]) -> list[str]:
        terms: list[str] = []
        for field, pieces in tool_fields(tool, groups).items():
            weight = self._weights.get(field, 1)
            for text, is_name in pieces:
                terms += self.analyzer.text_terms(text, name=is_name) * weight
        return terms

    def __len__(self) -> int:
        self.refresh()
        return len(self._docs)

    # -- querying --------------------------------------------------------------------
    def search(
        self,
        query: str,
        limit: int = 5,
        allowed: Callable[[str], bool] | None = None,
    ) -> list[SearchHit]:
        """The ``limit`` best tools for ``query`` that ``allowed(name)`` accepts.

        Ranked by BM25 score, ties broken by name; tools scoring 0 are never returned.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidArguments("Search query must be a non-empty string", query=query)
        _check_limit(limit)
        self.refresh()
        np = self._np
        with self._lock:
            scores = self._postings.scores(self.analyzer.query_terms(query))
            names, rank = self._slot_names, self._name_rank
        hits = np.flatnonzero(scores > 0)
        ranked = hits[np.lexsort((rank[hits], -scores[hits]))]
        out: list[SearchHit] = []
        for slot in ranked:
            name = names[slot]
            if allowed is None or allowed(name):
                out.append(SearchHit(name, round(float(scores[slot]), 6)))
                if len(out) == limit:
                    break
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


def _same(a: tuple[Group, ...], b: tuple[Group, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _check_limit(limit: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidArguments(
            f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}", limit=limit
        )
