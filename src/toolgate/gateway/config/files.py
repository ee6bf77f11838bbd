"""A config file's bytes into the data ``model`` validates: UTF-8 checked, JSON or TOML
parsed, a key written twice in one object and nesting past ``MAX_DEPTH`` refused, each
as a ``ConfigError`` naming the file (never quoting its bytes: a file holds secrets).
The other files toolgate reads (a host's MCP config, an eval tasks file) go through the
same steps. Imports the core's errors and ``problems`` for key paths; never validates.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from toolgate.errors import ConfigError
from toolgate.gateway.config.problems import key_path

#: how deep objects and arrays may nest in a config file: far past any the models read
#: (a principal's ``attributes`` start at six), far below where a parser or a validator,
#: each recursing once a level, would run out of stack
MAX_DEPTH = 64


class _Twice(dict[str, Any]):
    """A JSON object with a key written twice (its last value kept, as ``json`` does)."""

    def __init__(self, pairs: list[tuple[str, Any]], twice: str) -> None:
        super().__init__(pairs)
        self.twice = twice


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return _Twice(pairs, key)
        seen.add(key)
    return dict(pairs)


def check_shape(data: Any, label: str) -> None:
    """The first key written twice, in file order, and nesting past ``MAX_DEPTH``."""
    pending: list[tuple[Any, tuple[int | str, ...]]] = [(data, ())]  # a stack: file order
    while pending:
        value, loc = pending.pop()
        if isinstance(value, _Twice):
            at = key_path((*loc, value.twice))
            raise ConfigError(f"{label}: {at}: key appears twice", key=at)
        if len(loc) >= MAX_DEPTH and isinstance(value, dict | list):
            raise _too_deep(label)
        if isinstance(value, dict):
            pending += [(v, (*loc, k)) for k, v in reversed(value.items())]
        elif isinstance(value, list):
            pending += [(v, (*loc, i)) for i, v in reversed(list(enumerate(value)))]


def _too_deep(label: str) -> ConfigError:
    return ConfigError(f"{label}: nested more than {MAX_DEPTH} levels deep", key="(file)")


def read_text(path: str | Path, what: str = "the config file") -> str:
    """A file's text, UTF-8 checked; one it cannot read or decode is a ``ConfigError``
    naming it (``what`` says which file it is meant to be)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read {what}: {exc.strerror}", key="(file)") from None
    try:  # a byte-order mark (editors on Windows write one) is not part of the text
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:  # its message and repr hold the file's bytes
        raise ConfigError(f"{p}: not valid UTF-8 at byte {exc.start}", key="(file)") from None


def parse_json(text: str, label: str) -> Any:
    """JSON text as data: a key written twice in one object and nesting past
    ``MAX_DEPTH`` refused, each a ``ConfigError`` starting with ``label``."""
    try:
        data = json.loads(text, object_pairs_hook=_object)
    except RecursionError:
        raise _too_deep(label) from None
    except ValueError as exc:  # a decode error, or an integer past Python's digit limit
        raise ConfigError(f"{label}: not valid JSON: {exc}", key="(file)") from None
    check_shape(data, label)
    return data


def parse_toml(text: str, label: str) -> Any:
    """TOML text as data (``tomllib`` refuses a key written twice itself)."""
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise _too_deep(label) from None
    except ValueError as exc:
        raise ConfigError(f"{label}: not valid TOML: {exc}", key="(file)") from None
    check_shape(data, label)
    return data


def read_config_data(path: str | Path) -> Any:
    """The parsed contents of ``toolgate.json`` or a ``.toml`` file, not yet validated;
    a file that cannot be read, decoded or parsed is a ``ConfigError`` naming it."""
    p = Path(path)
    text = read_text(p)
    return parse_toml(text, str(p)) if p.suffix == ".toml" else parse_json(text, str(p))


__all__ = ["MAX_DEPTH", "check_shape", "parse_json", "parse_toml", "read_config_data", "read_text"]
