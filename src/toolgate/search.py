"""Tool search over a catalog: BM25 over name parts, title, description, arguments and
group text, plus a regex variant.

``SearchIndex`` owns the analysis (name-part splitting, stop words, stemming) and an
index that follows the catalog's version, re-analysing only tools that changed.
Access is the caller's: ``allowed(name)`` filters every result. Core: no MCP imports.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

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
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "please",
        "want",
        "need",
        "like",
        "let",
        "get",
    ]
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
        parts = _PART.findall(run) if run.isascii() else []
        out.extend(p.lower() for p in parts) if parts else out.append(run.lower())
    return out


def words(text: str) -> list[str]:
    """Lowercase words of free text; a mixed-case word also yields its parts.

    ``"GitHub pull_request"`` gives ``github, git, hub, pull, request``, so a query
    spelled either way meets a document spelled either way.
    """
    out: list[str] = []
    for run in _RUN.findall(text):
        lower = run.lower()
        parts = [p.lower() for p in _PART.findall(run)] if run.isascii() else []
        out.append(lower)
        if len(parts) > 1:
            out.extend(parts)
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
            import Stemmer
        except ImportError as exc:
            raise ConfigError(
                "Tool search needs the 'search' extra: pip install 'toolgate[search]'"
            ) from exc
        self._stemmer: Any = Stemmer.Stemmer("english")
        self._stop = frozenset(stop_words)
        self._stems: dict[str, str] = {}

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


def tool_fields(tool: Tool, groups: Iterable[Group]) -> dict[str, list[str]]:
    """The raw tokens of each searchable field of ``tool`` (before stop words/stems)."""
    arg_names, arg_descriptions = schema_text(tool.input_schema)
    group_tokens: list[str] = []
    for g in groups:
        group_tokens += name_parts(g.name) + words(g.title or "") + words(g.description)
    return {
        "name": name_parts(tool.name),
        "title": words(tool.title or ""),
        "description": words(tool.description),
        "arguments": [p for n in arg_names for p in name_parts(n)]
        + [w for d in arg_descriptions for w in words(d)],
        "groups": group_tokens,
    }


class SearchIndex:
    """BM25 search over a catalog's tools; follows the catalog as it changes.

    >>> index = SearchIndex(catalog)
    >>> index.search("open a pull request", limit=3, allowed=view.is_accessible)
    [SearchHit(name='create_pull_request', score=7.1), ...]

    Meta-tools are not indexed. On each search the index compares the catalog's version
    with its own and re-analyses only the tools (or tool groups) that changed.
    """

    def __init__(
        self,
        catalog: Catalog,
        *,
        field_weights: Mapping[str, int] = FIELD_WEIGHTS,
        k1: float = 1.5,
        b: float = 0.75,
    ) -> None:
        try:
            import bm25s
            import numpy
        except ImportError as exc:
            raise ConfigError(
                "Tool search needs the 'search' extra: pip install 'toolgate[search]'"
            ) from exc
        self._bm25s: Any = bm25s
        self._np: Any = numpy
        self.catalog = catalog
        self.analyzer = Analyzer()
        self._weights = dict(field_weights)
        self._k1 = k1
        self._b = b
        self._lock = threading.Lock()
        self._version = -1
        # name -> (tool, its groups, index terms); tool and groups compared by identity
        self._docs: dict[str, tuple[Tool, tuple[Group, ...], list[str]]] = {}
        self._names: list[str] = []
        self._retriever: Any = None
        self._vocab: dict[str, int] = {}
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
            docs: dict[str, tuple[Tool, tuple[Group, ...], list[str]]] = {}
            reanalysed = 0
            for name in sorted(tools):
                tool = tools[name]
                if tool.is_meta:
                    continue
                groups = tuple(group_of[g] for g in tool.groups if g in group_of)
                old = self._docs.get(name)
                if old is not None and old[0] is tool and _same(old[1], groups):
                    docs[name] = old
                    continue
                docs[name] = (tool, groups, self._document(tool, groups))
                reanalysed += 1
            self._docs = docs
            self._names = list(docs)
            self._build()
            self.reanalysed = reanalysed
            self._version = version

    def _document(self, tool: Tool, groups: tuple[Group, ...]) -> list[str]:
        terms: list[str] = []
        for field, tokens in tool_fields(tool, groups).items():
            terms += self.analyzer.terms(tokens) * self._weights.get(field, 1)
        return terms

    def _build(self) -> None:
        if not self._names:
            self._retriever, self._vocab = None, {}
            return
        retriever = self._bm25s.BM25(k1=self._k1, b=self._b, method="lucene")
        corpus = [doc[2] or [""] for doc in self._docs.values()]
        retriever.index(corpus, show_progress=False)
        self._retriever, self._vocab = retriever, retriever.vocab_dict

    def __len__(self) -> int:
        self.refresh()
        return len(self._names)

    # -- querying --------------------------------------------------------------------
    def scores(self, query: str) -> dict[str, float]:
        """Every indexed tool with a positive BM25 score for ``query`` (no filtering)."""
        self.refresh()
        ids = self._term_ids(query)
        if not ids:
            return {}
        scores = self._retriever.get_scores(ids)
        return {self._names[i]: float(scores[i]) for i in self._np.flatnonzero(scores > 0)}

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
        with self._lock:
            retriever, names = self._retriever, self._names
            ids = self._term_ids(query)
        if not ids:
            return []
        np = self._np
        scores = retriever.get_scores(ids)
        hits = np.flatnonzero(scores > 0)  # ascending index == ascending name
        # argsort is stable, so equal scores keep name order
        ranked = hits[np.argsort(-scores[hits], kind="stable")]
        out: list[SearchHit] = []
        for i in ranked:
            name = names[i]
            if allowed is None or allowed(name):
                out.append(SearchHit(name, round(float(scores[i]), 6)))
                if len(out) == limit:
                    break
        return out

    def _term_ids(self, query: str) -> list[int]:
        vocab = self._vocab
        return [vocab[t] for t in self.analyzer.query_terms(query) if t in vocab]

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
        try:
            regex = re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            raise InvalidArguments(
                f"Invalid regular expression {pattern!r}: {exc}", pattern=pattern
            ) from exc
        self.refresh()
        scored: list[tuple[float, str]] = []
        for tool in self._tools():
            score = (
                3 * bool(regex.search(tool.name))
                + 2 * bool(tool.title and regex.search(tool.title))
                + bool(regex.search(tool.description))
            )
            if score and (allowed is None or allowed(tool.name)):
                scored.append((-score, tool.name))
        scored.sort()
        return [SearchHit(name, float(-neg)) for neg, name in scored[:limit]]

    def _tools(self) -> Iterator[Tool]:
        with self._lock:
            docs = list(self._docs.values())
        return (doc[0] for doc in docs)


def _same(a: tuple[Group, ...], b: tuple[Group, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _check_limit(limit: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidArguments(
            f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}", limit=limit
        )
