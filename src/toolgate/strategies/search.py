"""``search``: find tools by what they do, then run them (and the search add-on).

``ToolSearch`` is an ``Addon`` giving any strategy ``search_tools`` (BM25) and
``search_tools_regex``; ``SearchStrategy`` is ``catalog`` with search in place of
``get_group``. Ranking is ``toolgate.search``'s; access is the view's. Delivery layer:
imports the core, never ``mcp`` or ``fastmcp``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolgate.catalog import Tool
from toolgate.errors import ConfigError, InvalidArguments, json_type
from toolgate.search import MAX_LIMIT, SearchHit
from toolgate.strategies.arguments import DETAIL_PROPERTY, detail_arg, unexpected_arguments
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
from toolgate.strategies.detail import Detail, index_entry
from toolgate.tokens import model_form
from toolgate.toolset import ToolSet
from toolgate.view import ReasonKind, View

DEFAULT_LIMIT = 5
DEFAULT_FULL_RESULTS = 1
MAX_QUERY_LENGTH = 1000
MAX_NEEDS = 10  # needs one search_tools call ranks: ``query`` and up to 9 ``queries``

# Listed to every model on every turn: the schemas say what a model needs to call; the
# bounds (lengths, counts, the limit's range) are checked by the run with a clear error.
_LIMIT_PROPERTY: Mapping[str, Any] = {
    "type": "integer",
    "default": DEFAULT_LIMIT,
    "description": f"How many tools, best first (at most {MAX_LIMIT}).",
}
_NEED_LIMIT_PROPERTY: Mapping[str, Any] = {**_LIMIT_PROPERTY, "description": "Results per need."}
SEARCH_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": 'What you want to do, in a few words, e.g. "open a pull request".',
        },
        "queries": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The task's other needs, one each.",
        },
        "limit": _NEED_LIMIT_PROPERTY,
        "detail": DETAIL_PROPERTY,
    },
    "required": ["query"],
}
SEARCH_REGEX_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": 'A regular expression, e.g. "^get_.*issue".'},
        "limit": _LIMIT_PROPERTY,
        "detail": DETAIL_PROPERTY,
    },
    "required": ["pattern"],
}


def search_args(
    arguments: Mapping[str, Any], key: str, *, more: str | None = None
) -> tuple[list[Any], Any]:
    """A search meta-tool's texts and ``limit`` (raises InvalidArguments).

    The texts are ``key``'s text then, with ``more`` (``"queries"`` for
    ``search_tools``), the entries of the optional ``more`` array. What the meta-tool alone
    knows is checked here: its argument names, how many queries, and each text by the
    name the caller gave it (``'queries[1]'``); ``SearchIndex`` checks the limit (and
    each text again, for a library caller).
    """
    unexpected_arguments(arguments, (key, *((more,) if more else ()), "limit", "detail"))
    if key not in arguments:
        raise InvalidArguments(f"Missing required argument {key!r}")
    texts = [arguments[key]]
    if more is not None and more in arguments:
        extra_texts = arguments[more]
        if not isinstance(extra_texts, list):
            raise InvalidArguments(
                f"{more!r} must be an array of strings, got {json_type(extra_texts)}"
            )
        if len(extra_texts) > MAX_NEEDS - 1:
            raise InvalidArguments(
                f"{more!r} has {len(extra_texts)} entries; the limit is {MAX_NEEDS - 1}"
            )
        texts += extra_texts
    for i, text in enumerate(texts):
        name = key if i == 0 else f"{more}[{i - 1}]"
        if not isinstance(text, str) or not text.strip():
            got = json_type(text) if not isinstance(text, str) else "a blank string"
            raise InvalidArguments(f"{name!r} must be a non-empty string, not {got}")
        if len(text) > MAX_QUERY_LENGTH:
            raise InvalidArguments(
                f"{name!r} is {len(text)} characters; the limit is {MAX_QUERY_LENGTH}"
            )
    limit = arguments.get("limit", DEFAULT_LIMIT)
    return texts, limit


def interleave(rankings: Sequence[Sequence[SearchHit]], limit: int) -> list[SearchHit]:
    """One list from several rankings: every ranking's first, then every second, ...;
    a tool already taken is skipped; at most ``limit`` in all.

    >>> a, b, c = SearchHit("a", 3.0), SearchHit("b", 2.0), SearchHit("c", 1.0)
    >>> " ".join(h.name for h in interleave([[a, b], [c, a]], 10))
    'a c b'
    """
    out: list[SearchHit] = []
    seen: set[str] = set()
    for rank in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking) and ranking[rank].name not in seen:
                seen.add(ranking[rank].name)
                out.append(ranking[rank])
                if len(out) == limit:
                    return out
    return out


class ToolSearch(Addon):
    """``search_tools`` and ``search_tools_regex`` for every strategy of a ``Delivery``.

    Results are the principal's accessible tools only (``View.is_accessible``), with
    full definitions and scores. Where the tool list follows the session
    (``list_changed`` on the legacy protocol) the results are also revealed: they join
    the session's list, as far as the budgets allow, and the client is told. Elsewhere
    nothing is recorded; the tools run directly or through ``call_tool``.

    >>> Delivery(toolset, DeliveryConfig(search=True))  # adds ToolSearch  # doctest: +SKIP
    """

    def __init__(self, full_results: int = DEFAULT_FULL_RESULTS) -> None:
        if isinstance(full_results, bool) or not isinstance(full_results, int) or full_results < 0:
            raise ConfigError(
                f"search full_results must be a whole number of 0 or more, got {full_results!r}",
                key="search.full_results",
            )
        #: how many of the best matches come with full definitions (detail "summary")
        self.full_results = full_results

    def meta_tools(self, strategy: Strategy) -> list[MetaTool]:
        return [self._search_tool(strategy), self._regex_tool(strategy)]

    def _search_tool(self, strategy: Strategy) -> MetaTool:
        async def run(request: Request, arguments: Mapping[str, Any]) -> Reply:
            queries, limit = search_args(arguments, "query", more="queries")
            detail = detail_arg(arguments)
            return await self.search(strategy, request, queries, limit, detail, regex=False)

        # say only what this strategy offers: where no add-on describes tools, every
        # match comes in full; where there is no call_tool, tools run directly
        names = strategy.names
        full = self.full_results
        best = (
            "Each match comes in one line"
            if full == 0
            else "The best match comes in full, the rest one line each"
            if full == 1
            else f"The best {full} matches come in full, the rest one line each"
        )
        shown = (
            f"{best} ({names.describe_tools} gives them in full)"
            if strategy.describes()
            else "Matches come in full"
        )
        run_by = " or via call_tool" if strategy.meta_tool(names.call_tool) else ""
        return MetaTool(
            names.search_tools,
            "Find tools by what they do, in plain words; a task's other needs go in queries, "
            f"each ranked on its own. {shown}; run them directly{run_by}.",
            SEARCH_SCHEMA,
            run,
            READ_ONLY,
        )

    def _regex_tool(self, strategy: Strategy) -> MetaTool:
        async def run(request: Request, arguments: Mapping[str, Any]) -> Reply:
            patterns, limit = search_args(arguments, "pattern")
            detail = detail_arg(arguments)
            return await self.search(strategy, request, patterns, limit, detail, regex=True)

        return MetaTool(
            strategy.names.search_tools_regex,
            "Find tools whose name, title or description match a regular expression "
            "(case-insensitive), name matches first; results as search_tools gives them.",
            SEARCH_REGEX_SCHEMA,
            run,
            READ_ONLY,
        )

    def answer(
        self, found: Sequence[tuple[SearchHit, Tool]], detail: Detail, *, describes: bool = True
    ) -> tuple[list[dict[str, Any]], list[str]]:
        """The ``results`` (name, score, and the full definition unless ``detail`` is
        'names') and the ``more`` lines of a compact index: under 'summary' only the first
        ``full_results`` come in full, the other matches as one line each, where the
        strategy ``describes`` tools (else every match comes in full)."""
        if detail == "names":
            return [{"name": h.name, "score": h.score} for h, _ in found], []
        cut = len(found) if detail == "full" or not describes else self.full_results
        results = [
            {"name": h.name, "score": h.score, "tool": model_form(t.wire())} for h, t in found[:cut]
        ]
        return results, [index_entry(t) for _, t in found[cut:]]

    async def search(
        self,
        strategy: Strategy,
        request: Request,
        needs: Sequence[str],
        limit: int,
        detail: Detail = "summary",
        *,
        regex: bool,
    ) -> Reply:
        """Rank, reveal where the list follows the session, and answer.

        ``needs`` are one query (or pattern) or several: each is ranked on its own
        (``limit`` each) and the rankings are interleaved (every need's best first, then
        every need's second, ...; ``MAX_LIMIT`` in all); the answer treats that list as
        one ranking."""
        session = request.session
        view = await session.view()
        index = strategy.toolset.search_index_for(view)
        find = index.search_regex if regex else index.search
        rankings = [find(need, limit, view.is_accessible) for need in needs]
        hits: Sequence[SearchHit] = (
            rankings[0] if len(rankings) == 1 else interleave(rankings, MAX_LIMIT)
        )
        found = [(h, t) for h in hits if (t := self.findable(strategy, view, h.name)) is not None]
        results, more = self.answer(found, detail, describes=strategy.describes())
        in_full = [r["name"] for r in results if "tool" in r]
        for addon in strategy.addons:
            await addon.shown_in_full(request, in_full)
        revealed: list[str] = []
        errors: list[str] = []
        changed = False
        hidden = [h.name for h, _ in found if not view.is_visible(h.name)]
        if hidden and self.reveals(strategy, request):
            outcome = await session.reveal(hidden)
            revealed = sorted(outcome.after.visible_names - outcome.before.visible_names)
            # over a budget: say what frees room (disable_tools closes a group, and
            # forgets the tools search showed of it)
            room = (
                f"; {disable.name} closes a group, or the tools search showed of one, to make room"
                if (disable := strategy.meta_tool(strategy.names.disable_tools)) is not None
                else ""
            )
            errors = [
                f"Cannot show tool {n!r}: {problem}{room if n in outcome.over_budget else ''}"
                for n, problem in outcome.refused
            ]
            changed = outcome.visible_changed
        data: dict[str, Any] = {
            "pattern" if regex else "query": needs[0],
            **({"queries": needs[1:]} if len(needs) > 1 else {}),
            "results": results,
            **({"more": more} if more else {}),
            "revealed": revealed,
            "errors": errors,
        }
        answer = structured(data)
        # one entry per tool the answer names; the tokens are the answer's text
        shown = [{"name": t.name} for _, t in found]
        emit_selection(request, "search", strategy, shown, result=answer)
        return Reply(answer, list_changed=changed)

    @staticmethod
    def findable(strategy: Strategy, view: View, name: str) -> Tool | None:
        """The tool a hit names, if an answer may name it. With ``hidden_tool_errors:
        "opaque"`` a call of a tool held back by more than its group (its stage, a
        predicate) answers "Unknown tool", so search does not name it either; with hints,
        it does, and the call says what would make it run."""
        seen = view.surfacing(name)
        if seen.tool is None:
            return None
        if strategy.toolset.hidden_tool_errors == "opaque" and not (
            seen.visible or seen.reason.kind is ReasonKind.GROUP_INACTIVE
        ):
            return None
        return seen.tool

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
        full_results: int = DEFAULT_FULL_RESULTS,
    ) -> None:
        if not any(isinstance(a, ToolSearch) for a in addons):
            addons = (*addons, ToolSearch(full_results))
        super().__init__(toolset, names=names, addons=addons)

    def base_meta_tools(self) -> list[MetaTool]:
        return [self._list_groups_tool(), self._call_tool_tool()]


__all__ = [
    "SEARCH_REGEX_SCHEMA",
    "SEARCH_SCHEMA",
    "SearchStrategy",
    "ToolSearch",
    "interleave",
    "search_args",
]
