"""The gateway's backends together: one ``Backend`` per configured server, all supervised
while serving (``running``), or connected once to list what they offer (``connect_all``,
for ``toolgate check``). Imports the backend and its supervision, and the config.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import TextIO

from toolgate.gateway.backends.backend import Backend, Timing, ToolsChanged
from toolgate.gateway.backends.supervision import connect, supervise
from toolgate.gateway.config.model import GatewayConfig


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


@contextlib.asynccontextmanager
async def running(backends: Mapping[str, Backend]) -> AsyncIterator[Mapping[str, Backend]]:
    """Run every backend in its own task; yields once each has made its first attempt,
    or the longest ``start_grace`` after the first one came up, or one second past the
    longest ``start_timeout``, whichever comes first. So one slow backend does not hold
    the others back, and backends that start about as fast as each other are all in
    the first catalog; the slower ones go on starting in their tasks. Cancels them all
    on exit."""
    tasks = [asyncio.create_task(supervise(b), name=f"backend:{n}") for n, b in backends.items()]
    try:
        if backends:
            timings = [b.timing for b in backends.values()]
            limit = max(t.start_timeout for t in timings) + 1
            patience = max(t.start_grace for t in timings)
            await _first_attempts(backends, limit, patience)
        yield backends
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:
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


__all__ = ["connect_all", "make_backends", "running"]
