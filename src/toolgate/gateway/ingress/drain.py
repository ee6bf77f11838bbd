"""A stopping gateway's drain: where the stop stands (``Drain``) and the gate every MCP
request passes (``DrainGate``). While it drains, new work (``initialize``, sessionless
2026-07-28 requests) is refused with a retryable 503 that a balancer sends elsewhere; a
legacy session's requests are served (they can be served nowhere else); calls still
running at the deadline are answered with a retryable JSON-RPC error; open streams (any
GET still answering, the dashboard's event stream too) end.
Ingress layer: Starlette and the guard's body; knows nothing of the process or uvicorn.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolgate.gateway.ingress.guard import BODY

#: the JSON-RPC error code of an answer the drain gives (implementation-defined band)
SERVER_STOPPING = -32010
LISTEN = "subscriptions/listen"
#: where a stop stands: serving; draining (new work refused, calls finishing); expired
#: (the drain time passed: the calls still running are answered); closed (the server
#: closes: streams end, every request is refused)
DrainState = Literal["serving", "draining", "expired", "closed"]


class Drain:
    """One gateway's stop, told to everything that asks: ``begin`` at the signal, the
    calls in flight counted (``call``), ``expire`` at the deadline (the calls still
    running are cut and answered), ``end`` when the server closes (streams end).

    >>> drain = Drain(retry_after=1)
    >>> drain.begin(); drain.state
    'draining'
    """

    def __init__(self, *, retry_after: int = 1) -> None:
        self.state: DrainState = "serving"
        #: seconds a refused client is told to wait before it retries (``Retry-After``)
        self.retry_after = retry_after
        self._calls: set[asyncio.Task[Any]] = set()
        self._streams: set[asyncio.Task[Any]] = set()
        self._cut: set[asyncio.Task[Any]] = set()
        self._idle = asyncio.Event()
        self._idle.set()
        self._begun = asyncio.Event()

    @property
    def draining(self) -> bool:
        return self.state != "serving"

    @property
    def calls(self) -> int:
        """How many calls are in flight."""
        return len(self._calls)

    def begin(self) -> bool:
        """Start draining; False when already stopping."""
        if self.state != "serving":
            return False
        self.state = "draining"
        self._begun.set()
        return True

    async def begun(self) -> None:
        """Return once the stop has begun (at once if it has)."""
        await self._begun.wait()

    def expire(self) -> int:
        """The deadline: the calls still running are cut (each answers its client with
        a retryable error); returns how many."""
        self.state = "expired"
        return self._cut_all(self._calls)

    def end(self) -> int:
        """The server closes: open streams (legacy GET streams, ``subscriptions/listen``)
        end cleanly; returns how many."""
        self.state = "closed"
        return self._cut_all(self._streams)

    async def settled(self, timeout: float) -> bool:
        """Wait until no call is in flight, at most ``timeout`` seconds."""
        try:
            async with asyncio.timeout(max(timeout, 0)):
                await self._idle.wait()
        except TimeoutError:
            return False
        return True

    def _cut_all(self, tasks: set[asyncio.Task[Any]]) -> int:
        for task in list(tasks):
            self._cut.add(task)
            task.cancel("the gateway is stopping")
        return len(tasks)

    def was_cut(self, task: asyncio.Task[Any]) -> bool:
        """Whether the drain cancelled ``task`` (then it is taken back: the task answers)."""
        if task not in self._cut:
            return False
        self._cut.discard(task)
        task.uncancel()
        return True

    @contextmanager
    def call(self) -> Iterator[asyncio.Task[Any]]:
        """Count the current request as a call in flight while in the block."""
        task = _current()
        self._calls.add(task)
        self._idle.clear()
        try:
            yield task
        finally:
            self._calls.discard(task)
            if not self._calls:
                self._idle.set()

    @contextmanager
    def stream(self) -> Iterator[asyncio.Task[Any]]:
        """Hold the current request as an open stream while in the block."""
        task = _current()
        self._streams.add(task)
        try:
            yield task
        finally:
            self._streams.discard(task)


def _current() -> asyncio.Task[Any]:
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("a request is served in a task")
    return task


def stopping_error(rpc_id: Any, message: str, *, reason: str) -> dict[str, Any]:
    """The JSON-RPC error the drain answers with; ``data.retryable`` says a client may
    send the request again (to this address: a balancer picks another replica)."""
    return {
        "jsonrpc": "2.0",
        "id": rpc_id,
        "error": {
            "code": SERVER_STOPPING,
            "message": message,
            "data": {"retryable": True, "reason": reason},
        },
    }


REFUSED = (
    "this gateway is stopping and takes no new requests; send the request again "
    "(another replica answers it)"
)
CUT = (
    "this gateway stopped before the call finished (its drain time passed); the call "
    "may have run in part: send it again if that is safe"
)


def _message(body: Any) -> dict[str, Any]:
    if not isinstance(body, bytes | bytearray):
        return {}
    try:
        parsed = json.loads(body)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


class DrainGate:
    """ASGI middleware behind the guard (it reads the body the guard read): MCP requests
    on ``rpc_paths`` pass it, counted by the ``Drain``, and every GET, held as a stream
    the drain ends.

    >>> app = DrainGate(app, drain=Drain())
    """

    def __init__(self, app: ASGIApp, *, drain: Drain, rpc_paths: tuple[str, ...] = ("/mcp",)):
        self.app = app
        self.drain = drain
        self.rpc_paths = frozenset(rpc_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        drain = self.drain
        if scope["method"] == "GET":
            # a legacy session's stream, the dashboard's event stream: any GET still open
            # when the server closes is a stream, and ends cleanly then (else uvicorn
            # cancels it at its graceful-shutdown deadline, with an error logged)
            with drain.stream() as task:
                await self._cuttable(task, b"", scope, receive, send)
            return
        if scope["path"] not in self.rpc_paths or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = scope.get(BODY, b"")
        # the body is parsed only when the answer depends on it: a call runs unparsed
        if drain.draining:
            message = _message(body)
            if self._new_work(message, scope, drain):
                await self._refuse(message.get("id"), send)
                return
        if b"subscriptions/listen" in body and _message(body).get("method") == LISTEN:
            with drain.stream() as task:
                await self._cuttable(task, b"", scope, receive, send)
            return
        with drain.call() as task:
            await self._cuttable(task, body, scope, receive, send)

    @staticmethod
    def _new_work(message: dict[str, Any], scope: Scope, drain: Drain) -> bool:
        """A request that may go to another replica: a new session, a sessionless
        (2026-07-28) request, or any request once the drain is over. Notifications and
        responses are not new work (a cancellation reaches the call it cancels)."""
        if "method" not in message or message.get("id") is None:
            return False
        if drain.state in ("expired", "closed") or message.get("method") == "initialize":
            return True
        return "mcp-session-id" not in Headers(scope=scope)

    async def _refuse(self, rpc_id: Any, send: Send) -> None:
        body = json.dumps(stopping_error(rpc_id, REFUSED, reason="draining")).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", str(self.drain.retry_after).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def _cuttable(
        self, task: asyncio.Task[Any], body: bytes, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """Run the app; when the drain cuts it, answer what can still be answered: a
        call (``body``: its request) not yet answered gets the retryable error (as one
        JSON body, or as the last event of the stream it opened); a stream ends."""
        started: list[bytes] = []  # the response's content type, once it started
        complete = False

        async def tracked(message: Message) -> None:
            nonlocal complete
            if message["type"] == "http.response.start":
                types = [v for k, v in message.get("headers", []) if k.lower() == b"content-type"]
                started.append(types[0] if types else b"")
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                complete = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except asyncio.CancelledError:
            if not self.drain.was_cut(task):
                raise
            if complete:
                return
            message = _message(body)
            request = "method" in message and message.get("id") is not None
            await self._answer_cut(message["id"] if request else None, started, send)

    @staticmethod
    async def _answer_cut(rpc_id: Any, started: list[bytes], send: Send) -> None:
        error = json.dumps(stopping_error(rpc_id, CUT, reason="deadline")).encode()
        if not started:
            if rpc_id is None:
                return  # nothing to answer: uvicorn closes the connection
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,  # an answer, not a refusal: no balancer resends it
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(error)).encode()),
                        (b"connection", b"close"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": error})
            return
        event = b"event: message\r\ndata: " + error + b"\r\n\r\n" if rpc_id is not None else b""
        if started[0].startswith(b"text/event-stream"):
            await send({"type": "http.response.body", "body": event, "more_body": False})


__all__ = ["SERVER_STOPPING", "Drain", "DrainGate", "DrainState", "stopping_error"]
