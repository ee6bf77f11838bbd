"""Whether a call's arguments fit its tool's input schema, and the one-line-per-fault
message a caller gets when they do not.

One validator per tool, made on first use and dropped when the tool changes. Core:
imports ``toolgate.catalog`` and ``toolgate.errors``; jsonschema only when a call needs it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from toolgate.catalog import Tool, schema_problem
from toolgate.catalog.arguments import lax_only, required_sentence
from toolgate.errors import json_type, short

logger = logging.getLogger("toolgate.toolset")

#: characters of a caller's value an argument error quotes; the rest is not sent back
SHOWN_VALUE = 80


JSON_WORDS = {None: "null", True: "true", False: "false"}


def _schema_fault(error: Any) -> str:
    """One jsonschema error as the caller reads it, ``where: what``. jsonschema's
    message starts with the whole repr of the caller's value: it is cut to
    ``SHOWN_VALUE`` characters and named by its JSON type, so a 100 KB argument is
    refused in a line, not echoed back; ``null``, ``true`` and ``false`` are said in
    JSON's words, not Python's (``None``, ``True``)."""
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    message, shown = error.message, repr(error.instance)
    if len(shown) > SHOWN_VALUE and message.startswith(shown):
        message = f"{json_type(error.instance)} {shown[:SHOWN_VALUE]}…{message[len(shown) :]}"
    elif (error.instance is None or isinstance(error.instance, bool)) and message.startswith(shown):
        message = JSON_WORDS[error.instance] + message[len(shown) :]
    return f"{short(where, 64)}: {short(message, 4 * SHOWN_VALUE)}"


def _validator(tool: Tool) -> Any:
    """The jsonschema validator of ``tool``'s input schema; None (and a warning naming
    the tool and the problem) when the schema is not valid JSON Schema."""
    import jsonschema  # deferred: only a call needs it

    problem = schema_problem(tool.input_schema)
    if problem is not None:
        logger.warning(
            "tool %r: its inputSchema is not valid JSON Schema (%s); its arguments go to "
            "the tool unchecked",
            tool.name,
            problem,
        )
        return None
    return jsonschema.validators.validator_for(tool.input_schema)(tool.input_schema)


class ArgumentCheck:
    """Each tool's validator, kept while the tool stays the same object."""

    def __init__(self) -> None:
        self._validators: dict[str, tuple[Tool, Any]] = {}

    def problem(self, tool: Tool, arguments: Mapping[str, Any]) -> str | None:
        """Why ``arguments`` don't fit ``tool``'s input schema, or None when they do."""
        cached = self._validators.get(tool.name)
        if cached is None or cached[0] is not tool:
            cached = (tool, _validator(tool))
            self._validators[tool.name] = cached
        validator = cached[1]
        if validator is None:
            return None  # a schema that is not JSON Schema checks nothing: the tool does
        try:
            if validator.is_valid(arguments):  # the common case: stop at no error, sort nothing
                return None
            errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
            if tool.lax_arguments:  # what its own server reads through is not refused
                errors = [e for e in errors if not lax_only(e)]
                if not errors:
                    return None
        except (ArithmeticError, RecursionError) as exc:
            # The caller's value, not the schema: a number too large for a float under
            # ``multipleOf``, or nesting too deep to walk. Refused, and the validator kept
            # for the next call (dropping it would let every later call through unchecked).
            return (
                f"Invalid arguments for tool {tool.name!r}: they cannot be checked against "
                f"its input schema ({type(exc).__name__}: {short(str(exc), SHOWN_VALUE)}). "
                f"{required_sentence(tool.input_schema)}"
            )
        except Exception as exc:
            # The schema passed its metaschema yet cannot be applied (a $ref that does not
            # resolve): the caller's arguments are not at fault. Stop using it.
            logger.warning(
                "tool %r: its inputSchema cannot be applied (%s); its arguments go to the "
                "tool unchecked",
                tool.name,
                f"{exc}".split("\n", 1)[0][:200],
            )
            self._validators[tool.name] = (tool, None)
            return None
        parts = [_schema_fault(e) for e in errors[:5]]
        return (
            f"Invalid arguments for tool {tool.name!r}: " + "; ".join(parts) + ". "
            f"{required_sentence(tool.input_schema)}"
        )
