"""What meta-tools accept: their input schemas, and the checks that refuse the rest.

Each check raises ``InvalidArguments`` naming the argument and what it takes, never
echoing a caller's long text back. Delivery layer: imports ``toolgate.errors`` and
``strategies.detail`` only, never MCP.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolgate.errors import MAX_GROUP_NAME, InvalidArguments, json_type, short
from toolgate.strategies.detail import DETAILS, Detail

MAX_GROUPS_PER_REQUEST = 64


def unexpected_arguments(
    arguments: Mapping[str, Any], accepted: Sequence[str], tool: str | None = None
) -> None:
    """Raise ``InvalidArguments`` naming every argument not in ``accepted`` (and what is
    accepted), and for arguments that are not a JSON object at all."""
    if not isinstance(arguments, Mapping):
        raise InvalidArguments(f"Arguments must be a JSON object, not {json_type(arguments)}")
    extra = sorted(set(arguments) - set(accepted))
    if not extra:
        return
    named = ", ".join(repr(short(str(k), 64)) for k in extra[:10])
    more = f" and {len(extra) - 10} more" if len(extra) > 10 else ""
    if accepted:
        names = [repr(k) for k in accepted]
        listed = f"{', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else names[0]
        expected = f"expected {listed}"
    else:
        expected = f"{tool} takes no arguments" if tool else "it takes no arguments"
    raise InvalidArguments(f"Unexpected argument(s): {named}{more}; {expected}")


def no_arguments(tool: str, arguments: Mapping[str, Any]) -> None:
    """A meta-tool without arguments refuses any, by name."""
    unexpected_arguments(arguments, (), tool)


DETAIL_PROPERTY: Mapping[str, Any] = {"type": "string", "enum": list(DETAILS), "default": "summary"}


def detail_arg(arguments: Mapping[str, Any], default: Detail = "summary") -> Detail:
    """The ``detail`` argument of an opening meta-tool (raises InvalidArguments)."""
    value = arguments.get("detail", default)
    if not isinstance(value, str) or value not in DETAILS:
        got = repr(short(value, 32)) if isinstance(value, str) else json_type(value)
        raise InvalidArguments(
            f"'detail' must be one of {', '.join(repr(d) for d in DETAILS)}, not {got}"
        )
    return value


def group_names_arg(
    arguments: Mapping[str, Any], key: str = "groups", optional: Sequence[str] = ("detail",)
) -> list[str]:
    """Validate a meta-tool's list-of-group-names argument (raises InvalidArguments);
    ``optional`` names the other arguments the meta-tool accepts."""
    unexpected_arguments(arguments, (key, *optional))
    if key not in arguments:
        raise InvalidArguments(f"Missing required argument {key!r}: a list of group names")
    value = arguments[key]
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidArguments(
            f'{key!r} must be a list of group names, like ["issues"], not {json_type(value)}'
        )
    if not value:
        raise InvalidArguments(f"{key!r} must name at least one group")
    if len(value) > MAX_GROUPS_PER_REQUEST:
        raise InvalidArguments(
            f"{key!r} names {len(value)} groups; at most {MAX_GROUPS_PER_REQUEST} per request"
        )
    for item in value:
        problem = group_name_problem(item)
        if problem is not None:
            raise InvalidArguments(f"{key!r} must contain group names: {problem}")
    return list(value)


def group_name_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a group name, or None. Too long is said with the limit,
    never by echoing the value."""
    if not isinstance(value, str):
        return f"a group name is a string, not {json_type(value)}"
    if not value:
        return "a group name cannot be empty"
    if len(value) > MAX_GROUP_NAME:
        return f"group names are at most {MAX_GROUP_NAME} characters; got one of {len(value)}"
    return None


def tool_name_arg(arguments: Mapping[str, Any]) -> tuple[str, Any]:
    """Validate ``call_tool``'s ``name``; its ``arguments`` go on as given (absent or
    null: none). Arguments that are not an object are the named tool's argument error,
    answered where every call's arguments are checked, with its required arguments."""
    unexpected_arguments(arguments, ("name", "arguments"))
    name = arguments.get("name")
    if not isinstance(name, str) or not name:
        got = "an empty string" if name == "" else json_type(name)
        raise InvalidArguments(f"'name' must be the name of a tool (a non-empty string), not {got}")
    args = arguments.get("arguments")
    return name, args


GROUPS_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "groups": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    },
    "required": ["groups"],
}
OPEN_GROUPS_SCHEMA: Mapping[str, Any] = {
    **GROUPS_SCHEMA,
    "properties": {**GROUPS_SCHEMA["properties"], "detail": DETAIL_PROPERTY},
}
# Meta-tool schemas are listed to every model on every turn, so they say only what a
# model needs to call them; each run refuses an unexpected argument by name
# (``unexpected_arguments``), so ``additionalProperties: false`` would add nothing.
DETAIL_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {"detail": DETAIL_PROPERTY}}
EMPTY_OBJECT: Mapping[str, Any] = {"type": "object", "properties": {}}
CALL_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
    "required": ["name"],
}
