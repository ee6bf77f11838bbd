"""The process serving the gateway over HTTP: uvicorn run with the gateway's app, the
signals the process obeys (``SIGNALS``, one line per signal) and how it stops
(``Process.stop``: unready at once, new work refused, calls drained up to
``toolgate.http.drain_timeout``, the rest answered, then the server and the backends
closed and exit 0) or reloads (``Process.reload``: ``ops.reload``). It is the one owner
of the signals: uvicorn's handlers are off. Gateway layer, under ``serve``: imports the
ingress, ``ops`` and uvicorn, never ``serve.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import uvicorn
from starlette.applications import Starlette

from toolgate.gateway.config.model import GatewayConfig
from toolgate.gateway.ingress.app import server_options
from toolgate.gateway.ingress.drain import Drain
from toolgate.gateway.ingress.protocol import GuardedProtocol
from toolgate.gateway.ops.reload import Reloadable, ReloadReport, reload

logger = logging.getLogger("toolgate.gateway")

#: seconds the calls cut at the deadline are given to write their answers
ANSWER_GRACE = 2.0
#: seconds uvicorn waits, after the drain, for connections to close (idle ones close
#: gently at once; one still answering closes with its answer)
CLOSE_GRACE = 3


class Serving(Reloadable, Protocol):
    """What the process needs of a gateway (``toolgate.gateway.serve.Gateway``)."""

    cfg: GatewayConfig
    drain: Drain

    def running(self) -> AbstractAsyncContextManager[Any]: ...
    def http_app(self, *, host: str, allowed_hosts: Sequence[str]) -> Starlette: ...


class _Server(uvicorn.Server):
    """uvicorn's server without its own signal handlers: ``Process`` owns the signals
    (uvicorn's would stop at once, then raise the signal again after the shutdown,
    so the process would not exit 0)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class Process:
    """One serving process: the gateway, its uvicorn server and its stop.

    Until ``server`` is set the gateway is still starting (its backends coming up): a
    stop then ends the start-up (``starting``, the task serving) instead of a drain.

    >>> process = Process(gateway, server)
    >>> process.stop()          # what SIGTERM does             # doctest: +SKIP
    """

    def __init__(
        self,
        gateway: Serving,
        server: uvicorn.Server | None = None,
        *,
        starting: asyncio.Task[Any] | None = None,
    ) -> None:
        self.gateway = gateway
        self.server = server
        self.starting = starting
        self.stopped_starting = False
        self._stopping: asyncio.Task[None] | None = None
        self._reloads: set[asyncio.Task[ReloadReport]] = set()

    @property
    def drain(self) -> Drain:
        return self.gateway.drain

    def stop(self) -> None:
        """Begin the stop: ``/readyz`` unready and new work refused at once, every
        response closing its connection; calls in flight finish up to the drain time.
        Asked again while stopping, the calls still running are answered now."""
        drain = self.drain
        if not drain.begin():
            logger.warning("asked again to stop: answering the calls still running now")
            drain.expire()
            return
        if self.server is None:  # nothing served yet, nothing to drain: end the start-up
            logger.info("stopping while starting: the backends stop, nothing was served")
            if self.starting is not None:
                self.stopped_starting = True
                self.starting.cancel()
            return
        for connection in list(self.server.server_state.connections):
            if isinstance(connection, GuardedProtocol):
                connection.drain()
        self._stopping = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        drain = self.drain
        timeout = self.gateway.cfg.toolgate.http.drain_timeout
        logger.info(
            "stopping: unready, new requests refused; %d call(s) in flight, up to %gs to finish",
            drain.calls,
            timeout,
        )
        if not await drain.settled(timeout):
            cut = drain.expire()
            logger.warning(
                "drain time (%gs) passed: %d call(s) still running answered with a retryable error",
                timeout,
                cut,
            )
            await drain.settled(ANSWER_GRACE)
        ended = drain.end()
        logger.info("drained; %d stream(s) ended; closing the server", ended)
        if self.server is not None:
            self.server.should_exit = True

    def reload(self) -> None:
        """Read the config file again and apply it (``toolgate.gateway.ops.reload``);
        the report goes to the log and the event bus. Reloads run one at a time."""
        logger.info("reloading %s", self.gateway.config_path)
        task = asyncio.get_running_loop().create_task(reload(self.gateway), name="reload")
        self._reloads.add(task)
        task.add_done_callback(self._reloads.discard)


#: What each signal does to a serving process; one owner, one line per signal.
SIGNALS: Mapping[signal.Signals, Callable[[Process], None]] = {
    signal.SIGTERM: Process.stop,
    signal.SIGINT: Process.stop,
    signal.SIGHUP: Process.reload,
}


@contextlib.contextmanager
def obeying(
    process: Process, signals: Mapping[signal.Signals, Callable[[Process], None]] = SIGNALS
) -> Iterator[None]:
    """``signals`` handled on the running loop while in the block (from the main thread
    only, where signals arrive; elsewhere the caller stops the server itself)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    for number, action in signals.items():
        loop.add_signal_handler(number, action, process)
    try:
        yield
    finally:
        for number in signals:
            loop.remove_signal_handler(number)


async def serve_http(
    gateway: Serving, *, host: str, port: int, allowed_hosts: Sequence[str] = ()
) -> None:
    """Serve ``gateway`` over streamable HTTP until a signal stops it (``SIGNALS``);
    the backends stop after the server. A signal while the backends are still starting
    ends the start-up: the backends stop and this returns (the process exits 0)."""
    process = Process(gateway, starting=asyncio.current_task())
    with obeying(process):
        try:
            async with gateway.running():
                app = gateway.http_app(host=host, allowed_hosts=allowed_hosts)
                options = server_options(gateway.cfg, host=host, port=port, drain=gateway.drain)
                config = uvicorn.Config(app, **options, timeout_graceful_shutdown=CLOSE_GRACE)
                process.server = _Server(config)
                logger.info("serving MCP over streamable HTTP at http://%s:%d/mcp", host, port)
                await process.server.serve()
                logger.info("server closed; stopping the backends")
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not process.stopped_starting or task is None or task.uncancel() > 0:
                raise
            logger.info("stopped before serving; the backends stopped")


__all__ = ["SIGNALS", "Process", "Serving", "obeying", "serve_http"]
