"""A running gateway reads its config file again and applies it without a restart:
``reload(gateway, path)``, whichever way it is asked (SIGHUP, ``POST /admin/reload``).

A config ``toolgate check`` would fail (with the same lines), one changing a key only a
restart applies, or a reload asked while the gateway starts or stops, is refused and
nothing changes. Otherwise backends are added, removed or reconnected, the catalog is
synced in place (``Gateway.sync``) and removed groups leave every stored session; the
sessions and listen streams whose tools, prompts or resources list changed are told, by
their principal as the new tokens name it (its subscriptions too). A live session whose
owner no token names any more ends, with a warning.
Operations layer: reads a gateway through ``Reloadable``; never imports ``serve``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from toolgate.errors import ConfigError
from toolgate.events import EventBus
from toolgate.gateway.backends.fleet import Fleet
from toolgate.gateway.commands.check import assess, of_file, problem_lines, read
from toolgate.gateway.config.build import BuildReport
from toolgate.gateway.config.identity import identity_of
from toolgate.gateway.config.model import GatewayConfig
from toolgate.gateway.ingress.drain import Drain
from toolgate.gateway.relay.calls import CallRelay
from toolgate.gateway.relay.exposure import GroupExposure
from toolgate.gateway.relay.primitives import Relay, attach
from toolgate.identity import BearerTokens, IdentityResolver
from toolgate.lowlevel import Binding
from toolgate.oauth import OAuthResolver
from toolgate.policy import Principal
from toolgate.request import Live
from toolgate.sdk_internals import live_transports, session_manager, session_owner
from toolgate.state.base import SessionState, StateStore
from toolgate.state.listing import SessionListing
from toolgate.strategies import Delivery
from toolgate.toolset import ToolSet

logger = logging.getLogger("toolgate.gateway")

#: ``toolgate`` keys a reload applies; a change to any other key needs a restart
RELOADABLE = frozenset(
    {
        "groups",
        "exclusive",
        "always",
        "policies",
        "stages",
        "initial_groups",
        "max_tools",
        "max_tokens",
        "hidden_tool_errors",
        "page_size",
        "separator",
        "identity",  # but see ``restart_keys``: tokens on or off, OAuth
        "search",  # but not ``enabled`` or ``full_results``: the delivery's
    }
)
#: why a reload asked of a gateway not serving (yet, or any more) changes nothing
STARTING = "the gateway is still starting (its backends are connecting): nothing reloaded"
STOPPING = "the gateway is stopping: nothing reloaded (a new process reads the file)"
#: a backend's keys the gateway reads per call or per listing: changed, no reconnect
GATEWAY_SIDE = frozenset({"timeout", "tool_timeouts", "prefix", "title"})


class Reloadable(Protocol):
    """What a reload reads and changes of a running gateway (``serve.Gateway``)."""

    cfg: GatewayConfig
    config_path: Path | None
    reload_lock: asyncio.Lock
    fleet: Fleet
    identity: IdentityResolver
    events: EventBus
    relay: Relay
    calls: CallRelay
    binding: Binding | None
    drain: Drain

    @property
    def toolset(self) -> ToolSet: ...
    @property
    def delivery(self) -> Delivery: ...
    async def sync(self, reason: str = "") -> int: ...


@dataclass(frozen=True)
class ReloadReport:
    """What a reload did, or why it did nothing (``applied`` false: ``problems`` are
    ``toolgate check``'s lines, ``restart`` the keys only a restart applies)."""

    applied: bool
    config: str
    problems: tuple[str, ...] = ()
    restart: tuple[str, ...] = ()
    #: the ``toolgate`` keys whose value changed
    changed: tuple[str, ...] = ()
    added_backends: tuple[str, ...] = ()
    removed_backends: tuple[str, ...] = ()
    reconnected_backends: tuple[str, ...] = ()
    added_groups: tuple[str, ...] = ()
    removed_groups: tuple[str, ...] = ()
    #: stored sessions a removed group was dropped from
    sessions_changed: int = 0
    #: live sessions ended: no token is their owner's principal any more
    sessions_ended: int = 0
    tools: int = 0
    warnings: tuple[str, ...] = ()
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    def summary(self) -> str:
        """One line for the log."""
        if not self.applied:
            why = [*self.problems, *(f"{k} needs a restart" for k in self.restart)]
            return f"config reload refused ({self.config}): " + "; ".join(why)
        parts = [f"{len(self.changed)} key(s) changed" + _names(self.changed)]
        for label, names in (
            ("backends added", self.added_backends),
            ("backends removed", self.removed_backends),
            ("backends reconnected", self.reconnected_backends),
            ("groups added", self.added_groups),
            ("groups removed", self.removed_groups),
        ):
            if names:
                parts.append(f"{label}: {', '.join(names)}")
        parts.append(f"a removed group left {self.sessions_changed} stored session(s)")
        if self.sessions_ended:
            parts.append(f"{self.sessions_ended} live session(s) ended (their principal left)")
        parts.append(f"{self.tools} tools")
        return f"config reloaded ({self.config}): " + "; ".join(parts)


def _names(names: Sequence[str]) -> str:
    return f" ({', '.join(names)})" if names else ""


@dataclass(frozen=True)
class BackendPlan:
    """How the backends differ between two configs, by name."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    reconnected: tuple[str, ...] = ()  # how it is reached changed
    updated: tuple[str, ...] = ()  # only what the gateway reads per call changed

    @classmethod
    def of(cls, old: GatewayConfig, new: GatewayConfig) -> BackendPlan:
        before, after = old.mcp_servers, new.mcp_servers
        reconnected, updated = [], []
        for name in sorted(set(before) & set(after)):
            was, now = before[name].model_dump(), after[name].model_dump()
            reached = {k: v for k, v in was.items() if k not in GATEWAY_SIDE}
            if (
                type(before[name]) is not type(after[name])
                or old.base_dir != new.base_dir
                or reached != {k: v for k, v in now.items() if k not in GATEWAY_SIDE}
            ):
                reconnected.append(name)
            elif was != now:
                updated.append(name)
        return cls(
            added=tuple(sorted(set(after) - set(before))),
            removed=tuple(sorted(set(before) - set(after))),
            reconnected=tuple(reconnected),
            updated=tuple(updated),
        )


def restart_keys(old: GatewayConfig, new: GatewayConfig) -> tuple[list[str], list[str]]:
    """``(changed, restart)``: the ``toolgate`` keys whose value changed, and those of
    them a reload cannot apply."""
    was = old.toolgate.model_dump(by_alias=True)
    now = new.toolgate.model_dump(by_alias=True)
    changed = sorted(k for k in was.keys() | now.keys() if was.get(k) != now.get(k))
    restart = [f"toolgate.{k}" for k in changed if k not in RELOADABLE]
    oi, ni = old.toolgate.identity, new.toolgate.identity
    if oi.oauth != ni.oauth:
        restart.append("toolgate.identity.oauth")
    elif oi.oauth is not None and oi.trust_levels != ni.trust_levels:
        restart.append("toolgate.identity.trust_levels (with identity.oauth)")
    if bool(oi.tokens) != bool(ni.tokens):
        # the HTTP edge asks for a credential or not from how it was started
        restart.append("toolgate.identity.tokens (none before or none now)")
    os_, ns = old.toolgate.search, new.toolgate.search
    for key in ("enabled", "full_results"):
        if getattr(os_, key) != getattr(ns, key):
            restart.append(f"toolgate.search.{key}")
    return [f"toolgate.{k}" for k in changed], restart


def _retoken(current: IdentityResolver, fresh: IdentityResolver) -> None:
    """The bearer tokens of ``fresh`` in the resolver every part of the gateway holds."""
    mine = current.static if isinstance(current, OAuthResolver) else current
    theirs = fresh.static if isinstance(fresh, OAuthResolver) else fresh
    if isinstance(mine, BearerTokens) and isinstance(theirs, BearerTokens):
        mine.tokens = theirs.tokens


def _tokens(identity: IdentityResolver) -> Mapping[str, Principal]:
    """The principal of each bearer token digest ``identity`` holds (none: no tokens)."""
    static = identity.static if isinstance(identity, OAuthResolver) else identity
    return dict(static.tokens) if isinstance(static, BearerTokens) else {}


def follow_principals(
    live: Iterable[Live], was: Mapping[str, Principal], now: Mapping[str, Principal]
) -> int:
    """Give each live connection (legacy session, listen stream) whose principal a
    bearer token named the principal of that id as the new tokens (``now``) name it:
    what it is told outside a request (``list_changed``, resource updates) follows its
    new scope, trust and attributes, as its next request does. By the token that named
    it, when that token still names the same id; else by id. A principal no token names
    is left alone (its sessions end: ``end_orphaned_sessions``). Returns how many
    changed."""
    changed = 0
    for connection in live:
        principal = connection.facts.principal
        if principal is None:
            continue
        same = [now[d] for d, p in was.items() if p == principal and d in now]
        found = [p for p in same if p.id == principal.id]
        found = found or [p for p in now.values() if p.id == principal.id]
        if not found or found[0] == principal:
            continue
        connection.facts = replace(connection.facts, principal=found[0])
        changed += 1
    return changed


async def end_orphaned_sessions(
    gateway: Reloadable, old: Mapping[str, Principal], new: Mapping[str, Principal]
) -> tuple[int, list[str]]:
    """End the live sessions whose owner (the principal id that opened it; the SDK lets
    no other use it) no token of ``new`` (digest -> principal) names any more: a token
    rebound to another principal, or removed. Its requests would otherwise be "Session
    not found" while the session held its place until ``idle_ttl``. Returns how many
    ended, and a warning per token whose principal changed, or that was removed with
    sessions that end."""
    was = {digest: p.id for digest, p in old.items()}
    now = {digest: p.id for digest, p in new.items()}
    gone = set(was.values()) - set(now.values())
    manager = session_manager(gateway.binding.server) if gateway.binding is not None else None
    ending: dict[str, list[Any]] = {principal: [] for principal in gone}
    if manager is not None and gone:
        for key, transport in list(live_transports(manager).items()):
            owner = session_owner(manager, key)
            principal = owner.get("client_id") if isinstance(owner, dict) else None
            if principal in ending and not transport.is_terminated:
                ending[principal].append(transport)
    warnings = []
    for digest in sorted(was):
        before, after = was[digest], now.get(digest)
        if after == before:
            continue
        ends = len(ending.get(before, ()))
        stays = "" if before in gone else f" (another token is still {before!r}: they stay)"
        if after is not None:
            warnings.append(
                f"identity.tokens.{digest[:12]}...: principal changed {before!r} -> "
                f"{after!r}: {ends} live session(s) end{stays}"
            )
        elif ends:
            warnings.append(
                f"identity.tokens.{digest[:12]}...: removed ({before!r}): "
                f"{ends} live session(s) end"
            )
    ended = 0
    for transports in ending.values():
        for transport in transports:
            # as a DELETE ends one: the SDK forgets it, and the session cap with it
            try:
                await transport.terminate()
            except Exception:  # the reload is applied: one session's failure is logged
                logger.warning("could not end session %s", transport.mcp_session_id, exc_info=True)
                continue
            ended += 1
    return ended, warnings


async def drop_groups(store: StateStore, keys: Sequence[str], removed: frozenset[str]) -> int:
    """Take ``removed`` out of every stored session that has one active: each session
    the store lists (``SessionListing``), else each of ``keys``. Returns how many."""
    candidates = set(keys)
    if isinstance(store, SessionListing):
        async for key, state in store.sessions():
            if state.active & removed:
                candidates.add(key)

    async def change(state: SessionState) -> tuple[SessionState, bool]:
        kept = state.active - removed
        return replace(state, active=kept), kept != state.active

    count = 0
    for key in sorted(candidates):
        count += await store.mutate(key, change)
    return count


def _judged(cfg: GatewayConfig, fleet: Fleet) -> BuildReport:
    """What ``toolgate check`` finds in ``cfg`` over what its backends list now."""
    listed = {
        n: list(b.tools) for n, b in fleet.backends.items() if b.listed and n in cfg.mcp_servers
    }
    live = {n for n, b in fleet.backends.items() if b.up and n in cfg.mcp_servers}
    found = BuildReport()
    assess(cfg, listed, live=live, report=found)
    return found


async def _first_attempts(gateway: Reloadable, names: Sequence[str]) -> None:
    """Wait for the first attempt of each backend a reload started, or until the gateway
    begins to stop (they stop with it; the stop waits for no backend to come up)."""
    attempts = asyncio.ensure_future(gateway.fleet.first_attempts(names))
    stopping = asyncio.ensure_future(gateway.drain.begun())
    try:
        await asyncio.wait({attempts, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (attempts, stopping):
            task.cancel()
        await asyncio.gather(attempts, stopping, return_exceptions=True)


def _live_keys(gateway: Reloadable) -> list[str]:
    """The store keys of the legacy sessions and listen streams connected here."""
    if gateway.binding is None:
        return []
    keys = []
    for live in gateway.binding.live:
        with contextlib.suppress(Exception):  # a session we cannot evaluate is left alone
            key = live.facts.request(gateway.delivery)[1].session.key
            if key is not None:
                keys.append(key)
    return keys


async def reload(gateway: Reloadable, path: str | Path | None = None) -> ReloadReport:
    """Read the config at ``path`` (default: the file the gateway was started with) and
    apply it, one reload at a time; the report is logged and emitted as an event
    (``config.reloaded`` or ``config.refused``).

    >>> report = await reload(gateway)          # doctest: +SKIP
    """
    async with gateway.reload_lock:
        began = time.monotonic()
        where = path if path is not None else gateway.config_path
        label = "" if where is None else str(where)
        if where is None:
            report = ReloadReport(
                False, "", problems=("the gateway was not started from a config file",)
            )
        elif gateway.binding is None:
            report = ReloadReport(False, label, problems=(STARTING,))
        elif gateway.drain.draining:  # also a reload that waited for this lock
            report = ReloadReport(False, label, problems=(STOPPING,))
        else:
            try:
                report = await _reload(gateway, where)
            except ConfigError as exc:  # a problem only applying found: nothing changed yet
                report = ReloadReport(False, str(where), problems=tuple(exc.message.splitlines()))
        report = replace(report, seconds=round(time.monotonic() - began, 3))
    (logger.info if report.applied else logger.warning)("%s", report.summary())
    data = report.to_json()
    gateway.events.emit("config.reloaded" if report.applied else "config.refused", **data)
    return report


async def _reload(gateway: Reloadable, where: str | Path) -> ReloadReport:
    label = str(where)
    new, lines = read(where)
    if new is None:
        return ReloadReport(False, label, problems=tuple(lines))
    old = gateway.cfg
    changed, restart = restart_keys(old, new)
    plan = BackendPlan.of(old, new)
    fleet = gateway.fleet
    # judged as ``toolgate check`` judges it, over what the backends it keeps list now
    problems = of_file(where, problem_lines(_judged(new, fleet).fatal))
    if problems or restart:
        return ReloadReport(False, label, problems=tuple(problems), restart=tuple(restart))
    fresh = identity_of(new)  # ConfigError: refused, nothing changed yet
    before = set(gateway.toolset.catalog.groups)
    # each session whose prompts or resources list this changes is told once, at the end
    async with gateway.relay.regrouping("the config reload"):
        # backends first out: no sync in between sees the new config with them still listed
        for name in plan.removed:
            backend = await fleet.remove(name)
            await gateway.relay.changed(backend, backend.declared())  # its prompts, resources
        gateway.cfg = new
        was, now = _tokens(gateway.identity), _tokens(fresh)
        _retoken(gateway.identity, fresh)
        ended, token_warnings = await end_orphaned_sessions(gateway, was, now)
        binding = gateway.binding
        if binding is not None and follow_principals(binding.live, was, now):
            # tools/list as each one last listed it, against its new principal's
            binding.live.soon(binding.watch.flush)
            gateway.calls.levels.follow(binding.live)  # whom a backend's logs reach
        gateway.relay.reconfigure(new)
        if isinstance(gateway.relay.access, GroupExposure):
            gateway.relay.access.place(new)
        for name in plan.updated:
            fleet.backends[name].spec = new.mcp_servers[name]
        for name in plan.reconnected:
            await fleet.reconnect(name, new.mcp_servers[name], base_dir=new.base_dir)
        for name in plan.added:
            backend = fleet.make(name, new.mcp_servers[name], base_dir=new.base_dir)
            backend.peer = gateway.calls  # as the gateway's first backends (``CallRelay``)
            attach(gateway.relay, (backend,))
            fleet.add(backend)
        await _first_attempts(gateway, (*plan.added, *plan.reconnected))
        # warned of as the backends are now: one added is listed, not "down" as before
        found = _judged(new, fleet)
        warnings = [*problem_lines(found.errors), *found.warnings, *token_warnings]
        for name in (*plan.added, *plan.reconnected):
            b = fleet.backends[name]
            if not b.up:  # supervised: retried with backoff, its tools join when it lists them
                then = "the gateway is stopping" if gateway.drain.draining else "retrying"
                warnings.append(f"mcpServers.{name}: not up ({b.last_error or b.status}); {then}")
        await gateway.sync(reason="the config reload")  # and the sessions told, as after any sync
    after = set(gateway.toolset.catalog.groups)
    gone = frozenset(before - after)
    sessions = 0
    if gone:
        sessions = await drop_groups(gateway.toolset.store, _live_keys(gateway), gone)
    return ReloadReport(
        True,
        label,
        changed=tuple(changed),
        added_backends=plan.added,
        removed_backends=plan.removed,
        reconnected_backends=plan.reconnected,
        added_groups=tuple(sorted(after - before)),
        removed_groups=tuple(sorted(gone)),
        sessions_changed=sessions,
        sessions_ended=ended,
        tools=len(gateway.toolset.catalog.tools),
        warnings=tuple(warnings),
    )


__all__ = [
    "STARTING",
    "STOPPING",
    "BackendPlan",
    "ReloadReport",
    "Reloadable",
    "drop_groups",
    "end_orphaned_sessions",
    "follow_principals",
    "reload",
    "restart_keys",
]
