"""A tool's spec: its wire definition, its groups, and the rules that gate it.

``Tool`` is frozen; ``check_tool_name`` is the name rule registration applies. Model
layer: imports the catalog's handler and visibility, policy and errors; never MCP.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolgate.catalog.handler import Handler
from toolgate.catalog.visibility import BY_GROUP, Visibility
from toolgate.errors import RegistrationError
from toolgate.policy import DEFAULT_POLICY, Policy

TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
DEFAULT_GROUP = "default"  # what ungrouped (root) tools count as in a scope
EMPTY_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class ToolDoc:
    """Long-form documentation served on demand (lazy descriptions)."""

    examples: tuple[Mapping[str, Any], ...] = ()
    usage_guidance: Mapping[str, Any] | None = None
    error_guidance: Mapping[str, Any] | None = None


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (up to the first ``. `` or line break)."""
    text = text.strip()
    if not text:
        return ""
    line = text.split("\n", 1)[0].strip()
    m = re.search(r"(?<=[.!?])\s", line)
    return line[: m.start()].strip() if m else line


@dataclass(frozen=True)
class Tool:
    """One tool: its wire definition, where it lives, and the rules that gate it."""

    name: str
    description: str = ""
    handler: Handler | None = None
    input_schema: Mapping[str, Any] = field(default_factory=lambda: dict(EMPTY_SCHEMA))
    title: str | None = None
    summary: str | None = None
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    groups: tuple[str, ...] = ()
    visibility: Visibility = BY_GROUP
    policy: Policy = DEFAULT_POLICY
    stages: frozenset[str] | None = None
    next_stage: str | None = None
    doc: ToolDoc | None = None
    meta: Mapping[str, Any] | None = None
    icons: tuple[Mapping[str, Any], ...] | None = None  # MCP icons, for hosts' UIs
    source: str | None = None  # the backend a gateway tool comes from

    def __post_init__(self) -> None:
        if isinstance(self.groups, str):
            object.__setattr__(self, "groups", (self.groups,))
        else:
            object.__setattr__(self, "groups", tuple(dict.fromkeys(self.groups)))
        if self.stages is not None:
            # "*" means every stage, whatever container it comes in (a frozenset too)
            stages = (self.stages,) if isinstance(self.stages, str) else tuple(self.stages)
            object.__setattr__(self, "stages", None if "*" in stages else frozenset(stages))

    @property
    def summary_text(self) -> str:
        return self.summary if self.summary is not None else first_sentence(self.description)

    @property
    def scope_groups(self) -> tuple[str, ...]:
        """The groups a scope is matched against: ``("default",)`` for root tools."""
        return self.groups or (DEFAULT_GROUP,)

    @classmethod
    def from_wire(
        cls, wire: Mapping[str, Any], handler: Handler | None = None, **overrides: Any
    ) -> Tool:
        """A tool from an MCP ``Tool`` definition as a plain dict (camelCase keys, the
        form :meth:`wire` returns), keeping icons and ``_meta``; ``overrides`` set any
        other field. ``Tool.from_wire({"name": "fork"}, run, groups=("repos",))``"""
        fields: dict[str, Any] = {
            "name": str(wire["name"]),
            "description": str(wire.get("description") or ""),
            "input_schema": wire.get("inputSchema") or dict(EMPTY_SCHEMA),
            "title": wire.get("title"),
            "output_schema": wire.get("outputSchema"),
            "annotations": wire.get("annotations"),
            "meta": wire.get("_meta"),
            "icons": tuple(wire["icons"]) if wire.get("icons") else None,
        }
        return cls(handler=handler, **{**fields, **overrides})

    def wire(self) -> dict[str, Any]:
        """The MCP ``Tool`` definition as a plain dict (camelCase keys, no Nones)."""
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": dict(self.input_schema),
        }
        if self.title is not None:
            out["title"] = self.title
        if self.output_schema is not None:
            out["outputSchema"] = dict(self.output_schema)
        if self.annotations:
            out["annotations"] = dict(self.annotations)
        if self.meta:
            out["_meta"] = dict(self.meta)
        if self.icons:
            out["icons"] = [dict(i) for i in self.icons]
        return out


def schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why ``schema`` is not valid JSON Schema under its dialect's metaschema (where in
    it, and what), or None. A tool with such a schema is still served: its arguments
    are not checked against it (docs/decisions.md)."""
    import jsonschema  # deferred: registration and listing never need it

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        return f"at {where}: {exc.message}"
    return None


def check_tool_name(name: str) -> None:
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        raise RegistrationError(
            f"Invalid tool name {name!r}: MCP tool names are 1-128 characters of A-Z a-z 0-9 _ . -",
            name=name,
        )
