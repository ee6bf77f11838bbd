"""How much of a tool a meta-tool shows: names, one-line summaries or whole definitions.

``index_entry`` is a tool as one line of a compact index; ``summary_wire`` a listed
definition cut to its summary, which never misleads: it keeps the required arguments
with their types and says where the rest is. Delivery layer: imports the catalog only.
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


#: an argument's enum is kept in a summary schema up to this many values
SHORT_ENUM = 8


def rest_pointer(describe_tool: str) -> str:
    """The fixed words a shortened definition ends with."""
    return f"Full definition: {describe_tool}."


def required_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` cut to its required arguments, each with its type (and its enum when
    at most ``SHORT_ENUM`` values); optional arguments are left out, and an object
    schema without ``additionalProperties: false`` still accepts them."""
    required = schema.get("required")
    names = [str(r) for r in required] if isinstance(required, Sequence) else []
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    kept: dict[str, Any] = {}
    for name in names:
        prop = props.get(name)
        prop = prop if isinstance(prop, Mapping) else {}
        kept[name] = argument_type(prop)
    out: dict[str, Any] = {"type": "object"}
    if kept:
        out["properties"] = kept
        out["required"] = names
    return out


def argument_type(prop: Mapping[str, Any]) -> dict[str, Any]:
    """What a summary schema keeps of one argument: its type (or the types of its
    ``anyOf`` / ``oneOf`` alternatives), an array's item type, a short enum."""
    out: dict[str, Any] = {}
    if "type" in prop:
        out["type"] = prop["type"]
    else:
        for key in ("anyOf", "oneOf"):
            options = prop.get(key)
            if isinstance(options, Sequence) and not isinstance(options, str):
                types = [argument_type(o) for o in options if isinstance(o, Mapping)]
                if types and all(types):
                    out[key] = types
                break
    items = prop.get("items")
    if isinstance(items, Mapping) and "type" in items:
        out["items"] = {"type": items["type"]}
    enum = prop.get("enum")
    if isinstance(enum, Sequence) and not isinstance(enum, str) and len(enum) <= SHORT_ENUM:
        out["enum"] = list(enum)
    return out


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
