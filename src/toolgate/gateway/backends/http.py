"""The streamable-HTTP transport: the SDK's client session on a pooled ``httpx2`` client
(``http_client``), and its calls by hand on that session (``http_calls``), or as 2026-07-28
stateless requests when the backend serves them, unless a proxy applies to the backend.
Imports ``mcp``'s streamable-HTTP client and the backends' HTTP modules.
"""

from __future__ import annotations

import contextlib
import logging
import urllib.request
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import mcp_types as mt
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT

from toolgate.gateway.backends.http_calls import HttpCalls
from toolgate.gateway.backends.http_client import SessionSeen, backend_http_client
from toolgate.gateway.backends.stateless import HeaderParams, Stateless, header_params
from toolgate.gateway.backends.transport import CLIENT_INFO_WIRE, BackendTransport, Streams
from toolgate.gateway.config.servers import HttpServer

logger = logging.getLogger("toolgate.gateway")


def usable(url: str) -> bool:
    """Whether the gateway may reach ``url`` by hand: http(s), and no proxy applies to it
    (the SDK's client takes the proxy; its calls are left to that client)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    proxies = urllib.request.getproxies()
    if not proxies.get(parts.scheme) and not proxies.get("all"):
        return True
    return bool(urllib.request.proxy_bypass(parts.hostname))


class HttpTransport(BackendTransport):
    """One connection to a streamable-HTTP backend. How its calls go is decided once, as
    it connects: by hand (``direct``) when no proxy applies and the backend gave the
    session an id, else through the SDK's session like everything else."""

    spec: HttpServer

    def __init__(
        self, name: str, spec: HttpServer, *, base_dir: Path, errlog: TextIO | None
    ) -> None:
        super().__init__(name, spec, base_dir=base_dir, errlog=errlog)
        self.seen = SessionSeen()
        #: the calls' way by hand, while it may be the way (``started`` settles it)
        self.direct = HttpCalls(spec.url, spec.headers, self.seen) if usable(spec.url) else None
        self.stateless = False  # the backend serves 2026-07-28 requests too (``started``)
        # each tool's header params (``stateless_form``), and the tool list they were read from
        self._params: dict[str, HeaderParams | None] = {}
        self._params_of: tuple[dict[str, Any], ...] | None = None

    @contextlib.asynccontextmanager
    async def streams(self) -> AsyncIterator[Streams]:
        try:
            async with (
                backend_http_client(self.spec.headers, self.seen) as http,
                streamable_http_client(self.spec.url, http_client=http) as streams,
            ):
                yield streams[0], streams[1]
        finally:
            if self.direct is not None:
                await self.direct.close()

    async def started(self, session: ClientSession, timeout: float) -> None:
        """Settle how calls go: by hand only on a session the backend gave an id (the
        SDK's client initialized it); and learn whether the backend serves 2026-07-28."""
        if self.direct is not None and not self.direct.ready:
            await self.direct.close()
            self.direct = None
        if self.direct is not None:
            self.stateless = await self.direct.discover(session, timeout)

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
        if self.direct is None:
            return await super().call_tool(
                session, tool, arguments, timeout=timeout, progress=progress, meta=meta
            )
        return await self.direct.call_tool(
            session,
            tool,
            arguments,
            timeout=timeout,
            progress=progress,
            meta=meta,
            stateless=stateless,
        )

    def stateless_form(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        level: mt.LoggingLevel | None,
        tools: tuple[dict[str, Any], ...],
    ) -> Stateless | None:
        """The 2026-07-28 form of a call to ``tool`` (log messages from ``level`` on), if
        the backend serves that protocol and lists the tool with valid header params."""
        if self.direct is None or not self.stateless:
            return None
        if self._params_of is not tools:  # read once per tool list
            self._params = {str(t["name"]): header_params(t.get("inputSchema")) for t in tools}
            self._params_of = tools
        params = self._params.get(tool)
        if params is None:
            return None
        return Stateless.of(tool, params, arguments, CLIENT_INFO_WIRE, level)


__all__ = ["HttpTransport", "usable"]
