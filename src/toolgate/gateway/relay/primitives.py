"""The relay of the backends' prompts, resources, templates and completions: ``Relay``
serves the ``namespace`` through a ``PrimitiveAccess`` (who sees which), subscribes the
backends for its clients, fans their list changes and updates out and merges their
instructions. Imports ``mcp``, ``toolgate.lowlevel``, the request kit and the gateway below it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, NoReturn

import mcp_types as mt
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from toolgate.errors import PromptNotFound, ResourceNotFound, ToolgateError
from toolgate.gateway.backends.backend import Backend
from toolgate.gateway.config.build import BuildReport
from toolgate.gateway.config.model import GatewayConfig
from toolgate.gateway.relay.access import (
    KINDS,
    FactsOf,
    OpenAccess,
    PrimitiveAccess,
    PrimitiveKind,
    Relayed,
)
from toolgate.gateway.relay.namespace import Namespace, merged_instructions, namespace
from toolgate.lowlevel import advertise_list_changed
from toolgate.paging import paginate
from toolgate.request import Context, Live, LiveConnections, RequestFacts
from toolgate.sdk_internals import connection_of
from toolgate.wire import PageParams, cursor_of, mcp_error

logger = logging.getLogger("toolgate.gateway")

RESOURCE_UPDATED = "notifications/resources/updated"
#: a live connection -> each list_changed method -> what its lists show (None: an error)
Seen = dict[Any, dict[str, list[list[tuple[str, Mapping[str, Any]]] | None]]]


def _fail(exc: ToolgateError) -> NoReturn:
    raise mcp_error(exc) from exc


def _listed(items: Sequence[Relayed]) -> list[tuple[str, Mapping[str, Any]]]:
    """What a list shows of ``items``: each exposed key with its definition."""
    return [(r.name, r.wire) for r in items]


class Relay:
    """The backends' prompts, resources and completions, served through one SDK server.

    >>> relay = Relay(cfg, backends)
    >>> relay.install(server, facts=binding.facts)   # before bind(): toolgate's own
    ...                                               # resources chain after these
    """

    def __init__(
        self,
        cfg: GatewayConfig,
        backends: Mapping[str, Backend],
        *,
        access: PrimitiveAccess | None = None,
    ) -> None:
        self.cfg = cfg
        self.backends = backends
        self.access: PrimitiveAccess = access if access is not None else OpenAccess()
        self.namespace = Namespace()
        self.report = BuildReport()
        self.page_size = cfg.toolgate.page_size
        self.server: Server[Any] | None = None
        self.own_instructions: str | None = None
        self._facts: FactsOf | None = None
        self._connections: Callable[[], LiveConnections | None] = lambda: None
        # (backend, URI) -> the legacy connections and listen streams subscribed to it
        self._subscribers: dict[tuple[str, str], weakref.WeakSet[Any]] = {}
        # (backend, URI) -> its lock and how many hold or wait for it: joining and
        # leaving one URI happen one at a time, with the backend's (un)subscribe inside
        self._locks: dict[tuple[str, str], tuple[asyncio.Lock, int]] = {}
        self._watched: weakref.WeakSet[Any] = weakref.WeakSet()  # connections with a cleanup
        self._tasks: set[asyncio.Task[Any]] = set()
        self._held = 0  # regroupings under way: a backend's list change is told at their end

    # -- wiring ---------------------------------------------------------------------------
    def install(
        self,
        server: Server[Any],
        *,
        facts: FactsOf,
        connections: Callable[[], LiveConnections | None] = lambda: None,
    ) -> None:
        """Register the handlers on ``server`` and advertise prompts and resources with
        ``listChanged`` (and ``subscribe``) and completions, whatever the backends offer
        now: a backend may come up later, and the lists are simply empty until then."""
        if server is self.server:  # built again: the handlers are in place
            self._facts, self._connections = facts, connections
            self.refresh()
            return
        self.server = server
        self.own_instructions = server.instructions
        self._facts = facts
        self._connections = connections
        server.add_request_handler("prompts/list", PageParams, self.list_prompts)
        server.add_request_handler("prompts/get", mt.GetPromptRequestParams, self.get_prompt)
        server.add_request_handler("resources/list", PageParams, self.list_resources)
        server.add_request_handler(
            "resources/templates/list", PageParams, self.list_resource_templates
        )
        server.add_request_handler(
            "resources/read", mt.ReadResourceRequestParams, self.read_resource
        )
        server.add_request_handler("resources/subscribe", mt.SubscribeRequestParams, self.subscribe)
        server.add_request_handler(
            "resources/unsubscribe", mt.UnsubscribeRequestParams, self.unsubscribe
        )
        server.add_request_handler("completion/complete", mt.CompleteRequestParams, self.complete)
        advertise_list_changed(server, "prompts", "resources")
        self.refresh()

    def refresh(self) -> Namespace:
        """Recompute the namespace and the merged instructions from the backends now."""
        report = BuildReport()
        self.namespace = namespace(self.cfg, self.backends, report)
        for e in report.errors:
            if e.message not in {r.message for r in self.report.errors}:
                logger.warning("config: %s (serving the rest)", e.message)
        self.report = report
        if self.server is not None:
            self.server.instructions = merged_instructions(self.own_instructions, self.backends)
        return self.namespace

    def reconfigure(self, cfg: GatewayConfig) -> None:
        """Serve by ``cfg`` from now on (a reload): its page size, its backends' prefixes."""
        self.cfg = cfg
        self.page_size = cfg.toolgate.page_size
        self.refresh()

    # -- following the backends -------------------------------------------------------------
    async def changed(self, backend: Backend, kinds: frozenset[str]) -> None:
        """``Backend.on_primitives``: recompute now (the next request sees the new lists),
        then tell each legacy session whose prompts or resources list changed, in a task
        of its own (a slow client never holds up the backend's connection)."""
        before = self.namespace
        after = self.refresh()
        connections = self._connections()
        if connections is not None and kinds and not self._held:
            self._spawn(self._announce(backend.name, kinds, before, after, connections))

    async def _announce(
        self,
        name: str,
        kinds: frozenset[str],
        before: Namespace,
        after: Namespace,
        connections: LiveConnections,
    ) -> None:
        methods: dict[str, list[PrimitiveKind]] = {}
        for kind, spec in KINDS.items():
            if spec.listed in kinds:
                methods.setdefault(spec.list_changed, []).append(kind)
        for method, of in methods.items():

            async def differs(live: Live, of: list[PrimitiveKind] = of) -> bool:
                # definitions count, not only names (``Relayed`` compares without them)
                return any(
                    _listed(self.access.visible(live.facts, before.of(k)))
                    != _listed(self.access.visible(live.facts, after.of(k)))
                    for k in of
                )

            sent = await connections.notify(method, differs)
            if sent:
                logger.info("%s: %s sent to %d session(s)", name, method, sent)

    @contextlib.asynccontextmanager
    async def regrouping(self, reason: str) -> AsyncIterator[None]:
        """Around a change of what is listed and to whom (a reload: backends added and
        removed, the groups' ``prompts:`` / ``resources:`` patterns, the catalog whose
        groups and scopes admit them): afterwards each live connection (legacy session,
        listen stream) whose prompts or resources list differs from before is told once
        per list, and none other. A backend's list change during the body is told then.

        >>> async with relay.regrouping("the config reload"):   # doctest: +SKIP
        ...     relay.access.place(new_cfg)
        """
        connections = self._connections()
        if connections is None:
            yield
            return
        before = self._seen(connections)
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            self._recheck()
            after = self._seen(connections)
            for method in dict.fromkeys(spec.list_changed for spec in KINDS.values()):

                async def differs(live: Live, method: str = method) -> bool:
                    was, now = before.get(live.connection), after.get(live.connection)
                    # one that joined meanwhile listed the new lists already
                    return was is not None and now is not None and was[method] != now[method]

                sent = await connections.notify(method, differs)
                if sent:
                    logger.info("%s: %s sent to %d session(s)", reason, method, sent)

    def _seen(self, connections: LiveConnections) -> Seen:
        """What each live connection's prompts and resources lists show now."""
        seen: Seen = {}
        for live in connections:
            lists = seen[live.connection] = {}
            for kind, spec in KINDS.items():
                shown: list[tuple[str, Mapping[str, Any]]] | None
                try:
                    shown = _listed(self.access.visible(live.facts, self.namespace.of(kind)))
                except ToolgateError:  # a view naming a group that went: its list fails now
                    shown = None
                lists.setdefault(spec.list_changed, []).append(shown)
        return seen

    async def updated(self, backend: Backend, uri: str) -> None:
        """``Backend.on_updated``: pass ``notifications/resources/updated`` to the legacy
        sessions and the listen streams subscribed to ``uri`` through this backend that
        may read it now."""
        subscribers = self._readers(backend.name, uri)
        if subscribers:
            self._spawn(self._tell(subscribers, uri))

    def _live_facts(self) -> dict[Any, RequestFacts] | None:
        connections = self._connections()
        return None if connections is None else {c.connection: c.facts for c in connections}

    def _readers(
        self, name: str, uri: str, facts: Mapping[Any, RequestFacts] | None = None
    ) -> list[Any]:
        """The subscribers to ``uri`` through backend ``name`` that may read it now, by
        the facts their live connection has now (``facts``: those of every live one; a
        reload may have changed its principal's scope, or the groups); one without live
        facts is judged as it was when it joined."""
        subscribers = list(self._subscribers.get((name, uri), ()))
        facts = facts if facts is not None else self._live_facts()
        if not subscribers or facts is None:
            return subscribers
        item = self._serving(uri) or Relayed("resource", name, uri, uri, {"uri": uri})
        readers = []
        for member in subscribers:
            now = facts.get(member)
            try:
                if now is not None:
                    self.access.check(now, item)
            except ToolgateError:
                continue
            readers.append(member)
        return readers

    def _recheck(self) -> None:
        """Drop each subscription whose member may no longer read its URI (after a
        reload); a backend nobody listens to then is unsubscribed."""
        facts = self._live_facts()
        for (name, uri), subscribers in list(self._subscribers.items()):
            readers = {id(m) for m in self._readers(name, uri, facts)}
            left = [m for m in list(subscribers) if id(m) not in readers]
            subscribers.difference_update(left)
            if left and not subscribers:
                self._spawn(self._drop_if_unused(name, uri))

    async def _tell(self, connections: Sequence[Any], uri: str) -> None:
        for connection in connections:
            await connection.notify(RESOURCE_UPDATED, {"uri": uri})  # never raises

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- requests -------------------------------------------------------------------------
    async def _request_facts(self, ctx: Context) -> RequestFacts:
        if self._facts is None:
            raise RuntimeError("the relay is not installed")
        return await self._facts(ctx)

    def _page(
        self, facts: RequestFacts, kind: PrimitiveKind, params: mt.PaginatedRequestParams | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        cursor = cursor_of(params)
        try:
            items = self.access.visible(facts, self.namespace.of(kind))
            page = paginate(items, lambda r: r.name, cursor, self.page_size, KINDS[kind].listed)
        except ToolgateError as exc:
            _fail(exc)
        return [dict(r.wire) for r in page.items], page.next_cursor

    def _use(self, facts: RequestFacts, item: Relayed, asked: str | None = None) -> Backend:
        """The backend serving ``item`` when ``facts`` may use it. A resource refused is
        refused as one nobody has, so with ``asked``, the URI the client sent (the item
        may be the template it instantiates, which a refusal must not name)."""
        try:
            self.access.check(facts, item)
        except ResourceNotFound as exc:
            _fail(exc if asked is None else ResourceNotFound(asked))
        except ToolgateError as exc:
            _fail(exc)
        return self.backends[item.backend]

    async def list_prompts(
        self, ctx: Context, params: mt.PaginatedRequestParams | None
    ) -> mt.ListPromptsResult:
        items, cursor = self._page(await self._request_facts(ctx), "prompt", params)
        prompts = [mt.Prompt.model_validate(w) for w in items]
        return mt.ListPromptsResult(prompts=prompts, next_cursor=cursor)

    async def get_prompt(
        self, ctx: Context, params: mt.GetPromptRequestParams
    ) -> mt.GetPromptResult | mt.InputRequiredResult:
        facts = await self._request_facts(ctx)
        item = self.namespace.prompt(params.name)
        if item is None:
            _fail(PromptNotFound(params.name))
        return await self._use(facts, item).get_prompt(item.original, params.arguments)

    async def list_resources(
        self, ctx: Context, params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourcesResult:
        items, cursor = self._page(await self._request_facts(ctx), "resource", params)
        resources = [mt.Resource.model_validate(w) for w in items]
        return mt.ListResourcesResult(resources=resources, next_cursor=cursor)

    async def list_resource_templates(
        self, ctx: Context, params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourceTemplatesResult:
        items, cursor = self._page(await self._request_facts(ctx), "template", params)
        templates = [mt.ResourceTemplate.model_validate(w) for w in items]
        return mt.ListResourceTemplatesResult(resource_templates=templates, next_cursor=cursor)

    def _resource(self, uri: str) -> Relayed:
        """Who serves ``uri`` (``_serving``); ``ResourceNotFound`` when nobody does."""
        item = self._serving(uri)
        if item is None:
            _fail(ResourceNotFound(uri))
        return item

    def _serving(self, uri: str) -> Relayed | None:
        """Who serves ``uri``: its lister, else a matching template's backend, else the
        only backend that offers resources (servers may serve URIs they do not list)."""
        item = self.namespace.resource(uri)
        if item is not None:
            return item
        offering = [n for n, b in self.backends.items() if "resources" in b.declared()]
        if len(offering) == 1:
            return Relayed("resource", offering[0], uri, uri, {"uri": uri})
        return None

    async def read_resource(
        self, ctx: Context, params: mt.ReadResourceRequestParams
    ) -> mt.ReadResourceResult | mt.InputRequiredResult:
        facts = await self._request_facts(ctx)
        uri = str(params.uri)
        item = self._resource(uri)
        return await self._use(facts, item, uri).read_resource(uri)

    async def subscribe(self, ctx: Context, params: mt.SubscribeRequestParams) -> mt.EmptyResult:
        """Subscribe this session to ``uri``; the gateway subscribes once per backend."""
        facts = await self._request_facts(ctx)
        connection = connection_of(ctx)
        await self._join(facts, str(params.uri), connection)
        if connection not in self._watched:
            self._watched.add(connection)
            connection.exit_stack.callback(self._left, connection)
        return mt.EmptyResult()

    async def _join(self, facts: RequestFacts, uri: str, member: Any) -> None:
        """The one rule for who hears ``uri``'s updates: ``member`` (a legacy connection
        or a listen stream) joins its subscribers when ``facts`` may read it (else the
        access error is raised); the backend is subscribed for the first one. A member
        is recorded only once the backend's subscription stands: one that fails (raised
        to every member waiting to join) records none."""
        backend = self._use(facts, self._resource(uri), uri)
        key = (backend.name, uri)
        async with self._exclusive(key):
            subscribers = self._subscribers.get(key)
            if subscribers is not None and member in subscribers:
                return
            if not subscribers:
                await backend.subscribe(uri)
                subscribers = self._subscribers.setdefault(key, weakref.WeakSet())
            subscribers.add(member)

    @contextlib.asynccontextmanager
    async def _exclusive(self, key: tuple[str, str]) -> AsyncIterator[None]:
        """Hold ``key``'s lock; the lock is forgotten when nobody holds or awaits it."""
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users > 1:
                self._locks[key] = (lock, users - 1)
            else:
                del self._locks[key]

    async def listen(self, facts: RequestFacts, uris: Sequence[str], member: Any) -> list[str]:
        """Subscribe a 2026-07-28 listen stream to ``uris``: those it may read (as
        ``resources/subscribe`` decides); the others, unknown or not allowed alike, are
        left out. Returns the URIs subscribed; ``forget(member)`` when the stream ends."""
        joined: list[str] = []
        for uri in dict.fromkeys(uris):
            try:
                await self._join(facts, uri, member)
            except MCPError as exc:
                logger.debug("listen: %s left out: %s", uri, exc.error.message)
                continue
            joined.append(uri)
        return joined

    def forget(self, member: Any) -> None:
        """A listen stream ended: drop its subscriptions (as a closed session's)."""
        self._left(member)

    async def unsubscribe(
        self, ctx: Context, params: mt.UnsubscribeRequestParams
    ) -> mt.EmptyResult:
        await self._request_facts(ctx)
        uri = str(params.uri)
        connection = connection_of(ctx)
        for (name, subscribed), subscribers in list(self._subscribers.items()):
            if subscribed == uri and connection in subscribers:
                subscribers.discard(connection)
                await self._drop_if_unused(name, uri)
        return mt.EmptyResult()

    def _left(self, connection: Any) -> None:
        """A session closed: drop its subscriptions (the backend's, when it was the last)."""
        for (name, uri), subscribers in list(self._subscribers.items()):
            if connection in subscribers:
                subscribers.discard(connection)
                self._spawn(self._drop_if_unused(name, uri))

    async def _drop_if_unused(self, name: str, uri: str) -> None:
        """Unsubscribe the backend from ``uri`` once nobody listens (a member joining
        meanwhile waits, then subscribes it again)."""
        async with self._exclusive((name, uri)):
            subscribers = self._subscribers.get((name, uri))
            if subscribers is None or subscribers:
                return
            del self._subscribers[(name, uri)]
            try:
                await self.backends[name].unsubscribe(uri)
            except MCPError as exc:
                logger.debug("backend %s: unsubscribing %s failed: %s", name, uri, exc)

    async def complete(self, ctx: Context, params: mt.CompleteRequestParams) -> mt.CompleteResult:
        """Completion for a prompt's or a resource template's argument, by its owner."""
        facts = await self._request_facts(ctx)
        ref: mt.PromptReference | mt.ResourceTemplateReference
        asked: str | None = None  # a URI: refused as itself, never as its template
        if isinstance(params.ref, mt.PromptReference):
            item = self.namespace.prompt(params.ref.name)
            if item is None:
                _fail(PromptNotFound(params.ref.name))
            ref = mt.PromptReference(type="ref/prompt", name=item.original)
        else:
            uri = asked = params.ref.uri
            found = self.namespace.template(uri) or self.namespace.resource(uri)
            if found is None:
                _fail(ResourceNotFound(uri))
            item = found
            ref = mt.ResourceTemplateReference(type="ref/resource", uri=uri)
        backend = self._use(facts, item, asked)
        if backend.up and "completions" not in backend.capabilities:
            # the backend offers no completion: none, rather than its -32601
            return mt.CompleteResult(completion=mt.Completion(values=[]))
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = params.context.arguments if params.context is not None else None
        return await backend.complete(ref, argument, context)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()


def attach(relay: Relay, backends: Iterable[Backend]) -> None:
    """Have ``backends`` tell ``relay`` about list changes and resource updates."""
    for backend in backends:
        backend.on_primitives = relay.changed
        backend.on_updated = relay.updated


__all__ = ["FactsOf", "Relay", "attach"]
