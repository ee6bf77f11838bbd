"""How much of a tool a meta-tool shows: names, one-line summaries or whole definitions.

``index_entry`` is a tool as one line of a compact index; ``summary_wire`` a listed
definition cut to its summary, which never misleads: it keeps the required arguments
with their types (``toolgate.catalog.arguments``) and says where the rest is. Delivery
layer: imports the catalog only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from toolgate.catalog import Tool
from toolgate.catalog.arguments import required_names, required_schema

Detail = Literal["names", "summary", "full"]
DETAILS: tuple[Detail, ...] = ("names", "summary", "full")


def index_entry(tool: Tool) -> str:
    """A tool in a compact index, one line: its name, its required arguments and its
    one-line summary, as ``issue_read(owner, repo, issue_number): Get an issue.``"""
    args = required_names(tool.input_schema)
    return f"{tool.name}({', '.join(args)}): {tool.summary_text}"


def tool_entries(tools: Sequence[Tool], detail: Detail) -> list[Any]:
    """``tools`` at ``detail``: names, compact index entries, or full definitions."""
    if detail == "names":
        return [t.name for t in tools]
    if detail == "full":
        return [t.wire() for t in tools]
    return [index_entry(t) for t in tools]


def rest_pointer(describe_tool: str) -> str:
    """The fixed words a shortened definition ends with."""
    return f"Full definition: {describe_tool}."


def summary_wire(
    wire: Mapping[str, Any],
    tool: Tool,
    *,
    describe_tool: str = "describe_tools",
    minimal: bool = True,
) -> dict[str, Any]:
    """A listed tool at the summary level: its one-line summary and where the rest is
    (``describe_tool``), and a schema of its required arguments with their types
    (:func:`required_schema`), without icons (``title`` and ``_meta`` stay). ``minimal``
    (lazy descriptions' seed) also drops the output schema and annotations: a host then
    assumes the cautious hints. Otherwise they stay, so a client still checks and
    unwraps structured results and shows the hints; they are what the host acts on."""
    out = dict(wire)
    out["description"] = f"{tool.summary_text} {rest_pointer(describe_tool)}".lstrip()
    out["inputSchema"] = required_schema(tool.input_schema)
    for key in ("outputSchema", "annotations", "icons") if minimal else ("icons",):
        out.pop(key, None)
    return out
