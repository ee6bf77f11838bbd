"""Any ``cursor`` on every paginated list, and any params on the groups extension's
``groups/list`` / ``groups/get``, through real clients on both protocol eras: the
FastMCP adapter (``fastmcp.Client``) and the SDK adapter (``mcp.Client``).

The property: a request answers a result or JSON-RPC invalid params (-32602) whose
message names the param (a group that does not exist is MCP's -32002), never an
internal error or a message that leaves the client guessing. Regression cases below
it are the minimal inputs the property found, each fixed in ``src``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import fastmcp
import hypothesis.strategies as st
import mcp_types as mt
import pytest
from fastmcp import FastMCP
from hypothesis import given
from mcp import Client as SDKClient
from mcp.server import Server
from mcp.shared.exceptions import MCPError
from pydantic import ConfigDict

from _fixtures.driven import Driven
from _fixtures.hostile import fuzz_settings, json_values, texts
from toolgate import CallContext, Group, Tool, ToolSet
from toolgate.client import GroupsClientExtension
from toolgate.client.extension import RAW
from toolgate.fastmcp import ToolgateMiddleware
from toolgate.groups_extension import bind_groups
from toolgate.lowlevel import bind
from toolgate.strategies import Delivery, DeliveryConfig

LISTS = ["tools/list", "prompts/list", "resources/list", "resources/templates/list"]
GROUPS_METHODS = ["groups/list", "groups/get"]
NOT_FOUND = -32002  # MCP's "resource not found": groups/get of a group that is not there
SETTINGS = fuzz_settings(50)


class AnyParams(mt.RequestParams):
    """Params as a careless client writes them: any keys, any values."""

    model_config = ConfigDict(extra="allow")


class AnyRequest(mt.Request[AnyParams | None, str]):
    """A request of any method, sent as written."""


def echo(arguments: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    return {"tool": ctx.tool}


def toolset() -> ToolSet:
    ts = ToolSet("pages", page_size=1)  # every list that has items has a next page
    ts.add_groups([Group("code", "Code"), Group("issues", "Issues")])
    ts.add_tools(
        [
            Tool("ping", "Answer pong.", echo),
            Tool("search_code", "Search code.", echo, groups=("code",)),
            Tool("open_issue", "Open an issue.", echo, groups=("issues",)),
        ]
    )
    return ts


def fastmcp_server() -> FastMCP[Any]:
    mcp: FastMCP[Any] = FastMCP("pages")

    @mcp.prompt
    def review(topic: str) -> str:
        """Review a topic."""
        return f"Review {topic}."

    @mcp.resource("notes://today")
    def today() -> str:
        """Today's notes."""
        return "nothing yet"

    ToolgateMiddleware(toolset(), DeliveryConfig(strategy="groups")).attach(mcp)
    return mcp


def sdk_server() -> Server[Any]:
    server: Server[Any] = Server("pages")
    ts = toolset()
    bind(server, ts, DeliveryConfig(strategy="groups"))
    bind_groups(server, Delivery(ts, DeliveryConfig(strategy="groups")))
    return server


def fastmcp_client(mode: str) -> Driven[Any]:
    era: dict[str, Any] = {"mode": "legacy"} if mode == "legacy" else {}
    extensions = [GroupsClientExtension()]
    return Driven(lambda: fastmcp.Client(fastmcp_server(), extensions=extensions, **era))


def sdk_client(mode: str) -> Driven[Any]:
    era: dict[str, Any] = {"mode": "legacy"} if mode == "legacy" else {}
    return Driven(lambda: SDKClient(sdk_server(), extensions=[GroupsClientExtension()], **era))


CLIENTS = {
    "fastmcp-legacy": (fastmcp_client, "legacy"),
    "fastmcp-2026": (fastmcp_client, "auto"),
    "sdk-legacy": (sdk_client, "legacy"),
    "sdk-2026": (sdk_client, "auto"),
}
#: methods each server answers (the SDK server here serves no prompts or resources)
SERVED = {
    "fastmcp": [*LISTS, *GROUPS_METHODS],
    "sdk": ["tools/list", "resources/list", *GROUPS_METHODS],
}


@pytest.fixture(scope="module")
def clients() -> Iterator[dict[str, Driven[Any]]]:
    opened: dict[str, Driven[Any]] = {}
    try:
        for name, (connect, mode) in CLIENTS.items():
            opened[name] = connect(mode)
        yield opened
    finally:
        for driven in opened.values():
            driven.close()


async def send(client: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    request = AnyRequest(method=method, params=AnyParams(**params))
    return dict(await client.session.send_request(request, RAW))


def params_for(method: str) -> st.SearchStrategy[dict[str, Any]]:
    key = "name" if method == "groups/get" else "cursor"
    value = st.one_of(json_values, texts, st.sampled_from(["code", "issues", "Y29kZQ"]))
    extra = st.dictionaries(st.sampled_from(["cursor", "name", "x"]) | texts, json_values)
    return st.one_of(
        st.fixed_dictionaries({key: value}),
        st.builds(lambda a, b: {**b, **a}, st.fixed_dictionaries({key: value}), extra),
        extra,
    )


def check_any_params(driven: Driven[Any], method: str, params: dict[str, Any]) -> None:
    try:
        driven.run(lambda c: send(c, method, params))
    except MCPError as exc:
        error = exc.error
        if method == "groups/get" and error.code == NOT_FOUND:
            assert error.message.startswith("Unknown group: ")
            return
        assert error.code == mt.INVALID_PARAMS, (error.code, error.message)
        named = "name" if method == "groups/get" else "cursor"
        assert f"Invalid {named}" in error.message or f"Invalid {named!r}" in error.message, (
            error.message
        )
        assert len(error.message) < 300


@pytest.mark.parametrize("client", list(CLIENTS))
def test_any_cursor_or_groups_params_get_a_page_or_invalid_params_naming_them(
    clients: dict[str, Driven[Any]], client: str
) -> None:
    driven = clients[client]
    methods = SERVED[client.split("-")[0]]
    requests = st.sampled_from(methods).flatmap(lambda m: st.tuples(st.just(m), params_for(m)))

    @SETTINGS
    @given(request=requests)
    def any_request(request: tuple[str, dict[str, Any]]) -> None:
        check_any_params(driven, *request)

    any_request()


# -- the minimal cases the property found ------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("method", ["prompts/list", "resources/list", "resources/templates/list"])
async def test_on_fastmcp_a_cursor_that_is_not_a_string_is_named_on_every_list(
    method: str, mode: str
) -> None:
    era: dict[str, Any] = {"mode": "legacy"} if mode == "legacy" else {}
    async with fastmcp.Client(fastmcp_server(), **era) as client:
        with pytest.raises(MCPError) as raised:
            await send(client, method, {"cursor": []})
    error = raised.value.error
    assert (error.code, error.data) == (mt.INVALID_PARAMS, {"field": "cursor"})
    assert error.message == (
        "Invalid cursor: must be a string (the nextCursor of the previous page), not array"
    )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"name": 5}, "a group name is a string, not integer"),
        ({}, "a group name is a string, not null"),
    ],
)
@pytest.mark.parametrize("adapter", ["fastmcp", "sdk"])
async def test_groups_get_without_a_string_name_is_invalid_params_naming_it(
    adapter: str, params: dict[str, Any], problem: str, mode: str
) -> None:
    era: dict[str, Any] = {"mode": "legacy"} if mode == "legacy" else {}
    extensions = [GroupsClientExtension()]
    client: Any = (
        fastmcp.Client(fastmcp_server(), extensions=extensions, **era)
        if adapter == "fastmcp"
        else SDKClient(sdk_server(), extensions=extensions, **era)
    )
    async with client:
        with pytest.raises(MCPError) as raised:
            await send(client, "groups/get", params)
    error = raised.value.error
    assert (error.code, error.message) == (mt.INVALID_PARAMS, f"Invalid 'name': {problem}")
    assert error.data == {"code": "invalid_params", "field": "name"}
