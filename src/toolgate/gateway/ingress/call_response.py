"""What a fast-path call answers with, on either protocol era: its HTTP response written
as the call goes (``CallResponse``: the answer alone as one JSON body, or an SSE stream
kept alive with pings), and the JSON-RPC pieces both eras share. Ingress layer, under
the fast path: imports ``mcp_types``, Starlette types, ``pydantic_core``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as mt
import pydantic_core
from starlette.types import Send

from toolgate.sdk_internals import SSE_PING_INTERVAL

#: the methods the fast path serves; every other message goes to the SDK
LANE_METHODS = frozenset({"tools/call"})
#: an SSE comment sent every ``SSE_PING_INTERVAL`` seconds a call says nothing
_PING = b": ping\r\n\r\n"
_END: Any = object()  # the end of a call's stream


def event(message: Mapping[str, Any]) -> bytes:
    return b"event: message\r\ndata: " + pydantic_core.to_json(message) + b"\r\n\r\n"


def is_request_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def rpc_error(request_id: Any, error: mt.ErrorData) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": error.model_dump(by_alias=True, mode="json", exclude_none=True),
    }


async def write_json(
    send: Send, message: Mapping[str, Any], status: int, headers: list[tuple[bytes, bytes]]
) -> None:
    """``message`` as the whole response, one JSON body, as the SDK's JSON responses
    send it (either is the client's to read), written by the call's own task."""
    body = pydantic_core.to_json(message)
    head = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class CallResponse:
    """A call's HTTP response, written as the call goes, from the task that runs it: the
    answer alone as the whole response when nothing went before it (``end``'s
    ``alone``); else an SSE stream begun by the first event, or by a ping after
    ``SSE_PING_INTERVAL`` of quiet (as the SDK's transport keeps a stream alive),
    written by a task of its own so it goes on whatever the call is doing."""

    def __init__(self, send: Send, headers: list[tuple[bytes, bytes]], *, name: str) -> None:
        self.send = send
        self.headers = headers
        self.name = name
        self.out: asyncio.Queue[Any] | None = None  # the SSE stream's, once one began
        self.writer: asyncio.Task[None] | None = None  # writes the SSE stream
        self.gone = False  # the client's stream is gone (a write failed, or it left)
        self.quiet: asyncio.TimerHandle | None = asyncio.get_running_loop().call_later(
            SSE_PING_INTERVAL, self.put, None
        )

    def put(self, event: bytes | None) -> None:
        """One encoded SSE event (``None``: a ping) for the stream, begun if need be."""
        if self.gone:
            return
        self._hush()
        self._begin().put_nowait(event)

    async def end(
        self, last: Mapping[str, Any] | None, alone: Callable[[], Awaitable[None]] | None
    ) -> None:
        """End the response: ``alone`` writes the answer as all of it when nothing went
        before; else ``last`` (the answer; ``None``: no answer) ends the stream."""
        self._hush()
        if self.out is None and alone is not None:
            try:
                await alone()
            except OSError:
                self.gone = True  # the client left before its answer
            return
        if last is not None:
            self.put(event(last))
        self._begin().put_nowait(_END)  # begun now if nothing was said: an empty stream
        assert self.writer is not None
        await self.writer

    def abort(self) -> None:
        """The call is cancelled under its response: stop writing it."""
        self._hush()
        if self.writer is not None:
            self.writer.cancel()

    def _begin(self) -> asyncio.Queue[Any]:
        """The stream's queue, its writer started with it."""
        if self.out is None:
            self.out = asyncio.Queue()
            self.writer = asyncio.get_running_loop().create_task(
                self._write(self.out), name=self.name
            )
        return self.out

    async def _write(self, out: asyncio.Queue[Any]) -> None:
        """The SSE stream: each event queued, a ping for each quiet
        ``SSE_PING_INTERVAL``, until ``_END``."""
        try:
            await self.send({"type": "http.response.start", "status": 200, "headers": self.headers})
            while (item := await _next(out)) is not _END:
                chunk = _PING if item is None else item
                await self.send({"type": "http.response.body", "body": chunk, "more_body": True})
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            # the client left; a legacy call goes on, as on the SDK path, with nowhere to talk
            self.gone = True

    def _hush(self) -> None:
        if self.quiet is not None:
            self.quiet.cancel()
            self.quiet = None


async def _next(out: asyncio.Queue[Any]) -> Any:
    """The next event, ``_END``, or ``None`` when a ping is due."""
    try:
        async with asyncio.timeout(SSE_PING_INTERVAL):
            return await out.get()
    except TimeoutError:
        return None


__all__ = ["LANE_METHODS", "CallResponse", "event", "is_request_id", "rpc_error", "write_json"]
