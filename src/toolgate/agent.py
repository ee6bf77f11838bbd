"""The agent side: request-level tool filtering with TrustGraph's exact semantics.

``filter_tools`` and ``next_state`` take TrustGraph-style tool configs (dicts) or toolgate
``Tool`` values; system-prompt guidance for agents lives here too. Model layer: imports
only ``toolgate.catalog`` and ``toolgate.errors`` — never ``mcp``, ``fastmcp`` or the
server-side orchestration (the server-side scope rule is ``toolgate.view``'s business).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar, overload

from toolgate.catalog import DEFAULT_GROUP, Tool
from toolgate.errors import ConfigError

__all__ = [
    "ALL",
    "DEFAULT_REQUEST_GROUPS",
    "UNDEFINED_STATE",
    "filter_tools",
    "is_available",
    "next_state",
    "system_prompt",
    "tool_groups",
    "tool_states",
]

ALL = "*"
"""In a request's groups: every tool. In a tool's states: every state."""
DEFAULT_REQUEST_GROUPS: tuple[str, ...] = (DEFAULT_GROUP,)
"""What a request that names no groups gets: the tools without a ``group``."""
UNDEFINED_STATE = "undefined"
"""The state of a request that names none."""

STATE_KEYS = ("available_in_states", "applicable-states")
"""The spec's spelling first, then the one TrustGraph's own code reads."""

T = TypeVar("T")


# -- reading a tool, whatever its form -----------------------------------------------------


def _config(tool: Any) -> Mapping[str, Any] | None:
    """The config mapping of a TrustGraph tool: the dict itself, or an object's ``config``."""
    if isinstance(tool, Mapping):
        return tool
    config = getattr(tool, "config", None)
    return config if isinstance(config, Mapping) else None


def _names(value: Any, field: str) -> tuple[str, ...]:
    """A field that holds a list of names; one bare string counts as a one-name list."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Iterable) and not isinstance(value, Mapping):
        items = tuple(value)
        if all(isinstance(v, str) for v in items):
            return items
    raise ConfigError(f"Tool {field!r} must be a list of strings, got {value!r}", key=field)


def tool_groups(tool: Any) -> tuple[str, ...]:
    """The groups a tool belongs to; a tool that names none is in ``"default"``.

    An explicit empty list is kept empty: such a tool matches only a ``"*"`` request.
    """
    if isinstance(tool, Tool):
        return tool.scope_groups
    config = _config(tool)
    if config is None:
        raise ConfigError(f"Not a tool config or toolgate Tool: {tool!r}")
    if "group" not in config or config["group"] is None:
        return DEFAULT_REQUEST_GROUPS
    return _names(config["group"], "group")


def tool_states(tool: Any) -> tuple[str, ...] | None:
    """The states a tool is available in, or ``None`` for all of them."""
    if isinstance(tool, Tool):
        return None if tool.stages is None else tuple(sorted(tool.stages))
    config = _config(tool)
    if config is None:
        raise ConfigError(f"Not a tool config or toolgate Tool: {tool!r}")
    for key in STATE_KEYS:
        if key in config and config[key] is not None:
            states = _names(config[key], key)
            return None if ALL in states else states
    return None


def _tool_next_state(tool: Any) -> str | None:
    if isinstance(tool, Tool):
        return tool.next_stage
    config = _config(tool)
    if config is None:
        raise ConfigError(f"Not a tool config or toolgate Tool: {tool!r}")
    value = config.get("state")
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ConfigError(f"Tool 'state' must be a string, got {value!r}", key="state")
    return value


# -- the request-side filter ------------------------------------------------------------------


def _request_groups(groups: Sequence[str] | None) -> tuple[str, ...]:
    if groups is None:
        return DEFAULT_REQUEST_GROUPS
    if isinstance(groups, str):
        raise ConfigError(
            f"Request groups must be a list of group names, got the string {groups!r}",
            key="group",
        )
    if not isinstance(groups, Iterable) or isinstance(groups, Mapping):
        raise ConfigError(
            f"Request groups must be a list of group names, got {groups!r:.80}", key="group"
        )
    names = tuple(groups)
    if not all(isinstance(g, str) for g in names):
        raise ConfigError(
            f"Request groups must be a list of group names (strings), got {names!r:.80}",
            key="group",
        )
    return names


def _request_state(state: str | None) -> str:
    if state is not None and not isinstance(state, str):
        raise ConfigError(f"Request state must be a string, got {state!r:.80}", key="state")
    return UNDEFINED_STATE if state is None or state == "" else state


def _collection(items: Any, what: str) -> None:
    """Refuse ``items`` that are not a collection of tools (a string would be read
    character by character)."""
    if isinstance(items, str) or not isinstance(items, Iterable):
        raise ConfigError(f"{what} must be a list of tools, got {items!r:.80}")


def is_available(tool: Any, groups: Sequence[str] | None = None, state: str | None = None) -> bool:
    """Whether one tool is available to a request naming ``groups`` in ``state``.

    Group match: ``"*"`` among the request's groups, or a group in common (names are
    case-sensitive). State match: the tool names no states, names ``"*"``, or names
    the request's state.
    """
    requested = _request_groups(groups)
    current = _request_state(state)
    own = tool_groups(tool)  # read (and checked) even when the wildcard would match
    group_match = ALL in requested or not set(own).isdisjoint(requested)
    if not group_match:
        return False
    states = tool_states(tool)
    return states is None or current in states


@overload
def filter_tools(  # type: ignore[overload-overlap]  # a Mapping is also an Iterable
    tools: Mapping[str, T], groups: Sequence[str] | None = None, state: str | None = None
) -> dict[str, T]: ...
@overload
def filter_tools(
    tools: Iterable[T], groups: Sequence[str] | None = None, state: str | None = None
) -> list[T]: ...
def filter_tools(
    tools: Mapping[str, T] | Iterable[T],
    groups: Sequence[str] | None = None,
    state: str | None = None,
) -> dict[str, T] | list[T]:
    """The tools a request may use, in their given order, in the shape given (a
    ``name -> tool`` mapping stays a mapping; any other collection becomes a list).

    TrustGraph's request semantics, exactly: ``groups`` defaults to ``["default"]``,
    ``"*"`` means every tool, ``[]`` means none; ``state`` defaults to ``"undefined"``.

    >>> filter_tools([{"name": "q", "group": ["read-only"]}, {"name": "x"}])
    [{'name': 'x'}]
    """
    requested = _request_groups(groups)
    current = _request_state(state)
    _collection(tools, "filter_tools' tools")
    if isinstance(tools, Mapping):
        return {n: t for n, t in tools.items() if is_available(t, requested, current)}
    return [t for t in tools if is_available(t, requested, current)]


def next_state(tool: Any, current_state: str | None, succeeded: bool) -> str:
    """The request state after running ``tool``: its ``state`` (a toolgate Tool's
    ``next_stage``) after a successful step; unchanged after a failure or when the
    tool names no state."""
    current = _request_state(current_state)
    if not succeeded:
        return current
    target = _tool_next_state(tool)
    return current if target is None else target


# -- system-prompt guidance ---------------------------------------------------------------------

DESCRIPTIONS_RESOURCE = "tool_descriptions"
"""The path a lazy-descriptions resource URI contains (``resource:///tool_descriptions``)."""


def _field(item: Any, key: str) -> Any:
    """A field of a wire dict or of a typed model (``mcp_types.Tool``, ``Resource``)."""
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)


def system_prompt(
    tools: Iterable[Any],
    resources: Iterable[Any] = (),
    *,
    describe_tool: str = "describe_tools",
) -> str:
    """System-prompt guidance for an agent, from a server's tools and resources.

    ``tools`` and ``resources`` are wire dicts or typed models with ``name`` /
    ``description`` and ``uri``. When the server offers lazy descriptions (a
    ``tool_descriptions`` resource, or the ``describe_tool`` tool for clients without
    resources) the prompt adds the pick-fetch-call workflow; otherwise it is plain.

    >>> print(system_prompt([{"name": "ping", "description": "Answer pong."}]))
    You are a helpful assistant with access to these tools:
    <BLANKLINE>
      - ping: Answer pong.
    <BLANKLINE>
    Use tools when needed to answer questions.
    """
    _collection(tools, "system_prompt's tools")
    listed = list(tools)
    lines = []
    for tool in listed:
        if not isinstance(_field(tool, "name"), str):
            raise ConfigError(
                f"system_prompt's tools are wire dicts or models with a name, got {tool!r:.80}"
            )
        description = " ".join(str(_field(tool, "description") or "No description").split())
        lines.append(f"  - {_field(tool, 'name')}: {description}")
    prompt = (
        "You are a helpful assistant with access to these tools:\n\n"
        + "\n".join(lines)
        + "\n\nUse tools when needed to answer questions."
    )
    uri = next(
        (
            str(_field(r, "uri")).split("?", 1)[0]
            for r in resources
            if DESCRIPTIONS_RESOURCE in str(_field(r, "uri") or "")
        ),
        None,
    )
    has_describe = any(_field(t, "name") == describe_tool for t in listed)
    if uri is not None:
        fetch = (
            "2. FETCH the full tool description using read_resource with the specific tool name\n"
            f'   Example: read_resource(resource_uri="{uri}?tools=TOOL_NAME")\n'
        )
        if has_describe:
            fetch += f'   (or call {describe_tool}(tools=["TOOL_NAME"]))\n'
        never = (
            f"DO NOT try to fetch {DESCRIPTIONS_RESOURCE} without specifying which tool you "
            "want (?tools=TOOL_NAME)."
        )
    elif has_describe:
        fetch = (
            f"2. FETCH the full tool description by calling {describe_tool} with the specific "
            "tool names\n"
            f'   Example: {describe_tool}(tools=["TOOL_NAME"])\n'
        )
        never = f"DO NOT call {describe_tool} without naming the tools you picked."
    else:
        return prompt
    workflow = [
        "IMPORTANT - Tool Usage Workflow:",
        "This server uses progressive disclosure for tools. Follow this exact workflow:",
        "",
        "1. PICK the right tool based on the descriptions above (they tell you WHAT each "
        "tool does)",
        fetch + "3. CALL the tool using the parameters you just learned",
        "",
        never,
        "The tool descriptions above are sufficient for choosing which tool you need.",
        "You fetch the full description to learn the parameters and authorize the tool.",
    ]
    return prompt + "\n\n" + "\n".join(workflow)
