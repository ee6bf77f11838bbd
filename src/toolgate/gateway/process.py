"""The serving process, HTTP or stdio: the signals it obeys (``SIGNALS``, one line each;
their one owner: uvicorn's handlers are off), its stop (``Process.stop``: over HTTP a
drain up to ``toolgate.http.drain_timeout``, over stdio stdin's end as when the host
closes it; then the backends stop, exit 0) and its reload (``ops.reload``; asked while
starting, it runs once serving). Gateway layer, under ``serve``: imports ingress,
``ops``, uvicorn, the SDK's stdio; never serve.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol, cast

import uvicorn
from mcp.server import Server
from mcp.server.stdio import stdio_server
from starlette.applications import Starlette

from toolgate.gateway.config.model import GatewayConfig
from toolgate.gateway.ingress.app import check_bind, server_options
from toolgate.gateway.ingress.drain import Drain
from toolgate.gateway.ingress.protocol import GuardedProtocol
from toolgate.gateway.ingress.stdio import StdinLines
from toolgate.gateway.ops.reload import Reloadable, ReloadReport, reload

if TYPE_CHECKING:
    import anyio

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
    server: Server[Any]

    def running(self) -> AbstractAsyncContextManager[Any]: ...
    def http_app(self, *, host: str, allowed_hosts: Sequence[str]) -> Starlette: ...


class _Server(uvicorn.Server):
    """uvicorn's server without its own signal handlers: ``Process`` owns the signals
    (uvicorn's would stop at once, then raise the signal again after the shutdown,
    so the process would not exit 0); it says it serves once its port is bound."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's start, then the log that the gateway serves: only once its port is
        bound (a busy port ends the start in ``SystemExit``, uvicorn having said why),
        naming the port bound (``--port 0`` asks for any)."""
        await super().startup(sockets)
        if self.started:
            port = self.servers[0].sockets[0].getsockname()[1]
            logger.info(
                "serving MCP over streamable HTTP at http://%s:%d/mcp", self.config.host, port
            )


class Process:
    """One serving process: the gateway and how its serving ends.

    Until ``ending`` is set the gateway is still starting (its backends coming up): a
    stop then ends the start-up (``starting``, the task serving) instead.

    >>> process = Process(gateway, starting=asyncio.current_task())
    >>> process.stop()          # what SIGTERM does             # doctest: +SKIP
    """

    def __init__(self, gateway: Serving, *, starting: asyncio.Task[Any] | None = None) -> None:
        self.gateway = gateway
        self.starting = starting
        self.stopped_starting = False
        #: how the serving ends once it serves (None: still starting): over HTTP the
        #: drain then the server's close (``drain_http``), over stdio stdin's end
        #: (``end_stdio``)
        self.ending: Callable[[], None] | None = None
        self._stopping: asyncio.Task[None] | None = None
        self._reloads: set[asyncio.Task[ReloadReport]] = set()
        #: a reload asked while starting: it runs once the gateway serves (``serving``)
        self._reload_asked = False

    def serving(self, ending: Callable[[], None]) -> None:
        """The gateway is built and serves from now on, its serving ended by ``ending``;
        a reload asked while it was starting runs now (the file may have changed since
        the start read it)."""
        self.ending = ending
        if self._reload_asked:
            self._reload_asked = False
            self.reload()

    @property
    def drain(self) -> Drain:
        return self.gateway.drain

    def stop(self) -> None:
        """Begin the stop (``ending``); then the backends stop and the process exits 0.
        Asked again while stopping, the calls still running are answered now."""
        drain = self.drain
        if not drain.begin():
            cut = drain.expire()
            logger.warning("asked again to stop: %d call(s) still running answered now", cut)
            return
        if self.ending is None:  # nothing served yet, nothing to drain: end the start-up
            logger.info("stopping while starting: the backends stop, nothing was served")
            if self.starting is not None:
                self.stopped_starting = True
                self.starting.cancel()
            return
        self.ending()

    def drain_http(self, server: uvicorn.Server) -> None:
        """The stop over HTTP: ``/readyz`` unready and new work refused at once, every
        response closing its connection; calls in flight finish up to the drain time,
        then ``server`` closes."""
        for connection in list(server.server_state.connections):
            if isinstance(connection, GuardedProtocol):
                connection.drain()
        self._stopping = asyncio.get_running_loop().create_task(self._drain(server))

    async def _drain(self, server: uvicorn.Server) -> None:
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
        server.should_exit = True

    def end_stdio(self, lines: StdinLines) -> None:
        """The stop over stdio: stdin's lines end now, and the serving with them, as when
        the host closes stdin (the SDK then cancels the calls still running: the host
        that would read their answers is going; see docs/decisions.md)."""
        logger.info("stopping: stdin ends as if the host closed it; calls still running end")
        lines.close()

    def reload(self) -> None:
        """Read the config file again and apply it (``toolgate.gateway.ops.reload``);
        the report goes to the log and the event bus. Reloads run one at a time."""
        if self.ending is None and not self.drain.draining:
            if not self._reload_asked:
                logger.info("asked to reload while starting: the file is read once serving")
            self._reload_asked = True
            return
        logger.info("reloading %s", self.gateway.config_path)
        task = asyncio.get_running_loop().create_task(reload(self.gateway), name="reload")
        self._reloads.add(task)
        task.add_done_callback(_reloaded)
        task.add_done_callback(self._reloads.discard)

    async def reloads_done(self) -> None:
        """The serving ended (a signal, or a stdio host closing stdin): the stop has
        begun, so a reload under way stops waiting for its backends; wait for it before
        the backends stop under it."""
        self.drain.begin()
        async with self.gateway.reload_lock:
            pass


def _reloaded(task: asyncio.Task[ReloadReport]) -> None:
    """A reload a signal asked for reports itself (log, events); one that failed for
    something it could not report is logged here, not lost with its task."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        logger.error("config reload failed: %s", exc, exc_info=exc)


#: What each signal does to a serving process; one owner, one line per signal.
SIGNALS: Mapping[signal.Signals, Callable[[Process], None]] = {
    signal.SIGTERM: Process.stop,
    signal.SIGINT: Process.stop,
    signal.SIGHUP: Process.reload,
}


@contextlib.contextmanager
def obeying(
    process: Process,
    signals: Mapping[signal.Signals, Callable[[Process], None]] = SIGNALS,
    *,
    exiting: bool = False,
) -> Iterator[None]:
    """``signals`` handled on the running loop while in the block (from the main thread
    only, where signals arrive; elsewhere the caller stops the server itself).

    On leaving, each signal does again what it did before; or, ``exiting`` (serving is
    the process's whole job, as in ``toolgate serve``), nothing until the process exits:
    it is already on its way out (the gateway's stores close, the loop and interpreter
    end), and a host that closed stdin and, past its grace, sends SIGTERM to the process
    tree must not turn that exit 0 into a death by signal. SIGKILL still ends it.

    Each handler is a Python one that hands the signal to the loop
    (``call_soon_threadsafe``, as asyncio's own SIGINT handling does), so leaving swaps
    it for what comes after in one ``signal.signal``. The loop's ``add_signal_handler``
    cannot be left that way: its ``remove_signal_handler`` passes through SIG_DFL, and a
    SIGTERM in that instant killed a stdio gateway on its way to exit 0."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    before = {number: signal.getsignal(number) for number in signals}
    for number, action in signals.items():
        signal.signal(number, functools.partial(_to_loop, loop, action, process))
    try:
        yield
    finally:
        for number, previous in before.items():
            afterwards = signal.SIG_IGN if exiting else previous
            signal.signal(number, signal.SIG_DFL if afterwards is None else afterwards)


def _to_loop(
    loop: asyncio.AbstractEventLoop,
    action: Callable[[Process], None],
    process: Process,
    number: int,
    frame: object,
) -> None:
    """A signal's Python handler (main thread, between two bytecodes): ``action`` runs
    on the loop, which the call wakes."""
    loop.call_soon_threadsafe(action, process)


async def _serve(
    gateway: Serving, transport: Callable[[Process], Awaitable[None]], *, exiting: bool
) -> None:
    """Run ``gateway``'s backends and ``transport`` over them, obeying ``SIGNALS`` from
    before the backends start until after they stop (then, ``exiting``, ignoring them:
    ``obeying``). A signal while they are still starting ends the start-up: they stop
    and this returns (the process exits 0)."""
    process = Process(gateway, starting=asyncio.current_task())
    with obeying(process, exiting=exiting):
        try:
            async with gateway.running():
                await transport(process)
                await process.reloads_done()
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not process.stopped_starting or task is None or task.uncancel() > 0:
                raise
            logger.info("stopped before serving; the backends stopped")


async def serve_http(
    gateway: Serving,
    *,
    host: str,
    port: int,
    allowed_hosts: Sequence[str] = (),
    exiting: bool = False,
) -> None:
    """Serve ``gateway`` over streamable HTTP until a signal stops it (``SIGNALS``);
    the backends stop after the server. ``exiting``: the process ends after this
    (``obeying``). An address it cannot listen on is a ``ConfigError``, before any
    backend starts."""
    check_bind(host, port)

    async def http(process: Process) -> None:
        app = gateway.http_app(host=host, allowed_hosts=allowed_hosts)
        options = server_options(gateway.cfg, host=host, port=port, drain=gateway.drain)
        config = uvicorn.Config(app, **options, timeout_graceful_shutdown=CLOSE_GRACE)
        server = _Server(config)
        process.serving(functools.partial(process.drain_http, server))
        await server.serve()
        logger.info("server closed; stopping the backends")

    await _serve(gateway, http, exiting=exiting)


async def serve_stdio(gateway: Serving, *, exiting: bool = False) -> None:
    """Serve ``gateway`` over stdio until the host closes stdin or a signal stops it
    (``SIGNALS``); the backends stop after the serving. ``exiting``: the process ends
    after this (``obeying``)."""

    async def stdio(process: Process) -> None:
        lines = StdinLines()
        process.serving(functools.partial(process.end_stdio, lines))
        server = gateway.server
        logger.info("serving MCP over stdio")
        # the SDK only iterates its ``stdin`` (``async for line in stdin``)
        async with stdio_server(stdin=cast("anyio.AsyncFile[str]", lines)) as (read, write):
            await server.run(read, write, server.create_initialization_options())
        ended = "stopped" if process.drain.draining else "stdin closed"
        logger.info("%s; stopping the backends", ended)

    await _serve(gateway, stdio, exiting=exiting)


__all__ = ["SIGNALS", "Process", "Serving", "obeying", "serve_http", "serve_stdio"]
