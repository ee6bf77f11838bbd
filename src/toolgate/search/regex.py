"""Regex tool search's matcher: a case-insensitive pattern run by RE2, in time linear in
the text whatever the pattern; the checks a pattern must pass; a tool's match score.
Imports the catalog's types and the errors, nothing of ``toolgate.search`` (``index``
runs it over the caller's tools).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import re2  # type: ignore[import-untyped]

from toolgate.catalog import Tool
from toolgate.errors import InvalidArguments, short

MAX_PATTERN_LENGTH = 500
#: characters of a caller's pattern an error quotes
SHOWN_PATTERN = 64


def check_pattern(pattern: str) -> None:
    """``InvalidArguments`` unless ``pattern`` is a non-empty string of at most
    ``MAX_PATTERN_LENGTH`` characters."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise InvalidArguments("Search pattern must be a non-empty string", pattern=pattern)
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise InvalidArguments(
            f"Search pattern is {len(pattern)} characters; the limit is {MAX_PATTERN_LENGTH}",
            pattern=pattern[:64],
        )


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

    def score(self, tool: Tool) -> int:
        """3 for a match in the tool's name, 2 in its title, 1 in its description, summed."""
        return (
            3 * self.matches(tool.name)
            + 2 * self.matches(tool.title or "")
            + self.matches(tool.description)
        )


def compile_linear(pattern: str) -> LinearRegex:
    """``pattern`` for RE2, or ``InvalidArguments`` naming what is wrong with it."""
    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False
    # the caller's pattern is quoted once, cut: an error never echoes 1 KB of it back
    quoted = repr(short(pattern, SHOWN_PATTERN))
    try:
        return LinearRegex(re2.compile(pattern, options))
    except UnicodeEncodeError:
        raise InvalidArguments(
            f"Invalid regular expression {quoted}: it holds a character that is not "
            "valid Unicode (a lone surrogate)",
            pattern=pattern[:SHOWN_PATTERN],
        ) from None
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        # RE2 says "what: where", where quoting the rest of the pattern: cut that too
        what, _, where = reason.partition(": ")
        reason = f"{what}: {short(where, SHOWN_PATTERN)}" if where else what
        raise InvalidArguments(
            f"Invalid regular expression {quoted}: {reason} (RE2 syntax: no "
            "backreferences or lookaround)",
            pattern=pattern[:SHOWN_PATTERN],
        ) from None
