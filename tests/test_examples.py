"""Every example in ``examples/`` runs: servers with real clients in memory and over stdio,
the agent loop end to end, and the example gateway config through ``toolgate check`` and
``toolgate serve``."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastmcp
import mcp_types as mt
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from _fixtures.mcp_servers import text
from toolgate.client import GroupsClientExtension

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
GATEWAY_CONFIG = EXAMPLES / "gateway" / "toolgate.json"
BIN = Path(sys.executable).parent


@pytest.fixture(autouse=True)
def examples_importable() -> Iterator[None]:
    sys.path.insert(0, str(EXAMPLES))
    yield
    sys.path.remove(str(EXAMPLES))


@pytest.fixture(autouse=True)
def quiet_clients() -> None:
    # the SDK client warns about tools found in groups rather than in tools/list
    logging.getLogger("client").setLevel(logging.ERROR)


def venv_env() -> dict[str, str]:
    """The environment a user has after activating the virtualenv: ``python`` is ours."""
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


async def names(client: Any) -> list[str]:
    listed = await client.list_tools()
    tools = listed.tools if hasattr(listed, "tools") else listed
    return [t.name for t in tools]


# -- examples/fastmcp_server.py ------------------------------------------------------------


async def test_fastmcp_example_reveals_a_group_then_its_stage_gated_tool_after_cart_add() -> None:
    from fastmcp_server import build

    async with fastmcp.Client(build(), mode="legacy") as client:
        assert await names(client) == [
            "call_tool",
            "describe_tools",
            "disable_tools",
            "enable_tools",
            "list_groups",
            "ping",
            "search_tools",
            "search_tools_regex",
            "whoami",
        ]
        enabled = await client.call_tool("enable_tools", {"groups": ["cart", "catalog"]})
        assert enabled.structured_content["enabled"] == ["catalog", "cart"]
        assert "pay" not in await names(client)
        early = await client.call_tool("pay", {}, raise_on_error=False)
        assert early.structured_content["reason"] == "stage-locked:checkout"
        await client.call_tool("cart_add", {"book_id": "dune"})
        assert "pay" in await names(client)
        paid = await client.call_tool("pay", {})
        assert paid.structured_content == {"paid": 12}


async def test_fastmcp_example_hides_the_verified_only_tool_and_its_group_like_unknown_ones() -> (
    None
):
    from fastmcp_server import build

    async with fastmcp.Client(build(), mode="legacy") as client:
        # every tool of "admin" needs trust "verified": to this caller the group is unknown too
        opened = await client.call_tool("enable_tools", {"groups": ["admin"]}, raise_on_error=False)
        with pytest.raises(MCPError) as err:
            await client.call_tool("set_price", {"book_id": "dune", "price": 1})
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("no_such_tool", {})
    assert opened.structured_content is not None
    assert opened.structured_content["errors"] == ["Unknown group: admin"]
    assert (err.value.error.code, err.value.error.message) == (-32602, "Unknown tool: set_price")
    assert unknown.value.error.code == err.value.error.code


async def test_fastmcp_example_search_finds_the_price_tool_first() -> None:
    from fastmcp_server import build

    async with fastmcp.Client(build(), mode="legacy") as client:
        found = await client.call_tool("search_tools", {"query": "price of a book", "limit": 1})
    assert [r["name"] for r in found.structured_content["results"]] == ["book_price"]


async def test_fastmcp_example_with_lazy_descriptions_wants_a_description_before_a_call() -> None:
    from fastmcp_server import build

    async with fastmcp.Client(build(lazy=True), mode="legacy") as client:
        listed = {t.name: t for t in await client.list_tools()}
        first = await client.call_tool("ping", {}, raise_on_error=False)
        await client.call_tool("describe_tools", {"tools": ["ping"]})
        second = await client.call_tool("ping", {})
    assert listed["ping"].input_schema == {"type": "object"}  # it has no required argument
    assert first.structured_content["code"] == "TOOL_DESCRIPTION_REQUIRED"
    assert text(second) == "pong"


async def test_fastmcp_example_on_the_stateless_protocol_offers_the_catalog_meta_tools() -> None:
    from fastmcp_server import build

    async with fastmcp.Client(build()) as client:
        assert await names(client) == [
            "call_tool",
            "describe_tools",
            "enable_tools",
            "get_group",
            "list_groups",
            "ping",
            "search_tools",
            "search_tools_regex",
            "whoami",
        ]
        found = await client.call_tool("find_book", {"words": "em"})
    assert found.structured_content == {"result": ["emma"]}


async def test_fastmcp_example_serves_over_stdio() -> None:
    params = StdioServerParameters(
        command=sys.executable, args=[str(EXAMPLES / "fastmcp_server.py")], env=venv_env()
    )
    async with Client(params, mode="legacy") as client:
        assert "enable_tools" in await names(client)
        assert text(await client.call_tool("ping", {})) == "pong"


# -- examples/lowlevel_server.py -----------------------------------------------------------


async def test_lowlevel_example_activators_follow_the_group_tree_and_the_exclusion() -> None:
    from lowlevel_server import build

    server, _ = build()
    async with Client(server, mode="legacy") as client:
        # every group's activator is listed, the nested edit's too (tmcp)
        assert await names(client) == [
            "calc_activate",
            "call_tool",
            "describe_tools",
            "edit_activate",
            "enable_tools",
            "files_activate",
            "list_groups",
            "ping",
        ]
        await client.call_tool("files_activate", {})
        await client.call_tool("edit_activate", {})
        assert await names(client) == [
            "calc_activate",
            "call_tool",
            "describe_tools",
            "edit_activate",  # edit has show_deactivator=False: no edit_deactivate
            "enable_tools",
            "files_activate",
            "files_deactivate",
            "files_edit_wipe",
            "files_edit_write",
            "files_read",
            "list_groups",
            "ping",
        ]
        await client.call_tool("calc_activate", {})  # calc and files exclude each other
        assert await names(client) == [
            "calc_activate",
            "calc_add",
            "calc_deactivate",
            "call_tool",
            "describe_tools",
            "edit_activate",
            "enable_tools",
            "files_activate",
            "list_groups",
            "ping",
        ]


async def test_lowlevel_example_confirm_policy_asks_the_human_through_elicitation() -> None:
    from lowlevel_server import NOTES, build

    asked: list[str] = []

    async def accept(context: Any, params: Any) -> mt.ElicitResult:
        asked.append(params.message)
        return mt.ElicitResult(action="accept", content={"confirm": True})

    server, _ = build()
    async with Client(server, mode="legacy") as refusing:
        await refusing.call_tool("files_activate", {})
        await refusing.call_tool("edit_activate", {})
        refused = await refusing.call_tool("files_edit_wipe", {})
    async with Client(server, mode="legacy", elicitation_callback=accept) as client:
        await client.call_tool("files_activate", {})
        await client.call_tool("edit_activate", {})
        wiped = await client.call_tool("files_edit_wipe", {})
    NOTES["todo"] = "buy milk"  # the examples share the module's notes
    assert refused.structured_content["code"] == "confirmation_refused"
    assert text(wiped) == "wiped"
    assert asked == ["Allow 'local' to run 'files_edit_wipe' with {}?"]


async def test_lowlevel_example_serves_over_stdio() -> None:
    params = StdioServerParameters(
        command=sys.executable, args=[str(EXAMPLES / "lowlevel_server.py")], env=venv_env()
    )
    async with Client(params, mode="legacy") as client:
        assert "files_activate" in await names(client)
        assert text(await client.call_tool("ping", {})) == "pong"


# -- examples/custom_strategy.py -----------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_custom_strategy_example_lists_every_tool_in_one_line_and_describes_on_demand(
    mode: str,
) -> None:
    from custom_strategy import build

    async with Client(build(), mode=mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        described = await client.call_tool("describe_tools", {"tools": ["km_to_miles"]})
        miles = await client.call_tool("km_to_miles", {"km": 10})
    assert sorted(listed) == ["celsius_to_fahrenheit", "describe_tools", "km_to_miles"]
    assert listed["km_to_miles"].description == (
        "Convert kilometres to miles. Full definition: describe_tools."
    )
    assert listed["km_to_miles"].input_schema == {
        "type": "object",
        "properties": {"km": {"type": "number"}},
        "required": ["km"],
    }
    full = described.structured_content["km_to_miles"]
    assert full["description"] == "Convert kilometres to miles. Rounded to three decimals."
    assert full["inputSchema"]["required"] == ["km"]
    assert text(miles) == "6.214"


async def test_custom_strategy_example_serves_over_stdio() -> None:
    params = StdioServerParameters(
        command=sys.executable, args=[str(EXAMPLES / "custom_strategy.py")], env=venv_env()
    )
    async with Client(params, mode="legacy") as client:
        assert "describe_tools" in await names(client)
        assert text(await client.call_tool("celsius_to_fahrenheit", {"celsius": 100})) == "212.0"


async def test_custom_strategy_example_runs_the_gateway_with_its_strategy_registered(
    tmp_path: Path,
) -> None:
    config = json.loads(GATEWAY_CONFIG.read_text())
    config["toolgate"]["strategy"] = "summaries"
    for server in config["mcpServers"].values():  # the backends beside the example config
        server["args"] = [str(GATEWAY_CONFIG.parent / a) for a in server["args"]]
    path = tmp_path / "toolgate.json"
    path.write_text(json.dumps(config))
    plain = subprocess.run(
        [*toolgate_command(), "check", "--offline", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=venv_env(),
    )
    assert (plain.returncode, plain.stderr) == (
        1,
        f"{path}: toolgate.strategy: unknown strategy 'summaries'; "
        "known: auto, list_changed, catalog, groups, search, flat\n",
    )
    launcher = [sys.executable, str(EXAMPLES / "custom_strategy.py"), "toolgate"]
    params = StdioServerParameters(
        command=launcher[0],
        args=[*launcher[1:], "serve", str(path), "--log-level", "error"],
        env=venv_env(),
    )
    async with Client(params, mode="legacy") as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        miles = await client.call_tool("units_km_to_miles", {"km": 10})
    assert sorted(listed) == [
        "describe_tools",
        "todo_add",
        "todo_list",
        "units_celsius_to_fahrenheit",
        "units_km_to_miles",
        "units_whoami",
        "whoami",
    ]
    assert listed["todo_add"].input_schema == {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    }
    assert text(miles) == "6.214"


# -- examples/agent_loop.py ----------------------------------------------------------------

TRANSCRIPT = [
    "mode: groups; tools at start: ['ping']",
    "task: read the note called todo",
    "  get_group files -> tools ['files_read']",
    '  call files_read {"name": "todo"} -> buy milk',
    "task: add two integers: 2 and 3",
    "  get_group calc -> tools ['calc_add']",
    '  call calc_add {"a": 2, "b": 3} -> 5',
    "task: write a note called shopping",
    "  get_group edit -> tools ['files_edit_wipe', 'files_edit_write']",
    '  call files_edit_write {"name": "shopping", "text": "eggs"} -> saved',
]


def test_agent_loop_script_prints_its_transcript() -> None:
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "agent_loop.py")],
        capture_output=True,
        text=True,
        timeout=30,
        env=venv_env(),
    )
    assert (run.returncode, run.stdout.splitlines(), run.stderr) == (0, TRANSCRIPT, "")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_agent_loop_opens_groups_through_the_extension_on_both_protocol_eras(
    mode: str,
) -> None:
    from agent_loop import run_tasks
    from lowlevel_server import build

    server, _ = build()
    async with Client(server, mode=mode, extensions=[GroupsClientExtension()]) as client:
        transcript = await run_tasks(client)
    assert transcript == TRANSCRIPT


async def test_agent_loop_uses_the_catalog_meta_tools_of_a_server_without_the_extension() -> None:
    from agent_loop import run_tasks
    from fastmcp_server import build

    async with fastmcp.Client(build(strategy="catalog")) as client:
        transcript = await run_tasks(client, [("find a book about dune", {"words": "dune"})])
    assert transcript == [
        "mode: meta; tools at start: "
        "['describe_tools', 'enable_tools', 'ping', 'search_tools', 'search_tools_regex', "
        "'whoami']",
        "task: find a book about dune",
        "  get_group catalog -> tools ['book_price', 'find_book']",
        '  call find_book {"words": "dune"} -> ["dune"]',
    ]


# -- examples/gateway/ ---------------------------------------------------------------------


def toolgate_command() -> list[str]:
    script = BIN / "toolgate"
    return [str(script)] if script.exists() else [sys.executable, "-m", "toolgate.cli"]


def test_toolgate_check_accepts_the_example_gateway_config() -> None:
    run = subprocess.run(
        [*toolgate_command(), "check", str(GATEWAY_CONFIG)],
        capture_output=True,
        text=True,
        timeout=60,
        env=venv_env(),
    )
    assert (run.returncode, run.stdout, run.stderr) == (
        0,
        f"{GATEWAY_CONFIG}: ok: 7 tools from 2 backend(s), 3 groups\n",
        "",
    )


async def test_example_gateway_serves_both_backends_and_hides_the_verified_only_tool() -> None:
    command = toolgate_command()
    params = StdioServerParameters(
        command=command[0],
        args=[*command[1:], "serve", str(GATEWAY_CONFIG), "--log-level", "error"],
        env=venv_env(),
    )
    async with Client(params, mode="legacy") as client:
        before = await names(client)
        enabled = await client.call_tool("enable_tools", {"groups": ["todo", "units"]})
        added = await client.call_tool("todo_add", {"text": "call mum"})
        miles = await client.call_tool("units_km_to_miles", {"km": 10})
        await client.call_tool("enable_tools", {"groups": ["todo_admin"]})
        with pytest.raises(MCPError) as err:
            await client.call_tool("todo_clear", {})
        await asyncio.sleep(0)
    assert before == [
        "call_tool",
        "describe_tools",
        "disable_tools",
        "enable_tools",
        "list_groups",
        "whoami",
    ]
    assert enabled.structured_content["available_tools"] == [
        "todo_add",
        "todo_list",
        "units_celsius_to_fahrenheit",
        "units_km_to_miles",
        "units_whoami",
        "whoami",
    ]
    assert (text(added), text(miles)) == ("1", "6.214")
    assert err.value.error.message == "Unknown tool: todo_clear"
