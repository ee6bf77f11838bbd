"""A tool's required arguments as a model needs them to call it: each one's type, read
through the schema's local references (``$ref`` into ``$defs``, as pydantic and the MCP
SDK write them). ``required_schema`` is what a shortened listing keeps of a schema,
``required_sentence`` what an argument error ends with, ``required_names`` what a
compact index shows: one reading for all three; ``lax_only`` tells a schema error that
pydantic's lax mode would not raise. Model layer: the standard library only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

#: an argument's enum is kept (in a listing and in an error's sentence) up to this many values
SHORT_ENUM = 8
#: references followed and alternatives entered for one argument (a cycle stops here)
MAX_DEPTH = 8


def required_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` cut to its required arguments, each with its type (and its enum when
    at most ``SHORT_ENUM`` values); optional arguments are left out, and an object
    schema without ``additionalProperties: false`` still accepts them.

    >>> required_schema({"properties": {"n": {"type": "integer"}}, "required": ["n"]})
    {'type': 'object', 'properties': {'n': {'type': 'integer'}}, 'required': ['n']}
    """
    kept = {name: argument_type(prop, schema) for name, prop in _required(schema)}
    out: dict[str, Any] = {"type": "object"}
    if kept:
        out["properties"] = kept
        out["required"] = list(kept)
    return out


def required_sentence(schema: Mapping[str, Any]) -> str:
    """The sentence an argument error ends with: the required arguments and their types,
    ``Required arguments: repo (string), number (integer).``"""
    parts = []
    for name, prop in _required(schema):
        words = type_words(argument_type(prop, schema))
        parts.append(f"{name} ({words})" if words else name)
    if not parts:
        return "It has no required arguments."
    return f"Required arguments: {', '.join(parts)}."


def argument_type(prop: Any, root: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    """What a shortened schema keeps of one argument: its type (or the types of its
    ``anyOf`` / ``oneOf`` alternatives), an array's item type, a short enum or a
    ``const``; a local ``$ref`` is read as what it points to in ``root``."""
    if depth > MAX_DEPTH:
        return {}
    prop = resolve(prop, root)
    out: dict[str, Any] = {}
    if "type" in prop:
        out["type"] = prop["type"]
    else:
        for key in ("anyOf", "oneOf"):
            options = prop.get(key)
            if isinstance(options, Sequence) and not isinstance(options, str):
                types = [argument_type(o, root, depth + 1) for o in options]
                if types and all(types):
                    out[key] = types
                break
    items = resolve(prop.get("items"), root)
    if "type" in items:
        out["items"] = {"type": items["type"]}
    enum = prop.get("enum")
    if isinstance(enum, Sequence) and not isinstance(enum, str) and len(enum) <= SHORT_ENUM:
        out["enum"] = list(enum)
    if "const" in prop:
        out["const"] = prop["const"]
    return out


def resolve(node: Any, root: Mapping[str, Any]) -> Mapping[str, Any]:
    """``node`` as a mapping with its local ``$ref`` followed into ``root`` (a JSON
    pointer such as ``#/$defs/Address``; the referring schema's own keywords win), and
    an ``allOf`` of one schema read as that schema. Anything else, a reference that
    leads nowhere or outside the document included, is read as it stands (no type);
    a cycle of references reads as no schema at all."""
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


def type_words(kept: Mapping[str, Any]) -> str:
    """An ``argument_type`` in words: ``integer or null``, ``array of string``,
    ``string: red, green``."""
    kind = kept.get("type")
    if isinstance(kind, list):
        words = " or ".join(map(str, kind))
    elif kind is not None:
        words = str(kind)
    else:
        options = kept.get("anyOf") or kept.get("oneOf") or []
        words = " or ".join(dict.fromkeys(w for w in map(type_words, options) if w))
    item = kept.get("items", {}).get("type")
    if words == "array" and isinstance(item, str):
        words = f"array of {item}"
    if "enum" in kept:
        values = ", ".join(map(str, kept["enum"]))
        words = f"{words}: {values}" if words else f"one of {values}"
    elif "const" in kept and not words:
        words = f"always {kept['const']}"
    return words


def required_names(schema: Mapping[str, Any]) -> list[str]:
    """The names ``schema`` requires, each once and as text (a ``required`` that is not
    a list names none)."""
    required = schema.get("required")
    listed = required if isinstance(required, Sequence) and not isinstance(required, str) else []
    return list(dict.fromkeys(str(r) for r in listed))


def _required(schema: Mapping[str, Any]) -> list[tuple[str, Any]]:
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    return [(name, props.get(name)) for name in required_names(schema)]


def _pointer(root: Mapping[str, Any], ref: str) -> Mapping[str, Any] | None:
    """The schema a local reference (``#`` or ``#/a/b``) names in ``root``, or None."""
    if not ref.startswith("#"):
        return None
    node: Any = root
    for raw in ref[1:].split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node if isinstance(node, Mapping) else None


#: strings pydantic's lax mode reads as booleans (compared stripped and lower-cased)
BOOLEAN_WORDS = frozenset({"0", "off", "f", "false", "n", "no", "1", "on", "t", "true", "y", "yes"})
_WHOLE = re.compile(r"[+-]?\d+(\.0*)?")


def lax_reads(value: Any, json_type: str) -> bool:
    """Whether pydantic's lax mode reads ``value``, a JSON value that is not of
    ``json_type``, as one: ``"5"``, ``"5.0"`` and ``true`` as an integer, ``"2.5"`` as a
    number, ``"yes"`` and ``1`` as a boolean. Strings are never made of numbers."""
    if isinstance(value, bool):
        return json_type in ("integer", "number")
    if isinstance(value, str):
        text = value.strip()
        if json_type == "integer":
            return _WHOLE.fullmatch(text) is not None
        if json_type == "number":
            try:
                float(text)
            except ValueError:
                return False
            return True
        return json_type == "boolean" and text.lower() in BOOLEAN_WORDS
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
