"""Tool names read as actions on objects, and tool texts as vectors of search terms.

The bottom of ``toolgate.grouping``: which words of a name are verbs (``get``, ``create``,
``issue_read``'s ``read``) and which are the objects they act on (stems, spelt as the
tools spell them), and each tool's name and description as a TF-IDF vector of the terms
lexical search indexes (``toolgate.search.analysis``). No MCP imports.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from toolgate.catalog import Tool
from toolgate.errors import ConfigError
from toolgate.search.analysis import STOP_WORDS, Analyzer, name_parts

#: Verbs of tool names that only read (``get_issue``, ``issue_read``); used when a tool
#: carries no ``readOnlyHint``.
READ_VERBS = frozenset(
    """
    browse check compare count describe diff download explain export fetch find get
    inspect list lookup preview query read retrieve search show summarize view
    """.split()  # noqa: SIM905 -- a word list reads better as words
)
#: Verbs that change something. A name's words found here or in ``READ_VERBS`` are the
#: action; the rest (less ``MODIFIERS`` and stop words) are the objects it acts on.
WRITE_VERBS = frozenset(
    """
    accept add append apply approve archive assign attach ban block cancel change
    clear clone close complete configure copy create decline delete deploy detach
    disable dismiss edit enable execute fork import insert install invite link lock manage
    mark merge migrate move open pin play post promote protect publish push rebase reject
    remove rename reopen reorder replace reply reprioritize request rerun reset resolve
    restart restore retry revert revoke rotate run save schedule send set share start stop
    submit subscribe sync toggle transfer trigger unarchive unassign unblock uninstall
    unlink unlock unpin unprotect unresolve unstar unsubscribe unwatch update upload upsert
    watch write star
    """.split()  # noqa: SIM905 -- a word list reads better as words
)
VERBS = READ_VERBS | WRITE_VERBS
#: A namespace word (``acme`` of ``acme_get_issue``) that at least this share of a
#: server's names start with is not an object of them.
SHARED_NAMESPACE = 0.9
#: Words of tool names that qualify an object without naming one.
MODIFIERS = frozenset(
    """
    all any batch bulk by current default detail details existing info information latest me
    multiple new or pending single specific via
    """.split()  # noqa: SIM905 -- a word list reads better as words
)


def destructive(tool: Tool) -> bool:
    """Whether the tool's annotations say it may destroy something (``destructiveHint``)."""
    return (tool.annotations or {}).get("destructiveHint") is True


def reads_only(tool: Tool, verbs: Sequence[str]) -> bool:
    """Whether the tool only reads: its ``readOnlyHint`` when it gives one; else never
    when it says it is destructive (MCP's ``readOnlyHint`` defaults to false, and
    ``destructiveHint: true`` says it changes something), else by its first verb."""
    hint = (tool.annotations or {}).get("readOnlyHint")
    if isinstance(hint, bool):
        return hint
    return not destructive(tool) and bool(verbs) and verbs[0] in READ_VERBS


@dataclass(frozen=True)
class Words:
    """A tool name read as an action on objects."""

    verbs: tuple[str, ...]
    nouns: tuple[str, ...]  # stems, in name order, each once
    reads: bool  # read-only, by annotation or else by verb


class NameReader:
    """Tool names as words, with each stem's shortest spelling for group names."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        try:
            analyzer: Analyzer | None = Analyzer()
        except ConfigError:  # no stemmer: plain lowercase words
            analyzer = None
        self._analyzer = analyzer
        spellings: dict[str, Counter[str]] = defaultdict(Counter)
        self.words: dict[str, Words] = {}
        split = {t.name: name_parts(t.name) for t in tools}
        # a first word of three or more names that is no verb is a namespace
        # (``jira_get_issue``, ``jira_search``; ``actions_get``, ``actions_list``)
        firsts = Counter(parts[0] for parts in split.values() if len(parts) > 1)
        spaces = {w for w, n in firsts.items() if n >= 3 and w not in VERBS}
        # one that (nearly) every name starts with tells no tool from another: no object
        # (``acme_get_issue`` is an action on an issue, not on an acme)
        shared = {w for w in spaces if firsts[w] >= SHARED_NAMESPACE * len(split)}
        lead = {
            name: next(
                (i for i, p in enumerate(parts) if p not in MODIFIERS and p not in spaces), 0
            )
            for name, parts in split.items()
        }
        # a tool's action is the word after its namespace and modifiers when that is a
        # verb (``get``), a verb joined to it (``create_or_update``) or a verb ending a
        # name with no action before it (``issue_read``); a verb word anywhere else
        # names an object (``get_merge_request``), and so does one ending a name after
        # its action (``create_pull_request``) or one other names use as an object
        inner = {
            p
            for name, parts in split.items()
            for i, p in enumerate(parts[1:-1], 1)
            if i != lead[name] and parts[i - 1] not in ("or", "and")
        }
        for tool in tools:
            verbs: list[str] = []
            nouns: list[str] = []
            parts = split[tool.name]
            for i, part in enumerate(parts):
                if part in VERBS and (
                    i == lead[tool.name]
                    or (parts[i - 1] in ("or", "and") and bool(verbs))
                    or (i == len(parts) - 1 and part not in inner and not verbs)
                ):
                    verbs.append(part)
                elif (
                    part in MODIFIERS
                    or part in STOP_WORDS
                    or len(part) < 2
                    or part.isdigit()
                    or (i == 0 and part in shared)
                ):
                    continue
                else:
                    stem = self.stem(part)
                    spellings[stem][part] += 1
                    if stem not in nouns:
                        nouns.append(stem)
            self.words[tool.name] = Words(tuple(verbs), tuple(nouns), reads_only(tool, verbs))
        # a noun always written beside the same noun is named with it (``pull request``)
        beside: dict[str, tuple[set[str | None], set[str | None]]] = defaultdict(
            lambda: (set(), set())
        )
        for w in self.words.values():
            for i, n in enumerate(w.nouns):
                beside[n][0].add(w.nouns[i - 1] if i else None)
                beside[n][1].add(w.nouns[i + 1] if i + 1 < len(w.nouns) else None)
        self.phrases: dict[str, tuple[str, ...]] = {}
        for n, (before, after) in beside.items():
            ahead = next(iter(before)) if len(before) == 1 else None
            behind = next(iter(after)) if len(after) == 1 else None
            self.phrases[n] = tuple(x for x in (ahead, n, behind) if x is not None)
        # a stem is spelt in its shortest form in the names, the singular where the
        # names have one (``commit`` of ``get_commit`` and ``list_commits``)
        self.spelling = {
            s: min(c.items(), key=lambda kv: (len(kv[0]), -kv[1], kv[0]))[0]
            for s, c in spellings.items()
        }

    def stem(self, word: str) -> str:
        if self._analyzer is None:
            return word
        terms = self._analyzer.terms([word])
        return terms[0] if terms else word

    def terms(self, tool: Tool) -> list[str]:
        """The tool's name and description as search terms (the name counted twice)."""
        text = f"{tool.name} {tool.name} {tool.description}"
        if self._analyzer is None:
            return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP_WORDS]
        return self._analyzer.text_terms(" ".join(name_parts(tool.name)) + " " + text)


def vector(terms: Iterable[str], idf: Mapping[str, float]) -> dict[str, float]:
    counts = Counter(terms)
    vec = {t: (1 + math.log(n)) * idf.get(t, 0.0) for t, n in counts.items()}
    norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
    return {t: v / norm for t, v in vec.items()}


def cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(t, 0.0) for t, v in a.items())


def centroid(vectors: Iterable[Mapping[str, float]]) -> dict[str, float]:
    total: dict[str, float] = defaultdict(float)
    for vec in vectors:
        for t, v in vec.items():
            total[t] += v
    norm = math.sqrt(sum(v * v for v in total.values())) or 1.0
    return {t: v / norm for t, v in total.items()}
