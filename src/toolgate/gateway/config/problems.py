"""Every problem of a config at once, as a reader finds it: a pydantic error's location
as the dotted key path written in the file, its message in plain words, "did you mean"
from the keys the object at that path accepts, and one ``ConfigError`` carrying them all.
Imports pydantic and the core's errors; the models are handed in (``problem_of(error, root)``).
"""

from __future__ import annotations

import difflib
import json
import types
import typing
from typing import Annotated, Any

from pydantic import BaseModel, Tag
from pydantic_core import ErrorDetails

from toolgate.errors import ConfigError


def key_path(loc: tuple[int | str, ...]) -> str:
    """A location as written in a file: ``("toolgate", "always", 0)`` is
    ``toolgate.always[0]``. A key a dotted path cannot show as it stands (empty, with a
    dot, a bracket, a quote, white space or a character that is not printable, which
    would split a one-line problem in two) is written as a string in brackets, what is
    not printable escaped and cut to ``MAX_KEY`` characters: ``toolgate["a\\nb"]``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not _plain(key := "mcpServers" if part == "mcp_servers" else str(part)):
            out += f"[{_quoted(key)}]"
        else:
            out += ("." if out else "") + key
    return out


#: characters of an odd key a key path shows (a config's key is no place for a text)
MAX_KEY = 64
_NOT_PLAIN = frozenset(".[]\"'\\")


def _quoted(key: str) -> str:
    cut = f"{key[:MAX_KEY]}…" if len(key) > MAX_KEY else key
    text = json.dumps(cut, ensure_ascii=False)
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def _plain(key: str) -> bool:
    return (
        0 < len(key) <= MAX_KEY
        and key.isprintable()
        and not any(c.isspace() or c in _NOT_PLAIN for c in key)
    )


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation can hold directly (through Optional, unions, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _models_in(typing.get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
    return []


def _step(annotation: Any, part: int | str) -> Any:
    """The annotation of ``annotation[part]`` (a field, a dict value or a list item)."""
    for model in _models_in(annotation):
        for name, info in model.model_fields.items():
            if part in (name, info.alias):
                return info.annotation
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        return _step(args[0], part)
    if origin is typing.Union or origin is types.UnionType:
        for arg in args:
            found = _step(arg, part)
            if found is not None:
                return found
        return None
    if origin is dict and isinstance(part, str):
        return args[1]
    if origin is list and isinstance(part, int):
        return args[0]
    return None


def _tagged(annotation: Any, part: int | str) -> Any:
    """The member of the tagged union ``annotation`` whose tag is ``part``, if any:
    pydantic names it in an error's ``loc`` between a value's key and its fields."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        return _tagged(args[0], part)
    if origin is typing.Union or origin is types.UnionType:
        for arg in args:
            if typing.get_origin(arg) is Annotated and any(
                isinstance(m, Tag) and m.tag == part for m in typing.get_args(arg)[1:]
            ):
                return typing.get_args(arg)[0]
    return None


def _walk(root: Any, loc: tuple[int | str, ...]) -> tuple[tuple[int | str, ...], Any]:
    """``loc`` as written in a file (without union tags), and the annotation of the
    value it leads to from ``root`` (None: one the models do not declare)."""
    annotation: Any = root
    written: list[int | str] = []
    for part in loc:
        member = _tagged(annotation, part)
        if member is None:
            written.append(part)
        annotation = member if member is not None else _step(annotation, part)
    return tuple(written), annotation


def problem_of(error: ErrorDetails, root: type[BaseModel]) -> tuple[str, str]:
    """``(key path, message)`` for one pydantic error of validating ``root``."""
    raw: tuple[int | str, ...] = tuple(error["loc"])
    loc, _ = _walk(root, raw)
    loc = tuple(p for p in loc if not (isinstance(p, str) and p.startswith("function-")))
    key = key_path(loc) or "(top level)"
    msg = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        msg = "unknown key"
        _, parent = _walk(root, raw[:-1])
        known = [
            info.alias or name for m in _models_in(parent) for name, info in m.model_fields.items()
        ]
        close = difflib.get_close_matches(str(raw[-1]), known, n=1, cutoff=0.6)
        if close:
            msg += f"; did you mean {close[0]!r}?"
    elif error["type"] == "missing":
        msg = "required key is missing"
    elif error["type"] == "literal_error" and isinstance(error.get("input"), str | int | float):
        msg += f", got {error['input']!r}"
    return key, msg


def config_error(problems: list[tuple[str, str]], source: str) -> ConfigError:
    """One error carrying every ``(key, message)``: one line each, ``source: key: message``."""
    lines = [f"{source}: {key}: {msg}" for key, msg in problems]
    return ConfigError(
        "\n".join(lines),
        key=problems[0][0],
        problems=[{"key": key, "message": msg} for key, msg in problems],
    )


__all__ = ["config_error", "key_path", "problem_of"]
