"""How the gateway reaches one backend: ``BackendTransport``, chosen once per connection
from the backend's spec by ``supervision.TRANSPORTS``. A new transport is a spec model in
``config.servers.SERVER_SPECS``, a subclass of this in its own module (``stdio``, ``http``)
and one entry in ``TRANSPORTS``. Imports ``mcp`` (client side), the config's specs and
the backends' stateless form.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO, cast

import mcp_types as mt
from mcp import ClientSession
from mcp.shared.dispatcher import ProgressFnT

from toolgate import __version__
from toolgate.gateway.backends.stateless import Stateless
from toolgate.gateway.config.servers import ServerSpec

#: who the gateway is to its backends, in its sessions' initialize and stateless requests
CLIENT_INFO = mt.Implementation(name="toolgate-gateway", version=__version__)
CLIENT_INFO_WIRE = CLIENT_INFO.model_dump(by_alias=True, mode="json", exclude_none=True)
#: the MCP client session's read and write streams, as the SDK's transports give them
Streams = tuple[Any, Any]


class BackendTransport:
    """One connection's way to a backend. ``streams`` opens what the SDK's
    ``ClientSession`` runs on (every list, prompt, resource, completion and subscription
    goes through that session); ``call_tool`` sends a call, by default on the session
    too. A subclass overrides ``streams`` and what it does differently."""

    def __init__(
        self, name: str, spec: ServerSpec, *, base_dir: Path, errlog: TextIO | None
    ) -> None:
        self.name = name  # the backend's, for logs
        self.spec = spec
        self.base_dir = base_dir  # relative paths in the spec are relative to it
        self.errlog = errlog  # where a backend process's stderr goes (None: the log)

    def streams(self) -> contextlib.AbstractAsyncContextManager[Streams]:
        """Open the connection: the session's read and write streams while it lasts."""
        raise NotImplementedError

    async def started(self, session: ClientSession, timeout: float) -> None:
        """The session is initialized and listed: learn, within ``timeout``, what else
        the backend offers this transport. Nothing to learn by default."""

    async def call_tool(
        self,
        session: ClientSession,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        timeout: float,
        progress: ProgressFnT | None = None,
        meta: Mapping[str, Any] | None = None,
        stateless: Stateless | None = None,
    ) -> mt.CallToolResult:
        """Run ``tool`` within ``timeout`` seconds; the SDK cancels it when that passes
        (``REQUEST_TIMEOUT``). ``stateless`` comes from ``stateless_form``, so only a
        transport that makes one is given one. Raises ``SessionEnded`` when the backend
        no longer knows the session (nothing ran)."""
        return await session.call_tool(
            tool,
            dict(arguments),
            read_timeout_seconds=timeout,
            progress_callback=progress,
            meta=cast(mt.RequestParamsMeta, dict(meta)) if meta else None,
        )

    def stateless_form(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        level: mt.LoggingLevel | None,
        tools: tuple[dict[str, Any], ...],
    ) -> Stateless | None:
        """A call to ``tool`` (one of ``tools``, the backend's list) as a 2026-07-28
        request, if this transport sends such requests; by default it does not."""
        return None

    def failure(self, why: str) -> str:
        """Why the connection failed (``why``), with what the transport saw of it."""
        return why


__all__ = ["CLIENT_INFO", "CLIENT_INFO_WIRE", "BackendTransport", "Streams"]
