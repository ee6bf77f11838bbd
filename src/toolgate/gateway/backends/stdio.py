"""The stdio transport: a backend started as a subprocess, with the environment its
``env``/``env_passthrough`` give it, speaking MCP on its stdin and stdout; its stderr goes
to the log line by line, and its last lines into the error when it fails. Imports ``mcp``'s
stdio client and the transport seam.
"""

from __future__ import annotations

import collections
import contextlib
import fnmatch
import logging
import os
import threading
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TextIO

import anyio
from mcp import StdioServerParameters, stdio_client

from toolgate.gateway.backends.transport import BackendTransport, Streams
from toolgate.gateway.config.servers import StdioServer

stderr_logger = logging.getLogger("toolgate.gateway.stderr")
STDERR_TAIL_LINES = 20  # kept per backend for the error of a failed start


def backend_env(spec: StdioServer, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a stdio backend gets on top of the SDK's safe defaults (HOME, PATH, ...): the
    gateway's variables named by ``env_passthrough`` (globs allowed), then ``env``."""
    source = os.environ if environ is None else environ
    inherited = {
        name: value
        for name, value in source.items()
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in spec.env_passthrough)
    }
    return {**inherited, **spec.env}


class StderrCapture:
    """A pipe for one backend process's stderr: each line goes to ``errlog`` when one is
    given, else to the ``toolgate.gateway.stderr`` log; the last lines are kept.

    A thread reads the pipe, so a chatty backend never blocks on a full pipe."""

    def __init__(self, name: str, errlog: TextIO | None, tail: collections.deque[str]) -> None:
        self.name = name
        self.errlog = errlog
        self.tail = tail
        read_fd, write_fd = os.pipe()
        self.writer = os.fdopen(write_fd, "w")
        self._reader = threading.Thread(
            target=self._read, args=(read_fd,), name=f"stderr:{name}", daemon=True
        )
        self._reader.start()

    def _read(self, fd: int) -> None:
        with open(fd, encoding="utf-8", errors="replace") as pipe:
            for raw in pipe:
                line = raw.rstrip("\r\n")
                self.tail.append(line)
                if self.errlog is not None:
                    with contextlib.suppress(Exception):
                        self.errlog.write(raw)
                        self.errlog.flush()
                else:
                    stderr_logger.info("backend %s: %s", self.name, line)

    async def close(self) -> None:
        """Close our end and wait (briefly) for the reader to see the process's last words."""
        with contextlib.suppress(OSError):
            self.writer.close()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._reader.join, 2.0)


class StdioTransport(BackendTransport):
    """A backend process per connection, its stdin and stdout the session's streams."""

    spec: StdioServer

    def __init__(
        self, name: str, spec: StdioServer, *, base_dir: Path, errlog: TextIO | None
    ) -> None:
        super().__init__(name, spec, base_dir=base_dir, errlog=errlog)
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)

    @contextlib.asynccontextmanager
    async def streams(self) -> AsyncIterator[Streams]:
        spec = self.spec
        cwd = Path(spec.cwd).expanduser() if spec.cwd else self.base_dir
        if not cwd.is_absolute():
            cwd = self.base_dir / cwd
        params = StdioServerParameters(
            command=spec.command,
            args=list(spec.args),
            env=backend_env(spec) or None,
            cwd=cwd,
            # a stray byte that is not UTF-8 spoils one message, not the connection
            encoding_error_handler="replace",
        )
        capture = StderrCapture(self.name, self.errlog, self.stderr_tail)
        try:
            async with stdio_client(params, errlog=capture.writer) as streams:
                yield streams[0], streams[1]
        finally:
            await capture.close()

    def failure(self, why: str) -> str:
        """``why``, with the process's last stderr lines when it wrote any."""
        lines = [line for line in self.stderr_tail if line.strip()]
        if lines:
            why += f" (its stderr: {' | '.join(lines[-5:])})"
        return why


__all__ = ["StderrCapture", "StdioTransport", "backend_env"]
