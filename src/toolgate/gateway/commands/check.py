"""``toolgate check``: validate a gateway config, naming the key and the problem.

Reads the file (JSON or TOML, unknown keys, unset ``${VAR}``), the descriptions folder,
starts every backend once to list its tools, prompts and resources (a backend that fails
is reported with the last lines of its stderr), builds the catalog, the delivery and the
relayed namespace, and collects every problem as ``key: message`` (a prompt name or
resource URI offered twice is one; a group's ``prompts:`` / ``resources:`` pattern that
matches nothing is a warning, and so is a group holding more tools than a proposed group
may: a client that re-lists after opening it reads every one). ``snapshot`` is shared
with ``toolgate inspect``; ``read``, ``assess`` and the problem lines with a reload,
which refuses a config with ``check``'s words. Edge layer.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from toolgate.catalog import CallContext, Handler, ToolResult
from toolgate.docs import ToolDocs
from toolgate.errors import ConfigError, RegistrationError
from toolgate.events import EventBus
from toolgate.gateway.config.build import (
    BackendTool,
    BuildReport,
    build_toolset,
    delivery_config,
    store_problems,
)
from toolgate.gateway.config.model import GatewayConfig, load_config
from toolgate.gateway.relay.access import Relayed
from toolgate.gateway.relay.exposure import Placement, unmatched_warnings
from toolgate.grouping import GroupingSettings
from toolgate.state.memory import MemoryStore
from toolgate.strategies import Delivery
from toolgate.toolset import ToolSet


def _offline(tool: BackendTool) -> Handler:
    def run(arguments: Mapping[str, Any], ctx: CallContext) -> ToolResult:
        return ToolResult.error(f"{tool.server!r} is not connected (inspect/check only)")

    return run


@dataclass
class Snapshot:
    """A config's catalog as built from one listing of every backend."""

    cfg: GatewayConfig
    toolset: ToolSet
    delivery: Delivery | None
    report: BuildReport
    listed: dict[str, list[dict[str, Any]]]
    failures: dict[str, str] = field(default_factory=dict)
    #: what the gateway would relay, under the names it would serve (``relay.namespace``)
    relayed: tuple[Relayed, ...] = ()


async def snapshot(
    cfg: GatewayConfig, *, offline: bool = False, errlog: TextIO | None = None
) -> Snapshot:
    """Start the backends, list their tools, stop them, and build (problems in the report)."""
    report = BuildReport(offline=offline)
    store_problems(cfg, report)  # what ``serve`` would find opening it
    tg = cfg.toolgate
    docs: ToolDocs | None = None
    if tg.descriptions.dir is not None:
        try:
            docs = ToolDocs.from_dir(cfg.resolve(tg.descriptions.dir))
        except ConfigError as exc:
            report.fail("toolgate.descriptions.dir", exc.message)
    listed: dict[str, list[dict[str, Any]]] = {}
    relayed: tuple[Relayed, ...] = ()
    failures: dict[str, str] = {}
    if not offline and cfg.mcp_servers:
        # starts MCP clients: import on use
        from toolgate.gateway.backends.fleet import connect_all
        from toolgate.gateway.relay.namespace import namespace

        if errlog is None:
            # backends' own start-up chatter would mix with the one-per-line errors
            with open(os.devnull, "w") as devnull:
                backends, failures = await connect_all(cfg, errlog=devnull)
        else:
            backends, failures = await connect_all(cfg, errlog=errlog)
        listed = {name: list(b.tools) for name, b in backends.items()}
        for name, why in sorted(failures.items()):
            report.fail(f"mcpServers.{name}", f"could not start or list its tools: {why}")
        # prompt names and resource URIs offered twice are problems; patterns are
        # matched against what the gateway serves, under the names it serves them by
        relayed = namespace(cfg, backends, report).items
    live = set(listed) if not offline else set()
    toolset, delivery = assess(cfg, listed, live=live, report=report)
    if report.unchecked:
        report.warnings.append(
            f"{report.unchecked} tool pattern(s) not matched: --offline starts no backend, "
            "so what they name is unknown"
        )
    if not offline:
        report.warnings += unmatched_warnings(
            Placement.from_config(cfg), relayed, live, cfg.mcp_servers
        )
    report.warnings += large_group_warnings(toolset)
    if docs is not None and not offline and not failures:
        try:
            docs.check(toolset.catalog)
        except ConfigError as exc:
            report.fail("toolgate.descriptions.dir", exc.message)
    return Snapshot(cfg, toolset, delivery, report, listed, failures, relayed)


def large_group_warnings(toolset: ToolSet) -> list[str]:
    """A warning for each group holding more tools of its own than the largest group
    ``toolgate init`` proposes: opening it lists them all to a client that re-lists,
    which is what keeps such a client from saving much (docs/decisions.md)."""
    limit = GroupingSettings().max_size
    cat = toolset.catalog
    out = []
    for name in sorted(cat.groups):
        held = len(cat.tools_in(name))
        if held > limit:
            out.append(
                f"toolgate.groups.{name}: {held} tools in one group; a client that re-lists "
                f"after opening it reads all {held} (`toolgate inspect --suggest-groups` "
                f"proposes groups of at most {limit})"
            )
    return out


def assess(
    cfg: GatewayConfig,
    listed: Mapping[str, list[dict[str, Any]]],
    *,
    live: set[str],
    report: BuildReport,
) -> tuple[ToolSet, Delivery | None]:
    """The catalog and delivery ``cfg`` makes of ``listed`` (the tools of the backends in
    ``live``), every problem in ``report``; nothing is started or served (a reload
    judges a new config by it too)."""
    toolset, report = build_toolset(
        cfg, listed, _offline, live=live, store=MemoryStore(), events=EventBus(), report=report
    )
    delivery: Delivery | None = None
    try:
        delivery = Delivery(toolset, delivery_config(cfg))
    except RegistrationError as exc:
        report.fail(*_collision(cfg, toolset, exc))
    except ConfigError as exc:
        # a core error names its key in the ``toolgate`` block (``search.embedder``)
        key = exc.details.get("key")
        report.fail(f"toolgate.{key}" if key else "toolgate.strategy", exc.message)
    return toolset, delivery


def _collision(cfg: GatewayConfig, toolset: ToolSet, exc: RegistrationError) -> tuple[str, str]:
    """Where a meta-tool name that meets a backend's tool is reported: under the
    ``meta_tool_names`` entry that chose the name, else under the strategy that brings
    the meta-tool; the message names the server whose tool it is."""
    name = exc.details.get("name")
    role = next((r for r, n in cfg.toolgate.meta_tool_names.items() if n == name), None)
    key = f"toolgate.meta_tool_names.{role}" if role else "toolgate.strategy"
    tool = toolset.catalog.tool(name) if isinstance(name, str) else None
    if tool is None or not tool.source:
        return key, exc.message
    return key, f'{exc.message} (a tool of server {tool.source!r}: a "prefix" there renames it)'


def problem_lines(errors: Iterable[ConfigError]) -> list[str]:
    """Each problem as one line ``key: message``."""
    lines = []
    for e in errors:
        text = e.message
        key = str(e.details.get("key", ""))
        lines.append(text if not key or text.startswith(key) else f"{key}: {text}")
    return lines


def problems(path: str | Path, snap: Snapshot | None = None) -> list[str]:
    """Every problem as one line ``key: message`` (empty: the config is fine)."""
    return problem_lines(snap.report.errors) if snap is not None else []


def of_file(path: str | Path, lines: Iterable[str]) -> list[str]:
    """Problem lines as ``check`` prints them: each after the config file's path."""
    return [f"{path}: {line}" for line in lines]


def read(path: str | Path) -> tuple[GatewayConfig | None, list[str]]:
    """The config at ``path``, or why it cannot be read: ``check``'s lines, one per
    problem (they name the file themselves)."""
    try:
        return load_config(path), []
    except ConfigError as exc:
        return None, exc.message.splitlines()


async def run_check(
    path: str | Path, *, offline: bool = False, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    cfg, lines = read(path)
    if cfg is None:
        for line in lines:
            print(line, file=err)
        if len(lines) > 1:
            print(f"{path}: {len(lines)} problem(s)", file=err)
        return 1
    snap = await snapshot(cfg, offline=offline)
    lines = problems(path, snap)
    for line in of_file(path, lines):
        print(line, file=err)
    if lines:
        print(f"{path}: {len(lines)} problem(s)", file=err)
        return 1
    for w in snap.report.warnings:
        print(f"{path}: warning: {w}", file=err)
    cat = snap.toolset.catalog
    print(
        f"{path}: ok: {len(cat.tools)} tools from {len(snap.listed)} backend(s), "
        f"{len(cat.groups)} groups",
        file=out,
    )
    return 0
