"""``subscriptions/listen`` on 2026-07-28: ``Listen`` serves it with the SDK's
``ListenHandler`` (acknowledgement, stamping, the client's filter, backlog bound, graceful
close) and is its bus: each stream joins ``LiveConnections`` beside the legacy sessions and
its resource URIs the relay's subscribers, so one decision says who hears what on both
eras. Imports ``mcp``, the request kit and ``relay.primitives``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any

import mcp_types as mt
from mcp.server import Server
from mcp.server.subscriptions import ListenHandler, ServerEvent
from mcp.shared.subscriptions import event_from_wire

from toolgate.gateway.relay.primitives import FactsOf, Relay
from toolgate.request import Context, LiveConnections

logger = logging.getLogger("toolgate.gateway")

Deliver = Callable[[ServerEvent], None]


class Stream:
    """One open listen stream, notified as a legacy connection is: ``notify`` turns the
    method into the SDK's event and hands it to the stream's own filter."""

    def __init__(self) -> None:
        self.deliver: Deliver | None = None

    async def notify(self, method: str, params: Mapping[str, Any] | None) -> None:
        event = event_from_wire(method, params)
        if event is not None and self.deliver is not None:
            self.deliver(event)


# the stream whose listen request this task is serving, for ``Listen.subscribe``
_OPENING: ContextVar[Stream | None] = ContextVar("toolgate.listen_stream", default=None)


class Listen:
    """The ``subscriptions/listen`` handler, and the ``SubscriptionBus`` of the SDK's
    ``ListenHandler`` it runs.

    >>> listen = Listen(relay, facts=binding.facts, connections=lambda: binding.live)
    >>> listen.install(server)
    """

    def __init__(
        self,
        relay: Relay,
        *,
        facts: FactsOf,
        connections: Callable[[], LiveConnections | None],
        max_subscriptions: int = 1024,
    ) -> None:
        self.relay = relay
        self._facts = facts
        self._connections = connections
        self._streams: dict[object, Deliver] = {}
        self.handler = ListenHandler(self, max_subscriptions=max_subscriptions)

    def install(self, server: Server[Any]) -> None:
        """Serve ``subscriptions/listen`` on ``server`` (capabilities at 2026-07-28 then
        advertise ``listChanged`` and ``subscribe``)."""
        server.add_request_handler(
            "subscriptions/listen", mt.SubscriptionsListenRequestParams, self.__call__
        )

    async def __call__(
        self, ctx: Context, params: mt.SubscriptionsListenRequestParams
    ) -> mt.SubscriptionsListenResult:
        """One stream: its resource URIs are subscribed (those its caller may read; the
        acknowledgement names only them), then the SDK's handler serves it until the
        client goes or ``close``; the stream leaves everything it joined."""
        facts = await self._facts(ctx)
        connections = self._connections()
        if connections is None:
            raise RuntimeError("the gateway has not been built yet")
        stream = Stream()
        wanted = params.notifications
        token = _OPENING.set(stream)
        try:
            uris = await self.relay.listen(facts, wanted.resource_subscriptions or (), stream)
            notifications = wanted.model_copy(update={"resource_subscriptions": uris or None})
            connections.join(stream, facts)
            return await self.handler(
                ctx, params.model_copy(update={"notifications": notifications})
            )
        finally:
            _OPENING.reset(token)
            connections.leave(stream)
            self.relay.forget(stream)

    def close(self) -> None:
        """End every open stream gracefully (its client sees the final result)."""
        self.handler.close()

    # -- SubscriptionBus ------------------------------------------------------------------
    def subscribe(self, listener: Deliver) -> Callable[[], None]:
        """Called by ``ListenHandler`` in the task serving the request: the stream being
        opened gets its delivery callback (the handler's filter and buffer)."""
        stream = _OPENING.get()
        if stream is not None:
            stream.deliver = listener
        token = object()
        self._streams[token] = listener

        def unsubscribe() -> None:
            self._streams.pop(token, None)
            if stream is not None:
                stream.deliver = None

        return unsubscribe

    async def publish(self, event: ServerEvent) -> None:
        """Every open stream gets ``event`` (within its filter), whoever listens: for a
        change that concerns everyone. The gateway's own changes go through
        ``LiveConnections.notify``, which decides per stream."""
        for listener in list(self._streams.values()):
            listener(event)


__all__ = ["Listen", "Stream"]
