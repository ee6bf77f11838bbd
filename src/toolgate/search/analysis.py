"""Text analysis for tool search: words and identifier parts in any script, stop and task
words, argument values in a query, Snowball stems (PyStemmer, the ``search`` extra) and
the searchable fields of a tool.

The bottom of ``toolgate.search``: imports the catalog's types and the errors, nothing
else of the package. No MCP imports.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from toolgate.catalog import Group, Tool
from toolgate.errors import ConfigError

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
# with, not what it does: lexical search weighs their words down (``ARGUMENT_WEIGHT``)
# and the query's embedding leaves them out.
_LATIN = "A-Za-z0-9\u00c0-\u024f"  # where an apostrophe is part of a word (it's, O'Neil)
_QUOTED = (
    # 'quoted' (a value's own apostrophes in it: 'Today's notes'), "quoted", `quoted`; a
    # mark with a Latin letter or digit outside it is an apostrophe or an inch, not a
    # quote (a CJK letter is: 叫"报告"的)
    rf"""(?<![{_LATIN}'"`])'(?:[^']|(?<=[{_LATIN}])'(?=[{_LATIN}]))+'(?![{_LATIN}'"`])"""
    rf"""|(?<![{_LATIN}'"`])(["`])(?:(?!\1).)+\1(?![{_LATIN}'"`])"""
    # typographic pairs: “quoted”, single curly quotes (the closing mark inside a word is
    # its apostrophe), 「」, 『』, «», 《》
    rf"|“[^“”]+”|\u2018(?:[^\u2018\u2019]|(?<=[{_LATIN}])\u2019(?=[{_LATIN}]))+\u2019"
    r"|「[^「」]+」|『[^『』]+』|«[^«»]+»|《[^《》]+》"
)
_SLASHED = r"|\S*://\S*|\S*[/\\]\S*"  # URLs, paths
_DOTTED = r"|\b[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}\b"  # file and host names: app.py, example.com
# The pattern for a text with or without a slash and a dot before a letter: the URL, path
# and file-name alternatives cannot match without them, and leaving them out spares a
# scan of every word from each of its letters (the same matches, in a third of the time).
_ARGUMENTS = {
    (slash, dot): re.compile(_QUOTED + (_SLASHED if slash else "") + (_DOTTED if dot else ""))
    for slash in (False, True)
    for dot in (False, True)
}
_DOT = re.compile(r"\.[A-Za-z]")

_RUN = re.compile(r"[^\W_]+")  # letters and digits; "_", "-", ".", "&", ... separate
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


# Letters by script, for telling how much of a text an embedder was trained to read
# (``Embedder.scripts``); a script not listed here counts as one no embedder knows.
SCRIPTS: dict[str, str] = {
    "Latin": "A-Za-z\u00c0-\u024f\u1e00-\u1eff",
    "Greek": "\u0370-\u03ff",
    "Cyrillic": "\u0400-\u04ff",
    "Hebrew": "\u0590-\u05ff",
    "Arabic": "\u0600-\u06ff",
    "Devanagari": "\u0900-\u097f",
    "Thai": "\u0e00-\u0e7f",
    "Hangul": "\u1100-\u11ff\uac00-\ud7af",
    "Kana": "\u3040-\u30ff",
    "Han": "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff",
}
# A text's units of meaning: a character of an unspaced script, or a run of other letters.
_UNIT = re.compile(f"[{_UNSPACED}]|(?:(?![{_UNSPACED}])[^\\W\\d_])+")


def script_share(text: str, scripts: Iterable[str] | None) -> float:
    """The share of ``text``'s words (a character, in scripts without spaces) written
    in ``scripts`` (None: any script); a text without letters counts as known.

    >>> script_share("搜索 web pages", {"Latin"})
    0.5
    """
    if scripts is None or text.isascii():
        return 1.0 if scripts is None or "Latin" in scripts or not _UNIT.search(text) else 0.0
    units = _UNIT.findall(text)
    if not units:
        return 1.0
    ranges = "".join(SCRIPTS[s] for s in sorted(scripts) if s in SCRIPTS)
    if not ranges:
        return 0.0
    known = re.compile(f"[{ranges}]")  # re caches compiled patterns
    return sum(1 for u in units if known.match(u)) / len(units)


# A sentence ends at ". ", "! " or "? ", at a full-width stop, exclamation or question
# mark (U+3002, U+FF01, U+FF1F) or at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f])\s*|\n+")


def sentences(text: str) -> list[str]:
    """``text``'s sentences in order, each with at least one word. A sentence end inside
    an argument value (``argument_values``: a quoted note of two sentences) ends none.

    >>> sentences("Move the report to temp. Then post 'Done. Bye.' on it!")
    ['Move the report to temp.', "Then post 'Done. Bye.' on it!"]
    """
    values = [m.span() for m in _values(text)]
    pieces, start = [], 0
    for end in _SENTENCE_END.finditer(text):
        if not any(a < end.start() < b for a, b in values):
            pieces.append(text[start : end.start()])
            start = end.end()
    pieces.append(text[start:])
    return [s.strip() for s in pieces if _UNIT.search(s)]


def text_length(text: str) -> float:
    """How long ``text`` is in words: a run of letters counts one, a character of a
    script written without spaces half (a Chinese word is about two characters).

    >>> text_length("查询天气 for Tokyo")
    4.0
    """
    return sum(0.5 if _UNSPACED_RUN.fullmatch(u) else 1.0 for u in _UNIT.findall(text))


def _values(text: str) -> list[re.Match[str]]:
    """The argument values in ``text`` (``argument_values``), in order."""
    slash = "/" in text or "\\" in text
    return list(_ARGUMENTS[slash, _DOT.search(text) is not None].finditer(text))


def argument_values(query: str) -> tuple[str, str]:
    """``query`` without its argument values (quoted text, URLs, paths, file names),
    and those values.

    >>> argument_values("Replace 'foo' with 'bar' in ./src/app.py")
    ('Replace   with   in  ', "'foo' 'bar' ./src/app.py")
    """
    found = _values(query)
    ends = [0, *(i for m in found for i in m.span()), len(query)]  # between the values
    rest = " ".join(query[ends[i] : ends[i + 1]] for i in range(0, len(ends), 2))
    return rest, " ".join(m.group(0) for m in found)


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

    def field_terms(
        self, tool: Tool, groups: Iterable[Group], server_title: str = ""
    ) -> dict[str, list[str]]:
        """Each searchable field of ``tool`` (``tool_fields``) as index terms."""
        out: dict[str, list[str]] = {}
        for field_name, pieces in tool_fields(tool, groups, server_title).items():
            terms: list[str] = []
            for text, is_name in pieces:
                terms += self.text_terms(text, name=is_name)
            out[field_name] = terms
        return out

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
