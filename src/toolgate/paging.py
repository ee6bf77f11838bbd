"""Pages of a name-sorted list and the cursors between them (``tools/list``, ``groups/list``,
prompts and resources): a cursor names the last item seen, so a list that changes between
pages neither repeats nor skips survivors. Model layer: imports ``errors`` only.
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


@dataclass(frozen=True)
class Page:
    items: tuple[Any, ...]
    next_cursor: str | None


def encode_cursor(after: str) -> str:
    return base64.urlsafe_b64encode(f"after:{after}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    try:
        if not isinstance(cursor, str) or len(cursor) > 1024:
            raise ValueError
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidCursor(str(cursor)) from None
    if not raw.startswith("after:"):
        raise InvalidCursor(cursor)
    return raw.removeprefix("after:")


def paginate(
    items: Sequence[T], key: Callable[[T], str], cursor: str | None, page_size: int
) -> Page:
    """A page of name-sorted ``items`` after ``cursor``. Cursors name the last item
    seen, so a list that changes between pages neither repeats nor skips survivors."""
    start = 0
    if cursor is not None:
        after = decode_cursor(cursor)
        start = bisect.bisect_right([key(i) for i in items], after)
    chunk = tuple(items[start : start + page_size])
    more = start + page_size < len(items)
    return Page(chunk, encode_cursor(key(chunk[-1])) if more and chunk else None)
