"""A 2026-07-28 ``tools/call`` on the fast path: the SDK's own envelope checks pass,
then the SDK's kernel runs it as its ``serve_one`` does, on a connection built from the
envelope and a single-exchange dispatch context of its own; a client that leaves cancels
it. Ingress layer, under the fast path: imports ``mcp``, the response writer and the
server protocol's ``Leaving``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

import pydantic
import pydantic_core
from mcp.server.connection import Connection
from mcp.server.lowlevel import Server
from mcp.server.runner import ServerRunner, aclose_shielded, modern_error_data
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
)
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import ClientCapabilities, Implementation, JSONRPCRequest
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from toolgate.gateway.ingress.call_response import (
    LANE_METHODS,
    CallResponse,
    is_request_id,
    rpc_error,
    write_json,
)
from toolgate.gateway.ingress.protocol import LEAVING, Leaving
from toolgate.sdk_internals import (
    SSE_HEADERS,
    SingleExchangeDispatchContext,
    has_exit_callbacks,
    lifespan_state,
    mcp_param_rejection,
)

_M = TypeVar("_M", bound=pydantic.BaseModel)


class StatelessCalls:
    """The fast path's 2026-07-28 calls, for ``server`` behind ``manager``."""

    def __init__(self, server: Server[Any], manager: StreamableHTTPSessionManager) -> None:
        self.server = server
        self.manager = manager
        self.served = 0  # calls served, so far

    async def take(
        self, message: dict[str, Any], scope: Scope, receive: Receive, send: Send
    ) -> bool:
        """Serve ``message`` if it is a ``tools/call`` the SDK's envelope checks pass,
        with its kernel on a connection built from the envelope; ``False`` hands it to
        the SDK."""
        request = Request(scope)
        checked = await self._checked(message, request)
        if checked is None:
            return False
        req, connection = checked
        response = CallResponse(send, SSE_HEADERS, name=f"lane-stream:{req.id}")
        dctx = SingleExchangeDispatchContext(
            transport=TransportContext(
                kind="streamable-http", can_send_request=False, headers=request.headers
            ),
            request_id=req.id,
            message_metadata=ServerMessageMetadata(request_context=request),
            progress_token=progress_token_from_params(req.params),
        )
        dctx.sink = cast(Any, SseSink(response))
        self.served += 1
        lifespan = lifespan_state(self.manager)
        task = asyncio.current_task()
        left = False

        def leave() -> None:  # on this protocol a client that leaves cancels its call
            nonlocal left
            if not left:
                left = response.gone = True
                if task is not None:
                    task.cancel()

        stop_watching = _on_leaving(scope, receive, leave)
        try:
            result = await _serve_one(
                self.server,
                dctx,
                req.method,
                req.params,
                connection=connection,
                lifespan_state=lifespan,
            )
            reply, status = {"jsonrpc": "2.0", "id": req.id, "result": result}, 200
        except asyncio.CancelledError:
            response.abort()
            if not left:
                raise  # not the client's leaving: the POST's task itself is cancelled
            return True  # the call is cancelled; there is nobody to answer
        except Exception as exc:  # mapped as the SDK's modern entry maps it
            error = modern_error_data(exc)
            reply, status = rpc_error(req.id, error), ERROR_CODE_HTTP_STATUS.get(error.code, 200)
        except BaseException:
            response.abort()
            raise
        finally:
            stop_watching()
            if left and task is not None and task.cancelling():
                task.uncancel()  # the fast path's cancel is spent: the POST's task goes on
        # as the SDK's modern entry answers: one JSON body (its HTTP status mapped from
        # the error) when the call ends before saying anything, else the stream's end
        await response.end(reply, lambda: write_json(send, reply, status, []))
        return True

    async def _checked(
        self, message: dict[str, Any], request: Request
    ) -> tuple[JSONRPCRequest, Connection] | None:
        """The request and its connection, if the SDK's modern entry would serve this
        body as it stands (every check it makes first passes); else ``None``."""
        request_id, params = message.get("id"), message.get("params")
        if message.get("method") not in LANE_METHODS or not is_request_id(request_id):
            return None
        if params is not None and not isinstance(params, dict):
            return None  # so the request is what the SDK's model validates
        has_json, has_sse = _accepts(request)
        if not (has_json and has_sse):
            return None
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.scope["headers"]]
        if find_duplicated_routing_header(headers) is not None:
            return None
        verdict = classify_inbound_request(message, headers=dict(headers))
        if isinstance(verdict, InboundLadderRejection):
            return None
        req = JSONRPCRequest.model_construct(
            jsonrpc="2.0", id=message["id"], method=message["method"], params=params
        )
        lifespan = lifespan_state(self.manager)
        if await mcp_param_rejection(self.server, request, req, verdict, lifespan) is not None:
            return None
        connection = Connection.from_envelope(
            verdict.protocol_version,
            _typed(Implementation, verdict.client_info),
            _typed(ClientCapabilities, verdict.client_capabilities),
        )
        return req, connection


class SseSink:
    """Where the SDK's single-exchange dispatch context sends each encoded SSE event."""

    def __init__(self, response: CallResponse) -> None:
        self.response = response

    async def send(self, event: bytes) -> None:
        self.response.put(event)


async def _serve_one(
    server: Server[Any],
    dctx: SingleExchangeDispatchContext,
    method: str,
    params: Mapping[str, Any] | None,
    *,
    connection: Connection,
    lifespan_state: Any,
) -> dict[str, Any]:
    """The SDK's ``serve_one``: the request run once on a kernel of its own, then the
    connection's exit stack closed as the SDK closes it (shielded, bounded), when the
    request put anything on it."""
    runner = ServerRunner(server, connection, lifespan_state)
    try:
        return await runner.on_request(dctx, method, params)
    finally:
        if has_exit_callbacks(connection):
            await aclose_shielded(connection)


def _accepts(request: Request) -> tuple[bool, bool]:
    """Whether a request accepts JSON and SSE: the usual header read as it stands, any
    other (wildcards, parameters) as the SDK reads it."""
    accept = request.headers.get("accept", "")
    if accept == "application/json, text/event-stream":
        return True, True
    return check_accept_headers(request)


@functools.lru_cache(maxsize=256)
def _model(model: type[_M], raw: bytes) -> _M | str:
    """An envelope value as its model, validated once per distinct value (a client sends
    the same on every request); the validation error's text if it is not one."""
    try:
        return model.model_validate(pydantic_core.from_json(raw), by_name=False)
    except pydantic_core.ValidationError as exc:
        return str(exc)


def _typed(model: type[_M], raw: Any) -> Any:
    """``raw`` as ``model`` if it is one (``Connection.from_envelope`` takes a model
    as it is, so the client's info and capabilities are not validated per request);
    else ``raw`` as it came, for the SDK to judge."""
    if not isinstance(raw, dict):
        return raw
    try:
        typed = _model(model, pydantic_core.to_json(raw))
    except pydantic_core.PydanticSerializationError:
        return raw
    return raw if isinstance(typed, str) else typed


def _on_leaving(scope: Scope, receive: Receive, leave: Callable[[], None]) -> Callable[[], object]:
    """Call ``leave`` when the client's connection closes; returns what stops watching.
    Behind the edge's protocol its ``Leaving`` says so; elsewhere a task waits on
    ``receive`` for ``http.disconnect``."""
    leaving = scope.get(LEAVING)
    if isinstance(leaving, Leaving):
        return leaving.when(leave)

    async def watch() -> None:
        while (await receive()).get("type") != "http.disconnect":
            pass
        leave()

    return asyncio.get_running_loop().create_task(watch()).cancel


__all__ = ["StatelessCalls"]
