"""A tool's spec: its wire definition, its groups, and the rules that gate it.

``Tool`` is frozen; ``check_tool_name`` is the name rule registration applies,
``check_tool_fields`` the shape of the other fields. Model layer: imports the
catalog's handler and visibility, policy and errors; never MCP.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from toolgate.catalog.handler import Handler
from toolgate.catalog.visibility import BY_GROUP, Always, ByGroup, Visibility, When
from toolgate.errors import RegistrationError, described
from toolgate.policy import DEFAULT_POLICY, Policy
from toolgate.tokens import shown_description

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
    #: the tool's own server reads its arguments as pydantic's lax mode does ("5" for
    #: an integer): toolgate then refuses only what that server would refuse too
    lax_arguments: bool = False

    def __post_init__(self) -> None:
        owner = f"Tool {self.name!r}"
        object.__setattr__(
            self, "groups", tuple(dict.fromkeys(name_list(self.groups, "groups", owner)))
        )
        if self.stages is not None:
            # "*" means every stage, whatever container it comes in (a frozenset too)
            stages = name_list(self.stages, "stages", owner)
            object.__setattr__(self, "stages", None if "*" in stages else frozenset(stages))

    @property
    def summary_text(self) -> str:
        """``summary``, else the first sentence of the text a host shows a model for
        this tool: its description, or without one its title (``shown_description``,
        the text every count reads)."""
        if self.summary is not None:
            return self.summary
        shown = shown_description(
            {"description": self.description, "title": self.title, "annotations": self.annotations}
        )
        return first_sentence(shown)

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
        if not isinstance(wire, Mapping) or not isinstance(wire.get("name"), str):
            got = f"a {type(wire).__name__}" if not isinstance(wire, Mapping) else "no name"
            raise RegistrationError(
                f"Tool.from_wire takes an MCP tool definition, a dict with a string "
                f'"name"; got {got}'
            )
        fields: dict[str, Any] = {
            "name": wire["name"],
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


def name_list(value: Any, what: str, owner: str) -> tuple[str, ...]:
    """A tool's ``groups`` or ``stages`` as a tuple of names: one name given as a string
    is that one name, never read letter by letter; anything but strings is refused,
    naming ``owner`` (``Tool 'x'``, ``@tool``) and the field."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Iterable) and not isinstance(value, Mapping):
        names = tuple(value)
        if all(isinstance(n, str) for n in names):
            return names
    raise RegistrationError(f"{owner}: {what} must be a list of names, got {value!r:.80}")


def check_tool_fields(tool: Tool) -> None:
    """Refuse a field of the wrong kind at registration, naming the tool and the field:
    a handler that is not callable would otherwise fail at the first call, a visibility
    that is not one of ``Always``/``ByGroup``/``When`` would show the tool whatever its
    groups, and a description or schema of the wrong kind would break every listing."""

    def refuse(what: str, want: str, value: Any) -> NoReturn:
        raise RegistrationError(
            f"Tool {tool.name!r}: {what} must be {want}, got {described(value)}",
            name=tool.name,
        )

    if not isinstance(tool.description, str):
        refuse("description", "text", tool.description)
    for what in ("title", "summary"):
        value = getattr(tool, what)
        if value is not None and not isinstance(value, str):
            refuse(what, "text or None", value)
    if tool.handler is not None and not callable(tool.handler):
        refuse("handler", "a function (arguments, context) or None", tool.handler)
    for what in ("output_schema", "annotations", "meta"):
        value = getattr(tool, what)
        if value is not None and not isinstance(value, Mapping):
            refuse(what, "a dict or None", value)
    if not isinstance(tool.visibility, Always | ByGroup | When):
        refuse("visibility", "ALWAYS, BY_GROUP or When(predicate)", tool.visibility)
    if isinstance(tool.visibility, When) and not callable(tool.visibility.predicate):
        refuse("the When predicate", "a function of a StateSnapshot", tool.visibility.predicate)
    if not isinstance(tool.policy, Policy):
        refuse("policy", "a Policy", tool.policy)
    if tool.next_stage is not None and not isinstance(tool.next_stage, str):
        refuse("next_stage", "a stage name or None", tool.next_stage)
    if tool.doc is not None and not isinstance(tool.doc, ToolDoc):
        refuse("doc", "a ToolDoc or None", tool.doc)
    if tool.doc is not None:
        examples = tool.doc.examples
        if not _list_of_dicts(examples):
            refuse("doc.examples", "a list of example dicts", examples)
        for what in ("usage_guidance", "error_guidance"):
            value = getattr(tool.doc, what)
            if value is not None and not isinstance(value, Mapping):
                refuse(f"doc.{what}", "a dict or None", value)
    if tool.icons is not None and not _list_of_dicts(tool.icons):
        refuse("icons", "a list of icon dicts or None", tool.icons)


def _list_of_dicts(value: Any) -> bool:
    """A list or tuple of mappings (not a string, a dict, or anything not iterable)."""
    return isinstance(value, list | tuple) and all(isinstance(v, Mapping) for v in value)


def check_tool_name(name: str) -> None:
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        raise RegistrationError(
            f"Invalid tool name {name!r}: MCP tool names are 1-128 characters of A-Z a-z 0-9 _ . -",
            name=name,
        )
