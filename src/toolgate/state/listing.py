"""``SessionListing``: a store that can also list its sessions, for operators.

The core needs only ``StateStore``'s primitives; the dashboard reads who is connected
(``SessionInfo`` records) and every live session's state through this narrower-purpose
interface, which the memory, SQLite and Redis stores implement. Imports only ``state.base``.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from toolgate.state.base import SessionState, StateStore


@dataclass(frozen=True)
class SessionInfo:
    """Who a session is and how it talks to us, for operators (the dashboard).

    Written by the serving edge next to the session's state, under the same key and
    idle expiry; the view never reads it. ``scope`` and ``trust`` are the principal's
    as resolved when the session was last seen; ``last_seen`` is the store's clock.
    ``client`` and ``client_version`` are what the client says it is (MCP
    ``clientInfo``), when it says so. Records written before those fields existed read
    back with them unset.
    """

    key: str
    principal: str
    trust: str | None = None
    agent_class: str | None = None
    scope: tuple[str, ...] = ("*",)
    protocol: str | None = None
    strategy: str | None = None
    transport: str = "mcp"
    first_seen: float = 0.0
    last_seen: float = 0.0
    client: str | None = None
    client_version: str | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                "key": self.key,
                "principal": self.principal,
                "trust": self.trust,
                "agent_class": self.agent_class,
                "scope": list(self.scope),
                "protocol": self.protocol,
                "strategy": self.strategy,
                "transport": self.transport,
                "first_seen": self.first_seen,
                "last_seen": self.last_seen,
                "client": self.client,
                "client_version": self.client_version,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> SessionInfo:
        data: dict[str, Any] = json.loads(text)
        return cls(
            key=str(data["key"]),
            principal=str(data["principal"]),
            trust=data.get("trust"),
            agent_class=data.get("agent_class"),
            scope=tuple(data.get("scope", ("*",))),
            protocol=data.get("protocol"),
            strategy=data.get("strategy"),
            transport=str(data.get("transport", "mcp")),
            first_seen=float(data.get("first_seen", 0.0)),
            last_seen=float(data.get("last_seen", 0.0)),
            client=data.get("client"),
            client_version=data.get("client_version"),
        )


class SessionListing(StateStore):
    """A ``StateStore`` that also lists its sessions and keeps a ``SessionInfo`` per
    session (the dashboard's reads; the view never calls these)."""

    @abstractmethod
    async def session_count(self) -> int:
        """How many sessions the store holds, idle ones included until they are swept
        or expire (for dashboards and benchmarks)."""
        ...

    @abstractmethod
    def sessions(self) -> AsyncIterator[tuple[str, SessionState]]:
        """Every live session's ``(key, state)``, idle ones excluded, in no set order
        (for dashboards: it reads the whole store)."""
        ...

    @abstractmethod
    async def put_info(self, info: SessionInfo) -> None:
        """Record ``info`` under ``info.key``; it expires like idle session state."""
        ...

    @abstractmethod
    def infos(self) -> AsyncIterator[SessionInfo]:
        """Every live session's last recorded ``SessionInfo``, in no set order."""
        ...
