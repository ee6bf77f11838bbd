"""``list_changed``: the tool list follows activation, and the client is told.

``tools/list`` shows root tools, meta-tools and the tools of effectively active
groups. Two meta-tool styles: ``menu`` (wags: ``enable_tools`` / ``disable_tools``)
and ``activators`` (tmcp: ``<group>.activate`` / ``<group>.deactivate``, plus
``enable_tools`` to open several groups in one call). Both add ``list_groups``, the
``call_tool`` dispatcher and ``describe_tools``. Delivery layer: no MCP imports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from toolgate.activation import ChangeResult
from toolgate.catalog import Tool
from toolgate.errors import ConfigError
from toolgate.strategies.arguments import (
    GROUPS_SCHEMA,
    OPEN_GROUPS_SCHEMA,
    detail_arg,
    group_names_arg,
    no_arguments,
)
from toolgate.strategies.base import (
    Addon,
    MetaNames,
    MetaTool,
    Reply,
    Request,
    Strategy,
    few_words,
    groups_lead,
    opening_answer,
    structured,
)
from toolgate.strategies.detail import Detail, summary_wire
from toolgate.toolset import ToolSet
from toolgate.view import View

MetaStyle = Literal["menu", "activators"]
GroupedList = Literal["summary", "full"]
ListedActivators = Literal["always", "reachable"]
ACTIVATOR_WORDS = 8  # an activator's description: the group's first clause, this long
#: an activator's schema: one per group is listed, so every token counts; the run
#: refuses any argument itself, by name
NO_ARGUMENTS: Mapping[str, Any] = {"type": "object"}


class ListChangedStrategy(Strategy):
    name = "list_changed"
    can_change_list = True
    on_demand = True

    def __init__(
        self,
        toolset: ToolSet,
        *,
        style: MetaStyle = "menu",
        names: MetaNames | None = None,
        addons: Sequence[Addon] = (),
        grouped_list: GroupedList = "summary",
        activators: ListedActivators = "always",
    ) -> None:
        if style not in ("menu", "activators"):
            raise ConfigError(f"meta_tools must be 'menu' or 'activators', got {style!r}")
        if activators not in ("always", "reachable"):
            raise ConfigError(
                f"activators must be 'always' or 'reachable', got {activators!r}",
                key="activators",
            )
        if grouped_list not in ("summary", "full"):
            raise ConfigError(
                f"grouped_list must be 'summary' or 'full', got {grouped_list!r}",
                key="grouped_list",
            )
        self.style = style
        #: how a refreshed tools/list shows the tools of opened groups: "summary" (one
        #: line, open schema: a refresh does not pull whole groups at full weight) or "full"
        self.grouped_list: GroupedList = grouped_list
        #: which activators ``tools/list`` shows: "always" (tmcp: every group in scope
        #: has its ``activate``, so a client that never re-lists reaches nested groups)
        #: or "reachable" (only those that can succeed now: parent active, not enabled)
        self.activators: ListedActivators = activators
        self.sep = toolset.separator
        super().__init__(toolset, names=names, addons=addons)

    def base_meta_tools(self) -> list[MetaTool]:
        tools = [self._list_groups_tool(), self._call_tool_tool(), self._enable_tool()]
        if self.style == "menu":
            tools.append(self._disable_tool())
        return tools

    def shape(self, wire: dict[str, Any], tool: Tool) -> dict[str, Any]:
        if self.grouped_list == "summary" and tool.groups:
            return summary_wire(wire, tool, describe_tool=self.names.describe_tools, minimal=False)
        return wire

    def activator_suffixes(self) -> list[str]:
        return (
            [f"{self.sep}activate", f"{self.sep}deactivate"] if self.style == "activators" else []
        )

    # -- activators --------------------------------------------------------------------
    def _activator(self, name: str) -> tuple[str, str] | None:
        """``(group, action)`` when ``name`` is an activator of an existing group."""
        if self.style != "activators":
            return None
        for action in ("activate", "deactivate"):
            suffix = f"{self.sep}{action}"
            if name.endswith(suffix) and name[: -len(suffix)] in self.toolset.catalog.groups:
                return name[: -len(suffix)], action
        return None

    def _activator_tool(
        self, group: str, action: str, lead: str = "", parent: str | None = None
    ) -> MetaTool:
        """``lead``: what every group the caller sees opens with (``groups_lead``);
        ``parent``: the group's parent as the caller sees it (None: none, or one out of
        its scope, which is never named to it)."""
        g = self.toolset.catalog.groups[group]
        name = f"{group}{self.sep}{action}"

        async def run(request: Request, arguments: Mapping[str, Any]) -> Reply:
            no_arguments(name, arguments)
            session = request.session
            if action == "activate":
                result = await session.activate([group])
            else:
                result = await session.deactivate([group])
            return self._change_reply(result, request)

        # every group's activator is listed: a child's names its parent, which must be on.
        # The name says which group and what it does; the description, what is in it.
        # and not what every group's description opens with (``github: ``)
        text = (g.description or g.title or "").removeprefix(lead) or group
        what = few_words(text, ACTIVATOR_WORDS)
        inside = f" (inside {parent})" if parent and action == "activate" else ""
        return MetaTool(name, f"{what}{inside}", NO_ARGUMENTS, run)

    def listed_meta(self, request: Request, view: View) -> list[MetaTool]:
        metas = super().listed_meta(request, view)
        if self.style != "activators":
            return metas
        always = self.activators == "always"
        lead = groups_lead(view)
        for g in view.groups:
            if not g.visible or g.group is None:
                continue  # out of scope: never named, not even by its activator
            parent = view.ctx.parent(g.name)
            if always or g.activatable:
                metas.append(self._activator_tool(g.name, "activate", lead, parent))
            # a deactivator while the group is on (DESIGN 5.1: hidden when
            # show_deactivator=False); one for a group that is off would only cost tokens
            if g.group.show_deactivator and (g.enabled if always else g.active):
                metas.append(self._activator_tool(g.name, "deactivate", lead, parent))
        return metas

    def meta_tool(self, name: str) -> MetaTool | None:
        found = super().meta_tool(name)
        if found is not None:
            return found
        activator = self._activator(name)
        if activator is None:
            return None
        return self._activator_tool(*activator)

    async def meta_for(self, request: Request, name: str) -> MetaTool | None:
        found = await super().meta_for(request, name)
        activator = self._activator(name) if found is not None else None
        if activator is not None:
            view = await request.session.view()
            if not view.group(activator[0]).visible:
                return None  # out of scope: the same "Unknown tool" as a made-up group
        return found

    # -- menu ----------------------------------------------------------------------------
    def listing_changed(self, result: ChangeResult, request: Request) -> bool:
        """Whether the change altered ``tools/list``: its tools, or (activators) the
        activators and deactivators it lists, which follow the groups' states even where
        no tool does (opening a group that only holds child groups)."""
        if result.visible_changed:
            return True
        if self.style != "activators":
            return False
        names = (
            [m.name for m in self.listed_meta(request, view)]
            for view in (result.before, result.after)
        )
        return next(names) != next(names)

    def _change_reply(
        self, result: ChangeResult, request: Request, detail: Detail = "summary"
    ) -> Reply:
        nothing = not result.changed and not result.also_disabled
        failed = nothing and bool(result.errors)
        changed = self.listing_changed(result, request)
        if result.action == "activate":
            data = self.menu_result(result, request, detail)
            answer = opening_answer(data, is_error=failed, displaced=result.also_disabled)
            return Reply(answer, list_changed=changed)
        data = {
            # every group this turned off: those named, then their children with them
            "disabled": [*result.changed, *result.also_disabled],
            "enabled_groups": list(result.active_groups),
            "available_tools": sorted(result.after.visible_names),
            "errors": [e.message for e in result.errors],
        }
        return Reply(structured(data, is_error=failed), list_changed=changed)

    def _enable_tool(self) -> MetaTool:
        async def run(request: Request, arguments: Mapping[str, Any]) -> Reply:
            groups = group_names_arg(arguments)
            detail = detail_arg(arguments)
            return self._change_reply(await request.session.activate(groups), request, detail)

        if self.style == "activators":
            # the activators name every group; this opens several in one call
            text = (
                "Enable several tool groups at once; "
                f"{self.names.describe_tools} gives the tools you pick in full."
            )
        else:
            text = (
                "Enable tool groups: their tools join your list and the answer names them, "
                f"one line each; {self.names.describe_tools} gives the ones you pick in full. "
                "A child group needs its parent enabled too."
            )
        return MetaTool(
            self.names.enable_tools,
            text,
            OPEN_GROUPS_SCHEMA,
            run,
            names_groups=self.style == "menu",
        )

    def _disable_tool(self) -> MetaTool:
        async def run(request: Request, arguments: Mapping[str, Any]) -> Reply:
            groups = group_names_arg(arguments, optional=())
            return self._change_reply(await request.session.deactivate(groups), request)

        return MetaTool(
            self.names.disable_tools,
            "Disable tool groups you no longer need, and their child groups.",
            GROUPS_SCHEMA,
            run,
        )
