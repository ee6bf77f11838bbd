"""Any JSON a client sends as a tool's arguments, through a real FastMCP client on both
protocol eras: every meta-tool the served strategies list (the menu, activators, the
catalog's ``get_group``, ``describe_tools``, ``call_tool``, both searches) and the
real tools beside them.

The property: a call answers a result or a tool error (``isError``) that names what
was wrong in a few lines, never a JSON-RPC error, a traceback or a hang; after a
refused call the session's ``tools/list`` is what it was. Regression cases below it
are the minimal inputs the property found, each fixed in ``src``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import fastmcp
import hypothesis.strategies as st
import pytest
from fastmcp import FastMCP
from hypothesis import given
from mcp_types import CallToolResult

from _fixtures.driven import Driven
from _fixtures.hostile import HUGE_TEXT, arguments_for, fuzz_settings
from toolgate import CallContext, Group, Tool, ToolNotFound, ToolSet
from toolgate.errors import PromptNotFound
from toolgate.fastmcp import ToolgateMiddleware
from toolgate.strategies import DeliveryConfig

GROUPS = ["code", "repos", "issues"]
TEXT_ARG = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
#: an error refuses in a few lines: never the caller's 100 KB back
MAX_ERROR = 2000
SETTINGS = fuzz_settings(75)


def echo(arguments: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    return {"tool": ctx.tool}


def served(**config: Any) -> FastMCP[Any]:
    mcp: FastMCP[Any] = FastMCP("hostile")
    ts = ToolSet("hostile")
    ts.add_groups(
        [
            Group("code", "Code and repositories"),
            Group("repos", "Repository admin", parent="code"),
            Group("issues", "Issue tracker"),
        ]
    )
    ts.add_tools(
        [
            Tool("ping", "Answer pong.", echo),
            Tool("search_code", "Search code.", echo, TEXT_ARG, groups=("code",)),
            Tool("delete_repo", "Delete a repository.", echo, groups=("repos",)),
            Tool("open_issue", "Open an issue.", echo, TEXT_ARG, groups=("issues",)),
        ]
    )
    ToolgateMiddleware(ts, DeliveryConfig(**config)).attach(mcp)
    return mcp


def connect(mode: str, **config: Any) -> Driven[fastmcp.Client[Any]]:
    era: dict[str, Any] = {"mode": "legacy"} if mode == "legacy" else {}
    return Driven(lambda: fastmcp.Client(served(**config), **era))


CLIENTS: dict[str, tuple[str, dict[str, Any]]] = {
    "menu-legacy": ("legacy", {"strategy": "list_changed", "search": True}),
    "menu-2026": ("auto", {"strategy": "list_changed", "search": True}),
    "activators-legacy": ("legacy", {"strategy": "list_changed", "meta_tools": "activators"}),
}


@pytest.fixture(scope="module")
def clients() -> Iterator[dict[str, Driven[fastmcp.Client[Any]]]]:
    opened: dict[str, Driven[fastmcp.Client[Any]]] = {}
    try:
        for name, (mode, config) in CLIENTS.items():
            opened[name] = connect(mode, **config)
        yield opened
    finally:
        for driven in opened.values():
            driven.close()


async def listing(client: fastmcp.Client[Any]) -> dict[str, list[str]]:
    """Each listed tool and its argument names."""
    tools = (await client.list_tools_mcp()).tools
    return {t.name: list((t.input_schema or {}).get("properties", {})) for t in tools}


def text_of(result: CallToolResult) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in strings_in(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []


def readable(text: str) -> str:
    """An error as the model reads it: a JSON answer's texts, unescaped."""
    try:
        return " ".join(strings_in(json.loads(text)))
    except ValueError:
        return text


def names_a_problem(
    text: str, tool: str, arguments: Mapping[str, Any], accepted: list[str]
) -> bool:
    """The error names an argument (one the tool takes or one the call sent), a value
    the call sent (a group or tool name it does not know) or, for an activator that
    takes none, its group (``repos.activate``: 'repos' cannot open yet)."""
    keys = [*accepted, *(str(k)[:64] for k in arguments), tool.split(".")[0]]
    # repr without its closing quote: a name cut at 64 characters goes on "… (N characters)"
    if any(repr(k)[:-1] in text or f"{k}:" in text or f"{k} " in text for k in keys):
        return True
    sent = [v for v in arguments.values() for v in (v if isinstance(v, list) else [v])]
    return any(isinstance(v, str) and v and v[:64] in text for v in sent)


def check_any_call(driven: Driven[fastmcp.Client[Any]], name: str, arguments: Any) -> None:
    before = driven.run(listing)
    result = driven.run(lambda c: c.call_tool_mcp(name, arguments))  # an MCPError fails here
    text = text_of(result)
    assert "Traceback" not in text
    if not result.is_error:
        return
    assert len(text) < MAX_ERROR, text[:300]
    assert names_a_problem(readable(text), name, arguments, before[name]), (name, text[:300])
    assert driven.run(listing) == before, (name, arguments)


def calls(tools: dict[str, list[str]]) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    known = [*GROUPS, *tools, "summary", "full", "names"]
    return st.sampled_from(sorted(tools)).flatmap(
        lambda name: st.tuples(st.just(name), arguments_for(tools[name], known))
    )


@pytest.mark.parametrize("client", list(CLIENTS))
def test_any_arguments_get_a_result_or_an_error_naming_them_and_change_nothing(
    clients: dict[str, Driven[fastmcp.Client[Any]]], client: str
) -> None:
    driven = clients[client]
    tools = driven.run(listing)

    @SETTINGS
    @given(call=calls(tools))
    def any_call(call: tuple[str, dict[str, Any]]) -> None:
        check_any_call(driven, *call)

    any_call()


# -- the minimal cases the property found ------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_tools_argument_error_quotes_a_huge_value_in_a_line_not_whole(mode: str) -> None:
    era: dict[str, Any] = {"mode": "legacy"} if mode == "legacy" else {}
    async with fastmcp.Client(served(strategy="flat"), **era) as client:
        result = await client.call_tool_mcp("search_code", {"q": [HUGE_TEXT]})
    text = text_of(result)
    assert result.is_error
    assert text.startswith("Invalid arguments for tool 'search_code': q: array ['xxx")
    assert "… is not of type 'string'. Required arguments: q (string)." in text
    assert len(text) < 300


async def test_search_refuses_an_unknown_argument_by_its_quoted_cut_name() -> None:
    async with fastmcp.Client(served(strategy="search"), mode="legacy") as client:
        result = await client.call_tool_mcp("search_tools", {"query": "code", HUGE_TEXT: 1})
        empty = await client.call_tool_mcp("search_tools", {"query": "code", "": 1})
    assert json.loads(text_of(result)) == {
        "error": f"Unexpected argument(s): '{'x' * 64}… (100000 characters)'; "
        "expected 'query', 'queries', 'limit' and 'detail'"
    }
    assert json.loads(text_of(empty))["error"].startswith("Unexpected argument(s): ''; ")


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"query": "code", "queries": [7]}, "'queries[0]' must be a non-empty string, not integer"),
        ({"query": ["code"]}, "'query' must be a non-empty string, not array"),
        ({"pattern": " "}, "'pattern' must be a non-empty string, not a blank string"),
    ],
)
async def test_search_names_which_of_its_texts_is_not_one(
    arguments: dict[str, Any], error: str
) -> None:
    tool = "search_tools_regex" if "pattern" in arguments else "search_tools"
    async with fastmcp.Client(served(strategy="search")) as client:
        result = await client.call_tool_mcp(tool, arguments)
    assert result.is_error
    assert json.loads(text_of(result)) == {"error": error}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_describe_tools_quotes_a_huge_unknown_name_cut_and_refuses_a_blank_one(
    mode: str,
) -> None:
    era: dict[str, Any] = {"mode": "legacy"} if mode == "legacy" else {}
    async with fastmcp.Client(served(strategy="list_changed"), **era) as client:
        huge = await client.call_tool_mcp("describe_tools", {"tools": [HUGE_TEXT]})
        blank = await client.call_tool_mcp("describe_tools", {"tools": ["ping", " "]})
    cut = f"{'x' * 128}… (100000 characters)"
    assert huge.is_error and len(text_of(huge)) < 1000
    assert json.loads(text_of(huge))[cut]["error"] == f"Unknown tool: {cut}"
    assert blank.is_error
    assert json.loads(text_of(blank)) == {
        "error": "'tools[1]' must be a tool name, not a blank string"
    }


def test_every_not_found_answer_quotes_the_callers_name_cut_the_same_way() -> None:
    cut = f"{'x' * 128}… (1000 characters)"
    assert ToolNotFound("x" * 1000).message == f"Unknown tool: {cut}"
    assert PromptNotFound("x" * 1000).message == f"Unknown prompt: {cut}"
    assert ToolNotFound("open_issue").message == "Unknown tool: open_issue"
