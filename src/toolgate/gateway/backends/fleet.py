"""The gateway's backends together: one ``Backend`` per configured server, all supervised
while serving (``running``; a ``Fleet`` also adds, stops and reconnects one while the
others serve, for a reload), or connected once to list what they offer (``connect_all``,
for ``toolgate check``). Imports the backend and its supervision, and the config.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping
from pathlib import Path
from typing import TextIO

from toolgate.gateway.backends.backend import Backend, Timing, ToolsChanged
from toolgate.gateway.backends.supervision import connect, supervise
from toolgate.gateway.config.model import GatewayConfig
from toolgate.gateway.config.servers import ServerSpec


def make_backends(
    cfg: GatewayConfig,
    *,
    timing: Timing | None = None,
    on_tools: ToolsChanged | None = None,
    errlog: TextIO | None = None,
) -> dict[str, Backend]:
    return {
        name: Backend(
            name, spec, base_dir=cfg.base_dir, timing=timing, on_tools=on_tools, errlog=errlog
        )
        for name, spec in cfg.mcp_servers.items()
    }


class Fleet:
    """The gateway's backends by name (``backends``, the one dict the gateway shares),
    made alike from the config and, while ``running``, each supervised in a task of its
    own: ``add`` one, ``remove`` one, ``reconnect`` one with a new spec (the same
    ``Backend``: its tools stay listed until the new connection lists its own).

    >>> fleet = Fleet(cfg, on_tools=gateway_sync)
    >>> async with fleet.running(): ...
    """

    def __init__(
        self,
        cfg: GatewayConfig,
        *,
        timing: Timing | None = None,
        on_tools: ToolsChanged | None = None,
        errlog: TextIO | None = None,
    ) -> None:
        self.timing = timing
        self.on_tools = on_tools
        self.errlog = errlog
        self.backends: dict[str, Backend] = make_backends(
            cfg, timing=timing, on_tools=on_tools, errlog=errlog
        )
        self._tasks: dict[str, asyncio.Task[None]] | None = None  # None: not running

    def make(self, name: str, spec: ServerSpec, *, base_dir: Path) -> Backend:
        """A backend made as the others were (not added, not started)."""
        return Backend(
            name,
            spec,
            base_dir=base_dir,
            timing=self.timing,
            on_tools=self.on_tools,
            errlog=self.errlog,
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Fleet]:
        """Supervise every backend (see ``running``); stop them all on exit, the ones
        added since included."""
        self._tasks = {}
        try:
            async with running(self.backends, tasks=self._tasks):
                yield self
        finally:
            self._tasks = None

    def _start(self, backend: Backend) -> None:
        if self._tasks is not None:
            self._tasks[backend.name] = asyncio.create_task(
                supervise(backend), name=f"backend:{backend.name}"
            )

    async def _stop(self, name: str) -> None:
        task = self._tasks.pop(name, None) if self._tasks is not None else None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def add(self, backend: Backend) -> None:
        """Serve ``backend`` too: supervised from now on when the fleet is running."""
        self.backends[backend.name] = backend
        self._start(backend)

    async def remove(self, name: str) -> Backend:
        """Stop serving backend ``name``: out of ``backends`` at once, then disconnected."""
        backend = self.backends.pop(name)
        backend.removed = True  # what its requests still running are answered
        await self._stop(name)
        return backend

    async def reconnect(self, name: str, spec: ServerSpec, *, base_dir: Path) -> Backend:
        """Connect backend ``name`` anew by ``spec`` (its command, URL, environment...)."""
        backend = self.backends[name]
        # why its requests still running fail, and what a request meanwhile is told
        backend.lost("a config reload changed how it is reached")
        await self._stop(name)
        backend.spec, backend.base_dir = spec, base_dir
        backend.ready.clear()
        self._start(backend)
        return backend

    async def first_attempts(self, names: Iterable[str]) -> None:
        """Wait until each of ``names`` made its first attempt, up or failed (at most a
        second past the longest ``start_timeout``; no grace: nobody waits to be served),
        so a reload's new backends join its catalog sync and its report."""
        some = {n: self.backends[n] for n in names if n in self.backends}
        if some:
            limit = max(b.timing.start_timeout for b in some.values()) + 1
            await _first_attempts(some, limit, limit)


@contextlib.asynccontextmanager
async def running(
    backends: Mapping[str, Backend], *, tasks: dict[str, asyncio.Task[None]] | None = None
) -> AsyncIterator[Mapping[str, Backend]]:
    """Run every backend in its own task; yields once each has made its first attempt,
    or the longest ``start_grace`` after the first one came up, or one second past the
    longest ``start_timeout``, whichever comes first. So one slow backend does not hold
    the others back, and backends that start about as fast as each other are all in
    the first catalog; the slower ones go on starting in their tasks. Cancels them all
    on exit, and those in ``tasks`` (where they are kept, by name) when it is given."""
    tasks = {} if tasks is None else tasks
    for n, b in backends.items():
        tasks[n] = asyncio.create_task(supervise(b), name=f"backend:{n}")
    try:
        if backends:
            timings = [b.timing for b in backends.values()]
            limit = max(t.start_timeout for t in timings) + 1
            patience = max(t.start_grace for t in timings)
            await _first_attempts(backends, limit, patience)
        yield backends
    finally:
        stopping = list(tasks.values())
        for t in stopping:
            t.cancel()
        for t in stopping:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t


async def _first_attempts(backends: Mapping[str, Backend], limit: float, grace: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    pending = {asyncio.create_task(b.ready.wait()) for b in backends.values()}
    graced = False
    try:
        while pending:
            if not graced and any(b.up for b in backends.values()):
                graced = True  # the grace runs from the first backend up
                deadline = min(deadline, loop.time() + grace)
            timeout = deadline - loop.time()
            if timeout <= 0:
                break
            _, pending = await asyncio.wait(
                pending, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
    finally:
        for p in pending:
            p.cancel()


async def connect_all(
    cfg: GatewayConfig, *, errlog: TextIO | None = None
) -> tuple[dict[str, Backend], dict[str, str]]:
    """Start every backend once, list what it offers (tools, prompts, resources,
    templates), stop it: ``(the backends that listed, failures)``. No reconnects."""
    timing = Timing.from_env()
    backends = make_backends(cfg, timing=timing, errlog=errlog)
    listed: dict[str, Backend] = {}
    failures: dict[str, str] = {}

    async def one(b: Backend) -> None:
        try:
            await connect(b, watch=False)
            listed[b.name] = b
        except Exception as exc:
            failures[b.name] = b.failure(exc)

    await asyncio.gather(*(one(b) for b in backends.values()))
    return listed, failures


__all__ = ["Fleet", "connect_all", "make_backends", "running"]
