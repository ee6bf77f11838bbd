"""A tool's required arguments as a model needs them to call it: each one's type, read
through the schema's local references (``$ref`` into ``$defs``, as pydantic and the MCP
SDK write them). ``required_schema`` is what a shortened listing keeps of a schema,
``required_sentence`` what an argument error ends with, ``required_names`` what a
compact index shows: one reading for all three; ``lax_only`` tells a schema error that
pydantic's lax mode would not raise. Model layer: the standard library and the
errors' JSON words only.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from toolgate.errors import json_type

#: an argument's enum is kept (in a listing and in an error's sentence) up to this many values
SHORT_ENUM = 8
#: references followed and alternatives entered for one argument (a cycle stops here)
MAX_DEPTH = 8
#: schema nodes the reading of one argument (or of a schema's root) visits at most: a
#: small schema of wide alternatives that refer to each other (``anyOf`` of five
#: ``$ref``\ s, nested) would otherwise take time exponential in its depth; what lies
#: past the budget is untyped, and a schema's cost stays linear in its size
NODE_BUDGET = 256
#: keywords under which a schema requires arguments only in some cases: what they
#: require cannot be said as one list, so a shortened listing keeps the whole schema
CONDITIONAL = ("anyOf", "oneOf", "if", "dependentRequired", "dependentSchemas", "dependencies")


class _Reading:
    """One reading of a schema's root or of one argument: the root (what local
    references point into), the nodes it may still visit (``NODE_BUDGET``) and the
    references it is inside."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.left = NODE_BUDGET
        self.within: set[str] = set()  # the references being read: one met again is a cycle

    def visit(self) -> bool:
        self.left -= 1
        return self.left >= 0


def required_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` cut to its required arguments, each with its type (and its enum when
    at most ``SHORT_ENUM`` values); optional arguments are left out, and an object
    schema without ``additionalProperties: false`` still accepts them. A schema that
    requires arguments only in some cases (``CONDITIONAL`` at its root) is kept whole:
    a cut would hide them.

    >>> required_schema({"properties": {"n": {"type": "integer"}}, "required": ["n"]})
    {'type': 'object', 'properties': {'n': {'type': 'integer'}}, 'required': ['n']}
    """
    required, conditional = _root(schema, _Reading(schema))
    if conditional:
        return dict(schema)
    kept = {name: _argument(prop, _Reading(schema), 0) for name, prop in required}
    out: dict[str, Any] = {"type": "object"}
    if kept:
        out["properties"] = kept
        out["required"] = list(kept)
    return out


def required_sentence(schema: Mapping[str, Any]) -> str:
    """The sentence an argument error ends with: the required arguments and their types,
    ``Required arguments: repo (string), number (integer).``"""
    required, conditional = _root(schema, _Reading(schema))
    parts = []
    for name, prop in required:
        words = type_words(_argument(prop, _Reading(schema), 0))
        parts.append(f"{name} ({words})" if words else name)
    if conditional:
        some = "Others are" if parts else "Its arguments are"
        lead = f"Required arguments: {', '.join(parts)}. " if parts else ""
        return f"{lead}{some} required depending on the values given (see its input schema)."
    if not parts:
        return "It has no required arguments."
    return f"Required arguments: {', '.join(parts)}."


def argument_type(prop: Any, root: Mapping[str, Any]) -> dict[str, Any]:
    """What a shortened schema keeps of one argument: its type (or the types of its
    ``anyOf`` / ``oneOf`` alternatives), an array's item type, a short enum or a
    ``const``; a local ``$ref`` is read as what it points to in ``root``."""
    return _argument(prop, _Reading(root), 0)


def _argument(prop: Any, reading: _Reading, depth: int) -> dict[str, Any]:
    """``argument_type`` within one reading. A schema that refers to itself (a JSON
    value's ``anyOf`` of arrays of itself) is read once: met again inside itself, it is
    untyped (``array``, not ``array of string or array of …``)."""
    if depth > MAX_DEPTH or not reading.visit():
        return {}
    ref = prop.get("$ref") if isinstance(prop, Mapping) else None
    if not isinstance(ref, str):
        return _read(prop, reading, depth)
    if ref in reading.within:
        return {}
    reading.within.add(ref)
    try:
        return _read(prop, reading, depth)
    finally:
        reading.within.discard(ref)


def _read(prop: Any, reading: _Reading, depth: int) -> dict[str, Any]:
    prop = resolve(prop, reading.root)
    out: dict[str, Any] = {}
    if "type" in prop:
        out["type"] = prop["type"]
    else:
        for key in ("anyOf", "oneOf"):
            options = prop.get(key)
            if isinstance(options, Sequence) and not isinstance(options, str):
                types = [_argument(o, reading, depth + 1) for o in options]
                if types and all(list(t) == ["const"] for t in types):  # Literal["a", "b"]
                    out["enum"] = [t["const"] for t in types]
                elif types and all(types):
                    out[key] = types
                break
        members = prop.get("allOf")  # every member applies: each adds what it says
        if not out and isinstance(members, Sequence) and not isinstance(members, str):
            for member in members:
                for key, value in _argument(member, reading, depth + 1).items():
                    out.setdefault(key, value)
    if "items" in prop:
        items = _argument(prop["items"], reading, depth + 1)
        if items:
            out["items"] = items
    enum = out.pop("enum", None) or prop.get("enum")
    if isinstance(enum, Sequence) and not isinstance(enum, str):
        if len(enum) <= SHORT_ENUM:
            out["enum"] = list(enum)
        elif not out:  # too many to list, and no type: the values' own types say it
            kinds = list(dict.fromkeys(json_type(v) for v in enum))
            if "integer" in kinds and "number" in kinds:
                kinds.remove("integer")
            out["type"] = kinds[0] if len(kinds) == 1 else kinds
    if "const" in prop:
        out["const"] = prop["const"]
    return out


def resolve(node: Any, root: Mapping[str, Any]) -> Mapping[str, Any]:
    """``node`` as a mapping with its local ``$ref`` followed into ``root`` (a JSON
    pointer such as ``#/$defs/Address``, or a plain-name fragment such as ``#address``
    naming a ``$anchor``; the referring schema's own keywords win), and an ``allOf`` of
    one schema read as that schema. Anything else, a reference that leads nowhere or
    outside the document included, is read as it stands (no type); a cycle of
    references reads as no schema at all."""
    for _ in range(MAX_DEPTH + 1):
        if not isinstance(node, Mapping):
            return {}
        ref, only = node.get("$ref"), node.get("allOf")
        if isinstance(ref, str):
            rest = {k: v for k, v in node.items() if k != "$ref"}
            target = _pointer(root, ref)
            if target is None:
                return rest
            node = {**target, **rest}
        elif isinstance(only, Sequence) and len(only) == 1 and isinstance(only[0], Mapping):
            node = {**{k: v for k, v in node.items() if k != "allOf"}, **only[0]}
        else:
            return node
    return {}


def _value(value: Any) -> str:
    """A value from a schema as a caller writes it: text as it is, the rest as JSON
    (``true``, ``null``, ``2.5``)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def type_words(kept: Mapping[str, Any]) -> str:
    """An ``argument_type`` in words: ``integer or null``, ``array of string``,
    ``string: red, green``, ``array of string: bug, docs``."""
    kind = kept.get("type")
    if isinstance(kind, list):
        words = " or ".join(map(str, kind))
    elif kind is not None:
        words = str(kind)
    else:
        options = kept.get("anyOf") or kept.get("oneOf") or []
        words = " or ".join(dict.fromkeys(w for w in map(type_words, options) if w))
    items = kept.get("items")
    if words == "array" and isinstance(items, Mapping):
        item = type_words(items)
        if item:
            each = item.startswith(("one of ", "always "))  # values without a type
            words = f"array, each {item}" if each else f"array of {item}"
    values = kept["enum"] if "enum" in kept else [kept["const"]] if "const" in kept else None
    if values is not None:
        listed = ", ".join(map(_value, values))
        lead = "one of" if "enum" in kept else "always"
        words = f"{words}: {listed}" if words else f"{lead} {listed}"
    return words


def required_names(schema: Mapping[str, Any]) -> list[str]:
    """The names ``schema`` requires, each once and as text: its own ``required`` and
    those of the schemas it refers to or combines with ``allOf`` (a ``required`` that is
    not a list names none)."""
    required, _ = _root(schema, _Reading(schema))
    return [name for name, _prop in required]


def _names(value: Any) -> list[str]:
    listed = value if isinstance(value, Sequence) and not isinstance(value, str) else []
    return [str(r) for r in listed]


def _root(schema: Mapping[str, Any], reading: _Reading) -> tuple[list[tuple[str, Any]], bool]:
    """The arguments ``schema`` requires in every case, each once with its property
    schema (None when it has none), read through the root's references and ``allOf``;
    and whether it requires others only in some cases (``CONDITIONAL``)."""
    properties: dict[str, Any] = {}
    names: list[str] = []
    conditional = False
    pending: list[tuple[Any, int]] = [(schema, 0)]
    while pending:
        node, depth = pending.pop(0)
        if depth > MAX_DEPTH or not reading.visit():
            continue
        node = resolve(node, reading.root)
        props = node.get("properties")
        if isinstance(props, Mapping):
            for name, prop in props.items():
                properties.setdefault(str(name), prop)
        names.extend(_names(node.get("required")))
        conditional = conditional or any(key in node for key in CONDITIONAL)
        members = node.get("allOf")
        if isinstance(members, Sequence) and not isinstance(members, str):
            pending.extend((member, depth + 1) for member in members)
    return [(name, properties.get(name)) for name in dict.fromkeys(names)], conditional


def _pointer(root: Mapping[str, Any], ref: str) -> Mapping[str, Any] | None:
    """The schema a local reference names in ``root``: ``#`` (the root), a JSON pointer
    (``#/a/b``, its parts ``~``- and percent-escaped) or a ``$anchor`` (``#name``, looked
    for in the root's ``$defs`` and ``definitions``); None for anything else."""
    if ref == "#":
        return root
    if ref.startswith("#/"):
        node: Any = root
        for raw in ref[2:].split("/"):
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node if isinstance(node, Mapping) else None
    if ref.startswith("#") and len(ref) > 1:
        anchor = unquote(ref[1:])
        for key in ("$defs", "definitions"):
            defs = root.get(key)
            if isinstance(defs, Mapping):
                for node in defs.values():
                    if isinstance(node, Mapping) and node.get("$anchor") == anchor:
                        return node
    return None


#: strings pydantic's lax mode reads as booleans (compared lower-cased, not stripped)
BOOLEAN_WORDS = frozenset({"0", "off", "f", "false", "n", "no", "1", "on", "t", "true", "y", "yes"})
_WHOLE = re.compile(r"[+-]?\d(_?\d)*(\.0*)?")  # "1_000" too, as pydantic reads it


def lax_reads(value: Any, json_type: str) -> bool:
    """Whether pydantic's lax mode reads ``value``, a JSON value that is not of
    ``json_type``, as one: ``"5"``, ``"5.0"`` and ``true`` as an integer, ``"2.5"`` as a
    number, ``"yes"`` and ``1`` as a boolean. Strings are never made of numbers."""
    if isinstance(value, bool):
        return json_type in ("integer", "number")
    if isinstance(value, str):
        text = value.strip()  # around a number, not a boolean word: as pydantic reads them
        if json_type == "integer":
            return _WHOLE.fullmatch(text) is not None
        if json_type == "number":
            try:
                float(text)
            except ValueError:
                return False
            return True
        return json_type == "boolean" and value.lower() in BOOLEAN_WORDS
    if isinstance(value, int | float):
        if json_type == "integer":
            return math.isfinite(value) and float(value).is_integer()
        return json_type == "boolean" and value in (0, 1)
    return False


def lax_only(error: Any) -> bool:
    """Whether a ``jsonschema`` validation error is one pydantic's lax mode would not
    raise: a ``type`` mismatch it reads through (``lax_reads``), or an ``anyOf`` /
    ``oneOf`` with an alternative whose every error is such a mismatch."""
    if error.validator == "type":
        types = error.validator_value
        names = [types] if isinstance(types, str) else list(types)
        return any(lax_reads(error.instance, t) for t in names)
    if error.validator in ("anyOf", "oneOf") and error.context:
        branches: dict[Any, list[Any]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        return any(all(lax_only(sub) for sub in subs) for subs in branches.values())
    return False
