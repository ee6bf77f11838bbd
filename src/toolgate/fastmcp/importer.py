"""FastMCP's own tools in a toolgate catalog: ``FastMCPTools`` imports them and keeps
them in step (adds, changes, removals), and converts results both ways.

A tool declared with ``@mcp.tool`` joins the catalog with its groups (``@in_group``
marks, the middleware's ``tool_groups``, tags naming registered groups) and still runs
through FastMCP. Adapter layer: imports ``fastmcp``, ``mcp``, ``toolgate.wire`` and below.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as mt
from fastmcp.exceptions import DisabledError, FastMCPError, NotFoundError
from fastmcp.server.middleware.dereference import DereferenceRefsMiddleware
from fastmcp.server.providers.fastmcp_provider import FastMCPProviderTool
from fastmcp.server.transforms.visibility import is_enabled
from fastmcp.tools.base import InputRequiredToolResult
from fastmcp.tools.base import Tool as FastMCPTool
from fastmcp.tools.base import ToolResult as FastMCPResult
from fastmcp.tools.tool_transform import TransformedTool
from fastmcp.utilities.json_schema import dereference_refs
from fastmcp.utilities.versions import VersionSpec, version_sort_key

from toolgate.catalog import ALWAYS, BY_GROUP, CallContext, Tool, ToolResult, Visibility
from toolgate.declare import GROUPS_MARK, TOOL_MARK, ToolOptions
from toolgate.errors import ConfigError, RegistrationError, described
from toolgate.fastmcp_internals import mounted_origin, watch_components
from toolgate.policy import DEFAULT_POLICY
from toolgate.toolset import ToolSet
from toolgate.wire import (
    RAW_RESULT,
    RawResult,
    call_result,
    keep_input_required,
    result_from_mcp,
    tool_wire,
)

if TYPE_CHECKING:
    from fastmcp import FastMCP

logger = logging.getLogger("toolgate.fastmcp")

#: the FastMCP tool a catalog call (``call_tool``) is running through FastMCP's
#: middleware: the ToolgateMiddleware in that chain lets it through, checked once
_RUNNING: ContextVar[str | None] = ContextVar("toolgate.fastmcp.running", default=None)


def running(name: str) -> bool:
    """Whether ``name`` is the tool a call toolgate admitted is running through FastMCP."""
    return _RUNNING.get() == name


def checked_tool_groups(value: Any) -> dict[str, tuple[str, ...]]:
    """The middleware's ``tool_groups`` (FastMCP tool name -> group names), refused when
    it is of the wrong kind: a string where the list belongs would be read as one group
    per character."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"tool_groups must map tool names to lists of group names, got {described(value)}",
            key="tool_groups",
        )
    out: dict[str, tuple[str, ...]] = {}
    for name, groups in value.items():
        if not isinstance(name, str):
            raise ConfigError(
                f"tool_groups keys must be tool names, got {described(name)}", key="tool_groups"
            )
        if isinstance(groups, str):
            raise ConfigError(
                f"tool_groups[{name!r}] must be a list of group names, like [{groups!r}], "
                f"not the string {groups!r}",
                key="tool_groups",
            )
        if not isinstance(groups, Sequence | set | frozenset) or not all(
            isinstance(g, str) for g in groups
        ):
            raise ConfigError(
                f"tool_groups[{name!r}] must be a list of group names, got {described(groups)}",
                key="tool_groups",
            )
        out[name] = tuple(groups)
    return out


def to_fastmcp_result(result: ToolResult) -> FastMCPResult:
    """A toolgate result as the FastMCP ``ToolResult`` a middleware returns."""
    return FastMCPResult.from_mcp_result(call_result(result))


def from_fastmcp_result(result: FastMCPResult) -> ToolResult:
    raw = result.to_mcp_result()
    if isinstance(raw, mt.CallToolResult):
        return result_from_mcp(raw)
    return result_from_mcp(
        mt.CallToolResult(
            content=list(result.content),
            structured_content=result.structured_content,
            is_error=result.is_error,
        )
    )


async def run_fastmcp(
    call: Awaitable[FastMCPResult], name: str, extras: Mapping[str, Any]
) -> ToolResult:
    """FastMCP's run of its tool ``name`` as a toolgate result. A failure FastMCP shows
    the client (``ToolError``, an exception it masked) becomes the error result FastMCP
    itself sends, word for word; what FastMCP returned is kept in the call's
    ``RawResult`` (``extras``), so the client gets it untouched, an ``input_required``
    leg included."""
    try:
        raw = await call
    except (DisabledError, NotFoundError):
        return ToolResult.error(f"Unknown tool: {name!r}")  # FastMCP's words for it
    except FastMCPError as exc:
        return ToolResult.error(str(exc))
    if isinstance(raw, InputRequiredToolResult):
        return keep_input_required(extras, name, raw)
    result = from_fastmcp_result(raw)
    holder = extras.get(RAW_RESULT)
    return holder.keep(raw, result) if isinstance(holder, RawResult) else result


async def marked_function(tool: FastMCPTool) -> Any:
    """The function whose toolgate marks (``@in_group``, ``@tool(...)``) a FastMCP tool
    carries: its own, else, as FastMCP carries tags, its origin's: through a
    transformation (``Tool.from_tool``, a ``ToolTransform``) the tool it was made from,
    through ``mount()`` the mounted server's tool. None when no function on the way is
    marked (a proxied server's tools: their groups come from tags or ``tool_groups``)."""
    from fastmcp import FastMCP  # the importer's module is imported by fastmcp's users

    seen: set[int] = set()
    at: FastMCPTool | None = tool
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        fn = getattr(at, "fn", None)
        if fn is not None and (hasattr(fn, GROUPS_MARK) or hasattr(fn, TOOL_MARK)):
            return fn
        if isinstance(at, TransformedTool):
            at = at.parent_tool
        elif isinstance(at, FastMCPProviderTool):
            server, name = mounted_origin(at)
            version = VersionSpec(eq=at.version) if at.version else None
            # as ``registered`` reads the parent: providers and transforms, no session
            at = await super(FastMCP, server).get_tool(name, version)
        else:
            return None
    return None


def dereferences(server: FastMCP[Any]) -> bool:
    """Whether ``server`` lists its tools with their schemas' ``$ref`` inlined (FastMCP's
    default, ``dereference_schemas=True``: some clients read no ``$ref``)."""
    return any(isinstance(m, DereferenceRefsMiddleware) for m in server.middleware)


def dereferenced(wire: Mapping[str, Any]) -> dict[str, Any]:
    """``wire`` with the ``$ref`` of its input and output schemas inlined, as FastMCP's
    ``DereferenceRefsMiddleware`` lists a tool."""
    out = dict(wire)
    for key in ("inputSchema", "outputSchema"):
        schema = out.get(key)
        if isinstance(schema, Mapping) and '"$ref"' in json.dumps(schema):
            out[key] = dereference_refs(dict(schema))
    return out


@dataclass
class _Imported:
    tool: Tool
    signature: str


def _signature(tool: Tool) -> str:
    """What a re-import compares: the tool's wire definition and its groups."""
    return json.dumps([tool.wire(), tool.groups], sort_keys=True, default=str)


class FastMCPTools:
    """The tools a FastMCP server registered, as catalog tools of ``toolset``.

    ``prepare`` runs at the start of every import (``GroupsMiddleware`` registers its
    handlers there). Re-imports when FastMCP's local tools change."""

    def __init__(
        self,
        toolset: ToolSet,
        tool_groups: Mapping[str, Sequence[str]],
        prepare: Callable[[], Awaitable[None]],
    ) -> None:
        self.toolset = toolset
        self.tool_groups = tool_groups
        self.prepare = prepare
        self.server: FastMCP[Any] | None = None
        self._imported: dict[str, _Imported] = {}
        self._dirty = True
        self._lock: asyncio.Lock | None = None
        self._syncing = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._unmatched: set[str] = set()  # tool_groups names already warned of
        self._refused: set[tuple[str, str]] = set()  # refused definitions already logged
        #: imported tools FastMCP authorizes per request (``@mcp.tool(auth=...)``)
        self.guarded: frozenset[str] = frozenset()

    def bind(self, server: FastMCP[Any]) -> None:
        """Follow ``server``: ``@mcp.tool`` / ``remove_tool`` mark the import stale."""
        self.server = server
        watch_components(server.local_provider, self._mark_dirty)

    def owns(self, name: str) -> bool:
        """Whether the catalog's ``name`` is the FastMCP tool imported under that name."""
        imported = self._imported.get(name)
        return imported is not None and self.toolset.catalog.tool(name) is imported.tool

    def _mark_dirty(self) -> None:
        if self._syncing:
            return  # the import under way reads FastMCP's tools after this change
        self._dirty = True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # registration before serving: imported at the first request
        task = loop.create_task(self.sync(strict=False))
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        """A background import's end: its failure is logged, never lost (the next
        request imports again)."""
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            logger.error(
                "toolgate: importing FastMCP's tools after a run-time change failed: %s",
                exc,
                exc_info=exc,
            )

    async def registered(self) -> dict[str, FastMCPTool]:
        """FastMCP's tools as the server defines them: providers and server transforms,
        enabled, highest version; no per-session visibility or per-token auth."""
        from fastmcp import FastMCP as _FastMCP

        assert self.server is not None
        listed = await super(_FastMCP, self.server).list_tools()
        best: dict[str, FastMCPTool] = {}
        for t in listed:
            if not is_enabled(t):
                continue
            have = best.get(t.name)
            if have is None or version_sort_key(t) > version_sort_key(have):
                best[t.name] = t
        return best

    def _groups_for(self, fm: FastMCPTool, fn: Any, opts: ToolOptions | None) -> tuple[str, ...]:
        marks: tuple[str, ...] = getattr(fn, GROUPS_MARK, ()) if fn is not None else ()
        known = self.toolset.catalog.groups
        tags = tuple(sorted(t for t in (fm.tags or ()) if t in known))
        return tuple(
            dict.fromkeys(
                (*(opts.groups if opts else ()), *marks, *self.tool_groups.get(fm.name, ()), *tags)
            )
        )

    def _import_one(self, fm: FastMCPTool, fn: Any) -> Tool:
        """``fm`` as a catalog tool, with the marks of ``fn`` (``marked_function``)."""
        server = self.server
        assert server is not None
        opts: ToolOptions | None = getattr(fn, TOOL_MARK, None) if fn is not None else None
        name = fm.name

        async def run(arguments: Mapping[str, Any], ctx: CallContext) -> ToolResult:
            # the call_tool dispatcher's path: FastMCP runs the tool through its
            # middleware, as a direct call would (the server's own middleware sees it)
            token = _RUNNING.set(name)
            try:
                call = server.call_tool(name, dict(arguments))
                return await run_fastmcp(call, name, ctx.extras)
            finally:
                _RUNNING.reset(token)

        visibility: Visibility = BY_GROUP
        if opts is not None:
            visibility = opts.visibility or (ALWAYS if opts.always else BY_GROUP)
        wire = tool_wire(fm.to_mcp_tool(name=name))
        return Tool.from_wire(
            dereferenced(wire) if dereferences(server) else wire,
            run,
            summary=opts.summary if opts else None,
            groups=self._groups_for(fm, fn, opts),
            visibility=visibility,
            policy=opts.policy if opts else DEFAULT_POLICY,
            stages=frozenset(opts.stages) if opts and opts.stages is not None else None,
            next_stage=opts.next_stage if opts else None,
            doc=opts.doc if opts else None,
            source="fastmcp",
            lax_arguments=True,  # FastMCP validates with pydantic, in its lax mode
        )

    async def sync(self, *, strict: bool = True) -> None:
        """Import FastMCP's registered tools into the toolset (adds, changes, removals).

        A tool the catalog refuses (its name collides with a toolgate tool or a
        meta-tool, ...) is left out and logged as an error naming it; the others are
        imported. ``strict`` (an explicit ``sync()``): then raise the first refusal's
        ``RegistrationError``. A failed import is tried again at the next request."""
        if self.server is None:
            raise RegistrationError("attach() the middleware to a FastMCP server first")
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            self._dirty = False
            self._syncing = True
            try:
                refused = await self._import()
            except BaseException:
                self._dirty = True
                raise
            finally:
                self._syncing = False
        if strict and refused:
            raise refused[0]

    async def ready(self) -> None:
        """Import now if FastMCP's tools changed since the last import."""
        if self._dirty:
            await self.sync(strict=False)

    async def _import(self) -> list[RegistrationError | ConfigError]:
        """Import and return the refusals (each logged). Additions and changes first;
        only then are the tools FastMCP no longer has removed."""
        await self.prepare()
        found = await self.registered()
        catalog = self.toolset.catalog
        refused: list[RegistrationError | ConfigError] = []
        fresh: list[Tool] = []
        for name, fm in found.items():
            fn = await marked_function(fm)
            tool = self._import_one(fm, fn)
            if name in self._imported:
                if self._imported[name].signature == _signature(tool):
                    continue
            elif catalog.tool(name) is not None:
                refused.append(
                    self._refuse(
                        tool,
                        RegistrationError(
                            f"FastMCP tool {name!r} collides with a toolgate tool of the same name",
                            name=name,
                        ),
                    )
                )
                continue
            fresh.append(tool)
        self.guarded = frozenset(n for n, fm in found.items() if fm.auth is not None)
        refused += self._add(fresh)
        for name in [n for n in self._imported if n not in found]:
            if catalog.tool(name) is self._imported[name].tool:
                self.toolset.remove_tool(name)
            del self._imported[name]
        self.toolset.validate()  # e.g. initial groups over budget: a configuration error now
        self._warn_unmatched(found)
        return refused

    def _add(self, tools: list[Tool]) -> list[RegistrationError | ConfigError]:
        """Add ``tools`` (a re-imported one replaces its previous definition): all at
        once when all are accepted, else one by one, a refused one left out (a
        re-imported one keeps its previous definition). Returns the refusals."""
        if not tools:
            return []
        replaced = {
            t.name: self._imported[t.name].tool
            for t in tools
            if t.name in self._imported
            and self.toolset.catalog.tool(t.name) is self._imported[t.name].tool
        }
        for name in replaced:
            self.toolset.remove_tool(name)
        try:
            self.toolset.add_tools(tools)
        except (RegistrationError, ConfigError):
            pass
        else:
            for t in tools:
                self._imported[t.name] = _Imported(t, _signature(t))
            return []
        refused: list[RegistrationError | ConfigError] = []
        for t in tools:
            try:
                self.toolset.add_tool(t)
            except (RegistrationError, ConfigError) as exc:
                refused.append(self._refuse(t, exc))
                old = replaced.get(t.name)
                if old is not None:
                    self.toolset.add_tool(old)  # it was served: it stays as it was
            else:
                self._imported[t.name] = _Imported(t, _signature(t))
        return refused

    def _refuse(
        self, tool: Tool, exc: RegistrationError | ConfigError
    ) -> RegistrationError | ConfigError:
        """Log a refused tool by name (once per definition) and return its error."""
        key = (tool.name, _signature(tool))
        if key not in self._refused:
            self._refused.add(key)
            logger.error("toolgate: FastMCP tool %r is not served: %s", tool.name, exc.message)
        return exc

    def _warn_unmatched(self, found: Mapping[str, FastMCPTool]) -> None:
        """Log, once per name, a ``tool_groups`` entry that names no FastMCP tool: the
        tool it meant stays outside its groups (a typo would leave it always listed).
        A warning, not an error: a tool may be registered later."""
        for name in sorted(set(self.tool_groups) - set(found) - self._unmatched):
            self._unmatched.add(name)
            close = difflib.get_close_matches(name, list(found), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            logger.warning(
                "tool_groups names %r, which is not a tool of this FastMCP server%s",
                name,
                hint,
            )
