"""The MCP wire, shared by every adapter: types in, errors out, in one place.

Maps toolgate's plain-dict definitions and ``ToolResult`` to ``mcp_types`` models,
``ToolgateError`` to the JSON-RPC error or error result a client must see, and
reads per-request facts (protocol, declared extensions, elicitation). Adapter layer:
the only shared module that imports ``mcp``.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import mcp_types as mt
from mcp.server.auth.provider import AccessToken
from mcp.shared.exceptions import MCPError

from toolgate.catalog import ToolResult
from toolgate.errors import (
    ConfigError,
    GroupNotFound,
    InvalidCursor,
    StoreUnavailable,
    ToolgateError,
    ToolNotFound,
)
from toolgate.policy import ConfirmRequest, Principal

RESOURCE_NOT_FOUND = -32002  # the groups extension's "not found" code, as for resources


class Unauthenticated(ToolgateError):
    """An HTTP request without a known bearer token, where one is required."""

    code = "unauthenticated"


#: Errors a client sees as JSON-RPC errors; every other ToolgateError is an error result
#: the model can read (hints, rate limits, refusals, describe-first).
JSONRPC_ERRORS: dict[type[ToolgateError], int] = {
    ToolNotFound: mt.INVALID_PARAMS,
    InvalidCursor: mt.INVALID_PARAMS,
    GroupNotFound: RESOURCE_NOT_FOUND,
    StoreUnavailable: mt.INTERNAL_ERROR,
    Unauthenticated: mt.INVALID_REQUEST,
}


def mcp_error(exc: ToolgateError) -> MCPError | None:
    """The JSON-RPC error for ``exc``, or None when it should be an error result."""
    for cls, code in JSONRPC_ERRORS.items():
        if isinstance(exc, cls):
            if isinstance(exc, ToolNotFound):
                return MCPError(code=code, message=exc.message)
            data = {"code": exc.code, **exc.details}
            if isinstance(exc, StoreUnavailable):
                data["retryable"] = True
            return MCPError(code=code, message=exc.message, data=data)
    return None


def error_as_result(exc: ToolgateError) -> ToolResult:
    """A ToolgateError as a structured error result the model can act on."""
    data = {"error": exc.message, "code": exc.code, **exc.details}
    text = json.dumps(data, ensure_ascii=False, default=str)
    return ToolResult(content=({"type": "text", "text": text},), structured=data, is_error=True)


def raise_or_result(exc: ToolgateError) -> ToolResult:
    """Raise the JSON-RPC error for ``exc``, or return its error result."""
    err = mcp_error(exc)
    if err is not None:
        raise err from exc
    return error_as_result(exc)


def call_result(result: ToolResult) -> mt.CallToolResult:
    return mt.CallToolResult(
        content=[content_block(c) for c in result.content],
        structured_content=dict(result.structured) if result.structured is not None else None,
        is_error=result.is_error,
    )


def content_block(block: Mapping[str, Any]) -> Any:
    """One MCP content block (text, image, audio, resource link, embedded resource)."""
    kind = block.get("type")
    models: dict[str, Any] = {
        "text": mt.TextContent,
        "image": mt.ImageContent,
        "audio": mt.AudioContent,
        "resource_link": mt.ResourceLink,
        "resource": mt.EmbeddedResource,
    }
    model = models.get(str(kind))
    if model is None:
        return mt.TextContent(type="text", text=json.dumps(dict(block), default=str))
    return model.model_validate(dict(block))


def result_from_mcp(result: mt.CallToolResult) -> ToolResult:
    """An MCP call result (a backend's, a framework's) as a ToolResult."""
    content = tuple(c.model_dump(by_alias=True, exclude_none=True) for c in result.content)
    return ToolResult(
        content=content,
        structured=result.structured_content,
        is_error=bool(result.is_error),
    )


def tool_model(wire: Mapping[str, Any]) -> mt.Tool:
    return mt.Tool.model_validate(dict(wire))


def tool_models(wires: Iterable[Mapping[str, Any]]) -> list[mt.Tool]:
    return [tool_model(w) for w in wires]


def tool_wire(tool: mt.Tool) -> dict[str, Any]:
    """An MCP Tool as toolgate's plain wire dict (camelCase keys, no Nones)."""
    data: dict[str, Any] = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    return data


def declared_extensions(capabilities: mt.ClientCapabilities | None) -> frozenset[str]:
    """Extension identifiers a client declared (initialize capabilities, or the
    per-request ``_meta`` capabilities that the SDK folds into the same object)."""
    if capabilities is None:
        return frozenset()
    extensions = getattr(capabilities, "extensions", None) or {}
    return frozenset(extensions)


def extensions_from_meta(meta: Mapping[str, Any] | None) -> frozenset[str]:
    """Extensions declared in a request's ``_meta`` client capabilities (2026-07-28)."""
    if not meta:
        return frozenset()
    caps = meta.get(mt.CLIENT_CAPABILITIES_META_KEY) or {}
    if not isinstance(caps, Mapping):
        return frozenset()
    extensions = caps.get("extensions") or {}
    return frozenset(extensions) if isinstance(extensions, Mapping) else frozenset()


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


# -- identity: who is asking, from the transport (never from tool arguments) ------------


@dataclass(frozen=True)
class Caller:
    """What an identity resolver may read about a request: how it arrived and, over
    HTTP, its headers (lower-case names). ``transport`` is ``"http"`` or ``"local"``
    (stdio, in-memory)."""

    transport: str = "local"
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def bearer_token(self) -> str | None:
        value = self.headers.get("authorization", "")
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer":
            return None
        return token.strip() or None


class IdentityResolver:
    """Maps a request to a ``Principal``. Override ``resolve``; ``None`` means the
    toolset's default principal (the configured identity for stdio)."""

    async def resolve(self, caller: Caller) -> Principal | None:
        return None


IdentityFn = Callable[[Caller], "Principal | Awaitable[Principal | None] | None"]


async def resolve_principal(
    identity: IdentityResolver | IdentityFn | None, caller: Caller
) -> Principal | None:
    """Run a resolver object or a plain (sync or async) callable."""
    if identity is None:
        return None
    if isinstance(identity, IdentityResolver):
        return await identity.resolve(caller)
    found = identity(caller)
    return await found if inspect.isawaitable(found) else found


_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


class BearerTokens(IdentityResolver):
    """Bearer tokens matched by their SHA-256, so configuration never holds a token.

    >>> BearerTokens({hashlib.sha256(b"s3cret").hexdigest(): Principal(id="ci")})

    Over HTTP a known token gives its principal (marked authenticated); an unknown
    token is refused, and so is a missing one unless ``anonymous`` is given. Local
    transports get the default principal. Also an SDK ``TokenVerifier``, so the
    HTTP layer can answer 401 before MCP runs.
    """

    def __init__(
        self, tokens: Mapping[str, Principal], *, anonymous: Principal | None = None
    ) -> None:
        for digest in tokens:
            if not _SHA256_HEX.match(digest):
                raise ConfigError(
                    "bearer tokens are configured by the lower-case hex SHA-256 of the "
                    f"token, not the token itself; got a key of length {len(digest)}",
                    key="identity.tokens",
                )
        self.tokens = {d: replace(p, authenticated=True) for d, p in tokens.items()}
        self.anonymous = anonymous

    @staticmethod
    def digest(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    def principal_for(self, token: str) -> Principal | None:
        return self.tokens.get(self.digest(token))

    async def resolve(self, caller: Caller) -> Principal | None:
        if caller.transport != "http":
            return None
        token = caller.bearer_token
        if token is None:
            if self.anonymous is not None:
                return self.anonymous
            raise Unauthenticated("Unauthorized: this server requires a bearer token")
        principal = self.principal_for(token)
        if principal is None:
            raise Unauthenticated("Unauthorized: unknown bearer token")
        return principal

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK ``TokenVerifier`` protocol (``streamable_http_app(token_verifier=...)``)."""
        principal = self.principal_for(token)
        if principal is None:
            return None
        return AccessToken(token=self.digest(token), client_id=principal.id, scopes=[])
