"""``ToolSet``: one catalog served to many sessions.

Owns the catalog, store, event bus, view cache and budgets; checks start-up configuration
and builds the error a refused call gets. Orchestration: imports the core and
``toolset.session`` (``Session``, one client's handle on it); no MCP, no strategies.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from types import NoneType
from typing import Any

from toolgate.catalog import Catalog, Group, Tool
from toolgate.errors import (
    ConfigError,
    DescriptionRequired,
    RegistrationError,
    ToolgateError,
    ToolHidden,
    ToolNotFound,
    check_callable,
    check_kind,
)
from toolgate.events import EventBus
from toolgate.flow import Flow
from toolgate.policy import DEFAULT_TRUST_LEVELS, Principal, TrustLadder
from toolgate.search import SearchIndex, SearchSettings
from toolgate.state.base import EMPTY, SessionState, StateStore
from toolgate.state.memory import MemoryStore
from toolgate.tokens import TokenCounter, best_counter, estimate_tokens, model_text
from toolgate.toolset.session import Session
from toolgate.toolset.validation import ArgumentCheck
from toolgate.view import DEFAULT_RULES, ReasonKind, Rule, Surfacing, View, ViewCache, compute_view

HiddenToolErrors = str  # "hint" | "opaque"
logger = logging.getLogger("toolgate.toolset")


MAX_UNSEEN_INDEXES = 8  # search indexes kept for principals who may not see some groups


def plain_description_required(name: str) -> DescriptionRequired:
    return DescriptionRequired(
        f"Tool {name!r} requires fetching its description before use.", tool=name
    )


def _check_parts(
    events: Any, counter: Any, clock: Any, rules: Any, namespace_tools: Any, describe: Any
) -> None:
    """Refuse a ``ToolSet`` part of the wrong kind when it is made, by its name, not
    as an AttributeError at the first call (a truthy "false" would turn a flag on)."""
    check_kind(events, (EventBus, NoneType), "events", "an EventBus", key="events")
    check_kind(
        counter, (TokenCounter, NoneType), "token_counter", "a TokenCounter", key="token_counter"
    )
    check_kind(namespace_tools, bool, "namespace_tools", "True or False", key="namespace_tools")
    check_kind(describe, bool, "describe_before_call", "True or False", key="describe_before_call")
    check_callable(clock, "clock", "a function like time.time", key="clock")
    check_kind(rules, (list, tuple), "rules", "a list of Rule", key="rules")
    for rule in rules:
        check_kind(rule, Rule, "each of rules", "a Rule", key="rules")


class ToolSet:
    """One catalog served to many sessions.

    >>> ts = ToolSet()
    >>> ts.add_group(Group("files", "File operations"))
    >>> ts.add_tool(Tool("read_file", "Read a file.", groups=("files",)))
    """

    def __init__(
        self,
        name: str = "toolgate",
        *,
        store: StateStore | None = None,
        flow: Flow | None = None,
        trust_levels: Sequence[str] = DEFAULT_TRUST_LEVELS,
        initial_groups: Sequence[str] = (),
        max_tools: int | None = None,
        max_tokens: int | None = None,
        token_counter: TokenCounter | None = None,
        hidden_tool_errors: HiddenToolErrors = "hint",
        page_size: int = 100,
        namespace_tools: bool = False,
        separator: str = ".",
        rules: Sequence[Rule] = DEFAULT_RULES,
        describe_before_call: bool = False,
        default_principal: Principal | None = None,
        events: EventBus | None = None,
        clock: Callable[[], float] = time.time,
        search: SearchSettings | None = None,
    ) -> None:
        if search is not None and not isinstance(search, SearchSettings):
            raise ConfigError(f"search must be a SearchSettings, got {type(search).__name__}")
        if hidden_tool_errors not in ("hint", "opaque"):
            raise ConfigError(
                f"hidden_tool_errors must be 'hint' or 'opaque', got {hidden_tool_errors!r}",
                key="hidden_tool_errors",
            )
        if isinstance(initial_groups, str) or not isinstance(initial_groups, Iterable):
            got = "the string" if isinstance(initial_groups, str) else type(initial_groups).__name__
            raise ConfigError(
                f"initial_groups must be a list of group names, got {got} {initial_groups!r}",
                key="initial_groups",
            )
        check_kind(
            store,
            (StateStore, NoneType),
            "store",
            "a StateStore (open_store(url) makes one from a URL)",
            key="store",
        )
        if default_principal is not None and not isinstance(default_principal, Principal):
            raise ConfigError(
                f"default_principal must be a Principal, got {type(default_principal).__name__}",
                key="default_principal",
            )
        if not isinstance(page_size, int) or isinstance(page_size, bool) or page_size < 1:
            raise ConfigError(f"page_size must be a positive integer, got {page_size!r}")
        if separator not in (".", "_", "-"):
            raise ConfigError(f"separator must be '.', '_' or '-', got {separator!r}")
        for label, value in (("max_tools", max_tools), ("max_tokens", max_tokens)):
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 1
            ):
                raise ConfigError(f"{label} must be a positive integer, got {value!r}", key=label)
        _check_parts(events, token_counter, clock, rules, namespace_tools, describe_before_call)
        self.name = name
        self.catalog = Catalog(flow)
        self.store: StateStore = store if store is not None else MemoryStore(clock=clock)
        self.ladder = TrustLadder(trust_levels)
        self.initial_groups = tuple(initial_groups)
        self.max_tools = max_tools
        self.max_tokens = max_tokens
        # the tokenizer toolgate inspect and estimate_tokens count with (best_counter):
        # a budget, the dashboard and tool.selection give the figure inspect reports
        self.token_counter = token_counter or best_counter()
        self.hidden_tool_errors = hidden_tool_errors
        self.page_size = page_size
        self.namespace_tools = namespace_tools
        self.separator = separator
        self.rules = tuple(rules)
        self.describe_before_call = describe_before_call
        #: builds the describe-before-call error; lazy descriptions replace it to say
        #: exactly where the description is (``toolgate.strategies.lazy``)
        self.description_required: Callable[[str], DescriptionRequired] = plain_description_required
        self.default_principal = default_principal or Principal()
        if self.default_principal.trust not in self.ladder.levels:
            raise ConfigError(
                f"default_principal's trust {self.default_principal.trust!r} is not one of "
                f"trust_levels ({', '.join(map(repr, self.ladder.levels))}); give a "
                "default_principal=Principal(trust=...) on the ladder",
                key="trust_levels" if default_principal is None else "default_principal",
            )
        self.events = events or EventBus()
        self.clock = clock
        self.views = ViewCache()
        self._token_cache: dict[str, tuple[Tool, int]] = {}
        self._validated_version = -1
        self._arguments = ArgumentCheck()
        self.search_settings = search or SearchSettings()
        self._search_index: SearchIndex | None = None
        #: indexes without the text of some groups, for the principals who may not see them
        self._unseen_indexes: OrderedDict[frozenset[str], SearchIndex] = OrderedDict()

    # -- registration ----------------------------------------------------------------
    def add_group(self, group: Group) -> Group:
        self.catalog.add_group(group)
        return group

    def add_groups(self, groups: Iterable[Group]) -> None:
        self.catalog.add_groups(groups)

    def exclusive(self, *groups: str) -> None:
        """At most one of ``groups`` may be active in a session."""
        self.catalog.add_exclusion(groups)

    def _check_policy(self, t: Tool) -> None:
        """A policy naming a trust level the ladder lacks is a configuration error
        now, not a crash at the first listing (the catalog asks, per tool)."""
        if t.policy.min_trust is not None:
            try:
                self.ladder.check(t.policy.min_trust)
            except ConfigError as exc:
                raise ConfigError(
                    f"Tool {t.name!r}: policy min_trust: {exc.message}", key="min_trust"
                ) from None

    def add_tool(self, tool: Tool) -> Tool:
        self.add_tools([tool])
        return tool

    def add_tools(self, tools: Iterable[Tool]) -> None:
        for t in self.catalog.add_tools(tools, check=self._check_policy):
            self.events.emit("tool.registered", tool=t.name, groups=list(t.groups))

    def remove_tool(self, name: str) -> Tool:
        tool = self.catalog.remove_tool(name)
        self.events.emit("tool.unregistered", tool=name)
        return tool

    def remove_group(self, name: str) -> Group:
        return self.catalog.remove_group(name)

    def set_flow(self, flow: Flow) -> None:
        self.catalog.set_flow(flow)

    def reconfigure(self, source: ToolSet) -> list[str]:
        """Become what ``source`` was built as, keeping this toolset's store, event bus,
        token counter, rules and reserved names: ``source``'s catalog in one change
        (``Catalog.replace_all``) and its settings (trust ladder, initial groups,
        budgets, hidden-tool errors, page size, separator, default principal, search
        settings). Sessions keep their state in the store. Returns the tools left out
        because a meta-tool reserves their names.

        >>> live.reconfigure(rebuilt)   # a gateway after its config or a backend changed
        """
        before = dict(self.catalog.tools)
        self.ladder = source.ladder
        self.initial_groups = source.initial_groups
        self.max_tools, self.max_tokens = source.max_tools, source.max_tokens
        self.hidden_tool_errors = source.hidden_tool_errors
        self.page_size, self.separator = source.page_size, source.separator
        self.default_principal = source.default_principal
        if source.search_settings != self.search_settings:
            self.search_settings = source.search_settings
            self._search_index = None  # made again, with the new settings, on first use
            self._unseen_indexes.clear()
        self.views.clear()  # views are keyed by catalog version, not by the ladder
        refused = self.catalog.replace_all(source.catalog)
        after = self.catalog.tools
        for name in sorted(set(before) - set(after)):
            self.events.emit("tool.unregistered", tool=name)
        for name in sorted(after):
            if before.get(name) is not after[name]:
                self.events.emit("tool.registered", tool=name, groups=list(after[name].groups))
        return refused

    def tool(self, fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
        """Decorator: register a function as a tool (see ``toolgate.declare.tool``)."""
        from toolgate.declare import tool_from_function

        def register(f: Callable[..., Any]) -> Callable[..., Any]:
            self.add_tool(tool_from_function(f, **options))
            return f

        return register(fn) if fn is not None else register

    def include(self, obj: Any, *, parent: str | None = None) -> None:
        """Register a ``@group`` class instance (with its tools and child groups) or a
        handler object whose methods carry ``@in_group`` / ``@tool`` marks."""
        from toolgate.declare import declarations_of

        groups, tools, exclusions = declarations_of(
            obj, parent=parent, namespace=self.namespace_tools, separator=self.separator
        )
        if not groups and not tools:
            what = f"the class {obj.__name__}" if isinstance(obj, type) else type(obj).__name__
            raise RegistrationError(
                f"include() found no @group, @tool or @in_group declarations on {what}; "
                "pass an instance of a @group class or of a class with marked methods"
            )
        known = set(self.catalog.groups)
        # all or nothing: a tool or exclusion set the catalog refuses leaves no group behind
        self.catalog.add_declared(
            [g for g in groups if g.name not in known], tools, exclusions, check=self._check_policy
        )
        for t in tools:
            self.events.emit("tool.registered", tool=t.name, groups=list(t.groups))

    # -- validation of start-up configuration ------------------------------------------
    def validate(self) -> None:
        """Check configuration that spans registrations: initial groups exist, respect
        hierarchy and exclusion sets, and fit the budgets. Raises ``ConfigError``."""
        if self._validated_version == self.catalog.version:
            return
        cat = self.catalog
        seen: set[str] = set()
        for g in self.initial_groups:
            if g not in cat.groups:
                raise ConfigError(f"initial_groups names unknown group {g!r}", key="initial_groups")
            seen.add(g)
        for g in self.initial_groups:
            for a in cat.ancestors(g):
                if a not in seen:
                    raise ConfigError(
                        f"initial group {g!r} needs its parent {a!r} in initial_groups too",
                        key="initial_groups",
                    )
        for ex in cat.exclusions:
            both = sorted(ex & seen)
            if len(both) > 1:
                raise ConfigError(
                    f"initial_groups {both} are mutually exclusive", key="initial_groups"
                )
        widest = Principal(id="*", trust=self.ladder.levels[-1], scope=("*",))
        view = compute_view(cat, widest, self.initial_state(), ladder=self.ladder, rules=self.rules)
        problem = self.budget_problem(view)
        if problem is not None:
            self.events.emit(
                "budget.exceeded", initial_groups=list(self.initial_groups), detail=problem
            )
            raise ConfigError(f"initial_groups exceed the budget: {problem}", key="initial_groups")
        self._validated_version = cat.version

    def initial_state(self) -> SessionState:
        return replace(EMPTY, active=frozenset(self.initial_groups))

    # -- views and tokens --------------------------------------------------------------
    def view(self, principal: Principal, state: SessionState) -> View:
        return self.views.get(self.catalog, principal, state, self.ladder, self.rules)

    def tool_tokens(self, tool: Tool) -> int:
        cached = self._token_cache.get(tool.name)
        if cached is not None and cached[0] is tool:
            return cached[1]
        n = self.token_counter.count(model_text(tool.wire()))
        self._token_cache[tool.name] = (tool, n)
        return n

    def view_tokens(self, view: View) -> int:
        return sum(self.tool_tokens(t) for t in view.visible)

    @property
    def has_budget(self) -> bool:
        return self.max_tools is not None or self.max_tokens is not None

    def estimate(self, view: View) -> dict[str, Any]:
        """What ``view``'s visible tools cost in tokens, counted as budgets count them
        (``self.token_counter`` over each ``tool.wire()``), per tool and per group
        (root tools as ``"default"``), with outliers (see ``tokens.estimate_tokens``)."""
        tools = view.visible
        return estimate_tokens(
            [t.wire() for t in tools],
            self.token_counter,
            groups_of={t.name: t.scope_groups for t in tools},
        )

    @property
    def search_index(self) -> SearchIndex:
        """The catalog's search index, created on first use; it follows the catalog's
        version, re-analysing only the tools that changed; lexical or hybrid as
        ``search_settings`` say. ``ConfigError`` when the ``search`` extra (or, for
        hybrid, the ``semantic`` extra) is not installed."""
        if self._search_index is None:
            self._search_index = SearchIndex(self.catalog, self.search_settings)
        return self._search_index

    def search_index_for(self, view: View) -> SearchIndex:
        """The index ``view``'s principal searches: ``search_index``, or, when a tool it
        may use is also in a group it may not know of (``View.unseen_groups``), one that
        leaves those groups' texts out (sharing the embedder), so they neither match its
        queries nor move its scores."""
        unseen = view.unseen_groups
        shared = self.search_index
        if not unseen:
            return shared
        index = self._unseen_indexes.get(unseen)
        if index is None:
            settings = replace(
                shared.settings, embedder=shared.embedder or shared.settings.embedder
            )
            index = SearchIndex(self.catalog, settings, unseen_groups=unseen)
            self._unseen_indexes[unseen] = index
            if len(self._unseen_indexes) > MAX_UNSEEN_INDEXES:
                self._unseen_indexes.popitem(last=False)
        else:
            self._unseen_indexes.move_to_end(unseen)
        return index

    def budget_problem(
        self, view: View, before: View | None = None, change: str = "the activation"
    ) -> str | None:
        if not self.has_budget:
            return None  # don't compute a view nobody will measure
        count = len(view.visible)
        if self.max_tools is not None and count > self.max_tools:
            have = len(before.visible) if before is not None else 0
            return (
                f"{count} tools would be visible, over max_tools={self.max_tools} "
                f"({change} adds {count - have}; the budget leaves "
                f"{max(self.max_tools - have, 0)})"
            )
        if self.max_tokens is not None:
            tokens = self.view_tokens(view)
            if tokens > self.max_tokens:
                have = self.view_tokens(before) if before is not None else 0
                return (
                    f"{tokens} tokens would be visible ({self.token_counter.name}), over "
                    f"max_tokens={self.max_tokens} ({change} adds {tokens - have}; "
                    f"the budget leaves {max(self.max_tokens - have, 0)})"
                )
        return None

    # -- sessions ----------------------------------------------------------------------
    def session(
        self,
        key: str | None,
        principal: Principal | None = None,
        *,
        all_groups: bool = False,
        trial: bool = False,
    ) -> Session:
        """A handle on one session's state. ``key=None`` is an ephemeral session: it
        sees the initial state and records nothing (stateless protocol, catalog mode).
        ``all_groups=True`` treats every group as active (catalog and flat delivery:
        discovery gating is not access control). ``trial=True`` (ephemeral only) shows
        what a change would do and does nothing: no events, no group hooks."""
        return Session(
            self, key, principal or self.default_principal, all_groups=all_groups, trial=trial
        )

    async def close(self) -> None:
        await self.store.close()
        self.events.close()

    # -- call helpers ------------------------------------------------------------------
    def validate_arguments(self, tool: Tool, arguments: Mapping[str, Any]) -> str | None:
        """A message describing why ``arguments`` don't fit the tool's input schema."""
        return self._arguments.problem(tool, arguments)

    def hidden_error(self, s: Surfacing, view: View) -> ToolgateError:
        """The error for calling a tool that is not visible in ``view``. A hint names only
        groups the principal may know of."""
        stage = view.ctx.stage
        if s.is_unknown_to_principal or self.hidden_tool_errors == "opaque":
            return ToolNotFound(s.name)
        tool, kind, reason = s.tool, s.reason.kind, str(s.reason)
        assert tool is not None
        if kind is ReasonKind.STAGE_LOCKED:
            need = list(s.reason.stages)
            return ToolHidden(
                f"Tool {s.name!r} is only available in stage {' or '.join(map(repr, need))}; "
                f"this session is in stage {stage!r}.",
                tool=s.name,
                reason=reason,
                stages=need,
                current_stage=stage,
            )
        if kind is ReasonKind.GROUP_INACTIVE:
            known = [g for g in tool.groups if view.group(g).visible]
            if not known:
                return ToolNotFound(s.name)  # no group it may know of: nothing to hint at
            # only ancestors it may know of: one out of its scope is transparent to it
            chain = min(([*reversed(view.ctx.ancestors(g)), g] for g in known), key=len)
            return ToolHidden(
                f"Tool {s.name!r} is not enabled. Enable group {chain[-1]!r} first"
                + (f" (and its parents {chain[:-1]})" if len(chain) > 1 else "")
                + ", then call it again.",
                tool=s.name,
                reason=reason,
                groups=known,
                enable=chain,
            )
        return ToolHidden(
            f"Tool {s.name!r} is not available in the current state.", tool=s.name, reason=reason
        )
