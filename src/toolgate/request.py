"""What one MCP request says about itself, read once: ``RequestFacts``.

``request_facts(ctx, identity)`` derives the session key (one rule for every adapter),
the principal (as an HTTP front resolved it, ``Resolved`` under ``CALLER``), the protocol
era, the declared extensions and the elicitation confirmer from an SDK request context,
once per request; ``LiveConnections`` remembers the legacy connections a server may
notify outside a request, and ``ToolListWatch`` tells them when their ``tools/list``
changed. Adapter layer: imports ``mcp``, ``toolgate.identity`` and the
delivery layer; never ``fastmcp``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import uuid
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import mcp_types as mt
from mcp.server.context import ServerRequestContext

from toolgate.errors import ToolgateError, Unauthenticated
from toolgate.identity import Caller, IdentityFn, IdentityResolver, resolve_principal
from toolgate.policy import Confirmer, ConfirmRequest, Principal
from toolgate.sdk_internals import connection_if_any, connection_of
from toolgate.strategies import Delivery, parse_toolsets
from toolgate.strategies.base import Request, Strategy, is_stateless

logger = logging.getLogger("toolgate.request")

Context = ServerRequestContext[Any, Any]
# FastMCP caches its ``ctx.session_id`` under this ``Connection.state`` key; sharing it
# makes toolgate's session key equal FastMCP's session id on every legacy transport.
_SESSION_KEY = "_fastmcp_state_prefix"


@dataclass(frozen=True)
class RequestFacts:
    """Who is asking and how, for one request: built once by the adapter, then reused
    by every part that serves it (tools, groups, the dashboard's session recorder)."""

    session_key: str | None  # legacy protocol only; 2026-07-28 has no session
    principal: Principal | None  # None: the toolset's default principal
    protocol: str | None
    extensions: frozenset[str]
    confirmer: Confirmer | None = None
    #: a view per request: the groups named by ``X-MCP-Toolsets`` or ``?toolsets=``
    toolsets: tuple[str, ...] | None = None

    @property
    def legacy(self) -> bool:
        return not is_stateless(self.protocol)

    def request(
        self,
        delivery: Delivery,
        *,
        confirmer: Confirmer | None = None,
        extras: Mapping[str, Any] | None = None,
    ) -> tuple[Strategy, Request]:
        """The strategy and toolgate request ``delivery`` serves these facts with."""
        return delivery.request(
            session_key=self.session_key,
            principal=self.principal,
            protocol=self.protocol,
            extensions=self.extensions,
            confirmer=confirmer or self.confirmer,
            extras=extras,
            toolsets=self.toolsets,
        )


#: the ASGI scope key under which an HTTP front that resolved the caller (the gateway's
#: guard) puts the result, a ``Resolved``: what serves the request reads it from there
CALLER = "toolgate.caller"


@dataclass(frozen=True)
class Resolved:
    """Who an HTTP request's caller is, resolved once: a principal (None: the default
    one), or the error that refused its credential (raised where a principal is needed).

    >>> scope[CALLER] = await Resolved.of(identity, Caller("http", headers))
    """

    principal: Principal | None = None
    refused: ToolgateError | None = None
    #: the OAuth scopes the caller's credential grants (``resolve_with_scopes``)
    scopes: tuple[str, ...] = ()

    @classmethod
    async def of(cls, identity: IdentityResolver | IdentityFn, caller: Caller) -> Resolved:
        try:
            if isinstance(identity, IdentityResolver):
                principal, scopes = await identity.resolve_with_scopes(caller)
                return cls(principal, scopes=tuple(scopes))
            return cls(await resolve_principal(identity, caller))
        except ToolgateError as exc:  # ``Unauthenticated``: a missing or refused credential
            return cls(refused=exc)
        except Exception:  # a resolver's own fault: fail closed (401), never a 500 anywhere
            logger.exception("the identity resolver failed; the request is refused")
            return cls(refused=Unauthenticated("The credential could not be verified"))

    @property
    def admitted(self) -> Principal | None:
        """The principal, or the refusal raised."""
        if self.refused is not None:
            raise self.refused
        return self.principal


# (session, request id, HTTP request, facts) of the request this task is serving
_FACTS: ContextVar[tuple[Any, Any, Any, RequestFacts] | None] = ContextVar(
    "toolgate.request_facts", default=None
)


async def request_facts(
    ctx: Context, identity: IdentityResolver | IdentityFn | None, *, access_token: Any = None
) -> RequestFacts:
    """The facts of the request behind ``ctx``, resolved at its first call (a failed
    identity check raises, e.g. ``Unauthenticated``) and returned as they are after."""
    cached = _FACTS.get()
    if (
        cached is not None
        and cached[0] is ctx.session
        and cached[1] == ctx.request_id
        and cached[2] is ctx.request
    ):
        return cached[3]
    legacy = not is_stateless(ctx.protocol_version)
    caps = ctx.session.client_capabilities
    facts = RequestFacts(
        session_key=session_key(ctx) if legacy else None,
        principal=await principal_of(ctx, identity, access_token),
        protocol=ctx.protocol_version,
        extensions=declared_extensions(ctx),
        confirmer=(
            SessionElicitationConfirmer(ctx.session, ctx.request_id)
            if legacy and supports_elicitation(caps)
            else None
        ),
        toolsets=requested_toolsets(ctx),
    )
    _FACTS.set((ctx.session, ctx.request_id, ctx.request, facts))
    return facts


async def principal_of(
    ctx: Context, identity: IdentityResolver | IdentityFn | None, access_token: Any = None
) -> Principal | None:
    """Who sent the request behind ``ctx``: as the HTTP front resolved it (``CALLER`` in
    its scope), else as ``identity`` says now (stdio, an app without that front)."""
    if identity is None:
        return None  # nobody to ask: the headers need not be read
    scope = getattr(ctx.request, "scope", {})
    return await resolved_or(scope, identity, lambda: caller_of(ctx, access_token))


async def resolved_or(
    scope: Mapping[str, Any],
    identity: IdentityResolver | IdentityFn | None,
    caller: Callable[[], Caller],
) -> Principal | None:
    """The principal an HTTP front resolved for this request (``CALLER`` in ``scope``;
    its refusal raised), else the one ``identity`` gives ``caller()`` now."""
    resolved = scope.get(CALLER)
    if isinstance(resolved, Resolved):
        return resolved.admitted
    return await resolve_principal(identity, caller())


def session_key(ctx: Context) -> str:
    """The legacy-protocol session key: the streamable-HTTP session id, else a key
    minted once per connection (stdio, in-memory); equal to FastMCP's session id."""
    connection = connection_of(ctx)
    key = connection.state.get(_SESSION_KEY)
    if key is None:
        headers = getattr(ctx.request, "headers", None) or {}
        key = connection.session_id or headers.get("mcp-session-id")
        key = connection.state[_SESSION_KEY] = key or f"conn:{uuid.uuid4().hex}"
    return str(key)


def caller_of(ctx: Context, access_token: Any = None) -> Caller:
    """How the request arrived: HTTP headers when there is an HTTP request, and the
    access token an auth layer verified."""
    headers = getattr(ctx.request, "headers", None)
    if headers is None:
        return Caller("local", {}, access_token)
    return Caller("http", {k.lower(): v for k, v in headers.items()}, access_token)


TOOLSETS_HEADER = "x-mcp-toolsets"
TOOLSETS_PARAM = "toolsets"


def requested_toolsets(ctx: Context) -> tuple[str, ...] | None:
    """The groups an HTTP request names for its own view: the ``X-MCP-Toolsets`` header
    (the GitHub MCP server's convention) or ``?toolsets=`` on the endpoint, for hosts
    that cannot set headers. None when it names none (stdio never does)."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    if headers is None:
        return None
    values = list(headers.getlist(TOOLSETS_HEADER)) if hasattr(headers, "getlist") else []
    query = getattr(request, "query_params", None)
    if query is not None:
        values += query.getlist(TOOLSETS_PARAM)
    return parse_toolsets(values)


def declared_extensions(ctx: Context) -> frozenset[str]:
    """Extensions the request declares: the legacy initialize capabilities and the
    per-request ``_meta`` client capabilities (2026-07-28), whichever are present."""
    caps = getattr(ctx.session, "client_capabilities", None)
    declared = set(getattr(caps, "extensions", None) or {})
    meta = (ctx.params or {}).get("_meta") if isinstance(ctx.params, Mapping) else None
    per_request = meta.get(mt.CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, Mapping) else None
    extensions = per_request.get("extensions") if isinstance(per_request, Mapping) else None
    return frozenset(declared | set(extensions if isinstance(extensions, Mapping) else ()))


# -- confirmation on the legacy protocol -------------------------------------------------

CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "description": "Allow this tool call to run?"}},
    "required": ["confirm"],
}


class SessionElicitationConfirmer:
    """Asks the human through MCP elicitation (legacy protocol: a server-to-client
    request on the calling request's stream)."""

    def __init__(self, session: Any, related_request_id: Any = None) -> None:
        self.session = session
        self.related_request_id = related_request_id

    async def confirm(self, request: ConfirmRequest) -> bool:
        result = await self.session.elicit_form(
            request.message, CONFIRM_SCHEMA, related_request_id=self.related_request_id
        )
        content = getattr(result, "content", None) or {}
        return getattr(result, "action", None) == "accept" and content.get("confirm") is True


def supports_elicitation(capabilities: mt.ClientCapabilities | None) -> bool:
    return capabilities is not None and getattr(capabilities, "elicitation", None) is not None


# -- live legacy connections ---------------------------------------------------------------


@dataclass
class Live:
    """A connection that can hear server-initiated notifications: its latest request's
    facts and, per kind of notification, what it was last shown."""

    connection: Any
    facts: RequestFacts
    shown: dict[str, Any] = field(default_factory=dict)


class LiveConnections:
    """Whom a server may notify outside a request (``tools`` and ``groups``
    ``list_changed``, ...): the legacy connections, each until it closes, and what
    ``join`` adds (a 2026-07-28 ``subscriptions/listen`` stream, until it ``leave``s).
    ``notify`` is the one place that decides who hears a notification."""

    def __init__(self) -> None:
        self._live: weakref.WeakKeyDictionary[Any, Live] = weakref.WeakKeyDictionary()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: set[Callable[[], Awaitable[Any]]] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._live)

    def __iter__(self) -> Iterator[Live]:
        return iter(list(self._live.values()))

    def remember(self, ctx: Context, facts: RequestFacts) -> Live | None:
        """Keep (or refresh) the connection behind ``ctx``; None when it has no channel."""
        connection = connection_if_any(ctx)
        if connection is None or not facts.legacy or not connection.has_standalone_channel:
            return None
        live = self._live.get(connection)
        if live is None:
            live = self._live[connection] = Live(connection, facts)
            connection.exit_stack.callback(self._live.pop, connection, None)
        else:
            live.facts = facts
        self._loop = asyncio.get_running_loop()
        return live

    def join(self, listener: Any, facts: RequestFacts) -> Live:
        """Add ``listener`` (anything with ``async notify(method, params)``) as it is,
        with the facts of the request that opened it; it stays until ``leave``."""
        live = self._live[listener] = Live(listener, facts)
        return live

    def leave(self, listener: Any) -> None:
        self._live.pop(listener, None)

    async def notify(self, method: str, changed: Callable[[Live], Awaitable[bool]]) -> int:
        """Send ``method`` to every connection ``changed`` says changed; how many were."""
        sent = 0
        for live in self:
            try:
                if await changed(live):
                    await live.connection.notify(method, None)  # never raises
                    sent += 1
            except Exception:  # a session we cannot evaluate is not notified
                logger.debug("toolgate: cannot tell whether a session changed", exc_info=True)
        return sent

    def soon(self, flush: Callable[[], Awaitable[Any]]) -> None:
        """Run ``flush`` on the serving loop (callable from any thread), once for a burst
        of calls; nothing to do before a connection was remembered."""
        loop = self._loop
        if loop is None or loop.is_closed() or not self._live or flush in self._pending:
            return
        self._pending.add(flush)

        async def run() -> None:
            await asyncio.sleep(0)  # one flush for a burst of registrations
            self._pending.discard(flush)
            await flush()

        def spawn() -> None:
            task = loop.create_task(run())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            spawn()
        else:
            loop.call_soon_threadsafe(spawn)


# -- tools/list_changed outside a request ----------------------------------------------------
TOOLS_LIST_CHANGED = "notifications/tools/list_changed"


def definition_digest(wire: Mapping[str, Any]) -> str:
    """A digest of one listed definition, every field of it (a tool redefined under its
    name changes it)."""
    text = json.dumps(wire, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class ToolListWatch:
    """``notifications/tools/list_changed`` for run-time catalog changes (a tool or
    group added, removed or redefined while serving): each live connection that listed
    tools is told when its listing changed, once until it lists again. The one
    implementation both adapters use (``lowlevel.Binding``, ``ToolgateMiddleware``)."""

    def __init__(self, delivery: Delivery, live: LiveConnections) -> None:
        self.delivery = delivery
        self.live = live
        #: name -> (the definition last digested under it, its digest): a listing's
        #: digest is on every first page, and comparing a definition with the one seen
        #: is far cheaper than serializing it again
        self._digests: dict[str, tuple[dict[str, Any], str]] = {}
        delivery.toolset.catalog.on_change(lambda _: live.soon(self.flush))

    def digest(self, wires: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
        """What a listing is, for telling whether it changed: its definitions' digests
        (shared strings: a connection holds a tuple of references)."""
        parts = []
        for wire in wires:
            name = str(wire.get("name"))
            seen = self._digests.get(name)
            if seen is None or seen[0] != wire:
                if len(self._digests) > 2 * len(self.delivery.toolset.catalog.tools) + 64:
                    self._digests.clear()  # names the catalog no longer holds
                seen = self._digests[name] = (dict(wire), definition_digest(wire))
            parts.append(seen[1])
        return tuple(parts)

    def listed(self, ctx: Context, facts: RequestFacts, wires: Sequence[Mapping[str, Any]]) -> None:
        """The connection behind ``ctx`` was shown ``wires`` (its whole listing)."""
        live = self.live.remember(ctx, facts)
        if live is not None:
            live.shown["tools"] = self.digest(wires)

    def told(self, ctx: Context, facts: RequestFacts) -> None:
        """The connection behind ``ctx`` was sent ``list_changed`` in a request: it
        re-lists before its listing is compared again."""
        live = self.live.remember(ctx, facts)
        if live is not None:
            live.shown["tools"] = None

    async def flush(self) -> int:
        """Tell each live connection whose listing changed since it last listed; how
        many were told."""

        async def changed(live: Live) -> bool:
            shown = live.shown.get("tools")
            if shown is None:
                return False
            strategy, request = live.facts.request(self.delivery)
            if self.digest(await strategy.list_tools(request)) == shown:
                return False
            live.shown["tools"] = None
            return True

        return await self.live.notify(TOOLS_LIST_CHANGED, changed)
