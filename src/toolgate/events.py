"""Events: every decision that changes what an agent sees or can do.

An ``EventBus`` fans events out to sinks: in-process subscribers, ``logging`` and a
JSONL file live here; OpenTelemetry is an optional sink at the edges. A sink that
raises is logged and never breaks the request. Base layer: the standard library and
``toolgate.errors`` only.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolgate.errors import ConfigError, check_kind

logger = logging.getLogger("toolgate.events")

EVENT_TYPES = frozenset(
    {
        "tool.registered",
        "tool.unregistered",
        "tool.surfaced",
        "tool.executed",
        "tool.progressed",
        "group.activated",
        "group.deactivated",
        "budget.exceeded",
        "tool.selection",
        "config.reloaded",
        "config.refused",
    }
)


@dataclass(frozen=True)
class Event:
    type: str
    session: str | None
    principal: str | None
    data: Mapping[str, Any] = field(default_factory=dict)
    time: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "time": self.time,
            "session": self.session,
            "principal": self.principal,
            **self.data,
        }


class Sink(ABC):
    """Receives events. Override :meth:`handle`; :meth:`close` is optional."""

    @abstractmethod
    def handle(self, event: Event) -> None: ...

    def close(self) -> None:
        return None


class LoggingSink(Sink):
    def __init__(self, logger_: logging.Logger | None = None, level: int = logging.INFO) -> None:
        self.logger = logger_ or logger
        self.level = level

    def handle(self, event: Event) -> None:
        self.logger.log(self.level, "%s %s", event.type, json.dumps(event.to_dict(), default=str))


class JsonlSink(Sink):
    """Appends one JSON object per event to a file (line-buffered, thread-safe)."""

    def __init__(self, path: str | Path) -> None:
        check_kind(path, (str, os.PathLike), "path", "a file path", key="path")
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8", buffering=1)
        except OSError as exc:  # a directory, no permission, a parent that is a file
            raise ConfigError(
                f"cannot open the events file {self.path}: {exc.strerror}", key="path"
            ) from None
        self._lock = threading.Lock()

    def handle(self, event: Event) -> None:
        line = json.dumps(event.to_dict(), default=str, separators=(",", ":"))
        with self._lock:
            self._file.write(line + "\n")

    def close(self) -> None:
        self._file.close()


class CallbackSink(Sink):
    def __init__(self, callback: Callable[[Event], None]) -> None:
        self.callback = callback

    def handle(self, event: Event) -> None:
        self.callback(event)


class EventBus:
    """Delivers each event to every sink, in registration order."""

    def __init__(self) -> None:
        self._sinks: list[Sink] = []

    def add_sink(self, sink: Sink) -> Callable[[], None]:
        # refused here, not at the first event (where a sink that raises is only logged)
        if not callable(getattr(sink, "handle", None)):
            raise TypeError(
                f"add_sink() takes a Sink (an object with handle(event)), not "
                f"{type(sink).__name__}; use subscribe() for a function"
            )
        self._sinks.append(sink)
        return lambda: self._sinks.remove(sink) if sink in self._sinks else None

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``callback(event)`` for every event; returns an unsubscribe function."""
        if not callable(callback):
            raise TypeError(
                f"subscribe() takes a function of an event, not {type(callback).__name__}"
            )
        return self.add_sink(CallbackSink(callback))

    @property
    def active(self) -> bool:
        return bool(self._sinks)

    def emit(
        self,
        type_: str,
        *,
        session: str | None = None,
        principal: str | None = None,
        **data: Any,
    ) -> None:
        if not self._sinks:
            return
        event = Event(type_, session, principal, data)
        for sink in list(self._sinks):
            try:
                sink.handle(event)
            except Exception:  # a sink must never break a request
                logger.exception("event sink %r failed on %s", sink, type_)

    def close(self) -> None:
        for sink in self._sinks:
            sink.close()
