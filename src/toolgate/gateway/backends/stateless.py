"""The 2026-07-28 stateless form of a call: the ``_meta`` envelope it carries and the
routing headers its tool's ``x-mcp-header`` annotations ask for, and how a stateless
result reads as a session's would. Sent by the HTTP transport (``http.HttpTransport``).
Imports ``mcp``'s header helpers and wire constants, nothing of the gateway.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as mt
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import (
    MCP_NAME_HEADER,
    encode_header_value,
    find_invalid_x_mcp_header,
    mcp_param_headers,
    x_mcp_header_map,
)
from mcp_types.version import LATEST_MODERN_VERSION

#: the arguments (by property path) a tool's ``x-mcp-header`` annotations mirror in
#: ``Mcp-Param-*`` headers, each with its header's token
HeaderParams = Mapping[tuple[str, ...], str]


def envelope(client_info: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``_meta`` envelope of the gateway's 2026-07-28 requests: the version, and no
    client capabilities (such a request can be asked nothing)."""
    found: dict[str, Any] = {
        mt.PROTOCOL_VERSION_META_KEY: LATEST_MODERN_VERSION,
        mt.CLIENT_CAPABILITIES_META_KEY: {},
    }
    if client_info is not None:
        found[mt.CLIENT_INFO_META_KEY] = dict(client_info)
    return found


@dataclass(frozen=True)
class Stateless:
    """A call sent as a 2026-07-28 request: the ``_meta`` envelope it carries (the
    gateway's client info, no capabilities, the log level wanted) and its routing
    headers (``Mcp-Name`` and the ``Mcp-Param-*`` its tool's schema asks for)."""

    envelope: Mapping[str, Any]
    headers: Mapping[str, str]

    @classmethod
    def of(
        cls,
        tool: str,
        params: HeaderParams,
        arguments: Mapping[str, Any],
        client_info: Mapping[str, Any],
        level: str | None,
    ) -> Stateless:
        """The stateless form of a call to ``tool``, whose arguments at ``params``
        (``header_params``) travel as headers too."""
        meta = envelope(client_info)
        if level is not None:
            meta[mt.LOG_LEVEL_META_KEY] = level
        headers = {MCP_NAME_HEADER: encode_header_value(tool)}
        if params:
            headers.update(mcp_param_headers(params, arguments))
        return cls(meta, headers)


def header_params(input_schema: Any) -> HeaderParams | None:
    """What of a tool's arguments a 2026-07-28 request mirrors in headers, or ``None``
    when its ``x-mcp-header`` annotations are invalid (a 2026-07-28 client would not
    call it: such a call stays on the session)."""
    if find_invalid_x_mcp_header(input_schema) is not None:
        return None
    return x_mcp_header_map(input_schema)


def completed(result: dict[str, Any]) -> dict[str, Any]:
    """A stateless request's result as the session would have it: a backend that asks
    for input (``input_required``) asks a client that declared nothing to answer with,
    which is the backend's error; the server info it stamps on the result is its own
    envelope's, not the result's."""
    if result.get("resultType", "complete") != "complete":
        asked = ", ".join(sorted(result.get("inputRequests") or {}))
        raise MCPError(
            code=mt.INTERNAL_ERROR,
            message=f"The backend asked for input ({asked or result.get('resultType')}) "
            "that the client of this call declared no capability to give.",
        )
    meta = result.get("_meta")
    if not (isinstance(meta, dict) and mt.SERVER_INFO_META_KEY in meta):
        return result
    kept = {k: v for k, v in result.items() if k != "_meta"}
    rest = {k: v for k, v in meta.items() if k != mt.SERVER_INFO_META_KEY}
    if rest:
        kept["_meta"] = rest
    return kept


__all__ = ["HeaderParams", "Stateless", "completed", "envelope", "header_params"]
