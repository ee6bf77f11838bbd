"""A backend's malformed answer, said once for every transport: what was wrong with it
(``problem``), the request it answered when its id can be read (``pending_error``, so the
caller hears at once instead of waiting out the timeout) and ``MalformedAnswer``, which
a call turns into an error result naming the backend (``result``). Imports ``mcp``'s
types, the core's ``ToolResult`` and the backends' errors; nothing else of the gateway.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import mcp_types as mt
import pydantic
from mcp.shared.message import SessionMessage

from toolgate.catalog import ToolResult
from toolgate.gateway.backends.errors import BackendFailed

#: the key of ``ErrorData.data`` that marks an error the gateway made of a malformed answer
MARK = "toolgate/malformed-answer"
#: the SDK's own words for an answer its HTTP client could not parse (``PARSE_ERROR``)
_SDK_PARSE = ("Failed to parse JSON response: ", "Failed to parse SSE message: ")
#: the top-level id of a line that is not JSON: the first ``"id":`` in it
_RAW_ID = re.compile(r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
#: one error as pydantic renders a ``ValidationError``: its location, then its message
_RENDERED = re.compile(
    r"^(?:(?P<loc>\S[^\n]*)\n)?  (?P<msg>[^\n]*?) \[type=(?P<type>\w+), input_value=(?P<input>.*?),"
    r" input_type=\w+\]",
    re.MULTILINE,
)

Error = tuple[tuple[str, ...], str, str, Any]  # location, message, type, input


class _Rendered(str):
    """An input as pydantic rendered it: shown as it is."""


class MalformedAnswer(BackendFailed):
    """The backend answered a request with something that is no valid answer."""


def _shown(value: Any) -> str:
    text = value if isinstance(value, _Rendered) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _details(errors: Iterable[Error], skip: int) -> str:
    return "; ".join(
        f"{'.'.join(loc[skip:]) or 'it'}: {msg}, got {_shown(value)}"
        for loc, msg, _, value in errors
    )


def _problem(errors: list[Error]) -> str:
    """What a JSON-RPC answer's validation errors say was wrong, in a few words."""
    for _, msg, kind, _ in errors:
        if kind == "json_invalid":
            return f"it is not JSON ({msg.removeprefix('Invalid JSON: ')})"
    response = [e for e in errors if e[0][:1] == ("JSONRPCResponse",)]
    error = [e for e in errors if e[0][:1] == ("JSONRPCError",)]
    no_result = ("JSONRPCResponse", "result") in [e[0] for e in response if e[2] == "missing"]
    no_error = ("JSONRPCError", "error") in [e[0] for e in error if e[2] == "missing"]
    if error and not no_error:
        return f"its error object is malformed ({_details(error, 1)})"
    if no_result and no_error:
        return "it holds neither a result nor an error"
    if response:
        return f"it is not a valid JSON-RPC response ({_details(response, 1)})"
    return f"it is not a valid JSON-RPC message ({_details(errors, 0)})"


def _errors(exc: pydantic.ValidationError) -> list[Error]:
    return [
        (tuple(str(p) for p in e["loc"]), e["msg"], e["type"], e.get("input")) for e in exc.errors()
    ]


def problem(message: Any) -> str | None:
    """What is wrong with ``message`` (parsed JSON) as a JSON-RPC message, or None."""
    try:
        mt.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except pydantic.ValidationError as exc:
        return _problem(_errors(exc))
    return None


def result_problem(exc: pydantic.ValidationError) -> str:
    """What is wrong with a result the SDK's model (``CallToolResult`` ...) refused."""
    return f"its result is not a valid {exc.title} ({_details(_errors(exc), 0)})"


def _answered(exc: pydantic.ValidationError) -> mt.RequestId | None:
    """The id of the response a message the SDK could not parse answers, if readable:
    a response is an object with an id and no method."""
    for _, _, kind, value in _errors(exc):
        if kind == "json_invalid" and isinstance(value, str | bytes):
            text = value if isinstance(value, str) else value.decode("utf-8", "replace")
            found = _RAW_ID.search(text)
            if found is None or re.search(r'"method"\s*:', text):
                return None  # no id, or maybe a request of the backend's: not an answer
            raw: mt.RequestId = pydantic.TypeAdapter(mt.RequestId).validate_json(found.group(1))
            return raw
        if isinstance(value, Mapping) and "id" in value:
            rid = value.get("id")
            valid = isinstance(rid, str | int) and not isinstance(rid, bool)
            return rid if valid and "method" not in value else None
    return None


def error_data(problem: str) -> mt.ErrorData:
    """The error a request is answered with in place of its malformed answer."""
    message = f"The backend's answer is malformed: {problem}"
    return mt.ErrorData(code=mt.INTERNAL_ERROR, message=message, data={MARK: problem})


def pending_error(item: Exception) -> SessionMessage | None:
    """For what the SDK's transport could not parse (an exception on its read stream), an
    error answering the request it was the answer to, when its id can be read."""
    if not isinstance(item, pydantic.ValidationError):
        return None
    rid = _answered(item)
    if rid is None:
        return None
    error = mt.JSONRPCError(jsonrpc="2.0", id=rid, error=error_data(_problem(_errors(item))))
    return SessionMessage(error)


def result(backend: str, tool: str, problem: str) -> ToolResult:
    """The error result of a call whose answer was malformed (it may have run)."""
    message = f"Backend {backend!r} sent a malformed answer to {tool!r}: {problem}"
    data = {"error": message, "code": "backend_malformed_answer", "backend": backend}
    text = json.dumps(data)
    return ToolResult(content=({"type": "text", "text": text},), structured=data, is_error=True)


def of_error(error: mt.ErrorData) -> str | None:
    """The problem, when ``error`` stands for a malformed answer: the gateway's own
    (``error_data``) or the SDK's HTTP client's (a ``PARSE_ERROR`` naming the parse)."""
    if isinstance(error.data, Mapping) and isinstance(error.data.get(MARK), str):
        found: str = error.data[MARK]
        return found
    if error.code != mt.PARSE_ERROR:
        return None
    for prefix in _SDK_PARSE:
        if error.message.startswith(prefix):
            errors: list[Error] = [
                (
                    tuple(m["loc"].split(".")) if m["loc"] else (),
                    m["msg"],
                    m["type"],
                    _Rendered(m["input"]),
                )
                for m in _RENDERED.finditer(error.message)
            ]
            return _problem(errors) if errors else error.message.removeprefix(prefix)
    return None


__all__ = [
    "MARK",
    "MalformedAnswer",
    "error_data",
    "of_error",
    "pending_error",
    "problem",
    "result",
    "result_problem",
]
