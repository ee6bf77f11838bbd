"""Provider-native tool search from the host side: ``GroupsClient`` exports a grouped
server's catalog for the Anthropic Messages API (``defer_loading`` + the tool-search
tool) and the OpenAI Responses API (a ``namespace`` per group + ``tool_search``), and runs
the calls those APIs answer with through the server, which still enforces access.
No network: the request bodies are checked exactly, and provider answers are given."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from toolgate import Group, Policy, Tool, ToolSet
from toolgate.client import GroupsClient, GroupsClientExtension
from toolgate.groups_extension import bind_groups
from toolgate.lowlevel import bind

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
OBJ = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def echo(arguments: Any, ctx: Any) -> str:
    return json.dumps(dict(arguments), sort_keys=True)


def toolset() -> ToolSet:
    ts = ToolSet("shop")
    ts.add_groups(
        [
            Group("orders", "Look up and change orders."),
            Group("refunds", "Refund an order.", parent="orders"),
            Group("admin", "Store administration."),
        ]
    )
    ts.add_tools(
        [
            Tool("ping", "Check the server.", echo),
            Tool("order.get", "Get an order by number.", echo, OBJ, groups=("orders",)),
            Tool("search", "Search orders and products.", echo, groups=("orders", "admin")),
            Tool("refund", "Refund an order.", echo, OBJ, groups=("refunds",)),
            Tool(
                "wipe_store",
                "Delete every order.",
                echo,
                groups=("admin",),
                policy=Policy(min_trust="verified"),  # the default principal is "declared"
            ),
        ]
    )
    return ts


@pytest.fixture(autouse=True)
def quiet_clients() -> Iterator[None]:
    logging.getLogger("client").setLevel(logging.ERROR)  # tools found in groups, not lists
    logging.getLogger("toolgate").setLevel(logging.ERROR)  # no identity resolver: fine here
    yield


@contextlib.asynccontextmanager
async def connected(mode: str) -> AsyncIterator[GroupsClient]:
    """A ``GroupsClient`` over the shop server, its whole catalog fetched."""
    server: Server[Any] = Server("shop")
    binding = bind(server, toolset())
    bind_groups(server, binding.delivery, facts=binding.facts)
    async with Client(server, mode=mode, extensions=[GroupsClientExtension()]) as c:
        client = GroupsClient(c)
        assert await client.start() == "groups"
        await client.fetch_tree()
        yield client


ERAS = pytest.mark.parametrize("mode", ["legacy", "auto"])


@ERAS
async def test_anthropic_tools_defer_every_grouped_tool_behind_the_search_tool(mode: str) -> None:
    async with connected(mode) as groups:
        tools = groups.anthropic_tool_search()
        assert tools[0] == {
            "type": "tool_search_tool_bm25_20251119",
            "name": "tool_search_tool_bm25",
        }
        assert [(t["name"], t.get("defer_loading", False)) for t in tools[1:]] == [
            ("ping", False),
            ("order_get", True),
            ("refund", True),
            ("search", True),  # in two groups, listed once
        ]
        assert tools[2] == {
            "name": "order_get",
            "description": "Get an order by number.",
            "input_schema": OBJ,
            "defer_loading": True,
        }
        regex = groups.anthropic_tool_search("regex")[0]
        assert regex == {
            "type": "tool_search_tool_regex_20251119",
            "name": "tool_search_tool_regex",
        }


@ERAS
async def test_openai_tools_put_each_group_in_a_namespace_with_deferred_functions(
    mode: str,
) -> None:
    async with connected(mode) as groups:
        tools = groups.openai_tool_search()
        assert tools[0] == {
            "type": "function",
            "name": "ping",
            "description": "Check the server.",
            "parameters": {"type": "object", "properties": {}},
        }
        spaces = {t["name"]: t for t in tools if t["type"] == "namespace"}
        assert {n: [f["name"] for f in s["tools"]] for n, s in spaces.items()} == {
            "admin": ["search"],  # wipe_store needs trust "verified": not in the catalog at all
            "orders": ["order_get", "search"],
            "refunds": ["refund"],
        }
        assert spaces["refunds"]["description"] == "Refund an order."
        assert all(f["defer_loading"] is True for s in spaces.values() for f in s["tools"])
        assert tools[-1] == {"type": "tool_search"}


@ERAS
async def test_request_bodies_carry_the_tools_and_the_beta_flag(mode: str) -> None:
    async with connected(mode) as groups:
        anthropic = groups.anthropic_request("m", [{"role": "user", "content": "hi"}], max_tokens=9)
        assert anthropic.url == "https://api.anthropic.com/v1/messages"
        assert anthropic.headers["anthropic-beta"] == "advanced-tool-use-2025-11-20"
        assert anthropic.body == {
            "model": "m",
            "max_tokens": 9,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": groups.anthropic_tool_search(),
        }
        openai = groups.openai_request("m", "hi", store=False)
        assert openai.url == "https://api.openai.com/v1/responses"
        assert openai.body == {
            "model": "m",
            "input": "hi",
            "store": False,
            "tools": groups.openai_tool_search(),
        }


@ERAS
async def test_a_namespaced_function_call_runs_through_the_server(mode: str) -> None:
    async with connected(mode) as groups:
        item = {
            "type": "function_call",
            "call_id": "call_1",
            "namespace": "orders",
            "name": "order_get",
            "arguments": '{"n": 7}',
        }
        out = await groups.run_openai_call(item)
        assert (out["type"], out["call_id"]) == ("function_call_output", "call_1")
        result = json.loads(out["output"])
        assert result["content"] == [{"type": "text", "text": '{"n": 7}'}]


@ERAS
async def test_a_call_outside_its_namespace_or_the_catalog_is_refused(mode: str) -> None:
    async with connected(mode) as groups:
        wrong_space = {
            "call_id": "c",
            "namespace": "refunds",
            "name": "order_get",
            "arguments": "{}",
        }
        assert json.loads((await groups.run_openai_call(wrong_space))["output"]) == {
            "error": "Unknown tool: order_get in namespace refunds"
        }
        not_json = {"call_id": "c", "namespace": "orders", "name": "order_get", "arguments": "{"}
        error = json.loads((await groups.run_openai_call(not_json))["output"])["error"]
        assert error.startswith("The arguments are not JSON")
        # a model that names a tool it was never given gets what an unknown tool gets
        hidden = await groups.run_anthropic_tool_use(
            {"id": "t1", "name": "wipe_store", "input": {}}
        )
        assert hidden == {
            "type": "tool_result",
            "tool_use_id": "t1",
            "content": json.dumps({"error": "Unknown tool: wipe_store"}),
            "is_error": True,
        }


@ERAS
async def test_the_server_enforces_access_on_calls_the_export_never_offered(mode: str) -> None:
    """Discovery moved to the provider; access did not: the server refuses the
    access-hidden tool exactly as it refuses one that does not exist."""
    async with connected(mode) as groups:
        errors = []
        for name in ("wipe_store", "no_such_tool"):
            with pytest.raises(MCPError) as caught:
                await groups.call_tool(name)
            errors.append((caught.value.error.code, caught.value.error.message))
        assert errors == [
            (-32602, "Unknown tool: wipe_store"),
            (-32602, "Unknown tool: no_such_tool"),
        ]


@ERAS
async def test_anthropic_tool_use_returns_the_tool_result_block(mode: str) -> None:
    async with connected(mode) as groups:
        block = {"type": "tool_use", "id": "toolu_1", "name": "refund", "input": {"n": 3}}
        out = await groups.run_anthropic_tool_use(block)
        assert out["type"] == "tool_result" and out["tool_use_id"] == "toolu_1"
        assert "is_error" not in out
        assert json.loads(out["content"])["content"] == [{"type": "text", "text": '{"n": 3}'}]


def test_the_example_prints_both_requests_without_sending_them() -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "provider_tool_search.py")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    anthropic, openai = out["anthropic"], out["openai"]
    assert anthropic["headers"] == {
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "advanced-tool-use-2025-11-20",
        "content-type": "application/json",
    }
    body = anthropic["body"]
    assert {k: body[k] for k in ("model", "max_tokens", "messages")} == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Add 2 and 3 with the calculator."}],
    }
    assert [(t["name"], t.get("defer_loading")) for t in body["tools"]] == [
        ("tool_search_tool_bm25", None),
        ("ping", None),
        ("calc_add", True),
        ("files_edit_wipe", True),
        ("files_edit_write", True),
        ("files_read", True),
    ]
    tools = openai["body"]["tools"]
    assert [(t["type"], t["name"]) for t in tools[:-1]] == [
        ("function", "ping"),
        ("namespace", "calc"),
        ("namespace", "edit"),
        ("namespace", "files"),
    ]
    assert tools[1]["tools"] == [
        {
            "type": "function",
            "name": "calc_add",
            "description": "Add two integers.",
            "parameters": {
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
                "type": "object",
            },
            "defer_loading": True,
        }
    ]
    assert tools[-1] == {"type": "tool_search"}
