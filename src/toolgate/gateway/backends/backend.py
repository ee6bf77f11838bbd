"""The gateway's backends: one supervised MCP client connection per configured server.

Each ``Backend`` runs in its own task: connects (stdio subprocess or streamable HTTP),
lists its tools, prompts, resources and resource templates, follows their
``list_changed``, health-checks it, and reconnects with exponential backoff when it dies,
while calls to its tools (and requests for its prompts and resources) get a clear error.
A stdio backend gets the environment its ``env``/``env_passthrough`` give it; its stderr
goes to the log line by line, and its last lines go into the error when it fails; its
requests, log messages and elicitation completions go to its ``peer``
(``toolgate.gateway.relay.calls``). Edge layer: imports ``mcp`` (client side) and the core's
value types.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import fnmatch
import json
import logging
import os
import threading
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TextIO, TypeVar, cast

import anyio
import mcp_types as mt
import pydantic_core
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import INVALID_REQUEST, REQUEST_TIMEOUT
from pydantic import BaseModel

from toolgate import __version__
from toolgate.catalog import ToolResult
from toolgate.errors import RelayedError
from toolgate.gateway.backends.http_calls import (
    HeaderParams,
    Hop,
    SessionGone,
    Stateless,
    header_params,
    usable,
)
from toolgate.gateway.backends.http_client import SessionSeen, backend_http_client
from toolgate.gateway.config.model import GatewayConfig
from toolgate.gateway.config.servers import HttpServer, ServerSpec, StdioServer
from toolgate.wire import result_from_mcp, tool_wire

logger = logging.getLogger("toolgate.gateway")
stderr_logger = logging.getLogger("toolgate.gateway.stderr")
STDERR_TAIL_LINES = 20  # kept per backend for the error of a failed start

CONNECTION_CLOSED = -32000  # the SDK's code for a connection that went away
MAX_LIST_PAGES = 1000
CLIENT_INFO = mt.Implementation(name="toolgate-gateway", version=__version__)
_CLIENT_INFO_WIRE = CLIENT_INFO.model_dump(by_alias=True, mode="json", exclude_none=True)
T = TypeVar("T")


def _env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return float(value)
    except ValueError:
        logger.warning("ignoring %s=%r: not a number", name, value)
        return default


@dataclass(frozen=True)
class Timing:
    """Reconnect backoff, health checks and start-up patience, in seconds.

    ``start_timeout`` bounds one backend's initialize and first tools/list;
    ``start_grace`` is how long serving waits for the slower backends once the first
    one is up, before it starts with those that are up (the others join when they come
    up). Defaults suit production; tests change them through
    ``TOOLGATE_BACKOFF_INITIAL``, ``TOOLGATE_BACKOFF_MAX``, ``TOOLGATE_HEALTH_INTERVAL``,
    ``TOOLGATE_START_TIMEOUT`` and ``TOOLGATE_START_GRACE``.
    """

    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    health_interval: float = 10.0
    start_timeout: float = 30.0
    start_grace: float = 5.0

    @classmethod
    def from_env(cls) -> Timing:
        return cls(
            backoff_initial=_env_float("TOOLGATE_BACKOFF_INITIAL", cls.backoff_initial),
            backoff_max=_env_float("TOOLGATE_BACKOFF_MAX", cls.backoff_max),
            health_interval=_env_float("TOOLGATE_HEALTH_INTERVAL", cls.health_interval),
            start_timeout=_env_float("TOOLGATE_START_TIMEOUT", cls.start_timeout),
            start_grace=_env_float("TOOLGATE_START_GRACE", cls.start_grace),
        )

    def delays(self) -> Iterator[float]:
        """0.5, 1, 2, 4 ... capped at ``backoff_max``."""
        delay = self.backoff_initial
        while True:
            yield min(delay, self.backoff_max)
            delay = min(delay * 2, self.backoff_max)


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


def _legacy(call: Callable[[], T]) -> T:
    """``call()`` of a method the SDK marks removed on 2026-07-28 (``resources/subscribe``):
    the gateway's backend sessions speak 2025-11-25 (``ClientSession.initialize``), where
    it is the way to hear updates. The SDK warns as the method is called, before any
    await, so the filter covers only this call."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return call()


class ConnectionLost(Exception):
    """The backend's transport closed or stopped answering."""


class BackendDown(Exception):
    """A request found the backend down, or its connection closed under it."""


class BackendTimeout(Exception):
    """A request got no answer within the backend's timeout (it was cancelled)."""


class BackendFailed(Exception):
    """A request failed in transport, or the SDK rejected what the backend answered."""


ToolsChanged = Callable[["Backend"], Awaitable[None]]
#: told which of ``PRIMITIVES`` changed (re-listed, or a backend came up with them)
PrimitivesChanged = Callable[["Backend", frozenset[str]], Awaitable[None]]
#: told a subscribed resource changed (``notifications/resources/updated``): its URI
ResourceUpdated = Callable[["Backend", str], Awaitable[None]]
#: what a backend offers besides tools, each listed (every page) when it declares it
PRIMITIVES = frozenset({"prompts", "resources", "templates"})


class Peer(Protocol):
    """The gateway's side of what a backend sends to its client on its own: requests for
    input (sampling, elicitation, roots), log messages and the completion of a URL-mode
    elicitation. ``toolgate.gateway.relay.calls`` relays them to the client whose call they
    belong to."""

    async def ask(
        self, backend: Backend, request: mt.InputRequest
    ) -> mt.InputResponse | mt.ErrorData: ...

    async def log(self, backend: Backend, params: mt.LoggingMessageNotificationParams) -> None: ...

    async def elicitation_complete(
        self, backend: Backend, params: mt.ElicitCompleteNotificationParams
    ) -> None: ...


class RelaySession(ClientSession):
    """The SDK's client session, relaying tool results as the backend sent them: a
    result's structured content is checked against the tool's output schema by the
    client that receives it, as it would be directly (the SDK's client checks it; so
    does FastMCP's), instead of the gateway turning a mismatch into a failure of the
    backend."""

    async def validate_tool_result(self, name: str, result: mt.CallToolResult) -> None:
        return None


class Backend:
    """One configured MCP server, kept connected for as long as the gateway runs."""

    def __init__(
        self,
        name: str,
        spec: ServerSpec,
        *,
        base_dir: Path | None = None,
        timing: Timing | None = None,
        on_tools: ToolsChanged | None = None,
        errlog: TextIO | None = None,
        on_primitives: PrimitivesChanged | None = None,
        on_updated: ResourceUpdated | None = None,
    ) -> None:
        self.name = name
        self.spec = spec
        self.base_dir = base_dir or Path.cwd()
        self.timing = timing or Timing.from_env()
        self.on_tools = on_tools
        self.errlog = errlog
        self.status = "starting"  # starting | up | down | stopped
        self.tools: tuple[dict[str, Any], ...] = ()
        # each tool's header params (``stateless_form``), and the tool list they were read from
        self._params: dict[str, HeaderParams | None] = {}
        self._params_of: tuple[dict[str, Any], ...] | None = None
        # prompts, resources, resource templates: wire dicts, as the backend lists them
        self.prompts: tuple[dict[str, Any], ...] = ()
        self.resources: tuple[dict[str, Any], ...] = ()
        self.templates: tuple[dict[str, Any], ...] = ()
        self.capabilities: dict[str, Any] = {}  # the backend's, from its initialize result
        self.on_primitives = on_primitives
        self.on_updated = on_updated
        #: URIs the gateway subscribed to on this backend (renewed after a reconnect)
        self.subscribed: set[str] = set()
        self.listed = False  # whether ``tools`` came from the backend at least once
        self.last_error: str | None = None
        self.next_attempt_at: float | None = None
        self.session: ClientSession | None = None
        #: ``tools/call`` on that session over plain kept-open HTTP (HTTP backends only)
        self.hop: Hop | None = None
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self.instructions: str | None = None  # what the backend said in its initialize result
        self.server_info: dict[str, Any] = {}
        #: who answers the backend's requests and hears its log messages (set by the gateway)
        self.peer: Peer | None = None
        self.log_level: mt.LoggingLevel | None = None  # applied again on every reconnect
        self.ready = asyncio.Event()  # the first attempt finished, either way
        self._wake = asyncio.Event()
        self._changed = False
        self._stale: set[str] = set()  # primitives whose list_changed came in
        self._dead = False
        self._check = False
        self._was_up = False

    # -- what the gateway reads ---------------------------------------------------------
    @property
    def up(self) -> bool:
        return self.status == "up" and self.session is not None

    def describe(self) -> str:
        return self.spec.describe()

    def unavailable(self) -> ToolResult:
        """The error result a call gets while the backend is down."""
        data = self._unavailable_data("tool", "Tools")
        return ToolResult(
            content=({"type": "text", "text": json.dumps(data)},), structured=data, is_error=True
        )

    def unavailable_error(self, what: str) -> MCPError:
        """The JSON-RPC error a request for one of its prompts or resources gets while the
        backend is down (``what``: "prompt", "resource"...)."""
        data = self._unavailable_data(what, "Prompts and resources")
        message = data.pop("error")
        return MCPError(code=mt.INTERNAL_ERROR, message=message, data={**data, "retryable": True})

    def _unavailable_data(self, what: str, others: str) -> dict[str, Any]:
        retry = None
        if self.next_attempt_at is not None:
            retry = max(0.0, round(self.next_attempt_at - time.monotonic(), 1))
        why = f": {self.last_error}" if self.last_error else ""
        when = f" (next attempt in {retry:g}s)" if retry is not None else ""
        message = (
            f"Backend {self.name!r} is unavailable{why}. toolgate is reconnecting to it"
            f"{when}; try this {what} again shortly. {others} of other backends still work."
        )
        data: dict[str, Any] = {
            "error": message,
            "code": "backend_unavailable",
            "backend": self.name,
            "reconnecting": True,
        }
        if retry is not None:
            data["retry_after_s"] = retry
        return data

    def timed_out(self, tool: str, seconds: float) -> ToolResult:
        """The error result of a call that got no answer in time (it was cancelled)."""
        message = (
            f"Backend {self.name!r} did not answer {tool!r} within {seconds:g}s; the call "
            "was cancelled. Try again; if it keeps happening the backend is hung or the "
            "timeout (mcpServers.<name>.timeout / tool_timeouts) is too short."
        )
        data: dict[str, Any] = {
            "error": message,
            "code": "backend_timeout",
            "backend": self.name,
            "timeout_s": seconds,
            "retryable": True,
        }
        return ToolResult(
            content=({"type": "text", "text": json.dumps(data)},), structured=data, is_error=True
        )

    def failure(self, exc: BaseException) -> str:
        """Why the backend failed, one line, with its last stderr lines when it wrote any."""
        why = _short(exc)
        lines = [line for line in self.stderr_tail if line.strip()]
        if lines:
            why += f" (its stderr: {' | '.join(lines[-5:])})"
        return why

    # -- calls ----------------------------------------------------------------------------
    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        progress: ProgressFnT | None = None,
        meta: Mapping[str, Any] | None = None,
        stateless: Stateless | None = None,
    ) -> ToolResult:
        """Run one of the backend's tools (by its own name), within its timeout. With
        ``progress``, the backend is asked for progress notifications and each one is
        passed on; ``meta`` goes in the request's ``_meta``. Cancelling the awaiting
        task cancels the backend request (the SDK sends ``notifications/cancelled``).
        ``stateless`` (``stateless_form``): sent as a 2026-07-28 request."""
        problem = unsendable(arguments)
        if problem is not None:  # refused here: encoding it would break the shared connection
            return ToolResult.error(f"Cannot send {tool!r} to backend {self.name!r}: {problem}")
        seconds = self.spec.timeout_for(tool)
        try:
            # the SDK cancels the request (notifications/cancelled) when its timeout fires;
            # the outer deadline (one second later) also covers a write that never completes
            async def send(session: ClientSession) -> mt.CallToolResult:
                hop = self.hop
                if hop is not None and hop.ready:
                    try:
                        return await hop.call_tool(
                            session,
                            tool,
                            arguments,
                            timeout=seconds,
                            progress=progress,
                            meta=meta,
                            stateless=stateless,
                        )
                    except SessionGone:  # nothing ran; the session is over: reconnect
                        self._lost("the backend no longer knows the gateway's session")
                        raise BackendDown(f"backend {self.name!r} ended the session") from None
                return await session.call_tool(
                    tool,
                    dict(arguments),
                    read_timeout_seconds=seconds,
                    progress_callback=progress,
                    meta=cast(mt.RequestParamsMeta, dict(meta)) if meta else None,
                )

            result = await self._send("a call", send, seconds=seconds, slack=1.0)
        except BackendDown:
            return self.unavailable()
        except BackendTimeout:
            return self.timed_out(tool, seconds)
        except BackendFailed as exc:
            return ToolResult.error(f"Backend {self.name!r} failed on {tool!r}: {exc}")
        except MCPError as exc:  # the client hears the backend's error as it was sent
            error = exc.error
            raise RelayedError(error.code, error.message, error.data, backend=self.name) from exc
        return result_from_mcp(result)

    def stateless_form(
        self, tool: str, arguments: Mapping[str, Any], level: mt.LoggingLevel | None
    ) -> Stateless | None:
        """A call to ``tool`` as a 2026-07-28 request (log messages from ``level`` on),
        if the backend serves that protocol and lists the tool; else ``None``. For calls
        that can be asked nothing, whose client speaks that protocol (``Upstream``): the
        backend gets them as it would from that client directly."""
        hop = self.hop
        if hop is None or not hop.stateless:
            return None
        if self._params_of is not self.tools:  # read once per tool list
            self._params = {str(t["name"]): header_params(t.get("inputSchema")) for t in self.tools}
            self._params_of = self.tools
        params = self._params.get(tool)
        if params is None:
            return None
        return Stateless.of(tool, params, arguments, _CLIENT_INFO_WIRE, level)

    async def set_logging_level(self, level: mt.LoggingLevel) -> None:
        """Ask the backend for log messages at ``level`` and above (kept for reconnects);
        a backend without the logging capability is left alone."""
        self.log_level = level
        session = self.session
        if session is not None and self.status == "up":
            await self._apply_log_level(session)

    async def roots_changed(self) -> None:
        """Tell the backend a client's roots changed (``notifications/roots/list_changed``)."""
        session = self.session
        if session is not None and self.status == "up":
            await session.send_notification(mt.RootsListChangedNotification())

    async def _apply_log_level(self, session: ClientSession) -> None:
        caps = session.server_capabilities
        if self.log_level is None or caps is None or caps.logging is None:
            return
        request = mt.SetLevelRequest(params=mt.SetLevelRequestParams(level=self.log_level))
        try:
            await session.send_request(request, mt.EmptyResult, request_read_timeout_seconds=10)
        except MCPError as exc:
            logger.warning("backend %s refused logging/setLevel: %s", self.name, exc.error.message)

    # -- what the backend sends on its own: handed to the peer ---------------------------------
    async def _ask(self, request: mt.InputRequest, *answers: type[Any]) -> Any:
        """The peer's answer to ``request``: one of ``answers``, or an ``ErrorData``."""
        if self.peer is None:
            return mt.ErrorData(
                code=INVALID_REQUEST, message=f"toolgate does not relay {request.method}"
            )
        answer = await self.peer.ask(self, request)
        if isinstance(answer, (mt.ErrorData, *answers)):
            return answer
        return mt.ErrorData(
            code=INVALID_REQUEST,
            message=f"{request.method} was answered with a {type(answer).__name__}",
        )

    async def _on_sampling(
        self, context: ClientRequestContext, params: mt.CreateMessageRequestParams
    ) -> mt.CreateMessageResult | mt.CreateMessageResultWithTools | mt.ErrorData:
        request = mt.CreateMessageRequest(params=params)
        answer: (
            mt.CreateMessageResult | mt.CreateMessageResultWithTools | mt.ErrorData
        ) = await self._ask(request, mt.CreateMessageResult, mt.CreateMessageResultWithTools)
        return answer

    async def _on_elicitation(
        self, context: ClientRequestContext, params: mt.ElicitRequestParams
    ) -> mt.ElicitResult | mt.ErrorData:
        answer: mt.ElicitResult | mt.ErrorData = await self._ask(
            mt.ElicitRequest(params=params), mt.ElicitResult
        )
        return answer

    async def _on_roots(self, context: ClientRequestContext) -> mt.ListRootsResult | mt.ErrorData:
        answer: mt.ListRootsResult | mt.ErrorData = await self._ask(
            mt.ListRootsRequest(), mt.ListRootsResult
        )
        return answer

    async def _on_log(self, params: mt.LoggingMessageNotificationParams) -> None:
        if self.peer is not None:
            await self.peer.log(self, params)

    # -- relayed requests (prompts, resources, completions) ---------------------------------
    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None
    ) -> mt.GetPromptResult | mt.InputRequiredResult:
        """``prompts/get`` for one of its prompts (by its own name)."""
        args = dict(arguments) if arguments is not None else None
        return await self.request("prompt", lambda s: s.get_prompt(name, args))

    async def read_resource(self, uri: str) -> mt.ReadResourceResult | mt.InputRequiredResult:
        """``resources/read`` of one of its resources."""
        return await self.request("resource", lambda s: s.read_resource(uri))

    async def complete(
        self,
        ref: mt.PromptReference | mt.ResourceTemplateReference,
        argument: Mapping[str, str],
        context: Mapping[str, str] | None,
    ) -> mt.CompleteResult:
        """``completion/complete`` for one of its prompts or resource templates."""
        ctx = dict(context) if context is not None else None
        return await self.request("completion", lambda s: s.complete(ref, dict(argument), ctx))

    async def subscribe(self, uri: str) -> None:
        """Subscribe the gateway to ``uri`` (kept across reconnects until ``unsubscribe``)."""
        self.subscribed.add(uri)
        try:
            await self.request("resource", lambda s: _legacy(partial(s.subscribe_resource, uri)))
        except BaseException:
            self.subscribed.discard(uri)
            raise

    async def unsubscribe(self, uri: str) -> None:
        """Drop the gateway's subscription to ``uri``; nothing to tell a backend that is down
        (its subscriptions went with its connection)."""
        self.subscribed.discard(uri)
        if self.up:
            await self.request("resource", lambda s: _legacy(partial(s.unsubscribe_resource, uri)))

    async def request(self, what: str, send: Callable[[ClientSession], Awaitable[T]]) -> T:
        """Send one relayed request within the backend's timeout. The backend's own errors
        reach the caller as they are; a backend that is down or dies gives
        ``unavailable_error``, one that does not answer a timeout error."""
        seconds = self.spec.timeout
        try:
            return await self._send(f"a {what} request", send, seconds=seconds)
        except BackendDown:
            raise self.unavailable_error(what) from None
        except BackendTimeout:
            raise MCPError(
                code=REQUEST_TIMEOUT,
                message=f"Backend {self.name!r} did not answer this {what} request within "
                f"{seconds:g}s (mcpServers.{self.name}.timeout)",
                data={"code": "backend_timeout", "backend": self.name, "retryable": True},
            ) from None
        except BackendFailed as exc:
            raise MCPError(
                code=mt.INTERNAL_ERROR,
                message=f"Backend {self.name!r} failed on this {what} request: {exc}",
                data={"code": "backend_failed", "backend": self.name},
            ) from exc

    async def _send(
        self,
        what: str,
        send: Callable[[ClientSession], Awaitable[T]],
        *,
        seconds: float,
        slack: float = 0.0,
    ) -> T:
        """``send`` on the live session within ``seconds`` (+ ``slack``), its failures
        sorted once for calls and relayed requests alike: ``BackendDown`` (down, or the
        connection closed: the supervisor is told), ``BackendTimeout`` (no answer: the
        SDK's own read timeout or ours), ``BackendFailed`` (transport trouble or a
        result the SDK rejected: the supervisor pings it now); the backend's own
        JSON-RPC errors pass through as ``MCPError``."""
        session = self.session
        if session is None or self.status != "up":
            raise BackendDown(f"backend {self.name!r} is not up")
        try:
            async with asyncio.timeout(seconds + slack):
                return await send(session)
        except TimeoutError:
            raise BackendTimeout(what) from None
        except BackendDown:
            raise
        except MCPError as exc:
            if exc.error.code == REQUEST_TIMEOUT:
                raise BackendTimeout(what) from None
            if exc.error.code == CONNECTION_CLOSED:
                self._lost(f"the connection closed during {what}")
                raise BackendDown(f"backend {self.name!r} closed the connection") from None
            raise
        except Exception as exc:  # transport trouble, or a result the SDK rejected
            self._check = True
            self._wake.set()  # have the supervisor ping it now
            raise BackendFailed(str(exc)) from exc

    # -- supervision ------------------------------------------------------------------------
    async def run(self) -> None:
        """Connect, serve, and reconnect with backoff until cancelled."""
        delays = self.timing.delays()
        while True:
            self.status = "starting" if not self.listed else self.status
            self._was_up = False
            try:
                logger.info("backend %s: connecting (%s)", self.name, self.describe())
                await self.connect(watch=True)
            except asyncio.CancelledError:
                self.status = "stopped"
                self.session = None
                raise
            except Exception as exc:
                self.last_error = self.failure(exc)
            self.session = None
            self.status = "down"
            if self._was_up:
                delays = self.timing.delays()
            delay = next(delays)
            self.next_attempt_at = time.monotonic() + delay
            self.ready.set()
            logger.warning(
                "backend %s: %s: %s; reconnecting in %gs",
                self.name,
                "connection lost" if self._was_up else "could not start",
                self.last_error or "unknown error",
                delay,
            )
            await asyncio.sleep(delay)

    async def connect(self, *, watch: bool) -> None:
        """Connect and list the tools, prompts, resources and templates; with ``watch``,
        then follow the backend until the connection is lost (raises ``ConnectionLost``),
        else disconnect at once."""
        self._dead = False
        self._changed = False
        self._wake = asyncio.Event()
        async with self._transport() as (read, write):
            forward_send, forward_recv = anyio.create_memory_object_stream[Any](64)
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._forward, read, forward_send)
                async with RelaySession(
                    forward_recv,
                    write,
                    message_handler=self._on_message,
                    client_info=CLIENT_INFO,
                    # declared always: the backend connection is shared by every client,
                    # so a client without the capability gets a clear error per request
                    sampling_callback=self._on_sampling,
                    elicitation_callback=self._on_elicitation,
                    list_roots_callback=self._on_roots,
                    logging_callback=self._on_log,
                ) as session:
                    with anyio.fail_after(self.timing.start_timeout):
                        init = await session.initialize()
                        await self._apply_log_level(session)
                        self.instructions = init.instructions
                        self.server_info = init.server_info.model_dump(exclude_none=True)
                        self.capabilities = init.capabilities.model_dump(
                            by_alias=True, exclude_none=True, mode="json"
                        )
                        # the gateway hears of new tools once they can be called (below)
                        tools_changed = await self._refresh(session, notify=False)
                        changed = await self._read_primitives(session, self.declared())
                        await self._resubscribe(session)
                        if self.hop is not None:
                            await self.hop.discover(session, self.timing.start_timeout)
                    self.session = session
                    self.status = "up"
                    self.last_error = None
                    self.next_attempt_at = None
                    self.ready.set()
                    self._was_up = True
                    logger.info("backend %s: up, %d tools", self.name, len(self.tools))
                    if tools_changed and self.on_tools is not None:
                        await self.on_tools(self)
                    await self._primitives_changed(changed | self.declared(), connected=True)
                    if watch:
                        await self._watch(session)
                    self.session = None
                tg.cancel_scope.cancel()

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any]]:
        spec = self.spec
        if isinstance(spec, HttpServer):
            seen = SessionSeen()
            hop = Hop(spec.url, spec.headers, seen) if usable(spec.url) else None
            try:
                async with (
                    backend_http_client(spec.headers, seen) as http,
                    streamable_http_client(spec.url, http_client=http) as streams,
                ):
                    self.hop = hop
                    yield streams[0], streams[1]
            finally:
                self.hop = None
                if hop is not None:
                    await hop.close()
            return
        assert isinstance(spec, StdioServer)  # the only other kind
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
        self.stderr_tail.clear()
        capture = StderrCapture(self.name, self.errlog, self.stderr_tail)
        try:
            async with stdio_client(params, errlog=capture.writer) as streams:
                yield streams[0], streams[1]
        finally:
            await capture.close()

    async def _forward(self, source: Any, sink: Any) -> None:
        """Pass transport messages to the session; the end of the stream is death."""
        try:
            async with sink:
                async for item in source:
                    await sink.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self._lost("the server closed the connection (process exited?)")

    def _lost(self, why: str) -> None:
        if not self._dead:
            self._dead = True
            self.last_error = why
            self._wake.set()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            self._changed = True
            self._wake.set()
        elif isinstance(message, mt.PromptListChangedNotification):
            self._stale.add("prompts")
            self._wake.set()
        elif isinstance(message, mt.ResourceListChangedNotification):
            self._stale.update(("resources", "templates"))
            self._wake.set()
        elif isinstance(message, mt.ResourceUpdatedNotification):
            if self.on_updated is not None:
                await self.on_updated(self, str(message.params.uri))
        elif isinstance(message, mt.ElicitCompleteNotification):
            if self.peer is not None:  # a URL-mode elicitation it asked for is done
                await self.peer.elicitation_complete(self, message.params)
        elif isinstance(message, Exception):
            logger.debug("backend %s: transport error: %s", self.name, message)

    async def _watch(self, session: ClientSession) -> None:
        """Follow list changes and check health until the connection is lost."""
        while True:
            # a cancel scope, not wait_for: no task is made per health interval
            with anyio.move_on_after(self.timing.health_interval):
                await self._wake.wait()
            self._wake.clear()
            if self._dead:
                raise ConnectionLost(self.last_error)
            if self._changed:
                self._changed = False
                logger.info("backend %s: tools/list_changed; re-reading its tools", self.name)
                await self._guard(self._refresh(session))
                continue
            if self._stale:
                stale, self._stale = frozenset(self._stale), set()
                logger.info("backend %s: %s list_changed; re-reading", self.name, "/".join(stale))
                changed = await self._guard(self._read_primitives(session, stale & self.declared()))
                await self._primitives_changed(changed)
                continue
            self._check = False
            await self._guard(session.send_ping())

    async def _guard(self, work: Awaitable[T]) -> T:
        try:
            with anyio.fail_after(max(self.timing.health_interval, 5.0)):
                return await work
        except TimeoutError:
            self._lost("it stopped answering")
            raise ConnectionLost(self.last_error) from None
        except MCPError as exc:
            if exc.error.code == CONNECTION_CLOSED:
                self._lost("the connection closed")
                raise ConnectionLost(self.last_error) from None
            raise

    async def _refresh(self, session: ClientSession, *, notify: bool = True) -> bool:
        """Re-read every page of the tool list; say whether it changed, and with
        ``notify`` tell the gateway."""
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            params = mt.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools += [tool_wire(t) for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        new = tuple(sorted(tools, key=lambda w: str(w["name"])))
        changed = new != self.tools or not self.listed
        self.tools = new
        self.listed = True
        if notify and changed and self.on_tools is not None:
            await self.on_tools(self)
        return changed

    def declared(self) -> frozenset[str]:
        """Which of ``PRIMITIVES`` the backend declared in its capabilities."""
        caps = self.capabilities
        return frozenset(
            kind
            for kind, cap in (
                ("prompts", "prompts"),
                ("resources", "resources"),
                ("templates", "resources"),
            )
            if cap in caps
        )

    async def _read_primitives(self, session: ClientSession, kinds: frozenset[str]) -> set[str]:
        """Re-read every page of the named lists; which ones changed. A list the backend
        declares but fails to give is logged and served empty: its tools still work."""
        changed: set[str] = set()
        for kind in sorted(kinds):
            try:
                items = tuple(await _list_pages(session, kind))
            except MCPError as exc:
                if exc.error.code == CONNECTION_CLOSED:
                    raise
                logger.warning("backend %s: cannot list its %s: %s", self.name, kind, exc)
                items = ()
            if items != getattr(self, kind):
                changed.add(kind)
            setattr(self, kind, items)
        for kind in PRIMITIVES - self.declared():  # no longer declared: nothing to serve
            if getattr(self, kind):
                changed.add(kind)
                setattr(self, kind, ())
        return changed

    async def _primitives_changed(self, kinds: set[str], *, connected: bool = False) -> None:
        """Tell the gateway; after a (re)connect always, so it re-reads the instructions."""
        if (kinds or connected) and self.on_primitives is not None:
            await self.on_primitives(self, frozenset(kinds))

    async def _resubscribe(self, session: ClientSession) -> None:
        """Renew the gateway's subscriptions on a new connection."""
        for uri in sorted(self.subscribed):
            try:
                await _legacy(partial(session.subscribe_resource, uri))
            except MCPError as exc:
                logger.warning(
                    "backend %s: cannot renew subscription to %s: %s", self.name, uri, exc
                )


async def _list_pages(session: ClientSession, kind: str) -> list[dict[str, Any]]:
    """Every page of one of ``PRIMITIVES``, as wire dicts in the backend's order."""
    out: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        params = mt.PaginatedRequestParams(cursor=cursor) if cursor else None
        items: Sequence[BaseModel]
        if kind == "prompts":
            prompts = await session.list_prompts(params=params)
            items, cursor = prompts.prompts, prompts.next_cursor
        elif kind == "resources":
            resources = await session.list_resources(params=params)
            items, cursor = resources.resources, resources.next_cursor
        else:
            templates = await session.list_resource_templates(params=params)
            items, cursor = templates.resource_templates, templates.next_cursor
        out += [i.model_dump(by_alias=True, exclude_none=True, mode="json") for i in items]
        if not cursor:
            break
    return out


def unsendable(arguments: Mapping[str, Any]) -> str | None:
    """Why ``arguments`` cannot be sent as JSON in UTF-8, or None. A lone UTF-16
    surrogate (``"\\ud800"``) would fail inside the transport's writer and close the
    connection every session shares. Encoded as the transports' writers encode."""
    try:
        pydantic_core.to_json(arguments if isinstance(arguments, dict) else dict(arguments))
    except pydantic_core.PydanticSerializationError as exc:
        if "UnicodeEncodeError" in str(exc):
            return "an argument holds a lone UTF-16 surrogate, which is not valid Unicode"
        return f"the arguments are not JSON: {exc}"
    return None


def _short(exc: BaseException) -> str:
    """A one-line reason, unwrapping exception groups from task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, ConnectionLost):
        return str(exc) or "connection lost"
    if isinstance(exc, MCPError):
        return f"MCP error {exc.error.code}: {exc.error.message}"
    if isinstance(exc, TimeoutError):
        return "timed out while starting (no answer to initialize/tools/list)"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, OSError) else text


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
    tasks = [asyncio.create_task(b.run(), name=f"backend:{n}") for n, b in backends.items()]
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
            await b.connect(watch=False)
            listed[b.name] = b
        except Exception as exc:
            failures[b.name] = b.failure(exc)

    await asyncio.gather(*(one(b) for b in backends.values()))
    return listed, failures


__all__ = [
    "PRIMITIVES",
    "Backend",
    "ConnectionLost",
    "Peer",
    "StderrCapture",
    "Timing",
    "backend_env",
    "connect_all",
    "make_backends",
    "running",
]
