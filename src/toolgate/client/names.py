"""Names an agent sees: MCP tool names made safe for the LLM APIs, and the helpers' names.

``ToolNames`` maps both ways and never changes a name once given. Edge (host side):
plain Python, imports nothing from toolgate or ``mcp``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass


class ToolNames:
    """Maps MCP tool names to names OpenAI and Anthropic accept (``^[a-zA-Z0-9_-]{1,64}$``)
    and back. Append-only, so a name never changes meaning mid-conversation: a valid
    name maps to itself unless taken; others become ``_``-joined, and a collision or
    an over-long name gets a short hash of the original."""

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self._safe: dict[str, str] = {}
        self._original: dict[str, str] = {}
        self._reserved = set(reserved)

    def safe(self, name: str) -> str:
        known = self._safe.get(name)
        if known is not None:
            return known
        candidate = re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64] or "tool"
        if candidate in self._original or candidate in self._reserved or len(name) > 64:
            digest = hashlib.sha256(name.encode()).hexdigest()[:8]
            candidate = f"{candidate[:55]}_{digest}"
        self._safe[name] = candidate
        self._original[candidate] = name
        return candidate

    def original(self, safe: str) -> str | None:
        return self._original.get(safe)


@dataclass(frozen=True)
class HelperNames:
    """The helper tools' names an agent gets (and a server's catalog meta-tools' names)."""

    list_groups: str = "list_groups"
    get_group: str = "get_group"
    call_tool: str = "call_tool"
