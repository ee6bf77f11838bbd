"""What a request's body must be before any route reads it: its size and JSON nesting
(``GuardLimits``), no lone surrogates, and, for an MCP message, a JSON-RPC envelope of
the right shape (ids, a response's fields, a 2026-07-28 request's reserved ``_meta``
values, judged by the SDK's own validation). ``guard.Guard`` answers what these find.
Ingress layer: pydantic and the SDK's types only.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

import pydantic
import pydantic_core
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)
from mcp_types.methods import validate_client_request


@dataclass(frozen=True)
class GuardLimits:
    """What one request may hold. ``toolgate.http`` in the config sets them."""

    max_body_bytes: int = 1_048_576
    max_json_depth: int = 64
    body_timeout: float = 30.0


@dataclass(frozen=True)
class BodyProblem:
    """Why a body is refused: HTTP status, message, and the JSON-RPC code and id when
    the body is an MCP message (answered as a JSON-RPC error)."""

    status: int
    message: str
    rpc_code: int | None = None
    rpc_id: Any = None
    rpc_data: Any = None


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of parsed JSON, counted without recursion; stops past ``limit``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            children = node.values() if isinstance(node, dict) else node
            stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return deepest


def surrogate_at(value: Any) -> str | None:
    """The path of the first string (key or value) holding a lone UTF-16 surrogate."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                return path or "(the body)"
        elif isinstance(node, dict):
            for k, v in node.items():
                if isinstance(k, str) and surrogate_at(k) is not None:
                    return f"{path}.{k!a}".lstrip(".")
                stack.append((v, f"{path}.{k}".lstrip(".")))
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))
    return None


def json_problem(body: bytes, limits: GuardLimits, *, rpc: bool) -> BodyProblem | None:
    """Check a JSON body: nesting, lone surrogates and, for MCP (``rpc``), the id.

    Bodies that do not parse are left to the route, which answers its own parse error.
    """
    try:
        parsed = pydantic_core.from_json(body)  # rejects lone surrogates, bounds recursion
    except ValueError as exc:
        if "recursion limit" in str(exc):
            return BodyProblem(
                400, f"JSON nested deeper than {limits.max_json_depth} levels", -32600
            )
        try:  # the stdlib parser accepts lone surrogates: is that what failed?
            parsed = json.loads(body)
        except (ValueError, RecursionError):
            return None
        where = surrogate_at(parsed)
        if where is None:
            return None
        return BodyProblem(
            400,
            f"Invalid params: {where} holds a lone UTF-16 surrogate, which is not valid "
            "Unicode and cannot be sent on",
            -32602,
            echoed_id(parsed),
        )
    # every level opens with "{" or "[": a body with no more of them than the limit
    # (counted in C, strings included) cannot nest deeper, and need not be walked
    deep = body.count(b"{") + body.count(b"[") > limits.max_json_depth
    if deep and _depth(parsed, limits.max_json_depth) > limits.max_json_depth:
        return BodyProblem(400, f"JSON nested deeper than {limits.max_json_depth} levels", -32600)
    return envelope_problem(parsed) if rpc else None


def echoed_id(message: Any) -> str | int | None:
    """The id an error answer to ``message`` carries: its own when it is one JSON-RPC
    allows (a string or an integer), else null."""
    rpc_id = message.get("id") if isinstance(message, dict) else None
    return rpc_id if isinstance(rpc_id, str | int) and not isinstance(rpc_id, bool) else None


def envelope_problem(message: Any) -> BodyProblem | None:
    """What is wrong with the shape of one JSON-RPC message, named in one line, on either
    protocol era: one object (MCP sends no batches), a request's id a string or an
    integer, ``"jsonrpc": "2.0"``, and a string ``method`` with object ``params``, if any
    (a request or notification), or an ``id`` with a ``result`` or ``error`` (a client's
    response to a server's request, shaped as ``response_problem`` says)."""
    if isinstance(message, list):
        return BodyProblem(
            400,
            "Invalid Request: a JSON-RPC batch (an array) is not accepted; send one message "
            "per request",
            -32600,
        )
    if not isinstance(message, dict):
        return BodyProblem(
            400, "Invalid Request: the body must be one JSON-RPC message, a JSON object", -32600
        )
    rpc_id = echoed_id(message)
    if "id" in message and "method" in message and rpc_id is None:
        return BodyProblem(
            400, "Invalid Request: a request's id must be a string or an integer", -32600
        )
    if message.get("jsonrpc") != "2.0":
        return BodyProblem(400, 'Invalid Request: "jsonrpc" must be "2.0"', -32600, rpc_id)
    if "method" in message:
        if not isinstance(message["method"], str):
            return BodyProblem(400, "Invalid Request: 'method' must be a string", -32600, rpc_id)
        if message.get("params") is not None and not isinstance(message["params"], dict):
            return BodyProblem(400, "Invalid params: 'params' must be an object", -32602, rpc_id)
        fault = envelope_fault(message["method"], message.get("params"))
        if fault is not None:
            where, why = fault
            field = where.removeprefix("params.")
            return BodyProblem(
                400, f"Invalid params: {where}: {why}", -32602, rpc_id, {"field": field}
            )
        return None
    if "id" in message and ("result" in message or "error" in message):
        problem = response_problem(message)
        return None if problem is None else BodyProblem(400, problem, -32600, rpc_id)
    return BodyProblem(
        400,
        "Invalid Request: a message needs a 'method' (a request or notification), or an "
        "'id' with a 'result' or an 'error' (a response)",
        -32600,
        rpc_id,
    )


def response_problem(message: dict[str, Any]) -> str | None:
    """What is wrong with a client's JSON-RPC response (an object with an ``id`` and a
    ``result`` or an ``error``), in one line, or None: exactly one of the two, an id a
    string or an integer (null only on an error: JSON-RPC's "id unknown"), a ``result``
    that is an object (every MCP result is), an ``error`` with an integer ``code`` and a
    string ``message``."""
    if "result" in message and "error" in message:
        return "Invalid Request: a response carries a 'result' or an 'error', not both"
    error = message.get("error")
    if echoed_id(message) is None and not ("error" in message and message["id"] is None):
        return "Invalid Request: a response's id must be a string or an integer"
    if "result" in message:
        if not isinstance(message["result"], dict):
            return "Invalid Request: a response's 'result' must be an object"
        return None
    code = error.get("code") if isinstance(error, dict) else None
    if (
        not isinstance(error, dict)
        or not isinstance(code, int)
        or isinstance(code, bool)
        or not isinstance(error.get("message"), str)
    ):
        return (
            "Invalid Request: a response's 'error' must be an object with an integer 'code' "
            "and a string 'message'"
        )
    return None


#: the prefix of the ``_meta`` keys MCP reserves (a 2026-07-28 request's envelope)
_RESERVED = "io.modelcontextprotocol/"


def envelope_fault(method: str, params: Any) -> tuple[str, str] | None:
    """``(where, problem)`` for the first reserved ``params._meta`` value of a per-request
    envelope (2026-07-28: client capabilities, client info, log level) that the SDK's
    own surface validation of ``method`` refuses, or None. The SDK refuses these before
    any handler, as "Invalid request parameters" naming nothing; judged here by the
    same validation (``mcp_types.methods``), once per distinct envelope (a client sends
    the same one each time). An envelope missing a required key, naming no version
    or one the SDK does not serve for ``method`` is left to the SDK, whose answers
    name the problem already."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict) or CLIENT_CAPABILITIES_META_KEY not in meta:
        return None
    version = meta.get(PROTOCOL_VERSION_META_KEY)
    if not isinstance(version, str):
        return None
    try:
        reserved = pydantic_core.to_json({k: v for k, v in meta.items() if k.startswith(_RESERVED)})
    except pydantic_core.PydanticSerializationError:
        return None
    return _envelope_fault(method, version, reserved)


@functools.lru_cache(maxsize=256)
def _envelope_fault(method: str, version: str, reserved: bytes) -> tuple[str, str] | None:
    try:
        validate_client_request(method, version, {"_meta": pydantic_core.from_json(reserved)})
    except pydantic.ValidationError as exc:
        for error in exc.errors():
            if error["loc"][:2] == ("params", "_meta"):
                return ".".join(str(part)[:64] for part in error["loc"]), error["msg"]
        return None  # only the params the envelope was validated without
    except (KeyError, ValueError):  # a method or version the SDK's surface lacks
        return None
    return None
