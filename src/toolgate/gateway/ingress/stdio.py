"""Where a request enters over stdio: the host's lines on stdin (``StdinLines``), which
end at EOF or when the process stops (``close``), so a stop ends the serving the way the
host closing stdin does. Ingress layer: the stdlib only; knows nothing of the process,
the SDK's server or HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import threading
from concurrent.futures import CancelledError as HandoffCancelled

logger = logging.getLogger("toolgate.gateway")


class StdinLines:
    """The lines the host writes to stdin, for ``mcp.server.stdio.stdio_server(stdin=...)``
    (which only iterates them), decoded as the SDK decodes its own; they end at EOF or at
    ``close()``, at once, whatever the host does.

    A daemon thread reads them: a read of an open pipe blocks, and nothing wakes a
    blocked read, so with the SDK's reader (a worker thread the process waits for) a
    stop could neither end the serving nor let the process exit while the host kept
    stdin open. One line is handed over at a time, so a host that writes faster than
    the gateway reads waits, as with the SDK's reader.

    >>> lines = StdinLines()
    >>> lines.close()       # what a stop does: ``async for`` ends, the serving with it
    """

    def __init__(self, fd: int = 0) -> None:
        self._fd = fd
        #: the line handed over, or None: the lines end (EOF, a failed read, ``close``)
        self._lines: asyncio.Queue[str | None] = asyncio.Queue(maxsize=1)
        self._thread: threading.Thread | None = None
        self.closed = False

    def close(self) -> None:
        """End the lines now: a waiting ``async for`` ends, so does every later one."""
        self.closed = True
        with contextlib.suppress(asyncio.QueueFull):  # full: nobody waits, the next ends
            self._lines.put_nowait(None)

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        if self.closed:
            raise StopAsyncIteration
        if self._thread is None:
            loop = asyncio.get_running_loop()
            self._thread = threading.Thread(
                target=self._read, args=(loop,), name="toolgate stdin", daemon=True
            )
            self._thread.start()
        line = await self._lines.get()
        if line is None or self.closed:
            self.closed = True
            raise StopAsyncIteration
        return line

    def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        """The reading thread: each line, then None at the end, handed to the loop."""
        raw = open(self._fd, "rb", closefd=False)  # noqa: SIM115 - the process's stdin, never closed
        stream = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
        while True:
            try:
                line: str | None = stream.readline() or None
            except (OSError, ValueError) as exc:
                logger.warning("stdin unreadable (%s): the serving ends as at its end", exc)
                line = None
            if loop.is_closed():  # the process ends: nobody reads any more
                return
            try:
                asyncio.run_coroutine_threadsafe(self._lines.put(line), loop).result()
            except (RuntimeError, HandoffCancelled):  # the loop is gone: the process ends
                return
            if line is None:
                return


__all__ = ["StdinLines"]
