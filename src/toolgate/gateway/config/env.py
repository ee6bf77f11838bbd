"""``${VAR}`` in the ``mcpServers`` block, read from the gateway's environment: which
server keys are expanded, the reference forms (``${VAR}``, ``${VAR:-default}``,
``${env:VAR}``, ``$${`` for a literal ``${``) and every reference that cannot be expanded,
with its key path. Imports the server specs (which keys each kind expands), no MCP.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolgate.gateway.config.servers import EXPANDED_KEYS

_REFERENCE = re.compile(r"\$\$\{|\$\{([^{}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def expand_string(text: str, environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """``${VAR}``, ``${VAR:-default}`` and ``${env:VAR}`` from ``environ``; ``$${`` is a
    literal ``${``. Returns the text and the problems (unset or malformed references)."""
    problems: list[str] = []

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$${":
            return "${"
        body = match.group(1)
        name, sep, default = body.partition(":-")
        name = name.removeprefix("env:")
        if not _NAME.fullmatch(name):
            problems.append(
                f"${{{body}}} is not an environment variable reference "
                "(write $${ for a literal ${)"
            )
            return match.group(0)
        value = environ.get(name)
        if sep and not value:
            return default
        if value is None:
            problems.append(f"environment variable {name} is not set (referenced as ${{{body}}})")
            return match.group(0)
        return value

    return _REFERENCE.sub(one, text), problems


def expand_env(
    data: Mapping[str, Any], environ: Mapping[str, str]
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """A copy of ``data`` with ``${VAR}`` expanded in each server's ``EXPANDED_KEYS``,
    and the ``(key path, problem)`` of every reference that cannot be expanded."""
    out = dict(data)
    problems: list[tuple[str, str]] = []
    servers = data.get("mcpServers")
    if not isinstance(servers, Mapping):
        return out, problems

    def walk(value: Any, key: str) -> Any:
        if isinstance(value, str):
            text, found = expand_string(value, environ)
            problems.extend((key, p) for p in found)
            return text
        if isinstance(value, list):
            return [walk(v, f"{key}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, Mapping):
            return {k: walk(v, f"{key}.{k}") for k, v in value.items()}
        return value

    expanded: dict[str, Any] = {}
    for name, spec in servers.items():
        if isinstance(spec, Mapping):
            spec = {
                k: walk(v, f"mcpServers.{name}.{k}") if k in EXPANDED_KEYS else v
                for k, v in spec.items()
            }
        expanded[name] = spec
    out["mcpServers"] = expanded
    return out, problems


__all__ = ["EXPANDED_KEYS", "expand_env", "expand_string"]
