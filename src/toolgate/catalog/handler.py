"""A tool's handler: what it is given (``CallContext``) and what it returns (``ToolResult``).

``to_result`` turns any handler's return value into a ``ToolResult``. Model layer:
imports ``toolgate.policy`` only, never MCP; results are MCP content as plain dicts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolgate.policy import Principal


@dataclass(frozen=True)
class CallContext:
    """What a handler may know about the call it serves."""

    tool: str
    session_key: str | None
    principal: Principal
    extras: Mapping[str, Any] = field(default_factory=dict)


Handler = Callable[[Mapping[str, Any], CallContext], Any]
"""``handler(arguments, ctx)``; may return a value or an awaitable of one."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool call produced, as MCP content blocks (plain dicts); ``meta`` is the
    result's ``_meta`` (a relayed result keeps its server's)."""

    content: tuple[Mapping[str, Any], ...] = ()
    structured: Mapping[str, Any] | None = None
    is_error: bool = False
    meta: Mapping[str, Any] | None = None

    @classmethod
    def text(cls, text: str, *, is_error: bool = False) -> ToolResult:
        return cls(content=({"type": "text", "text": text},), is_error=is_error)

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls.text(message, is_error=True)

    @property
    def text_content(self) -> str:
        return "".join(str(c.get("text", "")) for c in self.content if c.get("type") == "text")


def to_result(value: Any) -> ToolResult:
    """A handler's return value as a ``ToolResult``: strings become text; dicts become
    structured content plus their JSON text; other JSON-able values become JSON text."""
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult()
    if isinstance(value, str):
        return ToolResult.text(value)
    if isinstance(value, Mapping):
        return ToolResult(
            content=({"type": "text", "text": json.dumps(value, default=str)},),
            structured=dict(value),
        )
    return ToolResult.text(json.dumps(value, default=str))
