"""Every count agrees with every other one: a ``ToolSet``, the gateway and ``toolgate
inspect`` count with the one tokenizer ``best_counter`` picks; ``tool.selection`` names
it; ``groups/get`` counts what its answer carries as the benchmarks do; WebMCP's listing
is a selection like an MCP listing; a tool without a description keeps its title in a
summary. In process; the vocabulary is ``../shared/data/tokenizers/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from _fixtures.core import ok
from toolgate import Event, Group, Principal, Tool, ToolSet
from toolgate.errors import UnknownToolsets
from toolgate.gateway.config.build import build_toolset
from toolgate.gateway.config.model import parse_config
from toolgate.identity import Caller
from toolgate.strategies import Delivery, DeliveryConfig
from toolgate.strategies.base import GROUPS_EXTENSION
from toolgate.strategies.detail import index_entry, summary_wire
from toolgate.strategies.groups import GroupsStrategy
from toolgate.tokens import TokenCounter, best_counter, model_text, wire_text
from toolgate.webmcp import webmcp_routes
from toolgate.wire import jsonrpc_code

O200K = "tiktoken:o200k_base"


@pytest.fixture(autouse=True)
def _only_the_vocabularies_set_up(no_ambient_vocabulary: None) -> None:
    """Before any fixture that sets a vocabulary up (an autouse fixture comes first)."""


@pytest.fixture
def vocabulary(monkeypatch: pytest.MonkeyPatch, shared_data: Path) -> None:
    monkeypatch.setenv("TOOLGATE_TOKENIZER_DIR", str(shared_data / "tokenizers"))


def selections(events: list[Event]) -> list[dict[str, Any]]:
    return [dict(e.data) for e in events if e.type == "tool.selection"]


def small_toolset(**options: Any) -> ToolSet:
    ts = ToolSet(**options)
    ts.add_groups([Group("math", "Arithmetic."), Group("wiki", "Pages.")])
    ts.add_tools(
        [
            Tool("whoami", "Who am I.", handler=ok),
            Tool("add", "Add two numbers.", handler=ok, groups=("math",)),
            Tool("page", "Read a page.", handler=ok, groups=("wiki",)),
        ]
    )
    return ts


# -- D2: one tokenizer, named ------------------------------------------------------------


@pytest.mark.usefixtures("vocabulary")
def test_a_toolset_counts_with_the_tokenizer_inspect_uses() -> None:
    ts = small_toolset()
    view = ts.view(ts.default_principal, ts.initial_state())
    assert ts.token_counter.name == best_counter().name == O200K
    assert ts.estimate(view)["tokenizer"] == O200K
    counter = best_counter()
    assert ts.view_tokens(view) == sum(counter.count(model_text(t.wire())) for t in view.visible)


def test_without_a_vocabulary_a_toolset_counts_characters() -> None:
    assert small_toolset().token_counter.name == best_counter().name == "chars/4"


@pytest.mark.usefixtures("vocabulary")
def test_the_gateway_counts_its_budget_with_the_tokenizer_inspect_reports() -> None:
    cfg = parse_config({"mcpServers": {"w": {"command": "w"}}, "toolgate": {"max_tokens": 500}})
    listed = {"w": [{"name": "echo", "description": "Echo the text."}]}
    toolset, _ = build_toolset(cfg, listed, lambda tool: ok)
    assert toolset.token_counter.name == O200K


async def test_a_selection_names_the_tokenizer_that_counted() -> None:
    class Words(TokenCounter):
        name = "words"

        def count(self, text: str) -> int:
            return len(text.split())

    for counter in (TokenCounter(), Words()):
        ts = small_toolset(token_counter=counter)
        seen: list[Event] = []
        ts.events.subscribe(seen.append)
        delivery = Delivery(ts, DeliveryConfig(strategy="list_changed"))
        strategy, request = delivery.request(session_key="s")
        await delivery.list_tools(strategy, request)
        (listed,) = selections(seen)
        assert listed["tokenizer"] == counter.name


# -- D5: groups/get under a malformed per-request view -----------------------------------


@pytest.mark.parametrize(
    ("view", "principal"),
    [
        (("wiki2",), Principal(id="bob")),  # unknown
        (("wiki",), Principal(id="alice", scope=("math",))),  # out of scope
    ],
)
async def test_groups_get_refuses_a_malformed_view_as_tools_list_does(
    view: tuple[str, ...], principal: Principal
) -> None:
    ts = small_toolset()
    delivery = Delivery(ts, DeliveryConfig(strategy="auto"))
    listing, request = delivery.request(
        session_key=None,
        principal=principal,
        protocol="2026-07-28",
        extensions=frozenset({GROUPS_EXTENSION}),
        toolsets=view,
    )
    groups = delivery.strategies["groups"]
    assert isinstance(groups, GroupsStrategy)
    with pytest.raises(UnknownToolsets) as listed:
        await delivery.list_tools(listing, request)
    with pytest.raises(UnknownToolsets) as got:
        await groups.groups_get(request, "math")
    assert got.value.message == listed.value.message
    assert jsonrpc_code(got.value) == jsonrpc_code(listed.value) == -32602


# -- D6: groups/get counts what it carries ------------------------------------------------


async def test_groups_get_counts_its_tools_in_model_form_and_the_rest_as_compact_json() -> None:
    ts = ToolSet()
    ts.add_groups(
        [
            Group("repos", "Repositories.", instructions="Always confirm the owner first. " * 20),
            Group("admin", "Repository administration.", parent="repos"),
        ]
    )
    ts.add_tools(
        [
            Tool("fork", "Fork a repository.", handler=ok, groups=("repos",)),
            Tool("delete_repo", "Delete a repository.", handler=ok, groups=("admin",)),
        ]
    )
    seen: list[Event] = []
    ts.events.subscribe(seen.append)
    delivery = Delivery(ts, DeliveryConfig(strategy="groups"))
    strategy, request = delivery.request(session_key="s", extensions=frozenset({GROUPS_EXTENSION}))
    assert isinstance(strategy, GroupsStrategy)
    answer = await strategy.groups_get(request, "repos")
    (opened,) = selections(seen)
    counter = ts.token_counter
    rest = {
        "instructions": answer["instructions"],
        "contents": {"groups": answer["contents"]["groups"]},
    }
    expected = sum(counter.count(model_text(t)) for t in answer["contents"]["tools"])
    expected += counter.count(wire_text(rest))
    assert (opened["kind"], opened["shown"]) == ("group", 1)
    assert opened["tokens_shown"] == expected


# -- D7: WebMCP's listing is a selection --------------------------------------------------


async def test_a_webmcp_listing_emits_one_selection_like_an_mcp_listing() -> None:
    ts = small_toolset()
    seen: list[Event] = []
    ts.events.subscribe(seen.append)
    delivery = Delivery(ts, DeliveryConfig(strategy="list_changed"))

    def identity(caller: Caller) -> Principal:
        return Principal(id="bob", authenticated=True)

    app = Starlette(routes=webmcp_routes(delivery, identity))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        published = await http.get("/webmcp/tools", headers={"Authorization": "Bearer t"})
    assert published.status_code == 200
    (listed,) = selections(seen)
    (event,) = [e for e in seen if e.type == "tool.selection"]
    assert (event.session, event.principal) == ("webmcp:bob", "bob")
    tools = published.json()["tools"]
    strategy, request = delivery.request(session_key="other", principal=Principal(id="bob"))
    await delivery.list_tools(strategy, request)
    assert selections(seen)[-1] == listed  # the same counts an MCP listing gives
    assert listed["tokens_shown"] == sum(strategy.wire_tokens(w) for w in tools)


# -- D8: a tool without a description keeps its title -------------------------------------


@pytest.mark.parametrize(
    "tool",
    [
        Tool("untitled", "", title="Convert a PDF to text.", handler=ok),
        Tool("untitled", "", annotations={"title": "Convert a PDF to text."}, handler=ok),
    ],
)
def test_a_tool_without_a_description_is_summarized_by_its_title(tool: Tool) -> None:
    assert tool.summary_text == "Convert a PDF to text."
    summary = summary_wire(tool.wire(), tool)
    assert summary["description"] == "Convert a PDF to text. Full definition: describe_tools."
    assert index_entry(tool) == "untitled(): Convert a PDF to text."
