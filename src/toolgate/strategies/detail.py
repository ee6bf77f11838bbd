"""How much of a tool a meta-tool shows: names, one-line summaries or whole definitions.

``index_entry`` is a tool as one line of a compact index; ``summary_wire`` a listed
definition cut to its summary. Delivery layer: imports the catalog only, never MCP.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from toolgate.catalog import Tool

Detail = Literal["names", "summary", "full"]
DETAILS: tuple[Detail, ...] = ("names", "summary", "full")


def index_entry(tool: Tool) -> str:
    """A tool in a compact index, one line: its name, its required arguments and its
    one-line summary, as ``issue_read(owner, repo, issue_number): Get an issue.``"""
    required = tool.input_schema.get("required")
    args = [str(r) for r in required] if isinstance(required, Sequence) else []
    return f"{tool.name}({', '.join(args)}): {tool.summary_text}"


def tool_entries(tools: Sequence[Tool], detail: Detail) -> list[Any]:
    """``tools`` at ``detail``: names, compact index entries, or full definitions."""
    if detail == "names":
        return [t.name for t in tools]
    if detail == "full":
        return [t.wire() for t in tools]
    return [index_entry(t) for t in tools]


OPEN_SCHEMA: Mapping[str, Any] = {"type": "object", "additionalProperties": True}


def summary_wire(wire: Mapping[str, Any], tool: Tool, *, minimal: bool = True) -> dict[str, Any]:
    """A listed tool at the summary level: its one-line summary and an open object
    schema, without icons (``title`` and ``_meta`` stay). ``minimal`` (lazy descriptions'
    seed) also drops the output schema and annotations: a host then assumes the cautious
    hints. Otherwise they stay, so a client still checks and unwraps structured results
    and shows the hints; they are what the host acts on, and small."""
    out = dict(wire)
    out["description"] = tool.summary_text
    out["inputSchema"] = dict(OPEN_SCHEMA)
    for key in ("outputSchema", "annotations", "icons") if minimal else ("icons",):
        out.pop(key, None)
    return out
