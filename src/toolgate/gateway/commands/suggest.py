"""Groups proposed for a config's big servers, as the config's own ``groups`` entries.

``toolgate init`` writes them for a server with more than ``min_tools`` tools, and
``toolgate inspect --suggest-groups`` prints them (``--write`` puts them into the file in
place of the server-wide group ``init`` made, every other key as it was). The algorithm
is ``toolgate.grouping``; this module turns its proposal into config and back into a
file. Edge layer: imports the core and ``gateway.config``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolgate.catalog import Catalog, Group, Tool
from toolgate.errors import ConfigError, RegistrationError
from toolgate.gateway.config.model import parse_config
from toolgate.grouping import GroupingSettings, ProposedGroup, propose_groups


def tools_of(wires: Iterable[Mapping[str, Any]]) -> list[Tool]:
    """A backend's listed tools as catalog tools: what the proposal reads."""
    return [
        Tool(
            str(w["name"]),
            str(w.get("description") or ""),
            input_schema=w.get("inputSchema") or {"type": "object"},
            annotations=w.get("annotations"),
        )
        for w in wires
    ]


def as_config(server: str, groups: Sequence[ProposedGroup]) -> dict[str, dict[str, Any]]:
    """Proposed groups as ``toolgate.groups`` entries naming ``server:tool``."""
    out: dict[str, dict[str, Any]] = {}
    for g in groups:
        entry: dict[str, Any] = {"description": g.description}
        if g.parent is not None:
            entry["parent"] = g.parent
        entry["tools"] = [f"{server}:{t}" for t in g.tools]
        out[g.name] = entry
    return out


def propose_for_servers(
    listed: Mapping[str, Sequence[Mapping[str, Any]]],
    settings: GroupingSettings,
    reserved: Iterable[str] = (),
) -> dict[str, dict[str, dict[str, Any]]]:
    """``{server: {group: entry}}`` for every server with more than ``min_tools`` tools.

    Group names are the tools' nouns; a server whose names would meet a name in
    ``reserved`` or another server's gets its own name in front of each (``github-issue``).
    """
    plain = {
        s: propose_groups(tools_of(w), server=s, settings=settings)
        for s, w in sorted(listed.items())
    }
    taken = set(reserved)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for server, groups in plain.items():
        if not groups:
            continue
        others = taken | {g.name for s, gs in plain.items() if s != server for g in gs}
        if any(g.name in others for g in groups):
            groups = propose_groups(
                tools_of(listed[server]),
                server=server,
                prefix=group_name(server),
                settings=settings,
                taken=taken,
            )
        taken |= {g.name for g in groups}
        out[server] = as_config(server, groups)
    return out


def group_name(server: str) -> str:
    """A valid group name from a server name (``GitHub Tools`` → ``github-tools``)."""
    name = re.sub(r"[^a-z0-9]+", "-", server.lower()).strip("-")
    return name[:64].strip("-") or "server"


@dataclass
class Rewrite:
    """What ``--write`` did to a config file."""

    replaced: dict[str, list[str]] = field(default_factory=dict)  # server -> old groups
    skipped: dict[str, str] = field(default_factory=dict)  # server -> why


def rewrite_groups(
    data: dict[str, Any], proposal: Mapping[str, Mapping[str, dict[str, Any]]]
) -> Rewrite:
    """Put ``proposal`` into a config mapping in place of each server's server-wide
    groups (``tools: ["server:*"]``), leaving every other key as it was. A server whose
    tools some other group names, or whose server-wide group another group nests under,
    is left alone (``skipped`` says why). Validates the result (the file's models, then
    group names, parents and cycles); ``data`` is unchanged when that fails."""
    tg = data.setdefault("toolgate", {})
    groups: dict[str, Any] = dict(tg.get("groups") or {})
    done = Rewrite()
    for server, proposed in proposal.items():
        wide = [n for n, g in groups.items() if list(g.get("tools") or []) == [f"{server}:*"]]
        naming = [
            n
            for n, g in groups.items()
            if n not in wide and any(str(p).startswith(f"{server}:") for p in g.get("tools") or [])
        ]
        nested = [n for n, g in groups.items() if g.get("parent") in wide]
        clash = sorted(set(proposed) & (set(groups) - set(wide)))
        if naming:
            done.skipped[server] = f"groups {', '.join(naming)} already name its tools"
        elif nested:
            done.skipped[server] = f"groups {', '.join(nested)} nest under its group"
        elif clash:
            done.skipped[server] = f"proposed names {', '.join(clash)} are taken"
        else:
            for n in wide:
                del groups[n]
            groups.update(proposed)
            done.replaced[server] = wide
    candidate = {**data, "toolgate": {**tg, "groups": groups}}
    cfg = parse_config(candidate, environ=_any_env(candidate))  # ConfigError: data unchanged
    try:  # names, parents and cycles by the catalog's own rules
        Catalog().add_groups(
            Group(n, g.description, parent=g.parent) for n, g in cfg.toolgate.groups.items()
        )
    except RegistrationError as exc:
        raise ConfigError(f"toolgate.groups: {exc.message}", key="toolgate.groups") from exc
    tg["groups"] = groups
    return done


def _any_env(data: Mapping[str, Any]) -> dict[str, str]:
    """Every ``${VAR}`` of ``data`` set to a placeholder: a rewrite checks structure, not
    the environment it runs in."""
    names = re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", json.dumps(data))
    return {n: "x" for n in names}


def check_writable(path: Path) -> None:
    """ConfigError unless ``--write`` can rewrite ``path`` (JSON, not TOML)."""
    if path.suffix == ".toml":
        raise ConfigError(
            f"{path}: --write rewrites JSON configs only; copy the printed groups into the "
            "TOML file by hand",
            key="--write",
        )


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    check_writable(path)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


__all__ = [
    "Rewrite",
    "as_config",
    "check_writable",
    "group_name",
    "propose_for_servers",
    "rewrite_groups",
    "tools_of",
    "write_json",
]
