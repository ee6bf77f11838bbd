"""Pages of a name-sorted list and the cursors between them (``tools/list``, ``groups/list``,
prompts and resources): a cursor names the last item seen, so a list that changes between
pages neither repeats nor skips survivors, and the list that issued it, so no other list
takes it. Model layer: imports ``errors`` only.
"""

from __future__ import annotations

import base64
import binascii
import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from toolgate.errors import InvalidCursor

T = TypeVar("T")

#: the list a cursor belongs to when its caller names none: the core's ``tools/list``
TOOLS = "tools"
#: between the last item's name and the list's kind. It sorts before every character, so
#: a gateway that reads cursors without a kind (before 2026-11-29) takes ``name + _KIND +
#: kind`` for ``name`` itself: it pages on from the same place (a rolling upgrade of
#: replicas keeps every client's place), only without checking the kind.
_KIND = "\x00"


@dataclass(frozen=True)
class Page:
    items: tuple[Any, ...]
    next_cursor: str | None


def encode_cursor(after: str, kind: str = TOOLS) -> str:
    """The cursor of ``kind``'s list after ``after``.

    >>> decode_cursor(encode_cursor("b", "prompts"), "prompts")
    'b'
    """
    raw = f"after:{after}{_KIND}{kind}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, kind: str = TOOLS) -> str:
    """The last item seen, named by ``cursor``; ``InvalidCursor`` when it is malformed or
    another list issued it. A cursor without a kind (issued before lists had one) is
    taken by any list, as it always was: it names the last item seen and nothing more."""
    try:
        if not isinstance(cursor, str) or len(cursor) > 1024:
            raise ValueError
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidCursor(str(cursor)) from None
    if not raw.startswith("after:"):
        raise InvalidCursor(cursor)
    after, marked, issuer = raw.removeprefix("after:").rpartition(_KIND)
    if not marked:
        return issuer  # no kind: the whole text is the name
    if issuer != kind:
        raise InvalidCursor(cursor)
    return after


def paginate(
    items: Sequence[T],
    key: Callable[[T], str],
    cursor: str | None,
    page_size: int,
    kind: str = TOOLS,
) -> Page:
    """A page of name-sorted ``items`` of ``kind``'s list after ``cursor``. Cursors name
    the last item seen, so a list that changes between pages neither repeats nor skips
    survivors, and the list that issued them: another list's is ``InvalidCursor``."""
    start = 0
    if cursor is not None:
        after = decode_cursor(cursor, kind)
        start = bisect.bisect_right([key(i) for i in items], after)
    chunk = tuple(items[start : start + page_size])
    more = start + page_size < len(items)
    return Page(chunk, encode_cursor(key(chunk[-1]), kind) if more and chunk else None)
