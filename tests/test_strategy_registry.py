"""An open set of strategies: a third party registers one by name, and every place that
names strategies (``Delivery``, ``DeliveryConfig``, the gateway's config, its JSON Schema,
the docs) reads the registry.

Clients are real (``mcp.Client`` over the SDK's low-level ``Server``, ``fastmcp.Client``
over FastMCP, ``mcp.Client`` over an in-process gateway with a stdio backend), in memory.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import fastmcp
import pytest
from mcp import Client
from mcp.server import Server

from _fixtures.gateway import SERVERS
from _fixtures.mcp_servers import text, tool_names
from toolgate import ConfigError, RegistrationError, ToolSet
from toolgate.catalog import CallContext, Tool
from toolgate.fastmcp import ToolgateMiddleware
from toolgate.gateway.config.model import json_schema, parse_config
from toolgate.gateway.serve import Gateway
from toolgate.identity import IdentityResolver
from toolgate.lowlevel import bind
from toolgate.strategies import (
    CatalogStrategy,
    Delivery,
    DeliveryConfig,
    FlatStrategy,
    GroupsStrategy,
    ListChangedStrategy,
    Request,
    SearchStrategy,
    StrategyInputs,
    StrategyRegistry,
    default_registry,
)
from toolgate.view import View

ROOT = Path(__file__).resolve().parents[1]
BUILTIN = ("list_changed", "catalog", "groups", "search", "flat")
GROUPS = frozenset({"io.modelcontextprotocol/groups"})


class ReadOnlyStrategy(FlatStrategy):
    """Lists the accessible tools that only read; the others run when called, as in
    ``flat`` (discovery is not access control)."""

    name = "read_only"

    def listed(self, request: Request, view: View) -> Sequence[Tool]:
        return [t for t in view.visible if (t.annotations or {}).get("readOnlyHint")]


def read_only(inputs: StrategyInputs) -> ReadOnlyStrategy:
    return ReadOnlyStrategy(inputs.toolset, names=inputs.names, addons=inputs.addons)


def notes_toolset() -> ToolSet:
    notes: dict[str, str] = {"todo": "buy milk"}
    string = {"type": "string"}
    name = {"type": "object", "properties": {"name": string}, "required": ["name"]}
    text_too = {"type": "object", "properties": {"name": string, "text": string}}

    def write(a: Mapping[str, Any], c: CallContext) -> str:
        notes[str(a["name"])] = str(a["text"])
        return "saved"

    toolset = ToolSet("notes")
    toolset.add_tool(
        Tool(
            "read_note",
            "Read a note.",
            handler=lambda a, c: notes.get(str(a["name"]), ""),
            input_schema=name,
            annotations={"readOnlyHint": True},
        )
    )
    toolset.add_tool(Tool("write_note", "Write a note.", handler=write, input_schema=text_too))
    return toolset


def registry_with_read_only() -> StrategyRegistry:
    registry = StrategyRegistry()
    registry.register("read_only", read_only)
    return registry


@pytest.fixture
def read_only_by_default() -> Iterator[None]:
    """``read_only`` in the default registry (what the gateway's config reads), for
    this test only: other tests in this process see the built-ins alone."""
    default_registry.register("read_only", read_only)
    try:
        yield
    finally:
        default_registry.unregister("read_only")


# -- a client sees a registered strategy --------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_registered_strategy_serves_clients_of_both_eras_through_the_lowlevel_adapter(
    mode: str,
) -> None:
    server: Server[Any] = Server("notes")
    config = DeliveryConfig(strategy="read_only", registry=registry_with_read_only())
    binding = bind(server, notes_toolset(), config, identity=IdentityResolver())
    assert type(binding.delivery.choose(None, frozenset())) is ReadOnlyStrategy
    async with Client(server, mode=mode) as client:
        assert await tool_names(client) == ["read_note"]
        assert text(await client.call_tool("read_note", {"name": "todo"})) == "buy milk"
        # listed or not, an accessible tool runs: the strategy only decides what is shown
        assert text(await client.call_tool("write_note", {"name": "a", "text": "b"})) == "saved"
        assert text(await client.call_tool("read_note", {"name": "a"})) == "b"


async def test_a_registered_strategy_serves_a_fastmcp_client() -> None:
    mcp: fastmcp.FastMCP[Any] = fastmcp.FastMCP("notes")
    config = DeliveryConfig(strategy="read_only", registry=registry_with_read_only())
    ToolgateMiddleware(notes_toolset(), config).attach(mcp)
    async with fastmcp.Client(mcp, mode="legacy") as client:
        assert [t.name for t in await client.list_tools()] == ["read_note"]
        read = await client.call_tool("read_note", {"name": "todo"})
    assert text(read) == "buy milk"


async def test_the_gateway_serves_a_strategy_registered_before_it_is_built(
    read_only_by_default: None,
) -> None:
    math = {"command": sys.executable, "args": [str(SERVERS / "gw_math.py")]}
    cfg = parse_config(
        {"mcpServers": {"math": math}, "toolgate": {"strategy": "read_only", "always": ["*"]}}
    )
    gateway = Gateway(cfg)
    try:
        async with gateway.running():
            assert type(gateway.delivery.choose("2025-11-25", frozenset())) is ReadOnlyStrategy
            async with Client(gateway.server, mode="legacy") as client:
                listed = await tool_names(client)
                added = await client.call_tool("add", {"a": 2, "b": 40})
    finally:
        await gateway.close()
    # the math backend marks no tool read-only: none is listed (any built-in would list
    # them, or meta-tools), and each still runs when called
    assert sorted(gateway.toolset.catalog.tools) == ["add", "echo", "multiply"]
    assert listed == []
    assert text(added) == "42"


# -- the gateway's config and its schema read the registry --------------------------------


def test_the_gateway_config_accepts_a_registered_name_and_its_schema_lists_it(
    read_only_by_default: None,
) -> None:
    cfg = parse_config({"mcpServers": {}, "toolgate": {"strategy": "read_only"}})
    assert cfg.toolgate.strategy == "read_only"
    enum = json_schema()["$defs"]["ToolgateConfig"]["properties"]["strategy"]["enum"]
    assert enum == ["auto", *BUILTIN, "read_only"]


def test_the_gateway_config_refuses_an_unknown_strategy_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"mcpServers": {}, "toolgate": {"strategy": "read_only"}})
    assert raised.value.details["problems"] == [
        {
            "key": "toolgate.strategy",
            "message": "unknown strategy 'read_only'; known: auto, list_changed, catalog, "
            "groups, search, flat",
        }
    ]
    enum = json_schema()["$defs"]["ToolgateConfig"]["properties"]["strategy"]["enum"]
    assert enum == ["auto", *BUILTIN]


def test_delivery_config_refuses_a_name_its_registry_does_not_hold() -> None:
    with pytest.raises(ConfigError) as raised:
        DeliveryConfig(strategy="read_only")
    assert raised.value.message == (
        "unknown strategy 'read_only'; known: auto, list_changed, catalog, groups, search, flat"
    )
    assert raised.value.details == {"key": "strategy"}
    assert DeliveryConfig(strategy="read_only", registry=registry_with_read_only())


def test_delivery_checks_the_name_again_when_the_registry_lost_it() -> None:
    registry = registry_with_read_only()
    config = DeliveryConfig(strategy="read_only", registry=registry)
    registry.unregister("read_only")
    with pytest.raises(ConfigError, match="unknown strategy 'read_only'"):
        Delivery(notes_toolset(), config)


# -- registering --------------------------------------------------------------------------


def test_re_registering_a_built_in_without_saying_so_is_refused() -> None:
    registry = StrategyRegistry()
    with pytest.raises(RegistrationError) as raised:
        registry.register("catalog", read_only)
    assert raised.value.message == (
        "strategy 'catalog' is already registered; pass replace=True to replace it"
    )
    registry.register("read_only", read_only)
    with pytest.raises(RegistrationError, match="'read_only' is already registered"):
        registry.register("read_only", read_only)
    assert registry.names == (*BUILTIN, "read_only")


def test_a_built_in_replaced_on_purpose_is_what_auto_picks() -> None:
    class MyCatalog(CatalogStrategy):
        pass

    registry = StrategyRegistry()
    registry.register(
        "catalog",
        lambda i: MyCatalog(i.toolset, names=i.names, addons=i.addons),
        replace=True,
    )
    delivery = Delivery(notes_toolset(), DeliveryConfig(registry=registry))
    assert type(delivery.choose("2026-07-28", frozenset())) is MyCatalog
    assert type(delivery.choose("2025-11-25", frozenset())) is ListChangedStrategy
    assert registry.names == BUILTIN  # replaced in place, not appended


def test_a_built_in_cannot_be_removed_and_auto_cannot_be_registered() -> None:
    registry = StrategyRegistry()
    with pytest.raises(RegistrationError, match="built-in strategy 'flat' cannot be removed"):
        registry.unregister("flat")
    with pytest.raises(RegistrationError, match="'auto' is not a strategy"):
        registry.register("auto", read_only)
    with pytest.raises(RegistrationError, match="no strategy 'mine' is registered"):
        registry.unregister("mine")
    assert registry.names == BUILTIN


@pytest.mark.parametrize(
    ("name", "factory", "message"),
    [
        ("Read-Only", read_only, "strategy name 'Read-Only' is not valid"),
        ("x" * 65, read_only, "strategy names are at most 64 characters; got one of 65"),
        ("read_only", "read_only", "the factory of strategy 'read_only' must be callable"),
    ],
)
def test_a_malformed_registration_is_refused_naming_the_problem(
    name: str, factory: Any, message: str
) -> None:
    registry = StrategyRegistry()
    with pytest.raises(RegistrationError) as raised:
        registry.register(name, factory)
    assert raised.value.message.startswith(message)
    assert registry.names == BUILTIN


def test_a_factory_must_build_a_strategy_named_as_registered() -> None:
    registry = StrategyRegistry()
    registry.register("mine", lambda i: FlatStrategy(i.toolset))
    with pytest.raises(RegistrationError) as raised:
        Delivery(notes_toolset(), DeliveryConfig(registry=registry))
    assert raised.value.message == (
        "the factory of strategy 'mine' built FlatStrategy, whose name is 'flat'; "
        "set name = 'mine' on the class"
    )
    registry.register("mine", lambda i: object(), replace=True)  # type: ignore[arg-type,return-value]
    with pytest.raises(RegistrationError, match="returned object, not a Strategy"):
        Delivery(notes_toolset(), DeliveryConfig(registry=registry))


def test_a_copy_changes_without_touching_the_registry_it_came_from() -> None:
    copy = default_registry.copy()
    copy.register("read_only", read_only)
    assert "read_only" in copy
    assert "read_only" not in default_registry
    assert default_registry.names == BUILTIN
    assert default_registry.choices == ("auto", *BUILTIN)


# -- the built-ins behave as before -------------------------------------------------------


def test_every_built_in_name_builds_the_strategy_it_always_built() -> None:
    delivery = Delivery(notes_toolset(), DeliveryConfig(registry=registry_with_read_only()))
    assert {n: type(s) for n, s in delivery.strategies.items()} == {
        "list_changed": ListChangedStrategy,
        "catalog": CatalogStrategy,
        "groups": GroupsStrategy,
        "search": SearchStrategy,
        "flat": FlatStrategy,
        "read_only": ReadOnlyStrategy,
    }
    assert all(s.name == n for n, s in delivery.strategies.items())


@pytest.mark.parametrize("registry", [default_registry, registry_with_read_only()])
def test_auto_resolves_among_the_built_ins_whatever_else_is_registered(
    registry: StrategyRegistry,
) -> None:
    delivery = Delivery(notes_toolset(), DeliveryConfig(strategy="auto", registry=registry))
    picks = {
        (protocol, bool(ext)): delivery.choose(protocol, ext).name
        for protocol in ("2025-11-25", "2026-07-28")
        for ext in (frozenset(), GROUPS)
    }
    assert picks == {
        ("2025-11-25", False): "list_changed",
        ("2026-07-28", False): "catalog",
        ("2025-11-25", True): "groups",
        ("2026-07-28", True): "groups",
    }


# -- the docs list what the registry holds ------------------------------------------------


def _cell_names(page: str, row: str) -> list[str]:
    """The backticked names in the cell after ``row``'s first cells, on ``page``."""
    (line,) = [x for x in (ROOT / page).read_text().splitlines() if x.startswith(row)]
    return re.findall(r"`(\w+)`", line.removeprefix(row).split("|")[0])


def test_the_docs_list_exactly_the_registered_strategies() -> None:
    strategies = (ROOT / "docs" / "strategies.md").read_text()
    shows = strategies.split("## What each strategy shows", 1)[1].split("\n## ", 1)[0]
    bullets = re.findall(r"^- \*\*`(\w+)`\*\*", shows, flags=re.MULTILINE)
    # toolsets is the per-request view, not a strategy a config names
    assert [b for b in bullets if b != "toolsets"] == list(default_registry.names)
    assert _cell_names("docs/guides/operators.md", '| `strategy` | `"auto"` |') == list(
        default_registry.choices
    )
    assert _cell_names("docs/guides/sdk.md", "| `strategy` |") == list(default_registry.choices)
