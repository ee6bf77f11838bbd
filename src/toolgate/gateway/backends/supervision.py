"""Keeping a backend connected: each connection chooses its transport once (``TRANSPORTS``),
runs the SDK's client session on it, lists what the backend offers and follows its
``list_changed``, checks its health, hands what it sends on its own to its peer, and is
made again with backoff when it dies. Imports ``mcp`` (client side), the backend, its
transports and errors.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, TypeVar

import anyio
import mcp_types as mt
from mcp import ClientSession
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST
from pydantic import BaseModel

from toolgate.gateway.backends import malformed
from toolgate.gateway.backends.backend import PRIMITIVES, Backend
from toolgate.gateway.backends.errors import CONNECTION_CLOSED, ConnectionLost
from toolgate.gateway.backends.http import HttpTransport
from toolgate.gateway.backends.stdio import StdioTransport
from toolgate.gateway.backends.transport import CLIENT_INFO, BackendTransport
from toolgate.gateway.config.servers import HttpServer, ServerSpec, StdioServer
from toolgate.wire import tool_wire

logger = logging.getLogger("toolgate.gateway")
MAX_LIST_PAGES = 1000
T = TypeVar("T")

#: how each kind of server is reached: one transport per spec model of ``SERVER_SPECS``
TRANSPORTS: Mapping[type[ServerSpec], type[BackendTransport]] = {
    StdioServer: StdioTransport,
    HttpServer: HttpTransport,
}


class RelaySession(ClientSession):
    """The SDK's client session, relaying tool results as the backend sent them: a
    result's structured content is checked against the tool's output schema by the
    client that receives it, as it would be directly (the SDK's client checks it; so
    does FastMCP's), instead of the gateway turning a mismatch into a failure of the
    backend."""

    async def validate_tool_result(self, name: str, result: mt.CallToolResult) -> None:
        return None


async def supervise(backend: Backend) -> None:
    """Connect, serve, and reconnect with backoff until cancelled."""
    delays = backend.timing.delays()
    while True:
        backend.status = "starting" if not backend.listed else backend.status
        connection = Connection(backend)
        try:
            logger.info("backend %s: connecting (%s)", backend.name, backend.spec.describe())
            await connection.open(watch=True)
        except asyncio.CancelledError:
            backend.status = "stopped"
            backend.session = None
            raise
        except Exception as exc:
            backend.last_error = backend.failure(exc)
        backend.session = None
        backend.status = "down"
        if connection.was_up:
            delays = backend.timing.delays()
        delay = next(delays)
        backend.next_attempt_at = time.monotonic() + delay
        backend.ready.set()
        logger.warning(
            "backend %s: %s: %s; reconnecting in %gs",
            backend.name,
            "connection lost" if connection.was_up else "could not start",
            backend.last_error or "unknown error",
            delay,
        )
        await asyncio.sleep(delay)


async def connect(backend: Backend, *, watch: bool) -> None:
    """Connect and list the tools, prompts, resources and templates; with ``watch``,
    then follow the backend until the connection is lost (raises ``ConnectionLost``),
    else disconnect at once."""
    await Connection(backend).open(watch=watch)


class Connection:
    """One connection to a backend, from its transport's streams to its end."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.was_up = False
        self.changed = False  # its tools/list_changed came in
        self.stale: set[str] = set()  # primitives whose list_changed came in

    async def open(self, *, watch: bool) -> None:
        b = self.backend
        b.dead = False
        b.wake = asyncio.Event()
        transport = TRANSPORTS[type(b.spec)](b.name, b.spec, base_dir=b.base_dir, errlog=b.errlog)
        b.transport = transport
        async with transport.streams() as (read, write):
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
                    with anyio.fail_after(b.timing.start_timeout):
                        init = await session.initialize()
                        await b.apply_log_level(session)
                        b.instructions = init.instructions
                        b.server_info = init.server_info.model_dump(exclude_none=True)
                        b.capabilities = init.capabilities.model_dump(
                            by_alias=True, exclude_none=True, mode="json"
                        )
                        # the gateway hears of new tools once they can be called (below)
                        tools_changed = await self._refresh(session, notify=False)
                        changed = await self._read_primitives(session, b.declared())
                        await b.resubscribe(session)
                        await transport.started(session, b.timing.start_timeout)
                    b.session = session
                    b.status = "up"
                    b.last_error = None
                    b.next_attempt_at = None
                    b.ready.set()
                    self.was_up = True
                    logger.info("backend %s: up, %d tools", b.name, len(b.tools))
                    if tools_changed and b.on_tools is not None:
                        await b.on_tools(b)
                    await self._primitives_changed(changed | b.declared(), connected=True)
                    if watch:
                        await self._watch(session)
                    b.session = None
                tg.cancel_scope.cancel()

    async def _forward(self, source: Any, sink: Any) -> None:
        """Pass transport messages to the session; the end of the stream is death."""
        try:
            async with sink:
                async for item in source:
                    # what the SDK could not parse: an error for the request it answered
                    answer = malformed.pending_error(item) if isinstance(item, Exception) else None
                    if answer is not None:
                        logger.warning(
                            "backend %s: a malformed answer: %s", self.backend.name, item
                        )
                    await sink.send(answer or item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self.backend.lost("the server closed the connection (process exited?)")

    async def _on_message(self, message: Any) -> None:
        b = self.backend
        if isinstance(message, mt.ToolListChangedNotification):
            self.changed = True
            b.wake.set()
        elif isinstance(message, mt.PromptListChangedNotification):
            self.stale.add("prompts")
            b.wake.set()
        elif isinstance(message, mt.ResourceListChangedNotification):
            self.stale.update(("resources", "templates"))
            b.wake.set()
        elif isinstance(message, mt.ResourceUpdatedNotification):
            if b.on_updated is not None:
                await b.on_updated(b, str(message.params.uri))
        elif isinstance(message, mt.ElicitCompleteNotification):
            if b.peer is not None:  # a URL-mode elicitation it asked for is done
                await b.peer.elicitation_complete(b, message.params)
        elif isinstance(message, Exception):
            logger.debug("backend %s: transport error: %s", b.name, message)

    async def _watch(self, session: ClientSession) -> None:
        """Follow list changes and check health until the connection is lost."""
        b = self.backend
        while True:
            # a cancel scope, not wait_for: no task is made per health interval
            with anyio.move_on_after(b.timing.health_interval):
                await b.wake.wait()
            b.wake.clear()
            if b.dead:
                raise ConnectionLost(b.last_error)
            if self.changed:
                self.changed = False
                logger.info("backend %s: tools/list_changed; re-reading its tools", b.name)
                await self._guard(self._refresh(session))
                continue
            if self.stale:
                stale, self.stale = frozenset(self.stale), set()
                logger.info("backend %s: %s list_changed; re-reading", b.name, "/".join(stale))
                changed = await self._guard(self._read_primitives(session, stale & b.declared()))
                await self._primitives_changed(changed)
                continue
            await self._guard(session.send_ping())

    async def _guard(self, work: Awaitable[T]) -> T:
        b = self.backend
        try:
            with anyio.fail_after(max(b.timing.health_interval, 5.0)):
                return await work
        except TimeoutError:
            b.lost("it stopped answering")
            raise ConnectionLost(b.last_error) from None
        except MCPError as exc:
            if exc.error.code == CONNECTION_CLOSED:
                b.lost("the connection closed")
                raise ConnectionLost(b.last_error) from None
            raise

    async def _refresh(self, session: ClientSession, *, notify: bool = True) -> bool:
        """Re-read every page of the tool list; say whether it changed, and with
        ``notify`` tell the gateway."""
        b = self.backend
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
        changed = new != b.tools or not b.listed
        b.tools = new
        b.listed = True
        if notify and changed and b.on_tools is not None:
            await b.on_tools(b)
        return changed

    async def _read_primitives(self, session: ClientSession, kinds: frozenset[str]) -> set[str]:
        """Re-read every page of the named lists; which ones changed. A list the backend
        declares but fails to give is logged and served empty: its tools still work."""
        b = self.backend
        changed: set[str] = set()
        for kind in sorted(kinds):
            try:
                items = tuple(await _list_pages(session, kind))
            except MCPError as exc:
                if exc.error.code == CONNECTION_CLOSED:
                    raise
                logger.warning("backend %s: cannot list its %s: %s", b.name, kind, exc)
                items = ()
            if items != getattr(b, kind):
                changed.add(kind)
            setattr(b, kind, items)
        for kind in PRIMITIVES - b.declared():  # no longer declared: nothing to serve
            if getattr(b, kind):
                changed.add(kind)
                setattr(b, kind, ())
        return changed

    async def _primitives_changed(self, kinds: set[str], *, connected: bool = False) -> None:
        """Tell the gateway; after a (re)connect always, so it re-reads the instructions."""
        b = self.backend
        if (kinds or connected) and b.on_primitives is not None:
            await b.on_primitives(b, frozenset(kinds))

    # -- what the backend sends on its own: handed to the peer -----------------------------
    async def _ask(self, request: mt.InputRequest, *answers: type[Any]) -> Any:
        """The peer's answer to ``request``: one of ``answers``, or an ``ErrorData``."""
        b = self.backend
        if b.peer is None:
            return mt.ErrorData(
                code=INVALID_REQUEST, message=f"toolgate does not relay {request.method}"
            )
        answer = await b.peer.ask(b, request)
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
        if self.backend.peer is not None:
            await self.backend.peer.log(self.backend, params)


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


__all__ = ["TRANSPORTS", "Connection", "RelaySession", "connect", "supervise"]
