"""FastMCP's private names that toolgate reads, in one place and nowhere else.

The SDK request context behind FastMCP's own, a server's extension registry, the SDK
server inside a ``FastMCP``, where a mounted server's tool comes from, and the two
methods through which a server's own components are added and removed.
``tests/test_sdk_internals.py`` checks each on live objects and fails naming FastMCP's
version and the missing name. Adapter layer: imports nothing
of FastMCP at run time; it reads attributes of the objects it is handed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: the private attributes read below, as ``owner.attribute``
PRIVATE_ATTRIBUTES = (
    "RequestContext._srctx",
    "FastMCP._extensions",
    "FastMCP._auto_extensions",
    "FastMCP._mcp_server",
    "FastMCPProviderTool._server",
    "FastMCPProviderTool._original_name",
    "LocalProvider._add_component",
    "LocalProvider._remove_component",
)


def sdk_context(request_context: Any) -> Any:
    """The SDK's ``ServerRequestContext`` behind FastMCP's request context."""
    return request_context._srctx


def has_foreign_extension(server: Any, name: str) -> bool:
    """Whether a FastMCP server already has an extension ``name`` that it did not add
    by itself."""
    return name in server._extensions and name not in server._auto_extensions


def sdk_server(server: Any) -> Any:
    """The SDK's low-level ``Server`` inside a ``FastMCP`` server."""
    return server._mcp_server


def mounted_origin(tool: Any) -> tuple[Any, str]:
    """The mounted server and the tool's name there, for a ``FastMCPProviderTool`` (a
    tool a server mounted with ``mount()`` lends its parent, under its parent's name)."""
    return tool._server, tool._original_name


def watch_components(provider: Any, changed: Callable[[], None]) -> None:
    """Call ``changed`` after every component a server's ``LocalProvider`` adds or
    removes (``@mcp.tool``, ``add_tool``, ``remove_tool``, …): FastMCP has no public
    hook for it, so its two storage methods are wrapped on that one provider."""
    for method in ("_add_component", "_remove_component"):
        original = getattr(provider, method)

        def watched(*args: Any, _original: Any = original) -> Any:
            result = _original(*args)
            changed()
            return result

        setattr(provider, method, watched)


__all__ = [
    "PRIVATE_ATTRIBUTES",
    "has_foreign_extension",
    "mounted_origin",
    "sdk_context",
    "sdk_server",
    "watch_components",
]
