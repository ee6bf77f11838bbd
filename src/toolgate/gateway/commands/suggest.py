"""Groups proposed for a config's big servers, as the config's own ``groups`` entries.

``toolgate init`` writes them for a server with more than ``min_tools`` tools, and
``toolgate inspect --suggest-groups`` prints them (``--write`` puts them into the file in
place of the server-wide group ``init`` made, every other key as it was, and only when
``toolgate check`` would accept the result). The algorithm is ``toolgate.grouping``;
this module turns its proposal into config and back into a file. Edge layer: imports
the core, ``gateway.config`` and ``check``'s judgement of a config.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolgate.catalog import Tool
from toolgate.errors import ConfigError
from toolgate.gateway.commands.check import assess, problem_lines
from toolgate.gateway.config.build import BuildReport, exposed_tools, match
from toolgate.gateway.config.model import GatewayConfig, ToolgateConfig, parse_config
from toolgate.grouping import GroupingSettings, ProposedGroup, propose_groups
from toolgate.grouping.propose import wire


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
    taken = {wire(n) for n in reserved}  # names equal on the groups-extension wire collide
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for server, groups in plain.items():
        if not groups:
            continue
        others = taken | {wire(g.name) for s, gs in plain.items() if s != server for g in gs}
        if any(wire(g.name) in others for g in groups):
            groups = propose_groups(
                tools_of(listed[server]),
                server=server,
                prefix=group_name(server),
                settings=settings,
                taken=taken,
            )
        taken |= {wire(g.name) for g in groups}
        out[server] = as_config(server, groups)
    return out


def group_name(server: str) -> str:
    """A valid group name from a server name (``GitHub Tools`` → ``github-tools``)."""
    name = re.sub(r"[^a-z0-9]+", "-", server.lower()).strip("-")
    return name[:64].strip("-") or "server"


@dataclass(frozen=True)
class Listing:
    """What a config's backends offered when started once: each one's tools as listed
    and its instructions, and why the others could not be listed."""

    tools: dict[str, list[dict[str, Any]]]
    instructions: dict[str, str | None] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)


async def list_servers(cfg: GatewayConfig) -> Listing:
    """Start every backend of ``cfg`` once, list its tools and read its instructions."""
    from toolgate.gateway.backends.fleet import connect_all  # starts MCP clients: on use

    # backends' own start-up chatter would mix with what the command prints
    with open(os.devnull, "w") as devnull:
        backends, failures = await connect_all(cfg, errlog=devnull)
    return Listing(
        {n: list(b.tools) for n, b in backends.items()},
        {n: b.instructions or None for n, b in backends.items()},
        failures,
    )


@dataclass
class Rewrite:
    """What ``--write`` did to a config file."""

    replaced: dict[str, list[str]] = field(default_factory=dict)  # server -> old groups
    skipped: dict[str, str] = field(default_factory=dict)  # server -> why


#: Keys of a server-wide group ``init`` writes; a group with any other was edited by hand.
INIT_KEYS = frozenset({"description", "tools", "instructions"})


def rewrite_groups(
    data: dict[str, Any],
    proposal: Mapping[str, Mapping[str, dict[str, Any]]],
    listing: Listing,
    *,
    source: Path | None = None,
) -> Rewrite:
    """Put ``proposal`` into a config mapping in place of each server's server-wide
    group (``tools: ["server:*"]``, as ``init`` writes it), leaving every other key as
    it was. A server is left alone (``skipped`` says why) when another group names its
    tools (its patterns matched against ``listing``'s tools, as the gateway matches
    them) or nests under its group, or when its group is not just what ``init`` wrote:
    named elsewhere in the config (``initial_groups``, ``exclusive``, a scope), or
    carrying prompts, resources, a title or instructions other than the server's. The
    result is judged as ``toolgate check`` judges it, over ``listing``'s tools; a
    problem is a ``ConfigError`` and ``data`` is unchanged."""
    tg = data.setdefault("toolgate", {})
    groups: dict[str, Any] = dict(tg.get("groups") or {})
    cfg = parse_config(data, source=source, environ=_any_env(data))
    tools = exposed_tools(cfg, listing.tools, BuildReport())
    servers = list(cfg.mcp_servers)
    named = _named_groups(cfg.toolgate)
    done = Rewrite()
    for server, proposed in proposal.items():
        wide = [n for n, g in cfg.toolgate.groups.items() if g.tools == [f"{server}:*"]]
        naming = [
            n
            for n, g in cfg.toolgate.groups.items()
            if n not in wide
            and any(t.server == server for p in g.tools for t in match(p, tools, servers) or [])
        ]
        nested = [n for n, g in cfg.toolgate.groups.items() if g.parent in wide]
        edited = []
        for n in wide:
            named_by = named.get(n, []) + named.get("*", [])
            why = _edited(groups[n], named_by, listing.instructions.get(server))
            if why:
                edited.append(f"its group {n} {why}")
        kept = {wire(n) for n in groups if n not in wide}
        clash = sorted(n for n in proposed if wire(n) in kept)
        if naming:
            done.skipped[server] = f"groups {', '.join(naming)} already name its tools"
        elif nested:
            done.skipped[server] = f"groups {', '.join(nested)} nest under its group"
        elif edited:
            done.skipped[server] = "; ".join(edited)
        elif clash:
            done.skipped[server] = f"proposed names {', '.join(clash)} are taken"
        else:
            for n in wide:
                del groups[n]
            groups.update(proposed)
            done.replaced[server] = wide
    if done.replaced:
        candidate = {**data, "toolgate": {**tg, "groups": groups}}
        new = parse_config(candidate, source=source, environ=_any_env(candidate))
        report = BuildReport()
        assess(new, listing.tools, live=set(listing.tools), report=report)
        if report.errors:
            raise ConfigError(
                "\n".join(
                    [
                        "not written: with the proposed groups, `toolgate check` would "
                        "refuse the config:",
                        *problem_lines(report.errors),
                    ]
                ),
                key="toolgate.groups",
            )
    tg["groups"] = groups
    return done


def _edited(group: Mapping[str, Any], named_by: Sequence[str], instructions: str | None) -> str:
    """Why a server-wide group is more than ``init`` made of it (empty: it is not): what
    replacing it would lose, or whom it would lock out."""
    if named_by:
        return f"is named by {', '.join(named_by)}"
    extra = sorted(set(group) - INIT_KEYS)
    if extra:
        return f"has {', '.join(extra)}, which the proposed groups would drop"
    own = group.get("instructions")
    if own is not None and str(own).strip() != (instructions or "").strip():
        return "has instructions other than its server's, which the proposed groups would drop"
    return ""


def _named_groups(tg: ToolgateConfig) -> dict[str, list[str]]:
    """Each group name the rest of the ``toolgate`` block names, with the keys that name
    it (a scope's ``*`` names no group in particular); under ``*``, what may name any
    group: OAuth tokens whose scopes are read by ``scope_prefix``."""
    out: dict[str, list[str]] = defaultdict(list)

    def add(key: str, names: Iterable[str]) -> None:
        for n in names:
            if n != "*" and key not in out[n]:
                out[n].append(key)

    add("toolgate.initial_groups", tg.initial_groups)
    for i, names in enumerate(tg.exclusive):
        add(f"toolgate.exclusive[{i}]", names)
    add("toolgate.identity.default.scope", tg.identity.default.scope)
    for who in tg.identity.tokens.values():
        add(f"the scope of token principal {who.id!r}", who.scope)
    oauth = tg.identity.oauth
    if oauth is not None:
        for claim, names in oauth.scope_map.items():
            add(f"toolgate.identity.oauth.scope_map.{claim}", names)
        add("toolgate.identity.oauth.default_scope", oauth.default_scope)
        if oauth.claims.scope is not None and not oauth.scope_map:
            out["*"].append("the scopes of OAuth tokens (toolgate.identity.oauth.scope_prefix)")
    return out


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
    "Listing",
    "Rewrite",
    "as_config",
    "check_writable",
    "group_name",
    "list_servers",
    "propose_for_servers",
    "rewrite_groups",
    "tools_of",
    "write_json",
]
