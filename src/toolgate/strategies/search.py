"""``search``: find tools by what they do, then run them (and the search add-on).

``ToolSearch`` is an ``Addon`` giving any strategy ``search_tools`` (BM25) and
``search_tools_regex``; ``SearchStrategy`` is ``catalog`` with search in place of
``get_group``. Ranking is ``toolgate.search``'s; access is the view's. Delivery layer:
imports the core, never ``mcp`` or ``fastmcp``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolgate.errors import InvalidArguments
from toolgate.search import MAX_LIMIT, SearchHit
from toolgate.strategies.base import (
    READ_ONLY,
    Addon,
    MetaNames,
    MetaTool,
    Reply,
    Request,
    Strategy,
    emit_selection,
    structured,
)
from toolgate.strategies.catalog import CatalogStrategy
from toolgate.toolset import ToolSet

DEFAULT_LIMIT = 5
MAX_QUERY_LENGTH = 1000

_LIMIT_PROPERTY: Mapping[str, Any] = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_LIMIT,
    "default": DEFAULT_LIMIT,
    "description": f"How many tools to return, best first (1 to {MAX_LIMIT}).",
}
SEARCH_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "description": 'What you want to do, in a few words, e.g. "open a pull request".',
        },
        "limit": _LIMIT_PROPERTY,
    },
    "required": ["query"],
    "additionalProperties": False,
}
SEARCH_REGEX_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "minLength": 1,
            "description": "A Python regular expression, matched case-insensitively against "
            'tool names, titles and descriptions, e.g. "^get_.*issue".',
        },
        "limit": _LIMIT_PROPERTY,
    },
    "required": ["pattern"],
    "additionalProperties": False,
}


def search_args(arguments: Mapping[str, Any], key: str) -> tuple[Any, Any]:
    """A search meta-tool's ``key`` text and ``limit`` (raises InvalidArguments).

    Only what the meta-tool alone knows is checked here (its argument names, how long
    a query may be); ``SearchIndex`` checks the text and the limit themselves.
    """
    if not isinstance(arguments, Mapping):
        raise InvalidArguments("Arguments must be a JSON object")
    extra = sorted(set(arguments) - {key, "limit"})
    if extra:
        raise InvalidArguments(
            f"Unexpected argument(s): {', '.join(extra)}; expected {key!r} and optionally 'limit'"
        )
    if key not in arguments:
        raise InvalidArguments(f"Missing required argument {key!r}")
    text = arguments[key]
    if isinstance(text, str) and len(text) > MAX_QUERY_LENGTH:
        raise InvalidArguments(
            f"{key!r} is {len(text)} characters; the limit is {MAX_QUERY_LENGTH}"
        )
    return text, arguments.get("limit", DEFAULT_LIMIT)


class ToolSearch(Addon):
    """``search_tools`` and ``search_tools_regex`` for every strategy of a ``Delivery``.

    Results are the principal's accessible tools only (``View.is_accessible``), with
    full definitions and scores. Where the tool list follows the session
    (``list_changed`` on the legacy protocol) the results are also revealed: they join
    the session's list, as far as the budgets allow, and the client is told. Elsewhere
    nothing is recorded; the tools run directly or through ``call_tool``.

    >>> Delivery(toolset, DeliveryConfig(search=True))  # adds ToolSearch  # doctest: +SKIP
    """

    def meta_tools(self, strategy: Strategy) -> list[MetaTool]:
        return [self._search_tool(strategy), self._regex_tool(strategy)]

    def _search_tool(self, strategy: Strategy) -> MetaTool:
        async def run(request: Request, arguments: Mapping[str, Any]) -> Reply:
            query, limit = search_args(arguments, "query")
            return await self.search(strategy, request, query, limit, regex=False)

        return MetaTool(
            strategy.names.search_tools,
            "Search the tools you may use by what they do, in plain words. Returns the best "
            "matches, best first, with their full definitions. Run a result directly by "
            "name, or through call_tool if it is not in your tool list.",
            SEARCH_SCHEMA,
            run,
            READ_ONLY,
        )

    def _regex_tool(self, strategy: Strategy) -> MetaTool:
        async def run(request: Request, arguments: Mapping[str, Any]) -> Reply:
            pattern, limit = search_args(arguments, "pattern")
            return await self.search(strategy, request, pattern, limit, regex=True)

        return MetaTool(
            strategy.names.search_tools_regex,
            "Find the tools you may use whose name, title or description match a regular "
            "expression (case-insensitive). Returns full definitions; a name match ranks "
            "above a title match, which ranks above a description match.",
            SEARCH_REGEX_SCHEMA,
            run,
            READ_ONLY,
        )

    async def search(
        self, strategy: Strategy, request: Request, text: str, limit: int, *, regex: bool
    ) -> Reply:
        """Rank, reveal where the list follows the session, and answer."""
        session = request.session
        view = await session.view()
        index = strategy.toolset.search_index
        find = index.search_regex if regex else index.search
        hits: Sequence[SearchHit] = find(text, limit, view.is_accessible)
        found = [(h, view.surfacing(h.name).tool) for h in hits]
        shown = [(h, t.wire()) for h, t in found if t is not None]
        results = [{"name": h.name, "score": h.score, "tool": w} for h, w in shown]
        revealed: list[str] = []
        errors: list[str] = []
        changed = False
        hidden = [h.name for h, t in found if t is not None and not view.is_visible(h.name)]
        if hidden and self.reveals(strategy, request):
            outcome = await session.reveal(hidden)
            revealed = sorted(outcome.after.visible_names - outcome.before.visible_names)
            errors = [f"Cannot show tool {n!r}: {problem}" for n, problem in outcome.refused]
            changed = outcome.visible_changed
        emit_selection(request, "search", strategy, [w for _, w in shown])
        data: dict[str, Any] = {
            "pattern" if regex else "query": text,
            "results": results,
            "revealed": revealed,
            "errors": errors,
        }
        return Reply(structured(data), list_changed=changed)

    @staticmethod
    def reveals(strategy: Strategy, request: Request) -> bool:
        """Whether results join the session's tool list: only where that list follows
        the session and the session keeps state (never on 2026-07-28)."""
        return strategy.can_change_list and not request.stateless and not request.session.ephemeral


class SearchStrategy(CatalogStrategy):
    """A fixed ``tools/list`` (the initial view) plus ``search_tools``,
    ``search_tools_regex``, ``call_tool`` and ``list_groups``. Every accessible tool
    runs, directly or through ``call_tool``; nothing is recorded per session."""

    name = "search"

    def __init__(
        self,
        toolset: ToolSet,
        *,
        names: MetaNames | None = None,
        addons: Sequence[Addon] = (),
    ) -> None:
        if not any(isinstance(a, ToolSearch) for a in addons):
            addons = (*addons, ToolSearch())
        super().__init__(toolset, names=names, addons=addons)

    def base_meta_tools(self) -> list[MetaTool]:
        return [self._list_groups_tool(), self._call_tool_tool()]


__all__ = ["SEARCH_REGEX_SCHEMA", "SEARCH_SCHEMA", "SearchStrategy", "ToolSearch", "search_args"]
