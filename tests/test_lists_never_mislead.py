"""Lists that never mislead, counts as a model reads, groups that answer any request.

Through ``toolgate serve`` over streamable HTTP with real clients on both protocol eras:
a tool listed with less than its full definition keeps its required arguments and their
types and says where the rest is; a call missing an argument is told which ones and
how to get the definition; ``groups/list`` and ``groups/get`` answer a request that
names toolsets; opening a group is a ``tool.selection`` event on the bus and in the
metrics. In process: a tool's icons and annotations never count as tokens.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastmcp
import httpx
import httpx2
import pytest
from fastmcp.client.transports import StreamableHttpTransport
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from prometheus_client.parser import text_string_to_metric_families
from pydantic import TypeAdapter

from _fixtures.gateway import HttpGateway, gateway_config, toolgate_argv
from toolgate import Group, Tool, ToolSet
from toolgate.client import GroupsClientExtension
from toolgate.client.extension import (
    GetGroupParams,
    GetGroupRequest,
    ListGroupsParams,
    ListGroupsRequest,
)
from toolgate.events import Event
from toolgate.strategies import Delivery, DeliveryConfig

ERAS = pytest.mark.parametrize("mode", ["legacy", "auto"])  # 2025-11-25; 2026-07-28
RAW: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])
NOTE_ADD = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}
POINTER = 'Call describe_tools with {"tools": ["add"]} for its full definition.'


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    """``strategy: auto``: legacy clients get ``list_changed``, 2026-07-28 ``catalog``,
    extension clients ``groups``."""
    tmp = tmp_path_factory.mktemp("lists-gateway")
    served = HttpGateway([*toolgate_argv(), "serve", str(gateway_config(tmp))], tmp / "gw.log")
    served.start()
    try:
        yield served
    finally:
        served.stop()


def client(
    url: str, mode: str, *, headers: dict[str, str] | None = None, groups: bool = False
) -> fastmcp.Client[Any]:
    transport = StreamableHttpTransport(url, headers=headers or {}, verify=False)
    extensions = [GroupsClientExtension()] if groups else []
    return fastmcp.Client(transport, mode=mode, extensions=extensions)


def events(gateway: HttpGateway) -> list[dict[str, Any]]:
    with (gateway.log.parent / "events.jsonl").open() as lines:
        return [json.loads(line) for line in lines]


# -- a refreshed list names every required argument -----------------------------------------
async def test_a_relisted_group_shows_required_arguments_to_a_fastmcp_client(
    gateway: HttpGateway,
) -> None:
    async with client(gateway.url, "legacy") as c:
        await c.call_tool("enable_tools", {"groups": ["notes"]})
        listed = {t.name: t for t in await c.list_tools()}
    note_add = listed["note_add"]
    assert note_add.input_schema == NOTE_ADD
    assert note_add.description == "Add a note. Full definition: describe_tools."
    assert listed["note_list"].input_schema == {"type": "object"}  # nothing is required


async def test_a_relisted_group_shows_required_arguments_to_an_sdk_client_session(
    gateway: HttpGateway,
) -> None:
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        streamable_http_client(gateway.url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await session.call_tool("enable_tools", {"groups": ["math"]})
        listed = {t.name: t for t in (await session.list_tools()).tools}
    assert listed["add"].input_schema == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    assert listed["add"].description is not None
    assert listed["add"].description.endswith("Full definition: describe_tools.")


@ERAS
async def test_a_call_missing_an_argument_names_the_required_ones_and_the_pointer(
    gateway: HttpGateway, mode: str
) -> None:
    async with client(gateway.url, mode) as c:
        if mode == "legacy":  # list_changed: open the group first; catalog runs any tool
            await c.call_tool("enable_tools", {"groups": ["math"]})
        result = await c.call_tool_mcp("add", {"a": 1})
    assert result.is_error is True
    text = result.content[0].text
    assert "'b' is a required property" in text
    assert text.endswith(f"Required arguments: a (integer), b (integer). {POINTER}")


# -- groups/* for a request that names toolsets ------------------------------------------------
async def groups_list(c: Any) -> dict[str, Any]:
    return dict(await c.session.send_request(ListGroupsRequest(params=ListGroupsParams()), RAW))


async def groups_get(c: Any, name: str) -> dict[str, Any]:
    req = GetGroupRequest(params=GetGroupParams(name=name))
    return dict(await c.session.send_request(req, RAW))


@ERAS
async def test_groups_requests_naming_toolsets_are_answered_with_those_groups(
    gateway: HttpGateway, mode: str
) -> None:
    async with client(gateway.url, mode, groups=True) as c:
        everything = await groups_list(c)
    view = {"X-MCP-Toolsets": "math"}
    async with client(gateway.url, mode, headers=view, groups=True) as c:
        named = await groups_list(c)
        other = await groups_get(c, "notes")  # navigation is not narrowed by a view
        math = await groups_get(c, "math")
    assert [g["name"] for g in everything["groups"]] == ["math", "notes"]
    assert named["groups"] == [{"name": "math", "description": "Arithmetic"}]
    assert {t["name"] for t in math["contents"]["tools"]} == {"add", "multiply", "echo"}
    assert "note_add" in {t["name"] for t in other["contents"]["tools"]}


@ERAS
async def test_groups_list_naming_an_unknown_toolset_is_invalid_params(
    gateway: HttpGateway, mode: str
) -> None:
    async with client(gateway.url, mode, headers={"X-MCP-Toolsets": "wiki"}, groups=True) as c:
        with pytest.raises(MCPError) as bad:
            await groups_list(c)
    assert bad.value.error.code == -32602
    assert "wiki" in bad.value.error.message


# -- opening a group is a selection event ------------------------------------------------------
async def test_opening_a_group_is_a_selection_event_on_the_bus_and_in_the_metrics(
    gateway: HttpGateway,
) -> None:
    async with client(gateway.url, "auto") as c:  # 2026-07-28: the catalog's get_group
        opened = await c.call_tool("get_group", {"name": "math"})
    async with client(gateway.url, "auto", groups=True) as c:
        await groups_get(c, "math")
    groups = [e for e in events(gateway) if e["type"] == "tool.selection" and e["kind"] == "group"]
    by_strategy = {e["strategy"]: e for e in groups}
    assert {"catalog", "groups"} <= set(by_strategy)
    for e in by_strategy.values():
        assert (e["shown"], e["meta"]) == (3, 0)  # add, multiply, echo
        assert e["tokens_shown"] > 0 and e["tokens_flat"] > e["tokens_shown"]
    assert "add(a, b): " in opened.content[0].text  # the compact index the model read
    async with httpx.AsyncClient() as http:
        scraped = (await http.get(f"http://127.0.0.1:{gateway.port}/metrics")).text
    samples = {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(scraped)
        for s in family.samples
    }
    for strategy in ("catalog", "groups"):
        key = (
            "toolgate_selections_total",
            frozenset({"kind": "group", "strategy": strategy}.items()),
        )
        assert samples[key] >= 1
    shown = (
        "toolgate_selection_tools_total",
        frozenset({"kind": "group", "bucket": "shown"}.items()),
    )
    assert samples[shown] >= 6


# -- counts, as a model reads ------------------------------------------------------------------
ICONS = ({"src": "data:image/png;base64," + "iVBORw0KGgo" * 400, "mimeType": "image/png"},)


def catalog_with(icons: bool) -> ToolSet:
    ts = ToolSet("icons")
    ts.add_group(Group("repos", "Repositories."))
    extra: dict[str, Any] = (
        {"icons": ICONS, "meta": {"ui": {"visibility": ["app"]}}} if icons else {}
    )
    ts.add_tools(
        [
            Tool(
                "fork",
                "Fork a repository.",
                handler=lambda a, c: "forked",
                input_schema={"type": "object", "properties": {"repo": {"type": "string"}}},
                groups=("repos",),
                annotations={"title": "Fork", "readOnlyHint": False},
                **extra,
            ),
            Tool("ping", "Check the server.", handler=lambda a, c: "pong"),
        ]
    )
    return ts


async def test_icons_and_annotations_cost_no_tokens_in_estimates_budgets_or_events() -> None:
    costs = []
    for icons in (False, True):
        ts = catalog_with(icons)
        seen: list[Event] = []
        ts.events.subscribe(seen.append)
        delivery = Delivery(ts, DeliveryConfig(strategy="catalog"))
        strategy, request = delivery.request(session_key="s")
        await delivery.list_tools(strategy, request)
        await delivery.call_tool(
            strategy, request, "get_group", {"name": "repos", "detail": "full"}
        )
        fork = ts.catalog.tools["fork"]
        selections = [e.data for e in seen if e.type == "tool.selection"]
        costs.append(
            (
                ts.tool_tokens(fork),
                ts.estimate(ts.view(ts.default_principal, ts.initial_state()))["total"],
                [(s["kind"], s["tokens_shown"], s["tokens_flat"]) for s in selections],
            )
        )
    assert costs[0] == costs[1]
    assert [kind for kind, _, _ in costs[1][2]] == ["list", "group"]


def test_the_docs_say_what_is_counted() -> None:
    text = " ".join((Path(__file__).parents[1] / "docs" / "tokens.md").read_text("utf-8").split())
    assert "name, description and input schema" in text
    assert "`icons`" in text and "`_meta`" in text and "annotations" in text
