"""From a gateway config and the backends' tool lists to one toolgate catalog.

Resolves tool patterns (``glob`` on exposed names, ``server:glob`` on a backend's own
names), applies prefixes, groups, ``always``, policies and stages, and checks what
``toolgate check`` reports: unknown groups, patterns that match nothing, duplicates
across backends, unknown stages and trust levels. Edge layer; no MCP imports here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from toolgate.catalog import ALWAYS, BY_GROUP, Group, Handler, Tool, schema_problem
from toolgate.errors import ConfigError, RegistrationError, ToolgateError
from toolgate.events import EventBus
from toolgate.flow import Flow
from toolgate.gateway.config.identity import oauth_identity, principal_from
from toolgate.gateway.config.model import GatewayConfig, PolicyConfig
from toolgate.policy import Policy, Principal, RateLimit, TrustLadder
from toolgate.search import HYBRID_WEIGHT, SearchSettings
from toolgate.state.base import StateStore
from toolgate.state.listing import SessionListing
from toolgate.state.open import open_store, store_problem
from toolgate.strategies import DeliveryConfig, MetaNames
from toolgate.toolset import ToolSet


@dataclass(frozen=True)
class BackendTool:
    """One tool as a backend lists it, and the name the gateway exposes it under."""

    server: str
    name: str  # the backend's own name
    exposed: str
    wire: Mapping[str, Any]


class ContentProblem(ConfigError):
    """A build error in what the backends offer, not in the config's structure (a
    pattern that matches no tool, a tool offered twice): the gateway serves the rest."""


@dataclass
class BuildReport:
    """What building found: errors (``check`` fails on each) and warnings."""

    errors: list[ConfigError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: no backend was started (``check --offline``): a pattern matching nothing says
    #: nothing, so each is counted in ``unchecked`` rather than warned of one by one
    offline: bool = False
    unchecked: int = 0

    def fail(self, key: str, message: str, *, content: bool = False) -> None:
        """Record a problem at ``key``; ``content`` marks it a ``ContentProblem``."""
        self.errors.append(
            (ContentProblem if content else ConfigError)(f"{key}: {message}", key=key)
        )

    @property
    def fatal(self) -> list[ConfigError]:
        """The errors that leave no sensible catalog (structure, not backend content)."""
        return [e for e in self.errors if not isinstance(e, ContentProblem)]


def listed_twice(server: str, what: str, name: str) -> str:
    """The problem of a backend listing one tool (prompt, resource...) twice, named by
    its own ``name`` for it."""
    return f"backend {server!r} lists {what} {name!r} twice; the first is served"


def exposed_tools(
    cfg: GatewayConfig, listed: Mapping[str, Sequence[Mapping[str, Any]]], report: BuildReport
) -> list[BackendTool]:
    """Each backend tool with its exposed name; a name two backends offer, or one backend
    lists twice, is an error (the first is served)."""
    out: list[BackendTool] = []
    owner: dict[str, str] = {}
    for server in sorted(listed):
        for wire in listed[server]:
            name = str(wire["name"])
            exposed = cfg.exposed_name(server, name)
            if exposed in owner:
                first = owner[exposed]
                report.fail(
                    f"mcpServers.{server}",
                    listed_twice(server, "tool", name)
                    if first == server  # no prefix can settle that
                    else f"tool {exposed!r} is offered by both {first!r} and {server!r}; "
                    'give one of them a "prefix"',
                    content=True,
                )
                continue
            owner[exposed] = server
            schema = wire.get("inputSchema")
            problem = schema_problem(schema) if isinstance(schema, Mapping) else None
            if problem is not None:
                report.warnings.append(
                    f"mcpServers.{server}: tool {exposed!r} has an inputSchema that is not "
                    f"valid JSON Schema ({problem}); toolgate passes its arguments on unchecked"
                )
            out.append(BackendTool(server, name, exposed, wire))
    return out


def match(
    pattern: str, tools: Sequence[BackendTool], servers: Sequence[str]
) -> list[BackendTool] | None:
    """Tools a pattern names; None when it names an unknown server."""
    if ":" in pattern:
        server, glob = pattern.split(":", 1)
        if server not in servers:
            return None
        return [t for t in tools if t.server == server and fnmatchcase(t.name, glob)]
    return [t for t in tools if fnmatchcase(t.exposed, pattern)]


def _resolve(
    pattern: str,
    key: str,
    tools: Sequence[BackendTool],
    cfg: GatewayConfig,
    report: BuildReport,
    live: set[str],
) -> list[BackendTool]:
    found = match(pattern, tools, list(cfg.mcp_servers))
    if found is None:
        report.fail(key, f"pattern {pattern!r} names unknown server {pattern.split(':')[0]!r}")
        return []
    if not found:
        # only tools that were read can show a pattern matches nothing: one that might
        # name a tool of a backend down (or not started: ``check --offline``) is a warning
        named = [pattern.split(":", 1)[0]] if ":" in pattern else sorted(cfg.mcp_servers)
        unread = [s for s in named if s not in live]
        if unread and report.offline:
            report.unchecked += 1
        elif unread:
            down = ", ".join(repr(s) for s in unread)
            report.warnings.append(
                f"{key}: {pattern!r} matches nothing while {down} "
                f"{'is' if len(unread) == 1 else 'are'} down"
            )
        else:
            report.fail(key, f"pattern {pattern!r} matches no tool", content=True)
    return found


def _policy(p: PolicyConfig, key: str, ladder: TrustLadder, report: BuildReport) -> Policy | None:
    if p.min_trust is not None:
        try:
            ladder.check(p.min_trust)
        except ConfigError as exc:
            report.fail(f"{key}.min_trust", exc.message)
            return None
    rate = RateLimit(p.rate_limit.max, p.rate_limit.window_s) if p.rate_limit else None
    return Policy(
        min_trust=p.min_trust,
        allowed_classes=tuple(p.allowed_classes),
        decision=p.decision,
        rate_limit=rate,
    )


def build_toolset(
    cfg: GatewayConfig,
    listed: Mapping[str, Sequence[Mapping[str, Any]]],
    handler_for: Callable[[BackendTool], Handler],
    *,
    live: set[str] | None = None,
    store: StateStore | None = None,
    events: EventBus | None = None,
    report: BuildReport | None = None,
) -> tuple[ToolSet, BuildReport]:
    """Build the catalog. Problems are collected in the report; the first one is raised
    as ``ConfigError`` only when it leaves no sensible catalog (callers decide)."""
    tg = cfg.toolgate
    report = report or BuildReport()
    live = set(listed) if live is None else live
    ladder = TrustLadder(tuple(tg.identity.trust_levels))
    flow = Flow()
    if tg.stages is not None:
        try:
            flow = Flow.from_mapping(
                {
                    "initial": tg.stages.initial,
                    "stages": [s.model_dump() for s in tg.stages.stages],
                }
            )
        except ConfigError as exc:
            report.fail("toolgate.stages", exc.message)
    try:
        default = principal_from(
            tg.identity.default, ladder, "toolgate.identity.default", authenticated=False
        )
    except ConfigError as exc:
        report.errors.append(exc)
        default = Principal(id=tg.identity.default.id, trust=ladder.levels[0], scope=())
    for digest, who in tg.identity.tokens.items():
        try:
            principal_from(
                who, ladder, f"toolgate.identity.tokens.{digest[:12]}", authenticated=True
            )
        except ConfigError as exc:
            report.errors.append(exc)
    if tg.identity.oauth is not None:  # trust level, resource URL: what serve would refuse
        try:
            oauth_identity(cfg)
        except ConfigError as exc:
            report.errors.append(exc)
    toolset = ToolSet(
        "toolgate-gateway",
        store=store or open_store(tg.store, idle_ttl=tg.idle_ttl),
        flow=flow,
        trust_levels=tuple(tg.identity.trust_levels),
        initial_groups=tuple(tg.initial_groups),
        max_tools=tg.max_tools,
        max_tokens=tg.max_tokens,
        hidden_tool_errors=tg.hidden_tool_errors,
        page_size=tg.page_size,
        separator=tg.separator,
        default_principal=default,
        events=events,
        search=search_settings(cfg),
    )
    # groups
    groups = [
        Group(
            name=name,
            description=g.description,
            title=g.title,
            parent=g.parent,
            instructions=g.instructions,
            show_deactivator=g.show_deactivator,
        )
        for name, g in tg.groups.items()
    ]
    try:
        toolset.add_groups(groups)
    except RegistrationError as exc:
        report.fail("toolgate.groups", exc.message)
    for i, ex in enumerate(tg.exclusive):
        try:
            toolset.exclusive(*ex)
        except RegistrationError as exc:
            report.fail(f"toolgate.exclusive[{i}]", exc.message)
    tools = exposed_tools(cfg, listed, report)
    membership: dict[str, list[str]] = {t.exposed: [] for t in tools}
    for name, g in tg.groups.items():
        for i, pattern in enumerate(g.tools):
            for t in _resolve(
                pattern, f"toolgate.groups.{name}.tools[{i}]", tools, cfg, report, live
            ):
                if name not in membership[t.exposed]:
                    membership[t.exposed].append(name)
    always: set[str] = set()
    for i, pattern in enumerate(tg.always):
        always.update(
            t.exposed for t in _resolve(pattern, f"toolgate.always[{i}]", tools, cfg, report, live)
        )
    policies: dict[str, Policy] = {}
    for i, p in enumerate(tg.policies):
        key = f"toolgate.policies[{i}]"
        policy = _policy(p, key, ladder, report)
        if policy is None:
            continue
        for j, pattern in enumerate(p.tools):
            for t in _resolve(pattern, f"{key}.tools[{j}]", tools, cfg, report, live):
                policies[t.exposed] = policy
    stages: dict[str, frozenset[str]] = {}
    if tg.stages is not None:
        for pattern, names in tg.stages.tool_stages.items():
            key = f"toolgate.stages.tool_stages.{pattern}"
            bad = [n for n in names if not flow.has(n) and n != "*"]
            if bad:
                report.fail(
                    key, f"unknown stage {bad[0]!r}; known: {', '.join(sorted(flow.names))}"
                )
                continue
            for t in _resolve(pattern, key, tools, cfg, report, live):
                stages[t.exposed] = frozenset(names)
        for s in tg.stages.stages:
            for tr in s.transitions:
                if not any(t.exposed == tr.on for t in tools) and live == set(cfg.mcp_servers):
                    report.fail(
                        f"toolgate.stages.stages.{s.name}.transitions",
                        f"transition on unknown tool {tr.on!r}",
                        content=True,
                    )
    known_groups = set(toolset.catalog.groups)
    built = [
        Tool.from_wire(
            t.wire,
            handler_for(t),
            name=t.exposed,
            groups=tuple(g for g in membership[t.exposed] if g in known_groups),
            visibility=ALWAYS if t.exposed in always else BY_GROUP,
            policy=policies.get(t.exposed, Policy()),
            stages=stages.get(t.exposed),
            source=t.server,
        )
        for t in tools
    ]
    for tool in built:
        try:
            toolset.add_tool(tool)
        except ToolgateError as exc:  # what a backend offers: the gateway serves the rest
            report.fail(f"mcpServers.{tool.source}", f"{exc.message}; not served", content=True)
            continue
    try:
        toolset.validate()
    except ConfigError as exc:  # its key is one of the ``toolgate`` block (``initial_groups``)
        at = exc.details.get("key")
        report.fail(f"toolgate.{at}" if at else "toolgate", exc.message)
    return toolset, report


def store_problems(cfg: GatewayConfig, report: BuildReport) -> None:
    """What opening ``toolgate.store`` would find, found without opening it (a SQLite
    file that is a folder or no database), for ``check``."""
    problem = store_problem(cfg.store_url)
    if problem is not None:
        report.fail("toolgate.store", problem)


def open_config_store(cfg: GatewayConfig) -> SessionListing:
    """The store ``toolgate.store`` names, opened; one that cannot be opened is a
    ``ConfigError`` naming the key."""
    try:
        return open_store(cfg.store_url, idle_ttl=cfg.toolgate.idle_ttl)
    except ConfigError as exc:
        raise ConfigError(f"toolgate.store: {exc.message}", key="toolgate.store") from None


def search_settings(cfg: GatewayConfig) -> SearchSettings:
    """How the gateway ranks ``search_tools``: the ``search`` key, plus each backend's
    key and title, indexed as the tools' ``server`` field."""
    sc = cfg.toolgate.search
    return SearchSettings(
        mode=sc.mode,
        embedder=sc.embedder,
        cache=sc.cache,
        weight=HYBRID_WEIGHT if sc.weight is None else sc.weight,
        servers={key: spec.title or "" for key, spec in cfg.mcp_servers.items()},
    )


def delivery_config(cfg: GatewayConfig) -> DeliveryConfig:
    """The delivery settings of a gateway config's ``toolgate`` block."""
    tg = cfg.toolgate
    return DeliveryConfig(
        strategy=tg.strategy,
        meta_tools=tg.meta_tools,
        groups_fallback=tg.groups_fallback,
        search=tg.search.enabled,
        search_full_results=tg.search.full_results,
        names=MetaNames(**tg.meta_tool_names),
        grouped_list=tg.grouped_list,
        activators=tg.activators,
    )
