"""The one error hierarchy of toolgate.

Every failure a caller can act on is a subclass of :class:`ToolgateError` named for
the problem. Adapters map these to MCP errors in one place (``toolgate.wire``). This
module is the base layer: it imports nothing from toolgate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: DESIGN 3: group names have at most this many characters (checked at registration,
#: and the bound every error message about a group name keeps to)
MAX_GROUP_NAME = 64


def json_type(value: Any) -> str:
    """What ``value`` is, in JSON's words (``null``, ``boolean``, ``integer``,
    ``number``, ``string``, ``array``, ``object``): a caller sent JSON, not Python."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, Sequence):
        return "array"
    return type(value).__name__


def described(value: Any) -> str:
    """A refused value as an error message shows it: its type and at most 80 characters
    of its repr (``str 'notes'``), never a caller's whole object."""
    return f"{type(value).__name__} {value!r:.80}"


#: characters of a name the caller sent that an error quotes (MCP names are at most 128)
MAX_NAME_SHOWN = 128


def short(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was: an error message
    never echoes a caller's 10 KB back."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def check_kind(
    value: Any, kinds: type | tuple[type, ...], what: str, want: str, *, key: str | None = None
) -> None:
    """Refuse ``value`` unless it is an instance of ``kinds`` (``type(None)`` among them
    for an optional value), with the one message a kind check gives: ``{what} must be
    {want}, got {described(value)}`` (a ``ConfigError`` keyed by ``key``)."""
    if not isinstance(value, kinds):
        details = {} if key is None else {"key": key}
        raise ConfigError(f"{what} must be {want}, got {described(value)}", **details)


def check_callable(value: Any, what: str, want: str, *, key: str | None = None) -> None:
    """``check_kind`` for a function: refuse ``value`` unless it is callable, with the
    same message (``clock must be a function like time.time, got int 5``)."""
    if not callable(value):
        details = {} if key is None else {"key": key}
        raise ConfigError(f"{what} must be {want}, got {described(value)}", **details)


class ToolgateError(Exception):
    """Base of every toolgate error. ``code`` is a stable machine-readable name."""

    code = "toolgate_error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.details}


class RegistrationError(ToolgateError):
    """A tool, group, exclusion set or flow cannot be registered as given."""

    code = "registration_error"


class ConfigError(ToolgateError):
    """A configuration value is invalid (unknown trust level, unknown stage, ...)."""

    code = "config_error"


class GroupNotFound(ToolgateError):
    """The group does not exist, or the principal may not see it (same error for both)."""

    code = "group_not_found"

    def __init__(self, name: str) -> None:
        if isinstance(name, str) and len(name) > MAX_GROUP_NAME:
            # no group has such a name: say the limit, never echo a caller's 10 KB back
            super().__init__(
                f"Unknown group: group names are at most {MAX_GROUP_NAME} characters; "
                f"this one has {len(name)}",
                group=f"{name[:MAX_GROUP_NAME]}…",
            )
            return
        super().__init__(f"Unknown group: {name}", group=name)


class UnknownToolsets(ToolgateError):
    """A per-request view names groups that do not exist or that the principal may not
    see (the same error for both); ``known`` lists the ones it may name."""

    code = "unknown_toolsets"

    def __init__(self, names: list[str], known: list[str]) -> None:
        # a header is the caller's text: name at most ten, each cut at a group name's limit
        clipped = [n if len(n) <= MAX_GROUP_NAME else f"{n[:MAX_GROUP_NAME]}…" for n in names[:10]]
        more = f" and {len(names) - 10} more" if len(names) > 10 else ""
        super().__init__(
            f"Unknown toolset(s): {', '.join(clipped)}{more}. Known toolsets: "
            f"{', '.join(known) or 'none'}",
            toolsets=clipped,
            known=known,
        )


class ParentInactive(ToolgateError):
    code = "parent_inactive"

    def __init__(self, name: str, parent: str, *, stateless: bool = False) -> None:
        # where nothing is recorded (a stateless view), enabling the parent first is
        # forgotten by the next request: only naming both in one request works
        how = (
            f"Name {parent!r} and {name!r} in one request."
            if stateless
            else f"Enable {parent!r} first, or both in one request."
        )
        super().__init__(
            f"Cannot enable group {name!r}: its parent group {parent!r} is not enabled. {how}",
            group=name,
            parent=parent,
        )


class BudgetExceeded(ToolgateError):
    code = "budget_exceeded"


class HookFailed(ToolgateError):
    """A group's ``on_activate`` / ``on_deactivate`` hook (or a displaced group's
    ``on_deactivate``) raised: ``group``, the one the request named, stays as it was."""

    code = "hook_failed"

    def __init__(self, group: str, action: str, cause: Exception) -> None:
        what = "Activation" if action == "activate" else "Deactivation"
        super().__init__(f"{what} hook of group {group!r} failed: {cause}", group=group)


class ToolNotFound(ToolgateError):
    """Unknown tool, or a tool the principal may not access: the two are indistinguishable."""

    code = "unknown_tool"

    def __init__(self, name: str) -> None:
        super().__init__(f"Unknown tool: {short(name, MAX_NAME_SHOWN)}")


class PromptNotFound(ToolgateError):
    """Unknown prompt, or one the principal may not access: the two are indistinguishable."""

    code = "unknown_prompt"

    def __init__(self, name: str) -> None:
        super().__init__(f"Unknown prompt: {short(name, MAX_NAME_SHOWN)}")


class ResourceNotFound(ToolgateError):
    """Unknown resource (or URI template), or one the principal may not access: the two
    are indistinguishable. MCP's own "Resource not found" (JSON-RPC -32002)."""

    code = "resource_not_found"

    def __init__(self, uri: str) -> None:
        super().__init__(f"Resource not found: {uri[:1024]}", uri=uri[:1024])


class RelayedError(ToolgateError):
    """Another MCP server answered a request a handler relayed with a JSON-RPC error:
    the caller gets that error as the server sent it (its code, message and data), as
    if it had asked that server itself (e.g. -32042, URL elicitation required)."""

    code = "relayed_error"

    def __init__(self, rpc_code: int, message: str, data: Any = None, **details: Any) -> None:
        super().__init__(message, **details)
        self.rpc_code = rpc_code
        self.rpc_data = data


class ToolHidden(ToolgateError):
    """The tool exists and is accessible but not surfaced now (stage, group, predicate)."""

    code = "tool_hidden"


class InvalidArguments(ToolgateError):
    code = "invalid_arguments"


class InvalidParams(ToolgateError):
    """A request's own params are malformed (not a tool's arguments), e.g. a
    ``groups/get`` name no group can have: JSON-RPC invalid params (-32602)."""

    code = "invalid_params"

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"Invalid {field!r}: {problem}", field=field)


class InvalidCursor(ToolgateError):
    code = "invalid_cursor"

    def __init__(self, cursor: str) -> None:
        super().__init__(f"Invalid cursor: {cursor[:64]!r}")


class RateLimited(ToolgateError):
    code = "rate_limited"

    def __init__(self, name: str, retry_after: float) -> None:
        wait = round(retry_after, 3)  # the message says what the data says
        super().__init__(
            f"Rate limit reached for tool {name!r}; retry after {wait:.1f} s.",
            tool=name,
            retry_after=wait,
        )
        self.retry_after = retry_after


class ConfirmationRefused(ToolgateError):
    code = "confirmation_refused"


class DescriptionRequired(ToolgateError):
    code = "TOOL_DESCRIPTION_REQUIRED"


class Unauthenticated(ToolgateError):
    """A request without a known bearer token (or with unusable claims), where one is
    required."""

    code = "unauthenticated"


class StoreUnavailable(ToolgateError):
    """The session store failed or timed out. Retryable; nothing hidden was shown or run."""

    code = "store_unavailable"
    retryable = True
