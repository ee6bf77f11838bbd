"""``toolgate inspect``: the group tree, tool counts and token costs of a gateway config.

Builds the catalog from one listing of every backend (``check.snapshot``), counts each
tool as a model reads it (``tokens.model_text``) with ``best_counter()``, and compares
flat (every tool the principal may use) with disclosed (what a new session lists).
``--as`` explains one principal's view, tool by tool; ``--search QUERY`` ranks that
principal's tools for a query, with each tool's score per signal (BM25, embedding) and
per BM25 field; ``--suggest-groups`` proposes groups for every big server
(``commands.suggest``) and ``--write`` puts them into the file. Rich tables in a
terminal, JSON for scripts. Edge layer.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TextIO

from toolgate.errors import ConfigError, ToolgateError
from toolgate.gateway.commands.check import Snapshot, snapshot
from toolgate.gateway.commands.suggest import (
    check_writable,
    list_servers,
    propose_for_servers,
    rewrite_groups,
    write_json,
)
from toolgate.gateway.config.identity import principal_from
from toolgate.gateway.config.model import GatewayConfig, PrincipalConfig, load_config
from toolgate.gateway.relay.exposure import Placement
from toolgate.grouping import GroupingSettings
from toolgate.policy import Principal, TrustLadder
from toolgate.strategies.base import LEGACY
from toolgate.strategies.search import search_args
from toolgate.tokens import TokenCounter, best_counter, model_text


def parse_principal(cfg: GatewayConfig, spec: str | None, option: str = "--as") -> Principal:
    """``default``, a token principal's id, or ``id=x,trust=verified,scope=a+b``; errors
    name ``option``, where the spec was given (keyed ``option`` when no principal has
    that id, ``option.field`` when the spec itself is wrong)."""
    tg = cfg.toolgate
    ladder = TrustLadder(tuple(tg.identity.trust_levels))
    if spec is None or spec == "default":
        return principal_from(tg.identity.default, ladder, option, authenticated=False)
    if "=" not in spec:
        for who in tg.identity.tokens.values():
            if who.id == spec:
                return principal_from(who, ladder, option, authenticated=True)
        known = sorted({w.id for w in tg.identity.tokens.values()} | {"default"})
        raise ConfigError(
            f"{option} {spec!r}: no such principal; known: {', '.join(known)} "
            "(or give one inline: id=x,trust=verified,scope=code)",
            key=option,
        )
    fields: dict[str, Any] = {}
    for part in spec.split(","):
        key, _, value = part.partition("=")
        key = key.strip()
        if key == "scope":  # no scope field: every group; "scope=" written empty: none
            scope = fields.setdefault("scope", [])
            scope += [s for s in value.replace("|", "+").split("+") if s]
        elif key in ("id", "trust", "agent_class"):
            fields[key] = value.strip()
        else:
            raise ConfigError(
                f"{option}: unknown field {key!r}; use id, trust, scope, agent_class",
                key=f"{option}.{key}",
            )
    if fields.get("id") == "":
        raise ConfigError(f"{option}.id: empty; a principal needs an id", key=f"{option}.id")
    fields.setdefault("id", "inline")
    return principal_from(PrincipalConfig(**fields), ladder, option, authenticated=True)


async def report(
    cfg: GatewayConfig,
    principal: Principal,
    counter: TokenCounter | None = None,
    *,
    search: str | None = None,
) -> dict[str, Any]:
    snap = await snapshot(cfg)
    return await describe(snap, principal, counter or best_counter(), search=search)


def search_report(snap: Snapshot, principal: Principal, query: str) -> dict[str, Any]:
    """How ``search_tools`` ranks ``query`` for ``principal``: the first 10 tools it may
    access, each with its score, BM25 score, embedding similarity, the share of the
    query it covers (hybrid), BM25 per field, what it gained by feedback (lexical) and,
    in hybrid mode for a long request, the standing of its BM25 in the tail it stands
    best in (``latest``);
    and the words of lexical search's feedback query (``feedback``, empty when the
    request took none)."""
    toolset = snap.toolset
    view = toolset.view(principal, toolset.initial_state())
    # the index and the checks search_tools uses for this principal: groups it may not
    # know of neither match nor move scores, and a query search_tools refuses is refused
    index = toolset.search_index_for(view)
    try:
        search_args({"query": query}, "query")
        ranked = index.explain(query, limit=10, allowed=view.is_accessible)
    except ToolgateError as exc:
        raise ConfigError(f"--search: {exc.message}", key="--search") from exc
    return {
        "query": query,
        "mode": index.mode,
        "feedback": list(ranked[0].feedback) if ranked else [],
        "results": [
            {
                "name": e.name,
                "score": e.score,
                "bm25": e.bm25,
                "semantic": e.semantic,
                "coverage": e.coverage,
                "gain": e.gain,
                "latest": e.latest,
                "fields": dict(e.fields),
            }
            for e in ranked
        ],
    }


async def describe(
    snap: Snapshot, principal: Principal, counter: TokenCounter, *, search: str | None = None
) -> dict[str, Any]:
    """The inspect report as plain data (the JSON output). ``flat`` is every tool
    ``principal`` may access, the population ``tool.selection``'s ``tokens_flat``
    counts, so the saving compares like with like; ``catalog`` is every tool."""
    toolset = snap.toolset
    cat = toolset.catalog
    view = toolset.view(principal, toolset.initial_state())
    cost = {name: counter.count(model_text(t.wire())) for name, t in cat.tools.items()}
    placement = Placement.from_config(snap.cfg)
    held: dict[str, dict[str, list[str]]] = {}  # group -> "prompts" | "resources" -> keys
    for item in snap.relayed:  # under the names the gateway serves them by
        for g in placement.groups_of(item):
            key = "prompts" if item.kind == "prompt" else "resources"
            held.setdefault(g, {}).setdefault(key, []).append(item.name)

    def group_node(name: str) -> dict[str, Any]:
        g = cat.groups[name]
        tools = list(cat.tools_in(name))
        return {
            "name": name,
            "description": g.description,
            "parent": g.parent,
            "tool_count": len(tools),
            "tokens": sum(cost[t] for t in tools),
            "tools": tools,
            "prompts": sorted(held.get(name, {}).get("prompts", [])),
            "resources": sorted(held.get(name, {}).get("resources", [])),
            "children": [group_node(c) for c in cat.children(name)],
        }

    root_tools = [n for n in cat.sorted_names() if not cat.tools[n].groups]
    tools = [
        {
            "name": n,
            "source": cat.tools[n].source,
            "groups": list(cat.tools[n].groups),
            "always": n in cat.ungated() and bool(cat.tools[n].groups),
            "tokens": cost[n],
        }
        for n in cat.sorted_names()
    ]
    accessible = [t.name for t in view.accessible()]
    flat_tokens = sum(cost[n] for n in accessible)
    disclosed_names: list[str] = []
    disclosed_tokens = 0
    if snap.delivery is not None:
        strategy, request = snap.delivery.request(
            session_key=None, principal=principal, protocol=LEGACY
        )
        wires = await strategy.list_tools(request)
        disclosed_names = [str(w["name"]) for w in wires]
        disclosed_tokens = sum(counter.count(model_text(w)) for w in wires)
    saved = flat_tokens - disclosed_tokens
    out: dict[str, Any] = {
        "config": str(snap.cfg.source) if snap.cfg.source else None,
        "tokenizer": counter.name,
        "backends": {
            name: {
                "status": "up" if name in snap.listed else "down",
                "tools": sum(1 for t in cat.tools.values() if t.source == name),
                **({"error": snap.failures[name]} if name in snap.failures else {}),
            }
            for name in sorted(snap.cfg.mcp_servers)
        },
        "root": {
            "tool_count": len(root_tools),
            "tokens": sum(cost[t] for t in root_tools),
            "tools": root_tools,
        },
        "groups": [group_node(g) for g in cat.children(None)],
        "tools": tools,
        "totals": {
            "tools": len(cat.tools),
            "groups": len(cat.groups),
            "catalog": {"tools": len(cat.tools), "tokens": sum(cost.values())},
            "flat": {"tools": len(accessible), "tokens": flat_tokens},
            "disclosed": {
                "tools": len(disclosed_names),
                "tokens": disclosed_tokens,
                "names": disclosed_names,
            },
            "saved_tokens": saved,
            "saved_percent": round(100 * saved / flat_tokens, 1) if flat_tokens else 0.0,
        },
        "problems": [e.message for e in snap.report.errors],
        "warnings": list(snap.report.warnings),
    }
    out["principal"] = {
        "id": principal.id,
        "trust": principal.trust,
        "scope": list(principal.scope),
        "agent_class": principal.agent_class,
    }
    out["explain"] = [
        {
            "name": s.name,
            "visible": s.visible,
            "reason": str(s.reason),
            "access": "denied" if s.access_denied else "allowed",
        }
        for s in view.explain()
    ]
    if search is not None:
        out["search"] = search_report(snap, principal, search)
    return out


def render_table(data: dict[str, Any], out: TextIO, *, explain: bool) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.tree import Tree

    console = Console(file=out)
    totals = data["totals"]
    tree = Tree(f"[bold]catalog[/]: {totals['tools']} tools, {totals['groups']} groups")
    root = data["root"]
    tree.add(f"(root, always listed): {root['tool_count']} tools, {root['tokens']} tokens")

    def add(node: Tree, g: dict[str, Any]) -> None:
        held = "".join(f", {len(g[k])} {k}" for k in ("prompts", "resources") if g.get(k))
        branch = node.add(
            f"[bold]{g['name']}[/]: {g['tool_count']} tools{held}, {g['tokens']} tokens"
            f" [dim]{g['description'][:70]}[/]"
        )
        for child in g["children"]:
            add(branch, child)

    for g in data["groups"]:
        add(tree, g)
    console.print(tree)
    backends = Table(title="backends")
    for col in ("backend", "status", "tools", "error"):
        backends.add_column(col)
    for name, b in data["backends"].items():
        backends.add_row(name, b["status"], str(b["tools"]), b.get("error", ""))
    console.print(backends)
    cost = Table(title=f"token cost ({data['tokenizer']})")
    for col in ("listing", "tools", "tokens"):
        cost.add_column(col)
    flat = totals["flat"]
    cost.add_row("flat (every tool it may use)", str(flat["tools"]), str(flat["tokens"]))
    cost.add_row(
        "disclosed (new session)",
        str(totals["disclosed"]["tools"]),
        str(totals["disclosed"]["tokens"]),
    )
    cost.add_row("saved", "", f"{totals['saved_tokens']} ({totals['saved_percent']}%)")
    console.print(cost)
    if explain:
        p = data["principal"]
        table = Table(
            title=f"view of {p['id']!r} (trust {p['trust']}, scope {', '.join(p['scope'])})"
        )
        for col in ("tool", "visible", "reason"):
            table.add_column(col)
        for row in data["explain"]:
            table.add_row(row["name"], "yes" if row["visible"] else "no", row["reason"])
        console.print(table)
    if "search" in data:
        found = data["search"]
        added = found.get("feedback") or []
        ranking = Table(
            title=f"search {found['query']!r} ({found['mode']})",
            caption=f"feedback words: {', '.join(added)}" if added else None,
        )
        columns = (
            "#",
            "tool",
            "score",
            "bm25",
            "feedback",
            "semantic",
            "coverage",
            "latest",
            "bm25 by field",
        )
        for col in columns:
            ranking.add_column(col)
        for i, row in enumerate(found["results"], 1):
            fields = ", ".join(f"{k} {v:.2f}" for k, v in row["fields"].items())
            semantic = "" if row["semantic"] is None else f"{row['semantic']:.3f}"
            coverage = "" if row.get("coverage") is None else f"{row['coverage']:.2f}"
            gain = "" if row.get("gain") is None else f"{row['gain']:.2f}"
            latest = "" if row.get("latest") is None else f"{row['latest']:.2f}"
            ranking.add_row(
                str(i),
                row["name"],
                f"{row['score']:.3f}",
                f"{row['bm25']:.2f}",
                gain,
                semantic,
                coverage,
                latest,
                fields,
            )
        console.print(ranking)
    for problem in data["problems"]:
        console.print(f"[yellow]problem[/]: {problem}")
    for warning in data.get("warnings", ()):
        console.print(f"[yellow]warning[/]: {warning}")


async def run_inspect(
    path: str | Path,
    *,
    principal: str | None = None,
    fmt: str = "json",
    out: TextIO | None = None,
    search: str | None = None,
) -> int:
    out = out or sys.stdout
    cfg = load_config(path)
    who = parse_principal(cfg, principal)
    data = await report(cfg, who, search=search)
    if principal is None:
        data.pop("explain")
    if fmt == "json":
        json.dump(data, out, indent=2)
        out.write("\n")
    else:
        render_table(data, out, explain=principal is not None)
    return 0


async def run_suggest(
    path: str | Path,
    settings: GroupingSettings,
    *,
    write: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Print the groups proposed for every server with more than ``settings.min_tools``
    tools as JSON (``{"servers": {server: tool count}, "groups": {name: entry}}``);
    ``write``: put them into the config file (JSON) in place of server-wide groups, when
    ``toolgate check`` would accept the result (else a ConfigError, the file as it was)."""
    out = out or sys.stdout
    err = err or sys.stderr
    source = Path(path)
    if write:  # before any backend is started for nothing
        check_writable(source)
    cfg = load_config(path)
    listing = await list_servers(cfg)
    for name, why in sorted(listing.failures.items()):
        print(f"{name}: could not list its tools ({why}); no proposal", file=err)
    big = {s: w for s, w in listing.tools.items() if len(w) > settings.min_tools}
    reserved = {n for n in cfg.toolgate.groups if not _server_wide(cfg, n, big)}
    proposal = propose_for_servers(big, settings, reserved=reserved)
    for server, tools in sorted(listing.tools.items()):
        if server not in proposal:
            print(f"{server}: {len(tools)} tools; one group is small enough", file=err)
    json.dump(
        {
            "servers": {s: len(listing.tools[s]) for s in sorted(proposal)},
            "groups": {n: g for groups in proposal.values() for n, g in groups.items()},
        },
        out,
        indent=2,
        ensure_ascii=False,
    )
    out.write("\n")
    if not write:
        return 0
    data = json.loads(source.read_text(encoding="utf-8"))
    done = rewrite_groups(data, proposal, listing, source=cfg.source)
    for server, why in sorted(done.skipped.items()):
        print(f"{server}: not written: {why}", file=err)
    if done.replaced:
        write_json(source, data)
        for server, old in sorted(done.replaced.items()):
            was = f" in place of {', '.join(old)}" if old else ""
            print(f"{server}: {len(proposal[server])} groups written{was}", file=err)
    return 1 if done.skipped else 0


def _server_wide(cfg: GatewayConfig, group: str, servers: Any) -> bool:
    tools = cfg.toolgate.groups[group].tools
    return any(tools == [f"{s}:*"] for s in servers)
