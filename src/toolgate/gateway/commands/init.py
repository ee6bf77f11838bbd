"""``toolgate init --from PATH``: a gateway config from a host's MCP config.

Reads a Claude Desktop / Claude Code / Cursor / Windsurf (``mcpServers``), VS Code
(``servers``, JSON with comments) or Codex (``[mcp_servers]`` TOML) file, connects to
each server with a real MCP client to read its instructions and tools, and writes a
``toolgate.json`` with one group per server, or, for a server with more than about 20
tools, the groups ``toolgate.grouping`` proposes (``commands.suggest``), plus the snippet
that puts the gateway back into the host. Edge layer: imports ``gateway.config``,
``gateway.backends`` and ``commands.suggest``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

from toolgate.errors import ConfigError
from toolgate.gateway.backends.backend import Backend, Timing
from toolgate.gateway.backends.supervision import connect
from toolgate.gateway.commands.suggest import group_name, propose_for_servers
from toolgate.gateway.config.files import parse_json, parse_toml, read_text
from toolgate.gateway.config.model import json_schema, parse_config
from toolgate.gateway.config.servers import EXPANDED_KEYS, SERVER_SPECS, server_kind_problem
from toolgate.grouping import GroupingSettings

Host = Literal["mcpServers", "vscode", "codex"]
DESCRIPTION_CHARS = 300  # a group description is one line an agent reads in list_groups
SCHEMA_FILE = "toolgate.schema.json"

# Keys of host configs that mean something to the host only (approval lists, timeouts,
# UI state): not carried into toolgate.json.
_HOST_ONLY = {
    "disabled",
    "autoApprove",
    "alwaysAllow",
    "disabledTools",
    "timeout",
    "envFile",
    "dev",
    "gallery",
    "version",
    "enabled",
    "enabled_tools",
    "disabled_tools",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "trust",
    "description",
}


@dataclass
class ImportedServer:
    """One host server, as toolgate will start it, and what connecting to it told."""

    name: str
    spec: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    definitions: list[dict[str, Any]] = field(default_factory=list)  # as listed
    groups: list[str] = field(default_factory=list)  # the groups written for it
    instructions: str | None = None
    title: str | None = None
    error: str | None = None


@dataclass
class InitResult:
    config: dict[str, Any]
    snippet: str
    host: Host
    servers: list[ImportedServer]
    skipped: dict[str, str]


# -- reading host configs ---------------------------------------------------------------------


def _strip_jsonc(text: str) -> str:
    """JSON with ``//`` and ``/* */`` comments and trailing commas (VS Code) as plain JSON;
    text inside strings is kept as written (``"a,]"`` stays ``"a,]"``)."""
    out: list[str] = []  # one character each, but a whole string per entry
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            if c in "}]":  # a comma before it, past whitespace and comments, is dropped
                k = len(out)
                while k and out[k - 1].isspace():
                    k -= 1
                if k and out[k - 1] == ",":
                    del out[k - 1]
            out.append(c)
            i += 1
    return "".join(out)


def read_host_config(path: Path) -> tuple[Host, dict[str, Any], dict[str, Any]]:
    """``(host kind, {server name: host spec}, the whole file)``; ConfigError if unreadable
    (read as toolgate reads its own config: UTF-8, a key written twice, deep nesting)."""
    text = read_text(path, "the host config")
    if path.suffix == ".toml":
        data: Any = parse_toml(text, str(path))
    else:
        data = parse_json(_strip_jsonc(text), str(path))
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the file must hold an object", key="(top level)")
    if isinstance(data.get("mcpServers"), dict):
        return "mcpServers", data["mcpServers"], data
    if isinstance(data.get("mcp_servers"), dict):
        return "codex", data["mcp_servers"], data
    if isinstance(data.get("servers"), dict):
        return "vscode", data["servers"], data
    mcp = data.get("mcp")
    if isinstance(mcp, dict) and isinstance(mcp.get("servers"), dict):  # VS Code settings.json
        return "vscode", mcp["servers"], data
    raise ConfigError(
        f"{path}: no MCP servers found: expected 'mcpServers' (Claude Desktop, Claude Code, "
        "Cursor, Windsurf), 'servers' (VS Code .vscode/mcp.json) or [mcp_servers] (Codex "
        "config.toml)",
        key="(top level)",
    )


def _vscode_variables(text: str, workspace: Path, notes: list[str]) -> str:
    """VS Code's ``${workspaceFolder}``, ``${userHome}`` and ``${input:id}`` in toolgate's terms."""
    text = text.replace("${workspaceFolder}", str(workspace)).replace("${userHome}", "${HOME}")

    def input_var(match: re.Match[str]) -> str:
        name = re.sub(r"[^A-Za-z0-9]+", "_", match.group(1)).strip("_").upper()
        notes.append(
            f"VS Code input {match.group(1)!r} becomes the environment variable {name}: "
            "set it where the gateway runs"
        )
        return "${" + name + "}"

    return re.sub(r"\$\{input:([^}]+)\}", input_var, text)


def to_toolgate_server(
    name: str, spec: Mapping[str, Any], host: Host, workspace: Path
) -> tuple[dict[str, Any] | None, list[str]]:
    """A host's server entry as a toolgate ``mcpServers`` entry (None: cannot be fronted)."""
    notes: list[str] = []
    if spec.get("disabled") is True or spec.get("enabled") is False:
        return None, ["disabled in the host config"]
    kind = str(spec.get("type") or spec.get("transport") or "")
    if kind and not any(kind in s.host_types() for s in SERVER_SPECS):
        types = ", ".join(t for s in SERVER_SPECS for t in s.host_types())
        return None, [f"{kind.upper()} transport: toolgate fronts servers of type {types} only"]
    out: dict[str, Any] = {}
    for key, value in spec.items():
        if key in _HOST_ONLY or key in ("type", "transport"):
            continue
        if key == "serverUrl":  # Windsurf
            key = "url"
        elif key == "http_headers":  # Codex
            key = "headers"
        elif key == "env_vars":  # Codex: names the server inherits
            key = "env_passthrough"
        elif key == "bearer_token_env_var":  # Codex
            out.setdefault("headers", {})["Authorization"] = "Bearer ${" + str(value) + "}"
            continue
        elif key == "env_http_headers":  # Codex: header -> variable holding its value
            if not isinstance(value, Mapping):
                return None, ["'env_http_headers' must be a table of header = variable name"]
            for header, var in value.items():
                out.setdefault("headers", {})[header] = "${" + str(var) + "}"
            continue
        elif key not in EXPANDED_KEYS:
            notes.append(f"key {key!r} is not carried over")
            continue
        out[key] = value
    if host == "vscode":
        text = _vscode_variables(json.dumps(out), workspace, notes)
        out = json.loads(text)
    problem = server_kind_problem(out)
    return (None, [problem]) if problem else (out, notes)


class _EveryVariable(Mapping[str, str]):
    """An environment in which every ``${VAR}`` is set (to a URL: every expanded key
    takes one), so an entry is checked as the gateway will read it wherever it runs."""

    def __getitem__(self, name: str) -> str:
        return f"http://{name}.invalid"

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def entry_problem(name: str, spec: Mapping[str, Any]) -> str:
    """Why ``spec`` under ``name`` would make the written config fail ``toolgate check``
    (a name with ':', a value of the wrong type); empty when it would not."""
    try:
        parse_config({"mcpServers": {name: spec}}, environ=_EveryVariable())
    except ConfigError as exc:
        problems = exc.details.get("problems") or [{"key": "", "message": exc.message}]
        return "; ".join(f"{p['key']}: {p['message']}" for p in problems)
    return ""


# -- connecting ----------------------------------------------------------------------------------


def _first_paragraph(text: str) -> str:
    para = next((p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()), "")
    para = re.sub(r"^#+\s*", "", para.strip())  # a markdown heading reads as a sentence
    line = " ".join(para.split())
    if len(line) > DESCRIPTION_CHARS:
        line = line[: DESCRIPTION_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return line


async def _connect(server: ImportedServer, base_dir: Path, timing: Timing) -> None:
    """List the server's tools and read its instructions (``error`` set when it fails)."""
    try:
        cfg = parse_config({"mcpServers": {server.name: server.spec}})
    except ConfigError as exc:
        server.error = "; ".join(p["message"] for p in exc.details.get("problems", [])) or str(exc)
        return
    spec = cfg.mcp_servers[server.name]
    with open(os.devnull, "w") as devnull:
        backend = Backend(server.name, spec, base_dir=base_dir, timing=timing, errlog=devnull)
        try:
            await connect(backend, watch=False)
        except Exception as exc:
            server.error = backend.failure(exc)
            return
    server.tools = [str(t["name"]) for t in backend.tools]
    server.definitions = [dict(t) for t in backend.tools]
    server.instructions = backend.instructions or None
    info = backend.server_info
    server.title = str(info.get("title") or info.get("description") or "") or None


def _description(server: ImportedServer) -> str:
    if server.instructions:
        return _first_paragraph(server.instructions)
    if server.title:
        return _first_paragraph(server.title)
    if server.tools:
        shown = ", ".join(server.tools[:8]) + (", ..." if len(server.tools) > 8 else "")
        return f"Tools of the {server.name} MCP server: {shown}"
    return f"Tools of the {server.name} MCP server"


# -- writing -------------------------------------------------------------------------------------


def gateway_command() -> list[str]:
    """How a host starts toolgate: an absolute path (hosts do not read the shell's PATH)."""
    found = shutil.which("toolgate")
    if found:
        return [str(Path(found).resolve())]
    return [sys.executable, "-m", "toolgate.cli"]


def host_snippet(host: Host, config_path: Path, *, name: str = "toolgate") -> str:
    """What to put back into the host's config in place of the servers it fronts."""
    command, *pre = gateway_command()
    args = [*pre, "serve", str(config_path)]
    if host == "codex":
        quoted = ", ".join(json.dumps(a) for a in args)
        return f"[mcp_servers.{name}]\ncommand = {json.dumps(command)}\nargs = [{quoted}]\n"
    if host == "vscode":
        entry: dict[str, Any] = {"type": "stdio", "command": command, "args": args}
        return json.dumps({"servers": {name: entry}}, indent=2) + "\n"
    return json.dumps({"mcpServers": {name: {"command": command, "args": args}}}, indent=2) + "\n"


def _prefix(server: str, taken: set[str]) -> str:
    """A tool-name prefix from a server name, unlike every prefix in ``taken`` (``a b``
    and ``a.b`` would both be ``a_b``, and two names in another script both ``_``)."""
    base = re.sub(r"[^A-Za-z0-9_-]+", "_", server).strip("_")[:32] or "server"
    prefix, n = base, 1
    while prefix in taken:
        n += 1
        prefix = f"{base}_{n}"
    taken.add(prefix)
    return prefix


async def build_init(
    source: Path,
    output: Path,
    *,
    timing: Timing | None = None,
    grouping: GroupingSettings | None = None,
) -> InitResult:
    """Read ``source``, connect to its servers, and return the config and the snippet.

    A server with more than ``grouping.min_tools`` tools gets the proposed groups
    (``toolgate.grouping``) unless they would be one group; ``grouping=None`` keeps one
    group per server."""
    host, servers, _ = read_host_config(source)
    workspace = source.resolve().parent
    if workspace.name == ".vscode":
        workspace = workspace.parent
    imported: list[ImportedServer] = []
    skipped: dict[str, str] = {}
    for name, spec in servers.items():
        if not isinstance(spec, Mapping):
            skipped[name] = "not an object"
            continue
        converted, notes = to_toolgate_server(name, spec, host, workspace)
        problem = "; ".join(notes) if converted is None else entry_problem(name, converted)
        if converted is None or problem:
            skipped[name] = problem
            continue
        imported.append(ImportedServer(name, converted, notes))
    if not imported:
        why = "".join(f"\n{name}: {why}" for name, why in skipped.items())
        raise ConfigError(
            f"{source}: no server toolgate can front; nothing written{why}", key="(servers)"
        )
    timing = timing or Timing.from_env()
    base_dir = output.resolve().parent  # where the gateway will start them from
    if not base_dir.is_dir():
        base_dir = Path.cwd()
    await asyncio.gather(*(_connect(s, base_dir, timing) for s in imported))

    # a tool name two servers share would be a duplicate in one catalog: prefix those servers
    counts = Counter(t for s in imported for t in set(s.tools))
    prefixes: set[str] = set()
    for s in imported:
        if any(counts[t] > 1 for t in s.tools):
            s.spec["prefix"] = _prefix(s.name, prefixes)
            s.notes.append(
                f"shares tool names with another server: its tools are exposed as "
                f"{s.spec['prefix']}.<name>"
            )

    small = [s for s in imported if not grouping or len(s.tools) <= grouping.min_tools]
    proposed = (
        propose_for_servers(
            {s.name: s.definitions for s in imported if s not in small},
            grouping,
            reserved={group_name(s.name) for s in small},
        )
        if grouping
        else {}
    )
    groups: dict[str, dict[str, Any]] = {}
    for s in imported:
        if s.name in proposed:
            groups.update(proposed[s.name])
            s.groups = list(proposed[s.name])
            continue
        gname = group_name(s.name)
        while gname in groups or gname == "default":
            gname += "-2"
        group: dict[str, Any] = {"description": _description(s), "tools": [f"{s.name}:*"]}
        if s.instructions and _first_paragraph(s.instructions) != " ".join(s.instructions.split()):
            group["instructions"] = s.instructions.strip()
        groups[gname] = group
        s.groups = [gname]
    config: dict[str, Any] = {
        "$schema": f"./{SCHEMA_FILE}",
        "mcpServers": {s.name: s.spec for s in imported},
        "toolgate": {"strategy": "auto", "groups": groups},
    }
    return InitResult(config, host_snippet(host, output.resolve()), host, imported, skipped)


def _unwritable(exc: OSError, where: Path) -> ConfigError:
    return ConfigError(f"cannot write {exc.filename or where}: {exc.strerror}", key="--output")


def write_config(target: Path, config: Mapping[str, Any]) -> None:
    """``target`` and its schema beside it, in a folder that exists; a place that
    cannot be written is a ``ConfigError`` naming it."""
    try:
        # as written, not escaped: a person edits this file (``--write`` writes it so too)
        target.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        (target.parent / SCHEMA_FILE).write_text(
            json.dumps(json_schema(), indent=2) + "\n", encoding="utf-8"
        )
    except OSError as exc:
        raise _unwritable(exc, target) from None


async def run_init(
    source: str | Path,
    output: str | Path = "toolgate.json",
    *,
    force: bool = False,
    grouping: GroupingSettings | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """The command: write ``output`` (and its schema beside it), print the host snippet."""
    out = out or sys.stdout
    err = err or sys.stderr
    target = Path(output)
    if target.suffix == ".toml":  # the gateway would read the JSON written there as TOML
        print(f"toolgate: --output {target}: init writes JSON; name it .json", file=err)
        return 1
    if target.exists() and target.resolve() == Path(source).resolve():
        # --force is for a config init wrote before, never the host config it reads
        print(f"toolgate: --output {target} is the file init reads; write elsewhere", file=err)
        return 1
    if target.exists() and not force:
        print(f"toolgate: {target} exists; pass --force to overwrite it", file=err)
        return 1
    # the servers start from the config's folder, as the gateway will start them (a
    # relative path means there what it will mean then); folders made for a config that
    # is not written are removed again
    made = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
    try:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _unwritable(exc, target.parent) from None
        result = await build_init(Path(source), target, grouping=grouping)
        write_config(target, result.config)
    except ConfigError as exc:
        for folder in made:  # innermost first; one that holds anything stays
            with contextlib.suppress(OSError):
                folder.rmdir()
        for line in exc.message.splitlines():
            print(f"toolgate: {line}", file=err)
        return 1
    for s in result.servers:
        if s.error:
            print(f"{s.name}: could not start ({s.error}); fallback description", file=err)
        else:
            if len(s.groups) > 1:
                print(
                    f"{s.name}: {len(s.tools)} tools in {len(s.groups)} proposed groups "
                    f"({', '.join(s.groups)}); edit them in the config",
                    file=err,
                )
            else:
                said = "its instructions" if s.instructions else "its tools"
                print(f"{s.name}: {len(s.tools)} tools; description from {said}", file=err)
        for note in s.notes:
            print(f"{s.name}: {note}", file=err)
    for name, why in result.skipped.items():
        print(f"{name}: left in the host config: {why}", file=err)
    groups = len(result.config["toolgate"]["groups"])
    print(f"wrote {target} ({len(result.servers)} servers, {groups} groups)", file=err)
    print(
        f"Replace those servers in {source} with this entry (the gateway starts them):",
        file=err,
    )
    out.write(result.snippet)
    return 0


__all__ = [
    "ImportedServer",
    "InitResult",
    "build_init",
    "group_name",
    "host_snippet",
    "read_host_config",
    "run_init",
    "to_toolgate_server",
]
