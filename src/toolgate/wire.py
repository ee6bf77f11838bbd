"""The MCP wire, shared by every adapter: types in, errors out, in one place.

Maps toolgate's plain-dict definitions and ``ToolResult`` to and from ``mcp_types``
models, and ``ToolgateError`` to the JSON-RPC error (or, asked for explicitly, the
error result) a client must see. Adapter layer: imports ``mcp`` and the core below it.
"""

from __future__ import annotations

import functools
import json
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as mt
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter, ValidationError

from toolgate.catalog import ToolResult
from toolgate.errors import (
    GroupNotFound,
    InvalidCursor,
    InvalidParams,
    PromptNotFound,
    RelayedError,
    ResourceNotFound,
    StoreUnavailable,
    ToolgateError,
    ToolNotFound,
    Unauthenticated,
    UnknownToolsets,
    json_type,
)

RESOURCE_NOT_FOUND = -32002  # the groups extension's "not found" code, as for resources


#: Errors a client sees as JSON-RPC errors; every other ToolgateError is an error result
#: the model can read (hints, rate limits, refusals, describe-first).
JSONRPC_ERRORS: dict[type[ToolgateError], int] = {
    ToolNotFound: mt.INVALID_PARAMS,
    InvalidCursor: mt.INVALID_PARAMS,
    InvalidParams: mt.INVALID_PARAMS,
    GroupNotFound: RESOURCE_NOT_FOUND,
    PromptNotFound: mt.INVALID_PARAMS,
    ResourceNotFound: RESOURCE_NOT_FOUND,
    StoreUnavailable: mt.INTERNAL_ERROR,
    Unauthenticated: mt.INVALID_REQUEST,
    UnknownToolsets: mt.INVALID_PARAMS,
}


class PageParams(mt.PaginatedRequestParams):
    """Params of a paginated request (``tools/list``, ``resources/list``,
    ``groups/list``) whose ``cursor`` is checked by ``cursor_of`` rather than by the
    SDK, so a client that sends a number hears about ``cursor``, not "Invalid request
    parameters"."""

    cursor: Any = None


def cursor_of(params: mt.PaginatedRequestParams | None) -> str | None:
    """The request's cursor; a JSON-RPC invalid-params error naming it when it is not
    a string."""
    cursor = params.cursor if params is not None else None
    if cursor is None or isinstance(cursor, str):
        return cursor
    raise MCPError(
        code=mt.INVALID_PARAMS,
        message=f"Invalid cursor: must be a string (the nextCursor of the previous page), "
        f"not {json_type(cursor)}",
        data={"field": "cursor"},
    )


#: requests whose params carry a ``cursor`` (the groups extension's too)
PAGINATED = frozenset(
    {"tools/list", "resources/list", "resources/templates/list", "prompts/list", "groups/list"}
)


@functools.cache
def _params_types() -> Mapping[str, TypeAdapter[Any]]:
    """Each request method MCP defines for a client, and the type of its params."""
    out: dict[str, TypeAdapter[Any]] = {}
    for request in typing.get_args(mt.ClientRequest):
        (method,) = typing.get_args(request.model_fields["method"].annotation)
        params: Any = request.model_fields["params"].annotation  # a class, never a string
        out[method] = TypeAdapter(params)
    return out


def params_fault(method: str, params: Mapping[str, Any] | None) -> MCPError | None:
    """The JSON-RPC invalid-params error naming the first fault in the params of a
    request MCP defines (``params.name: Field required``); None when they are well
    formed or the method is not MCP's own (the groups extension's, say)."""
    adapter = _params_types().get(method)
    if adapter is None:
        return None
    try:
        adapter.validate_python(params)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(["params", *(str(part)[:64] for part in error["loc"])])
        return MCPError(
            code=mt.INVALID_PARAMS,
            message=f"Invalid params: {where}: {error['msg']}",
            data={"field": where.removeprefix("params.")},
        )
    return None


async def check_params(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """``ServerMiddleware``: a paginated request's cursor is checked by ``cursor_of``
    first; the SDK's surface validation of any request MCP defines answers "Invalid
    request parameters" without saying which, so when it refuses, the answer names the
    field (``params_fault``). Well-formed params are validated once, by the SDK."""
    if ctx.method in PAGINATED and isinstance(ctx.params, Mapping):
        cursor_of(PageParams(cursor=ctx.params.get("cursor")))
    try:
        return await call_next(ctx)
    except ValidationError:
        fault = params_fault(ctx.method, ctx.params)
        if fault is None:  # not the params of a request MCP defines
            raise
        raise fault from None


def jsonrpc_code(exc: ToolgateError) -> int | None:
    """The JSON-RPC error code ``exc`` is sent as; None for an error result's kind."""
    if isinstance(exc, RelayedError):
        return exc.rpc_code
    return next((code for cls, code in JSONRPC_ERRORS.items() if isinstance(exc, cls)), None)


def mcp_error(exc: ToolgateError) -> MCPError:
    """The JSON-RPC error for ``exc``: its code in ``JSONRPC_ERRORS`` (else an internal
    error) and ``data`` naming the problem; the spec's bare error for an unknown tool."""
    code = jsonrpc_code(exc)
    if isinstance(exc, RelayedError):  # as the other server sent it
        return MCPError(code=exc.rpc_code, message=exc.message, data=exc.rpc_data)
    if isinstance(exc, ToolNotFound):
        return MCPError(code=mt.INVALID_PARAMS, message=exc.message)
    data = {"code": exc.code, **exc.details}
    if isinstance(exc, StoreUnavailable):
        data["retryable"] = True
    return MCPError(
        code=mt.INTERNAL_ERROR if code is None else code, message=exc.message, data=data
    )


def error_as_result(exc: ToolgateError) -> ToolResult:
    """A ToolgateError as a structured error result the model can act on."""
    data = {"error": exc.message, "code": exc.code, **exc.details}
    text = json.dumps(data, ensure_ascii=False, default=str)
    return ToolResult(content=({"type": "text", "text": text},), structured=data, is_error=True)


def raise_or_result(exc: ToolgateError) -> ToolResult:
    """For a tool call: raise the JSON-RPC error for ``exc`` when it is one (unknown
    tool, store down, ...), else return its error result."""
    if jsonrpc_code(exc) is not None:
        raise mcp_error(exc) from exc
    return error_as_result(exc)


def call_result(result: ToolResult) -> mt.CallToolResult:
    """A ToolResult as the MCP result model."""
    return mt.CallToolResult.model_validate(call_result_wire(result))


def call_result_wire(result: ToolResult) -> dict[str, Any]:
    """A ToolResult as a ``tools/call`` result in its wire form: what a handler on the
    SDK's kernel returns, which validates and shapes it per protocol version as it does
    a model (one pass, instead of a model built, dumped and validated again)."""
    wire: dict[str, Any] = {
        "content": [content_wire(c) for c in result.content],
        "isError": result.is_error,
        "resultType": "complete",  # as the model has it (2026-07-28 requires it)
    }
    if result.structured is not None:
        wire["structuredContent"] = dict(result.structured)
    if result.meta is not None:
        wire["_meta"] = dict(result.meta)
    return wire


#: the content block types of MCP results (text, image, audio, resource link, resource)
CONTENT_TYPES = frozenset({"text", "image", "audio", "resource_link", "resource"})


def content_wire(block: Mapping[str, Any]) -> dict[str, Any]:
    """One MCP content block; a block of no MCP type becomes text holding its JSON."""
    if block.get("type") in CONTENT_TYPES:
        return dict(block)
    return {"type": "text", "text": json.dumps(dict(block), default=str)}


#: ``CallContext.extras`` key of the call's ``RawResult`` (set by the adapters)
RAW_RESULT = "toolgate.raw_result"


@dataclass
class RawResult:
    """What a framework's own run of a tool returned, for the adapter to send back as
    it is: a result of the framework's own shape, or an ``input_required`` leg (a
    2026-07-28 tool asking the client for input), which no ``ToolResult`` can hold.
    The tool's handler keeps it here with the ``ToolResult`` it hands toolgate in its
    place; the adapter sends it back when that stand-in is the call's reply."""

    raw: Any = None
    stand_in: ToolResult | None = None

    def keep(self, raw: Any, stand_in: ToolResult) -> ToolResult:
        self.raw, self.stand_in = raw, stand_in
        return stand_in

    def reply(self, result: ToolResult) -> Any:
        """The framework's own result when ``result`` is its stand-in, else None."""
        return self.raw if self.raw is not None and result is self.stand_in else None


def keep_input_required(extras: Mapping[str, Any], name: str, raw: Any) -> ToolResult:
    """The stand-in for a tool's ``input_required`` leg, kept in the call's
    ``RawResult``; an error result saying so when the call has none to carry it (the
    tool run outside an MCP request)."""
    holder = extras.get(RAW_RESULT)
    if not isinstance(holder, RawResult):
        return ToolResult.error(
            f"Tool {name!r} asked the client for input, which this call cannot carry"
        )
    return holder.keep(raw, ToolResult())


def result_from_mcp(result: mt.CallToolResult) -> ToolResult:
    """An MCP call result (a backend's, a framework's) as a ToolResult."""
    content = tuple(c.model_dump(by_alias=True, exclude_none=True) for c in result.content)
    return ToolResult(
        content=content,
        structured=result.structured_content,
        is_error=bool(result.is_error),
        meta=result.meta,
    )


def tool_model(wire: Mapping[str, Any]) -> mt.Tool:
    return mt.Tool.model_validate(dict(wire))


def tool_models(wires: Iterable[Mapping[str, Any]]) -> list[mt.Tool]:
    return [tool_model(w) for w in wires]


def tool_wire(tool: mt.Tool) -> dict[str, Any]:
    """An MCP Tool as toolgate's plain wire dict (camelCase keys, no Nones)."""
    data: dict[str, Any] = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    return data
