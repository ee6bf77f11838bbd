"""``EventRing``: the dashboard's bounded, in-memory tail of the event bus.

An ``EventBus`` sink that keeps the newest events in a ring buffer and feeds live
subscribers (the server-sent event stream) through bounded asyncio queues; a slow
reader loses events rather than growing memory. Edge layer: imports ``toolgate.events``.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from toolgate.events import Event, Sink


@dataclass(frozen=True)
class RingEvent:
    """One event as the dashboard shows it, numbered in arrival order (the SSE id)."""

    id: int
    event: Event

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, **self.event.to_dict()}

    def matches(
        self, prefixes: Sequence[str], text: str = "", principals: Sequence[str] = ()
    ) -> bool:
        """Whether the event's type starts with one of ``prefixes`` (all when empty), its
        principal is one of ``principals`` (any when empty) and its session or
        principal contains ``text``."""
        if prefixes and not any(self.event.type.startswith(p) for p in prefixes):
            return False
        if principals and self.event.principal not in principals:
            return False
        if not text:
            return True
        return any(text in (v or "") for v in (self.event.session, self.event.principal))


@dataclass(frozen=True)
class EventFilter:
    """Which events a page or stream shows, from its query: ``types`` (types or type
    prefixes: ``group.``, ``tool.executed``), ``principal`` (exact ids) and ``q`` (text
    in the session or principal). Repeated or comma-separated; empty means all.

    >>> EventFilter.from_query({"types": ["group."], "principal": ["alice"]})
    """

    types: tuple[str, ...] = ()
    principals: tuple[str, ...] = ()
    text: str = ""

    @classmethod
    def from_query(cls, query: Mapping[str, Sequence[str]]) -> EventFilter:
        text = " ".join(query.get("q", ())).strip()
        return cls(
            tuple(parse_prefixes(query.get("types", ()))),
            tuple(parse_prefixes(query.get("principal", ()))),
            text,
        )

    def matches(self, item: RingEvent) -> bool:
        return item.matches(self.types, self.text, self.principals)

    def query(self) -> str:
        """This filter as a query string (``types=…&principal=…``; empty for all)."""
        pairs = [("types", ",".join(self.types)), ("principal", ",".join(self.principals))]
        return urlencode([(k, v) for k, v in [*pairs, ("q", self.text)] if v])


_CLOSED = None  # queue sentinel: the ring was closed, streams end


class EventRing(Sink):
    """The newest ``capacity`` events, and a live feed of new ones.

    >>> ring = EventRing(500); unsubscribe = toolset.events.add_sink(ring)
    """

    def __init__(self, capacity: int = 1000, *, queue_size: int = 256) -> None:
        self._events: deque[RingEvent] = deque(maxlen=capacity)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._queue_size = queue_size
        self._subscribers: set[tuple[asyncio.AbstractEventLoop, asyncio.Queue[RingEvent | None]]]
        self._subscribers = set()

    def handle(self, event: Event) -> None:
        with self._lock:
            item = RingEvent(next(self._ids), event)
            self._events.append(item)
            subscribers = list(self._subscribers)
        for loop, queue in subscribers:
            loop.call_soon_threadsafe(_offer, queue, item)

    def close(self) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for loop, queue in subscribers:
            loop.call_soon_threadsafe(_offer, queue, _CLOSED)

    def recent(self, after: int = 0) -> list[RingEvent]:
        """Buffered events with an id above ``after``, oldest first."""
        with self._lock:
            return [e for e in self._events if e.id > after]

    def subscribe(self) -> asyncio.Queue[RingEvent | None]:
        """A queue that receives every new event (``None`` when the ring closes)."""
        queue: asyncio.Queue[RingEvent | None] = asyncio.Queue(self._queue_size)
        with self._lock:
            self._subscribers.add((asyncio.get_running_loop(), queue))
        return queue

    def unsubscribe(self, queue: asyncio.Queue[RingEvent | None]) -> None:
        with self._lock:
            self._subscribers = {s for s in self._subscribers if s[1] is not queue}


def _offer(queue: asyncio.Queue[RingEvent | None], item: RingEvent | None) -> None:
    if item is _CLOSED:
        while queue.full():  # the end must get through
            queue.get_nowait()
    if not queue.full():
        queue.put_nowait(item)


def parse_prefixes(values: Iterable[str]) -> list[str]:
    """``types=tool.,group.activated`` query values as a clean list of type prefixes."""
    return [p.strip() for v in values for p in v.split(",") if p.strip()]
