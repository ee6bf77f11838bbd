"""A configured backend as the gateway sees it: its state (up or not, what it lists), the
requests the gateway sends it (tool calls through its transport; prompts, resources,
completions, subscriptions and the log level on its session), and the errors they get
while it is down or slow. ``supervision`` keeps it connected. Imports the config's specs,
the transport seam, the backends' errors and stateless form, and ``mcp`` (client side).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TextIO, TypeVar

import mcp_types as mt
import pydantic
import pydantic_core
from mcp import ClientSession
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import REQUEST_TIMEOUT

from toolgate.catalog import ToolResult
from toolgate.errors import RelayedError
from toolgate.gateway.backends import malformed
from toolgate.gateway.backends.errors import (
    CONNECTION_CLOSED,
    BackendDown,
    BackendFailed,
    BackendTimeout,
    SessionEnded,
    reason,
)
from toolgate.gateway.backends.malformed import MalformedAnswer
from toolgate.gateway.backends.stateless import Stateless
from toolgate.gateway.backends.transport import BackendTransport
from toolgate.gateway.config.servers import ServerSpec
from toolgate.wire import result_from_mcp

logger = logging.getLogger("toolgate.gateway")
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


def _legacy(call: Callable[[], T]) -> T:
    """``call()`` of a method the SDK marks removed on 2026-07-28 (``resources/subscribe``):
    the gateway's backend sessions speak 2025-11-25 (``ClientSession.initialize``), where
    it is the way to hear updates. The SDK warns as the method is called, before any
    await, so the filter covers only this call."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return call()


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


class Backend:
    """One configured MCP server, kept connected (``supervision.supervise``) for as long as
    the gateway runs."""

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
        #: how the latest connection reached the backend (chosen as it connected)
        self.transport: BackendTransport | None = None
        self.instructions: str | None = None  # what the backend said in its initialize result
        self.server_info: dict[str, Any] = {}
        #: who answers the backend's requests and hears its log messages (set by the gateway)
        self.peer: Peer | None = None
        self.log_level: mt.LoggingLevel | None = None  # applied again on every reconnect
        self.ready = asyncio.Event()  # the first attempt finished, either way
        #: set to have the supervisor look at the connection now (a change, a failure)
        self.wake = asyncio.Event()
        self.dead = False  # the connection is lost: the supervisor reconnects
        #: stopped for good: a config reload took it out (its requests are not retried)
        self.removed = False

    # -- what the gateway reads ---------------------------------------------------------
    @property
    def up(self) -> bool:
        return self.status == "up" and self.session is not None

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
        return MCPError(
            code=mt.INTERNAL_ERROR, message=message, data={**data, "retryable": not self.removed}
        )

    def _unavailable_data(self, what: str, others: str) -> dict[str, Any]:
        if self.removed:
            return {
                "error": (
                    f"Backend {self.name!r} was removed from the gateway's configuration "
                    f"(a config reload) while this {what} ran; it is no longer served. "
                    f"{others} of other backends still work."
                ),
                "code": "backend_removed",
                "backend": self.name,
                "reconnecting": False,
            }
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
        """Why the backend failed, one line, with what its transport saw (a stdio
        backend's last stderr lines)."""
        why = reason(exc)
        return self.transport.failure(why) if self.transport is not None else why

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
        task cancels the backend request (``notifications/cancelled``).
        ``stateless`` (``stateless_form``): sent as a 2026-07-28 request."""
        problem = unsendable(arguments)
        if problem is not None:  # refused here: encoding it would break the shared connection
            return ToolResult.error(f"Cannot send {tool!r} to backend {self.name!r}: {problem}")
        seconds = self.spec.timeout_for(tool)
        transport = self.transport
        try:
            # the transport cancels the request when its timeout fires; the outer deadline
            # (one second later) also covers a write that never completes
            async def send(session: ClientSession) -> mt.CallToolResult:
                assert transport is not None  # a session is up: its transport is chosen
                return await transport.call_tool(
                    session,
                    tool,
                    arguments,
                    timeout=seconds,
                    progress=progress,
                    meta=meta,
                    stateless=stateless,
                )

            result = await self._send("a call", send, seconds=seconds, slack=1.0)
        except BackendDown:
            return self.unavailable()
        except BackendTimeout:
            return self.timed_out(tool, seconds)
        except MalformedAnswer as exc:
            return malformed.result(self.name, tool, str(exc))
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
        if the backend is up, its transport sends such requests, it serves that protocol
        and lists the tool; else ``None``. For calls that can be asked nothing, whose
        client speaks that protocol (``CallRelay``): the backend gets them as it would
        from that client directly."""
        transport = self.transport
        if transport is None or not self.up:
            return None
        return transport.stateless_form(tool, arguments, level, self.tools)

    async def set_logging_level(self, level: mt.LoggingLevel) -> None:
        """Ask the backend for log messages at ``level`` and above (kept for reconnects);
        a backend without the logging capability is left alone."""
        self.log_level = level
        session = self.session
        if session is not None and self.status == "up":
            await self.apply_log_level(session)

    async def roots_changed(self) -> None:
        """Tell the backend a client's roots changed (``notifications/roots/list_changed``)."""
        session = self.session
        if session is not None and self.status == "up":
            await session.send_notification(mt.RootsListChangedNotification())

    async def apply_log_level(self, session: ClientSession) -> None:
        """Ask for the log level wanted (``set_logging_level``) on ``session``."""
        caps = session.server_capabilities
        if self.log_level is None or caps is None or caps.logging is None:
            return
        request = mt.SetLevelRequest(params=mt.SetLevelRequestParams(level=self.log_level))
        try:
            await session.send_request(request, mt.EmptyResult, request_read_timeout_seconds=10)
        except MCPError as exc:
            logger.warning("backend %s refused logging/setLevel: %s", self.name, exc.error.message)

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
        SDK's own read timeout or ours), ``MalformedAnswer`` (an answer that is no valid
        one), ``BackendFailed`` (transport trouble: the supervisor pings it now); the
        backend's own JSON-RPC errors pass through as ``MCPError``."""
        session = self.session
        if session is None or self.status != "up":
            raise BackendDown(f"backend {self.name!r} is not up")
        try:
            async with asyncio.timeout(seconds + slack):
                return await send(session)
        except TimeoutError:
            raise BackendTimeout(what) from None
        except SessionEnded:  # nothing ran; the session is over: reconnect
            self.lost("the backend no longer knows the gateway's session")
            raise BackendDown(f"backend {self.name!r} ended the session") from None
        except MCPError as exc:
            if exc.error.code == REQUEST_TIMEOUT:
                raise BackendTimeout(what) from None
            if exc.error.code == CONNECTION_CLOSED:
                self.lost(f"the connection closed during {what}")
                raise BackendDown(f"backend {self.name!r} closed the connection") from None
            problem = malformed.of_error(exc.error)
            if problem is not None:
                raise MalformedAnswer(problem) from exc
            raise
        except MalformedAnswer:
            raise
        except pydantic.ValidationError as exc:  # a result the SDK's model refused
            raise MalformedAnswer(malformed.result_problem(exc)) from exc
        except Exception as exc:  # transport trouble
            self.wake.set()  # have the supervisor ping it now
            raise BackendFailed(str(exc)) from exc

    def lost(self, why: str) -> None:
        """The connection is lost (``why``): the supervisor reconnects."""
        if not self.dead:
            self.dead = True
            self.last_error = why
            self.wake.set()

    async def resubscribe(self, session: ClientSession) -> None:
        """Renew the gateway's subscriptions on a new connection."""
        for uri in sorted(self.subscribed):
            try:
                await _legacy(partial(session.subscribe_resource, uri))
            except MCPError as exc:
                logger.warning(
                    "backend %s: cannot renew subscription to %s: %s", self.name, uri, exc
                )


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


__all__ = ["PRIMITIVES", "Backend", "Peer", "Timing", "unsendable"]
