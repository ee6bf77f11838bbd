"""Every pointer a list or an answer gives names something the same view offers, and
showing what a change would do changes nothing.

In process, over ``Delivery``: a request naming toolsets with lazy descriptions lists
the ``describe_tools`` its shortened tools point at; ``search_tools`` where no add-on
describes tools gives every match in full and names no missing meta-tool; a toolset is
named as the catalog names it or as ``groups/list`` does; the catalog's
``enable_tools`` answer is a trial: no ``group.activated`` event, no hook run.
"""

from __future__ import annotations

import json

import pytest

from toolgate import Group, Tool, ToolSet
from toolgate.errors import DescriptionRequired
from toolgate.events import Event
from toolgate.strategies import Delivery, DeliveryConfig
from toolgate.strategies.lazy import LazyDescriptions

LEGACY = "2025-11-25"
STATELESS = "2026-07-28"
GROUPS_EXTENSION = frozenset({"io.modelcontextprotocol/groups"})
ADD = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def toolset(hooked: list[str] | None = None) -> ToolSet:
    ts = ToolSet("pointers")
    ts.add_group(
        Group(
            "pull_requests",
            "Pull requests.",
            on_activate=(lambda ctx: hooked.append(ctx.group)) if hooked is not None else None,
        )
    )
    ts.add_tools(
        [
            Tool(
                f"pr_{n}",
                f"Work on a pull request, {n}.",
                handler=lambda a, c: json.dumps(a),
                input_schema=ADD,
                groups=("pull_requests",),
            )
            for n in ("read", "merge", "close")
        ]
    )
    ts.add_tool(Tool("ping", "Ping.", handler=lambda a, c: "pong"))
    return ts


@pytest.mark.parametrize("protocol", [LEGACY, STATELESS])
@pytest.mark.parametrize("strategy", ["list_changed", "catalog", "auto"])
async def test_a_toolsets_view_with_lazy_descriptions_lists_the_describe_tools_it_points_at(
    strategy: str, protocol: str
) -> None:
    ts = toolset()
    lazy = LazyDescriptions(ts, schema="minimal")
    d = Delivery(ts, DeliveryConfig(strategy=strategy), addons=[lazy])
    key = "s1" if protocol == LEGACY else None
    chosen, req = d.request(session_key=key, protocol=protocol, toolsets=("pull_requests",))
    listed = {t["name"]: t for t in (await d.list_tools(chosen, req)).items}
    assert chosen.name == "toolsets"
    assert listed["pr_read"]["description"].endswith("Full definition: describe_tools.")
    assert "describe_tools" in listed
    described = await d.call_tool(chosen, req, "describe_tools", {"tools": ["pr_read"]})
    assert described.result.is_error is False
    ran = await d.call_tool(chosen, req, "pr_read", {"a": 1})
    assert ran.result.text_content == '{"a": 1}'


async def test_a_toolsets_view_without_lazy_descriptions_lists_no_meta_tool() -> None:
    d = Delivery(toolset(), DeliveryConfig(strategy="catalog"))
    chosen, req = d.request(session_key=None, protocol=STATELESS, toolsets=("pull_requests",))
    listed = [t["name"] for t in (await d.list_tools(chosen, req)).items]
    assert listed == ["ping", "pr_close", "pr_merge", "pr_read"]


@pytest.mark.parametrize("strategy", ["flat", "groups"])  # groups: no extension, flattened
async def test_search_where_nothing_describes_tools_gives_every_match_in_full(
    strategy: str,
) -> None:
    d = Delivery(toolset(), DeliveryConfig(strategy=strategy, search=True, search_full_results=1))
    chosen, req = d.request(session_key="s1", protocol=LEGACY)
    listed = {t["name"]: t for t in (await d.list_tools(chosen, req)).items}
    assert "describe_tools" not in listed and "call_tool" not in listed
    description = listed["search_tools"]["description"]
    assert "describe_tools" not in description and "call_tool" not in description
    assert description.endswith("Matches come in full; run them directly.")
    answer = (await d.call_tool(chosen, req, "search_tools", {"query": "pull request"})).result
    data = answer.structured
    assert data is not None
    assert "more" not in data
    assert [r["tool"]["name"] for r in data["results"]] == ["pr_close", "pr_merge", "pr_read"]


async def test_search_where_describe_tools_exists_points_at_it_as_before() -> None:
    d = Delivery(toolset(), DeliveryConfig(strategy="catalog", search=True, search_full_results=1))
    chosen, req = d.request(session_key=None, protocol=STATELESS)
    listed = {t["name"]: t for t in (await d.list_tools(chosen, req)).items}
    assert listed["search_tools"]["description"].endswith(
        "The best match comes in full, the rest one line each (describe_tools gives them "
        "in full); run them directly or via call_tool."
    )
    data = (await d.call_tool(chosen, req, "search_tools", {"query": "pull request"})).result
    assert data.structured is not None and len(data.structured["more"]) == 2


@pytest.mark.parametrize("named", ["pull_requests", "pull-requests"])
async def test_a_toolset_is_named_as_the_catalog_or_as_groups_list_names_it(named: str) -> None:
    d = Delivery(toolset(), DeliveryConfig(strategy="groups"))
    chosen, req = d.request(session_key=None, protocol=STATELESS, toolsets=(named,))
    listed = [t["name"] for t in (await d.list_tools(chosen, req)).items]
    assert listed == ["ping", "pr_close", "pr_merge", "pr_read"]
    groups = d.strategies["groups"]
    _, ext = d.request(
        session_key=None, protocol=STATELESS, extensions=GROUPS_EXTENSION, toolsets=(named,)
    )
    assert [g["name"] for g in groups.groups_list(ext)["groups"]] == ["pull-requests"]  # type: ignore[attr-defined]


async def test_the_catalogs_enable_tools_answer_is_a_trial_that_tells_and_runs_nothing() -> None:
    hooked: list[str] = []
    ts = toolset(hooked)
    seen: list[Event] = []
    ts.events.subscribe(seen.append)
    d = Delivery(ts, DeliveryConfig(strategy="catalog"))
    chosen, req = d.request(session_key="sess-1", protocol=LEGACY)
    reply = await d.call_tool(chosen, req, "enable_tools", {"groups": ["pull_requests"]})
    data = reply.result.structured
    assert data is not None and data["enabled_groups"] == ["pull_requests"]
    assert hooked == []  # a hook's effects would be real
    assert [e.type for e in seen] == ["tool.selection"]
    assert seen[0].session == "sess-1"
    assert (await ts.store.load("sess-1")).version == 0  # nothing stored


@pytest.mark.parametrize(
    ("full_results", "said"),
    [
        (0, "Each match comes in one line (describe_tools gives them in full)"),
        (1, "The best match comes in full, the rest one line each (describe_tools gives"),
        (3, "The best 3 matches come in full, the rest one line each (describe_tools gives"),
    ],
)
async def test_search_says_how_many_matches_come_in_full(full_results: int, said: str) -> None:
    config = DeliveryConfig(strategy="catalog", search=True, search_full_results=full_results)
    d = Delivery(toolset(), config)
    chosen, req = d.request(session_key=None, protocol=STATELESS)
    listed = {t["name"]: t for t in (await d.list_tools(chosen, req)).items}
    assert said in listed["search_tools"]["description"]
    data = (await d.call_tool(chosen, req, "search_tools", {"query": "pull request"})).result
    assert data.structured is not None
    assert len(data.structured["results"]) == min(full_results, 3)


async def test_a_search_result_given_in_full_counts_as_described_under_lazy_descriptions() -> None:
    ts = toolset()
    lazy = LazyDescriptions(ts)
    d = Delivery(ts, DeliveryConfig(strategy="search", search_full_results=1), addons=[lazy])
    chosen, req = d.request(session_key="s1", protocol=LEGACY)
    found = await d.call_tool(chosen, req, "search_tools", {"query": "pull request merge"})
    data = found.result.structured
    assert data is not None
    [best] = [r["name"] for r in data["results"]]
    ran = await d.call_tool(chosen, req, best, {"a": 1})  # its definition was read: it runs
    assert ran.result.text_content == '{"a": 1}'
    [line, *_] = data["more"]
    other = line.split("(")[0]
    with pytest.raises(DescriptionRequired):  # one line is not a definition: describe first
        await d.call_tool(chosen, req, other, {"a": 1})
