"""``catalog``: a fixed tool list and meta-tools to browse the rest (stateless).

``tools/list`` never varies with activation: the initial view plus ``list_groups``,
``get_group`` and ``call_tool``; ``enable_tools`` stays as an alias that returns the
menu fields and records nothing. Any accessible tool runs, through ``call_tool`` or a
direct call: discovery gating is not access control. Delivery layer: no MCP imports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolgate.errors import GroupNotFound, InvalidArguments
from toolgate.strategies.arguments import (
    DETAIL_PROPERTY,
    OPEN_GROUPS_SCHEMA,
    detail_arg,
    group_name_problem,
    group_names_arg,
    unexpected_arguments,
)
from toolgate.strategies.base import (
    READ_ONLY,
    MetaTool,
    Reply,
    Request,
    Strategy,
    emit_selection,
    error_result,
    opening_answer,
)
from toolgate.strategies.detail import Detail, tool_entries
from toolgate.view import View

GET_GROUP_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "detail": DETAIL_PROPERTY,
    },
    "required": ["name"],
}


def group_contents(view: View, name: str, detail: Detail = "full") -> dict[str, Any]:
    """A group's instructions, its tools the principal may run now (at ``detail``), and
    its child groups in scope. Raises ``GroupNotFound`` (unknown or out of scope)."""
    verdict, cat = view.group(name), view.ctx.catalog
    g = verdict.group
    if g is None or not verdict.visible:
        raise GroupNotFound(name)
    tools = [view.surfacing(t) for t in cat.tools_in(name)]
    children = [c.group for c in map(view.group, cat.children(name)) if c.visible and c.group]
    out: dict[str, Any] = {"name": g.name, "description": g.description}
    if g.title is not None:
        out["title"] = g.title
    if g.instructions is not None:
        out["instructions"] = g.instructions
    visible = [s.tool for s in tools if s.visible and s.tool is not None]
    out["tools"] = tool_entries(visible, detail)
    out["groups"] = [
        {"name": c.name, "description": c.description, **({"title": c.title} if c.title else {})}
        for c in children
    ]
    return out


class CatalogStrategy(Strategy):
    name = "catalog"
    open_groups = True
    on_demand = True

    def base_meta_tools(self) -> list[MetaTool]:
        return [
            self._list_groups_tool(),
            self._get_group_tool(),
            self._call_tool_tool(),
            self._enable_alias_tool(),
        ]

    async def list_tools(self, request: Request) -> list[dict[str, Any]]:
        # The listed tools are the initial view, whatever this session has opened.
        listed_session = request.session.toolset.session(None, request.session.principal)
        listed = Request(listed_session, request.protocol, request.extensions)
        return await super().list_tools(listed)

    def _get_group_tool(self) -> MetaTool:
        async def run(request: Request, arguments: Mapping[str, Any]) -> Reply:
            unexpected_arguments(arguments, ("name", "detail"))
            if "name" not in arguments:
                raise InvalidArguments("get_group needs 'name', a group name")
            name = arguments["name"]
            problem = group_name_problem(name)
            if problem is not None:
                raise InvalidArguments(f"'name' must be a group name: {problem}")
            detail = detail_arg(arguments)
            view = await request.session.view()
            try:
                contents = group_contents(view, name, detail)
            except GroupNotFound as exc:
                return Reply(error_result(exc.message, code=exc.code))
            answer = opening_answer(contents)
            opened = [{"name": t} for t in group_contents(view, name, "names")["tools"]]
            emit_selection(request, "group", self, opened, result=answer)
            return Reply(answer)

        return MetaTool(
            self.names.get_group,
            "Open a tool group: its instructions, child groups and tools, one line each; "
            f"{self.names.describe_tools} gives the ones you pick in full, then run them "
            f"directly or with call_tool. Several groups: {self.names.enable_tools}.",
            GET_GROUP_SCHEMA,
            run,
            READ_ONLY,
            names_groups=True,
        )

    def _enable_alias_tool(self) -> MetaTool:
        async def run(request: Request, arguments: Mapping[str, Any]) -> Reply:
            groups = group_names_arg(arguments)
            detail = detail_arg(arguments)
            principal = request.session.principal
            # Nothing is recorded, and nothing told: a trial session computes what enabling
            # would show, with no group.activated events and no group hooks run
            trial = request.session.toolset.session(None, principal, trial=True)
            result = await trial.activate(groups)
            data = self.menu_result(result, Request(trial, request.protocol), detail)
            nothing = not result.changed
            answer = opening_answer(data, is_error=nothing and bool(result.errors))
            opened = [{"name": t.name} for t in result.newly_visible]
            emit_selection(request, "group", self, opened, result=answer)
            return Reply(answer)

        return MetaTool(
            self.names.enable_tools,
            f"Like {self.names.get_group}, for several groups at once. Nothing needs "
            "enabling: every tool you may use runs directly or through call_tool.",
            OPEN_GROUPS_SCHEMA,
            run,
            READ_ONLY,
        )
