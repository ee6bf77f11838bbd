"""The ``io.modelcontextprotocol/groups`` extension on the MCP wire, for the SDK and FastMCP.

``GroupsEndpoint`` serves ``groups/list`` / ``groups/get`` from a ``Delivery``'s
``GroupsStrategy``, advertises the extension (also on the legacy protocol, whose
initialize result the SDK would strip) and sends ``notifications/groups/list_changed``.
A ``contents`` provider adds the prompts and resources a group holds to ``groups/get``
(the gateway's relayed ones). FastMCP's ``ServerExtension`` over the same endpoint is
``toolgate.fastmcp.groups``. Adapter layer: imports ``mcp``, never ``fastmcp`` (the
gateway serves the extension without loading FastMCP); the rules live in the strategy.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

import mcp_types as mt
from mcp.server.context import CallNext, HandlerResult
from mcp.server.extension import Extension
from mcp.server.extension import MethodBinding as SDKMethodBinding
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from toolgate.errors import ConfigError, ToolgateError
from toolgate.identity import IdentityFn, IdentityResolver
from toolgate.request import Context, Live, LiveConnections, RequestFacts, request_facts
from toolgate.sdk_internals import lowlevel_of
from toolgate.strategies import Delivery
from toolgate.strategies.base import GROUPS_EXTENSION, Request
from toolgate.strategies.groups import GROUPS_LIST_CHANGED, GroupsStrategy
from toolgate.wire import PageParams, cursor_of, mcp_error

SETTINGS: Mapping[str, Any] = {"listChanged": True}

FactsOf = Callable[[Context], Awaitable[RequestFacts]]
"""An adapter's own reading of a request (``Binding.facts``, ``ToolgateMiddleware.facts``)."""
Identity = IdentityResolver | IdentityFn | None


class GroupMember(Protocol):
    """A prompt, resource or resource template a group holds (the gateway's
    ``Relayed``): its kind, its exposed key and its wire definition."""

    @property
    def kind(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def wire(self) -> Mapping[str, Any]: ...


ContentsFor = Callable[
    [RequestFacts, str], Sequence[GroupMember] | Awaitable[Sequence[GroupMember]]
]
"""``(facts, group) -> members``: the prompts and resources ``group`` (its catalog name)
holds that this request may see, already filtered; ``groups/get`` adds them to its
``contents``. Without one (a server with no prompts or resources in groups) there are none."""

#: where each kind of member goes in ``groups/get``'s ``contents``, in MCP's list names
CONTENTS_KEYS: Mapping[str, str] = {
    "prompt": "prompts",
    "resource": "resources",
    "template": "resourceTemplates",
}


class ListGroupsParams(PageParams):
    """``groups/list`` params: ``cursor`` and ``_meta``."""


class GetGroupParams(mt.RequestParams):
    """``groups/get`` params: the group's wire ``name``, checked by the strategy rather
    than by the SDK (as ``PageParams`` does the cursor), so a client that sends a number
    or nothing hears about ``name``, not "Invalid request parameters"."""

    name: Any = None


def serves_groups(delivery: Delivery) -> bool:
    """Whether ``delivery``'s strategy gives a client that declares the extension
    ``groups`` once the extension is served (``auto``, ``groups``)."""
    return delivery.offers_groups


# -- the two methods -------------------------------------------------------------------
class GroupsEndpoint:
    """``groups/list`` and ``groups/get`` handlers over one ``Delivery``.

    >>> endpoint = bind_groups(server, delivery)   # FastMCP: toolgate.fastmcp.GroupsServerExtension
    """

    def __init__(
        self,
        delivery: Delivery,
        *,
        identity: Identity = None,
        facts: FactsOf | None = None,
        contents: ContentsFor | None = None,
    ) -> None:
        if not serves_groups(delivery):
            raise ConfigError(
                "The groups extension needs a Delivery whose strategy serves it "
                f"('auto' or 'groups'), not {delivery.config.strategy!r}",
                key="strategy",
            )
        strategy = delivery.strategies["groups"]
        assert isinstance(strategy, GroupsStrategy)
        delivery.groups_served = True  # declaring clients get groups: they can navigate
        self.delivery = delivery
        self.strategy = strategy
        self.identity = identity
        self.facts = facts or self._facts
        self.contents = contents
        #: connections that used ``groups/list``, told when theirs changes
        self.live = LiveConnections()
        delivery.toolset.catalog.on_change(lambda _: self.live.soon(self.flush))

    async def _facts(self, ctx: Context) -> RequestFacts:
        try:
            return await request_facts(ctx, self.identity)
        except ToolgateError as exc:
            raise mcp_error(exc) from exc

    async def _request(self, ctx: Context, method: str) -> tuple[RequestFacts, Request]:
        facts = await self.facts(ctx)
        strategy, request = facts.request(self.delivery)
        if request.toolsets and self.delivery.choose(request.protocol, request.extensions) is (
            self.strategy
        ):
            # a request that names toolsets is served a view of those groups, and is still
            # a request of a client that declared the extension: groups/* answer it
            strategy = self.strategy
        if strategy is not self.strategy:
            # the draft: no groups/* from a client that did not declare the extension;
            # its tools/list is flat, so a group's placement would be a lie to it
            raise MCPError(
                code=mt.METHOD_NOT_FOUND,
                message=f"Method not found: {method} (declare the {GROUPS_EXTENSION} "
                "extension in the client capabilities to use it)",
            )
        return facts, request

    async def list_groups(self, ctx: Context, params: ListGroupsParams) -> dict[str, Any]:
        facts, request = await self._request(ctx, "groups/list")
        try:
            result = self.strategy.groups_list(request, cursor_of(params))
        except ToolgateError as exc:
            raise mcp_error(exc) from exc
        live = self.live.remember(ctx, facts)
        if live is not None:
            live.shown["groups"] = self._fingerprint(live)
        return result

    async def get_group(self, ctx: Context, params: GetGroupParams) -> dict[str, Any]:
        facts, request = await self._request(ctx, "groups/get")
        try:
            result = await self.strategy.groups_get(request, params.name)
        except ToolgateError as exc:
            raise mcp_error(exc) from exc
        internal = self.strategy.resolve(params.name)
        if self.contents is not None and internal is not None:
            result["contents"] = await self._with_members(facts, internal, result["contents"])
        return result

    async def _with_members(
        self, facts: RequestFacts, group: str, contents: dict[str, Any]
    ) -> dict[str, Any]:
        """``contents`` plus the group's prompts, resources and templates, each list
        sorted by its key and present only when not empty (as ``instructions``)."""
        assert self.contents is not None
        found = self.contents(facts, group)
        members = await found if inspect.isawaitable(found) else found
        buckets: dict[str, list[GroupMember]] = {}
        for m in members:
            key = CONTENTS_KEYS.get(m.kind)
            if key is None:
                raise TypeError(f"groups/get: a group member of unknown kind {m.kind!r}")
            buckets.setdefault(key, []).append(m)
        out = {k: v for k, v in contents.items() if k != "groups"}
        for key in CONTENTS_KEYS.values():
            if key in buckets:
                out[key] = [dict(m.wire) for m in sorted(buckets[key], key=lambda m: m.name)]
        out["groups"] = contents["groups"]
        return out

    def _fingerprint(self, live: Live) -> str:
        principal = live.facts.principal or self.delivery.toolset.default_principal
        return self.strategy.fingerprint(principal, live.facts.extensions)

    async def flush(self) -> int:
        """Notify every connection whose groups/list changed; how many were."""

        async def changed(live: Live) -> bool:
            fingerprint = self._fingerprint(live)
            if live.shown.get("groups") in (None, fingerprint):
                return False
            live.shown["groups"] = fingerprint
            return True

        return await self.live.notify(GROUPS_LIST_CHANGED, changed)

    def method_table(self) -> list[tuple[str, type[BaseModel], Any]]:
        return [
            ("groups/list", ListGroupsParams, self.list_groups),
            ("groups/get", GetGroupParams, self.get_group),
        ]

    async def advertise_on_legacy(self, ctx: Context, call_next: CallNext) -> HandlerResult:
        """``ServerMiddleware``: put the extension into the legacy ``initialize``
        result's capabilities, which the SDK's per-version sieve removes."""
        result = await call_next(ctx)
        if ctx.method != "initialize":
            return result
        data = (
            result.model_dump(by_alias=True, exclude_none=True)
            if isinstance(result, BaseModel)
            else dict(result or {})
        )
        caps = dict(data.get("capabilities") or {})
        extensions = dict(caps.get("extensions") or {})
        extensions.setdefault(GROUPS_EXTENSION, dict(SETTINGS))
        caps["extensions"] = extensions
        data["capabilities"] = caps
        return data

    def install_advert(self, lowlevel: Any) -> None:
        """Put ``advertise_on_legacy`` first in an SDK ``Server``'s middleware, once."""
        middleware = lowlevel.middleware
        if not any(getattr(m, "__self__", None) is self for m in middleware):
            middleware.insert(0, self.advertise_on_legacy)


# -- the official SDK --------------------------------------------------------------------
def bind_groups(
    server: Any,
    delivery: Delivery,
    *,
    identity: Identity = None,
    facts: FactsOf | None = None,
    contents: ContentsFor | None = None,
) -> GroupsEndpoint:
    """Serve the extension on an SDK ``Server`` (lowlevel) or an ``MCPServer``.

    Registers ``groups/list`` and ``groups/get`` with ``add_request_handler``, sets
    ``server.extensions[...]`` and the legacy advertisement middleware. ``facts``: the
    adapter's own reading of a request (``toolgate.lowlevel.Binding.facts``), so groups
    see the principal and session tools see; else ``identity`` resolves the principal.
    ``contents``: the prompts and resources each group holds (``ContentsFor``).
    """
    lowlevel = lowlevel_of(server)
    endpoint = GroupsEndpoint(delivery, identity=identity, facts=facts, contents=contents)
    for method, params_type, handler in endpoint.method_table():
        lowlevel.add_request_handler(method, params_type, handler)
    lowlevel.extensions[GROUPS_EXTENSION] = dict(SETTINGS)
    endpoint.install_advert(lowlevel)
    return endpoint


class EndpointExtension:
    """What the extension is in any framework: its identifier and settings, and one
    ``GroupsEndpoint`` (the SDK's ``GroupsExtension`` and FastMCP's
    ``toolgate.fastmcp.GroupsServerExtension`` add their method bindings)."""

    identifier = GROUPS_EXTENSION

    def __init__(
        self,
        delivery: Delivery,
        *,
        identity: Identity = None,
        facts: FactsOf | None = None,
        contents: ContentsFor | None = None,
    ) -> None:
        self.endpoint = GroupsEndpoint(delivery, identity=identity, facts=facts, contents=contents)

    def settings(self) -> dict[str, Any]:
        return dict(SETTINGS)


class GroupsExtension(EndpointExtension, Extension):
    """The extension for ``MCPServer(extensions=[...])``.

    The SDK gives extensions no middleware hook: pass ``middleware=[ext.legacy_advert]``
    too, or legacy (2025-11-25) clients will not see the advertisement.
    """

    def __init__(
        self,
        delivery: Delivery,
        *,
        identity: Identity = None,
        facts: FactsOf | None = None,
        contents: ContentsFor | None = None,
    ) -> None:
        super().__init__(delivery, identity=identity, facts=facts, contents=contents)
        self.legacy_advert = self.endpoint.advertise_on_legacy

    def methods(self) -> list[SDKMethodBinding]:
        return [SDKMethodBinding(m, p, h) for m, p, h in self.endpoint.method_table()]
