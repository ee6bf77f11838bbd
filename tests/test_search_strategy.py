"""Search-based discovery: the ``search`` strategy and the ``search_tools`` add-on.

Through ``Delivery`` (every rule, both protocol eras) and end to end through the SDK's
real ``mcp.Client`` against a low-level ``Server`` bound with ``toolgate.lowlevel``, and
``fastmcp.Client`` against a FastMCP server with ``ToolgateMiddleware``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from fastmcp import Client as FastMCPClient
from fastmcp import FastMCP
from mcp import Client
from mcp.server import Server

from _fixtures.core import listing
from _fixtures.mcp_servers import Notes
from toolgate import CallContext, Group, Policy, Principal, RegistrationError, Tool, ToolSet
from toolgate.errors import ToolHidden
from toolgate.fastmcp import ToolgateMiddleware
from toolgate.flow import Flow, Stage
from toolgate.identity import Caller
from toolgate.lowlevel import bind
from toolgate.search import SearchMode, SearchSettings
from toolgate.strategies import Delivery, DeliveryConfig, Reply, Request, Strategy

LEGACY = "2025-11-25"
STATELESS = "2026-07-28"
PATH = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
EMPTY = {"type": "object", "properties": {}}
# what a principal limited to these groups may reach: no "secrets", trust "declared"
MEMBER = Principal("member", scope=("default", "code", "issues"))
SEARCH_LIST = [
    "call_tool",
    "describe_tools",
    "list_groups",
    "ping",
    "search_tools",
    "search_tools_regex",
]
MENU_LIST = [
    "call_tool",
    "describe_tools",
    "disable_tools",
    "enable_tools",
    "list_groups",
    "ping",
    "search_tools",
    "search_tools_regex",
]


def echo(name: str) -> Any:
    def run(args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
        return {"tool": name, "args": dict(args)}

    return run


def T(name: str, description: str, groups: tuple[str, ...], **options: Any) -> Tool:
    """A grouped tool that echoes its call; ``min_trust`` / ``decision`` make its policy."""
    policy = Policy(**{k: options.pop(k) for k in ("min_trust", "decision") if k in options})
    return Tool(name, description, handler=echo(name), groups=groups, policy=policy, **options)


def build(search: SearchSettings | None = None) -> ToolSet:
    """Pull-request tools a member may use, and better matches it may not."""
    ts = ToolSet("search-demo", search=search)
    ts.add_groups(
        [
            Group("code", "Code and repositories"),
            Group("issues", "Issue tracker"),
            Group("secrets", "Secret storage"),
        ]
    )
    code = ("code",)
    ts.add_tools(
        [
            Tool("ping", "Answer pong.", handler=echo("ping")),
            T("get_file", "Get a file.", code, input_schema=PATH),
            T("create_pull_request", "Open a pull request from a branch.", code),
            T("list_pull_requests", "List the pull requests of a repository.", code),
            # each of these matches "pull request" better (shorter text) than the member's
            T("merge_pull_request", "Merge a pull request.", code, min_trust="verified"),
            T("close_pull_request", "Close a pull request.", code, decision="deny"),
            T("pull_request_secret", "A pull request secret.", ("secrets",)),
            T("create_issue", "Open a new issue.", ("issues",)),
        ]
    )
    return ts


def wire(name: str, description: str, schema: Mapping[str, Any] = EMPTY) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": dict(schema)}


CREATE_PR = wire("create_pull_request", "Open a pull request from a branch.")
LIST_PRS = wire("list_pull_requests", "List the pull requests of a repository.")
CREATE_ISSUE = wire("create_issue", "Open a new issue.")


class Served:
    """One Delivery, and requests on it as one client would make them."""

    def __init__(self, ts: ToolSet, config: DeliveryConfig) -> None:
        self.ts = ts
        self.delivery = Delivery(ts, config)

    def request(
        self, key: str | None = "s1", protocol: str = LEGACY, principal: Principal = MEMBER
    ) -> tuple[Strategy, Request]:
        return self.delivery.request(session_key=key, principal=principal, protocol=protocol)

    async def names(self, key: str | None = "s1", protocol: str = LEGACY) -> list[str]:
        strategy, request = self.request(key, protocol)
        page = await self.delivery.list_tools(strategy, request)
        return [w["name"] for w in page.items]

    async def call(
        self, name: str, arguments: Mapping[str, Any], key: str | None = "s1", **kw: Any
    ) -> Reply:
        strategy, request = self.request(key, **kw)
        return await self.delivery.call_tool(strategy, request, name, arguments)


def search_mode() -> Served:
    return Served(build(), DeliveryConfig(strategy="search"))


def list_changed_mode() -> Served:
    return Served(build(), DeliveryConfig(strategy="list_changed", search=True))


# -- the search strategy --------------------------------------------------------------


async def test_search_strategy_lists_the_initial_view_and_its_meta_tools() -> None:
    served = search_mode()
    assert await served.names(protocol=LEGACY) == SEARCH_LIST
    assert await served.names(None, protocol=STATELESS) == SEARCH_LIST


async def test_search_ranks_the_principals_tools_best_first_with_full_definitions() -> None:
    reply = await search_mode().call(
        "search_tools", {"query": "open a pull request", "detail": "full"}
    )
    assert (reply.result.is_error, reply.list_changed) == (False, False)
    assert reply.result.structured == {
        "query": "open a pull request",
        "results": [
            {"name": "create_pull_request", "score": 3.561579, "tool": CREATE_PR},
            {"name": "list_pull_requests", "score": 2.791167, "tool": LIST_PRS},
            {"name": "create_issue", "score": 0.875469, "tool": CREATE_ISSUE},
        ],
        "revealed": [],
        "errors": [],
    }


async def test_search_never_returns_an_inaccessible_tool_even_when_it_matches_best() -> None:
    served = search_mode()
    # the index alone ranks the inaccessible tools first
    everything = served.ts.search_index.search("pull request", limit=10)
    assert [h.name for h in everything] == [
        "close_pull_request",
        "merge_pull_request",
        "pull_request_secret",
        "create_pull_request",
        "list_pull_requests",
    ]
    reply = await served.call(
        "search_tools", {"query": "pull request", "limit": 10, "detail": "full"}
    )
    assert reply.result.structured is not None
    assert [r["name"] for r in reply.result.structured["results"]] == [
        "create_pull_request",
        "list_pull_requests",
    ]
    regex = await served.call(
        "search_tools_regex", {"pattern": "pull_request", "limit": 10, "detail": "full"}
    )
    assert regex.result.structured is not None
    assert [r["name"] for r in regex.result.structured["results"]] == [
        "create_pull_request",
        "list_pull_requests",
    ]


async def test_several_needs_are_ranked_apart_and_interleaved_best_of_each_first() -> None:
    """A task's needs in one call: every need's best first, then every need's second;
    a tool two needs find comes once; the first comes in full, the rest one line each,
    and detail 'full' gives them all in full."""
    needs = {"query": "open a pull request", "queries": ["open a new issue", "get a file"]}
    served = search_mode()
    reply = await served.call("search_tools", {**needs, "limit": 2})
    assert (reply.result.is_error, reply.list_changed) == (False, False)
    assert reply.result.structured == {
        "query": "open a pull request",
        "queries": ["open a new issue", "get a file"],
        "results": [{"name": "create_pull_request", "score": 3.561579, "tool": CREATE_PR}],
        "more": [
            "create_issue(): Open a new issue.",
            "get_file(path): Get a file.",
            "list_pull_requests(): List the pull requests of a repository.",
        ],
        "revealed": [],
        "errors": [],
    }
    full = await served.call("search_tools", {**needs, "limit": 2, "detail": "full"})
    assert full.result.structured is not None
    assert full.result.structured["results"] == [
        {"name": "create_pull_request", "score": 3.561579, "tool": CREATE_PR},
        {"name": "create_issue", "score": 4.796414, "tool": CREATE_ISSUE},
        {"name": "get_file", "score": 4.827345, "tool": wire("get_file", "Get a file.", PATH)},
        {"name": "list_pull_requests", "score": 2.791167, "tool": LIST_PRS},
    ]


async def test_no_need_of_a_multi_need_search_returns_an_inaccessible_tool() -> None:
    reply = await search_mode().call(
        "search_tools",
        {"query": "pull request secret", "queries": ["merge a pull request"], "detail": "names"},
    )
    assert reply.result.structured is not None
    # the member's pull-request tools only: never the secret, never the merge it may not do
    assert [r["name"] for r in reply.result.structured["results"]] == [
        "create_pull_request",
        "list_pull_requests",
    ]


async def test_a_verified_principal_finds_the_tool_its_trust_unlocks() -> None:
    verified = Principal("lead", trust="verified", scope=("*",))
    served = search_mode()
    strategy, request = served.request(principal=verified)
    reply = await served.delivery.call_tool(
        strategy, request, "search_tools", {"query": "merge a pull request", "limit": 1}
    )
    assert reply.result.structured is not None
    assert [r["name"] for r in reply.result.structured["results"]] == ["merge_pull_request"]


async def test_a_search_result_runs_directly_and_through_call_tool_in_the_search_strategy() -> None:
    served = search_mode()
    for protocol, key in ((LEGACY, "s1"), (STATELESS, None)):
        await served.call("search_tools", {"query": "get a file"}, key, protocol=protocol)
        direct = await served.call("get_file", {"path": "a.txt"}, key, protocol=protocol)
        via = await served.call(
            "call_tool",
            {"name": "get_file", "arguments": {"path": "b.txt"}},
            key,
            protocol=protocol,
        )
        assert direct.result.structured == {"tool": "get_file", "args": {"path": "a.txt"}}
        assert via.result.structured == {"tool": "get_file", "args": {"path": "b.txt"}}
        assert (direct.list_changed, via.list_changed) == (False, False)
    # the list never moved, and nothing was recorded for the session
    assert await served.names() == SEARCH_LIST
    assert await listing(served.ts.store).session_count() == 0


async def test_the_search_strategy_runs_no_tool_the_principal_may_not_access() -> None:
    served = search_mode()
    reply = await served.call("call_tool", {"name": "close_pull_request"})
    assert (reply.result.is_error, reply.result.structured) == (
        True,
        {"error": "Unknown tool: close_pull_request", "code": "unknown_tool"},
    )


# -- the add-on in list_changed mode ------------------------------------------------------


async def test_in_list_changed_mode_search_reveals_its_results_and_the_list_changes() -> None:
    served = list_changed_mode()
    assert await served.names() == MENU_LIST
    reply = await served.call(
        "search_tools", {"query": "open a pull request", "limit": 2, "detail": "full"}
    )
    assert reply.list_changed is True
    assert reply.result.structured == {
        "query": "open a pull request",
        "results": [
            {"name": "create_pull_request", "score": 3.561579, "tool": CREATE_PR},
            {"name": "list_pull_requests", "score": 2.791167, "tool": LIST_PRS},
        ],
        "revealed": ["create_pull_request", "list_pull_requests"],
        "errors": [],
    }
    assert await served.names() == sorted([*MENU_LIST, "create_pull_request", "list_pull_requests"])
    ran = await served.call("create_pull_request", {})
    assert ran.result.structured == {"tool": "create_pull_request", "args": {}}


async def test_searching_again_for_revealed_tools_reports_no_change() -> None:
    served = list_changed_mode()
    await served.call("search_tools", {"query": "open a pull request", "limit": 1})
    again = await served.call("search_tools", {"query": "open a pull request", "limit": 1})
    assert again.list_changed is False
    assert again.result.structured is not None
    assert again.result.structured["revealed"] == []


async def test_a_revealed_tool_belongs_to_the_session_that_searched() -> None:
    served = list_changed_mode()
    await served.call("search_tools", {"query": "new issue", "limit": 1}, "s1")
    assert "create_issue" in await served.names("s1")
    assert "create_issue" not in await served.names("s2")
    with pytest.raises(ToolHidden):
        await served.call("create_issue", {}, "s2")


async def test_search_on_2026_reveals_nothing_yet_the_tool_is_callable() -> None:
    served = list_changed_mode()  # list_changed on 2026-07-28 is served as catalog
    reply = await served.call(
        "search_tools", {"query": "open a pull request", "limit": 1}, None, protocol=STATELESS
    )
    assert reply.list_changed is False
    assert reply.result.structured is not None
    assert reply.result.structured["revealed"] == []
    assert await served.names(None, protocol=STATELESS) == [
        "call_tool",
        "describe_tools",
        "enable_tools",
        "get_group",
        "list_groups",
        "ping",
        "search_tools",
        "search_tools_regex",
    ]
    ran = await served.call("create_pull_request", {}, None, protocol=STATELESS)
    assert ran.result.structured == {"tool": "create_pull_request", "args": {}}
    assert await listing(served.ts.store).session_count() == 0


# -- the regex variant -----------------------------------------------------------------------


async def test_regex_search_ranks_a_name_match_over_a_description_match() -> None:
    ts = build()
    ts.add_tool(Tool("read_docs", "Find the issue templates.", handler=echo("r"), groups=("code",)))
    served = Served(ts, DeliveryConfig(strategy="search"))
    reply = await served.call("search_tools_regex", {"pattern": "issue", "detail": "full"})
    assert reply.result.structured == {
        "pattern": "issue",
        "results": [
            {"name": "create_issue", "score": 4.0, "tool": CREATE_ISSUE},
            {
                "name": "read_docs",
                "score": 1.0,
                "tool": wire("read_docs", "Find the issue templates."),
            },
        ],
        "revealed": [],
        "errors": [],
    }


# -- bad input ----------------------------------------------------------------------------


LIMIT = "limit must be an integer from 1 to 50, got "
BAD_REGEX = (
    "Invalid regular expression 'pull_(req': missing ): pull_(req "
    "(RE2 syntax: no backreferences or lookaround)"
)


@pytest.mark.parametrize(
    ("tool", "arguments", "error"),
    [
        (
            "search_tools",
            {"query": "", "detail": "full"},
            "'query' must be a non-empty string, not a blank string",
        ),
        (
            "search_tools",
            {"query": "   ", "detail": "full"},
            "'query' must be a non-empty string, not a blank string",
        ),
        (
            "search_tools",
            {"query": 5, "detail": "full"},
            "'query' must be a non-empty string, not integer",
        ),
        ("search_tools", {}, "Missing required argument 'query'"),
        (
            "search_tools",
            {"query": "pull", "max": 3, "detail": "full"},
            "Unexpected argument(s): 'max'; expected 'query', 'queries', 'limit' and 'detail'",
        ),
        (
            "search_tools",
            {"query": "pull", "queries": "issue"},
            "'queries' must be an array of strings, got string",
        ),
        (
            "search_tools",
            {"query": "pull", "queries": ["issue"] * 10},
            "'queries' has 10 entries; the limit is 9",
        ),
        (
            "search_tools",
            {"query": "pull", "queries": ["issue", "x" * 1001]},
            "'queries[1]' is 1001 characters; the limit is 1000",
        ),
        (
            "search_tools",
            {"query": "pull", "queries": ["issue", " "]},
            "'queries[1]' must be a non-empty string, not a blank string",
        ),
        (
            "search_tools",
            {"query": "pull", "queries": [7]},
            "'queries[0]' must be a non-empty string, not integer",
        ),
        ("search_tools", {"query": "pull", "limit": 0, "detail": "full"}, LIMIT + "0"),
        ("search_tools", {"query": "pull", "limit": 100, "detail": "full"}, LIMIT + "100"),
        ("search_tools", {"query": "pull", "limit": "5", "detail": "full"}, LIMIT + "'5'"),
        ("search_tools", {"query": "pull", "limit": True, "detail": "full"}, LIMIT + "True"),
        (
            "search_tools",
            {"query": "x" * 1001, "detail": "full"},
            "'query' is 1001 characters; the limit is 1000",
        ),
        ("search_tools_regex", {"pattern": "pull_(req", "detail": "full"}, BAD_REGEX),
        (
            "search_tools_regex",
            {"pattern": "", "detail": "full"},
            "'pattern' must be a non-empty string, not a blank string",
        ),
        ("search_tools_regex", {"pattern": "a", "limit": 51, "detail": "full"}, LIMIT + "51"),
    ],
)
async def test_bad_search_input_is_a_clear_tool_error_and_changes_nothing(
    tool: str, arguments: dict[str, Any], error: str
) -> None:
    served = list_changed_mode()
    reply = await served.call(tool, arguments)
    assert (reply.result.is_error, reply.result.structured, reply.list_changed) == (
        True,
        {"error": error},
        False,
    )
    assert await served.names() == MENU_LIST
    assert await listing(served.ts.store).session_count() == 0


# -- determinism and a changing catalog ---------------------------------------------------


async def test_equal_scores_are_ordered_by_name_every_time() -> None:
    ts = ToolSet()
    ts.add_group(Group("code", "Things"))
    for name in ("zeta_report", "alpha_report", "mid_report"):
        ts.add_tool(Tool(name, "Build the report.", handler=echo(name), groups=("code",)))
    served = Served(ts, DeliveryConfig(strategy="search"))
    answers = []
    for _ in range(3):
        reply = await served.call("search_tools", {"query": "build the report", "detail": "full"})
        assert reply.result.structured is not None
        answers.append([(r["name"], r["score"]) for r in reply.result.structured["results"]])
    assert (
        answers
        == [[("alpha_report", 0.359508), ("mid_report", 0.359508), ("zeta_report", 0.359508)]] * 3
    )


async def test_a_tool_registered_at_run_time_is_found_and_a_removed_one_is_not() -> None:
    served = search_mode()
    before = await served.call("search_tools", {"query": "deploy"})
    assert before.result.structured is not None
    assert before.result.structured["results"] == []
    served.ts.add_tool(
        Tool("deploy_service", "Deploy a service.", handler=echo("deploy"), groups=("code",))
    )
    found = await served.call("search_tools", {"query": "deploy"})
    assert found.result.structured is not None
    assert [r["name"] for r in found.result.structured["results"]] == ["deploy_service"]
    assert served.ts.search_index.reanalysed == 1  # only the new tool was analysed
    served.ts.remove_tool("deploy_service")
    gone = await served.call("search_tools", {"query": "deploy"})
    assert gone.result.structured is not None
    assert gone.result.structured["results"] == []


# -- configuration -------------------------------------------------------------------------


async def test_the_search_flag_adds_the_search_meta_tools_to_catalog_and_list_changed() -> None:
    ts = build()
    served = Served(ts, DeliveryConfig(strategy="auto", search=True))
    assert await served.names(None, protocol=STATELESS) == [
        "call_tool",
        "describe_tools",
        "enable_tools",
        "get_group",
        "list_groups",
        "ping",
        "search_tools",
        "search_tools_regex",
    ]
    assert await served.names(protocol=LEGACY) == MENU_LIST
    without = Served(build(), DeliveryConfig(strategy="list_changed"))
    assert "search_tools" not in await without.names()


def test_a_real_tool_named_like_a_search_meta_tool_is_a_registration_error() -> None:
    ts = build()
    Delivery(ts, DeliveryConfig(strategy="search"))
    with pytest.raises(RegistrationError):
        ts.add_tool(Tool("search_tools", "Mine.", handler=echo("x")))


async def test_search_meta_tool_definitions_never_change_with_state() -> None:
    served = list_changed_mode()

    async def metas() -> list[dict[str, Any]]:
        strategy, request = served.request()
        page = await served.delivery.list_tools(strategy, request)
        return [w for w in page.items if w["name"].startswith("search_tools")]

    first = await metas()
    await served.call("search_tools", {"query": "pull request"})
    await served.call("enable_tools", {"groups": ["issues"]})
    assert await metas() == first
    assert first[0]["annotations"] == {"readOnlyHint": True, "idempotentHint": True}
    assert first[0]["inputSchema"]["required"] == ["query"]
    assert first[0]["inputSchema"]["properties"]["queries"]["type"] == "array"
    assert "queries" in first[0]["description"]


# -- end to end: real clients on real servers ------------------------------------------------


def sdk_server(config: DeliveryConfig, search: SearchSettings | None = None) -> Server[Any]:
    server: Server[Any] = Server("search-demo")
    bind(server, build(search), config, identity=lambda caller: member_for(caller))
    return server


def member_for(caller: Caller) -> Principal:
    return MEMBER


async def tool_names(client: Client) -> list[str]:
    return [t.name for t in (await client.session.list_tools()).tools]


async def test_mcp_client_on_the_legacy_protocol_gets_revealed_tools_and_a_notification() -> None:
    notes = Notes()
    server = sdk_server(DeliveryConfig(strategy="list_changed", search=True))
    async with Client(server, mode="legacy", message_handler=notes) as client:
        assert await tool_names(client) == MENU_LIST
        found = await client.call_tool("search_tools", {"query": "open a pull request", "limit": 1})
        assert await notes.settled() == ["notifications/tools/list_changed"]
        assert await tool_names(client) == sorted([*MENU_LIST, "create_pull_request"])
        ran = await client.call_tool("create_pull_request", {})
        again = await client.call_tool("search_tools", {"query": "open a pull request", "limit": 1})
        assert await notes.settled() == []
    assert found.structured_content == {
        "query": "open a pull request",
        "results": [{"name": "create_pull_request", "score": 3.561579, "tool": CREATE_PR}],
        "revealed": ["create_pull_request"],
        "errors": [],
    }
    assert ran.structured_content == {"tool": "create_pull_request", "args": {}}
    assert again.structured_content is not None
    assert again.structured_content["revealed"] == []


async def test_mcp_client_on_2026_gets_results_only_and_calls_the_tool_directly() -> None:
    notes = Notes()
    server = sdk_server(DeliveryConfig(strategy="search"))
    async with Client(server, mode="auto", message_handler=notes) as client:
        assert client.session.protocol_version == STATELESS
        assert await tool_names(client) == SEARCH_LIST
        found = await client.call_tool(
            "search_tools", {"query": "get a file", "limit": 1, "detail": "full"}
        )
        assert await notes.settled() == []
        assert await tool_names(client) == SEARCH_LIST
        direct = await client.call_tool("get_file", {"path": "a.txt"})
        via = await client.call_tool("call_tool", {"name": "get_file", "arguments": {"path": "b"}})
        hidden = await client.call_tool(
            "search_tools", {"query": "pull request secret", "detail": "full"}
        )
    assert found.structured_content is not None
    assert found.structured_content["results"] == [
        {"name": "get_file", "score": 4.827345, "tool": wire("get_file", "Get a file.", PATH)}
    ]
    assert direct.structured_content == {"tool": "get_file", "args": {"path": "a.txt"}}
    assert via.structured_content == {"tool": "get_file", "args": {"path": "b"}}
    assert hidden.structured_content is not None
    assert [r["name"] for r in hidden.structured_content["results"]] == [
        "create_pull_request",
        "list_pull_requests",
    ]


async def test_mcp_clients_on_both_eras_search_several_needs_in_one_call() -> None:
    """One call for a task's needs, through the SDK's real client: on the legacy
    protocol every result joins the session's list; on 2026 nothing is revealed and
    each need's best tool runs directly."""
    needs = {
        "query": "open a pull request",
        "queries": ["open a new issue"],
        "limit": 1,
        "detail": "full",
    }
    notes = Notes()
    legacy_server = sdk_server(DeliveryConfig(strategy="list_changed", search=True))
    async with Client(legacy_server, mode="legacy", message_handler=notes) as client:
        legacy = await client.call_tool("search_tools", needs)
        assert await notes.settled() == ["notifications/tools/list_changed"]
        assert await tool_names(client) == sorted(
            [*MENU_LIST, "create_issue", "create_pull_request"]
        )
    async with Client(sdk_server(DeliveryConfig(strategy="search")), mode="auto") as client:
        assert client.session.protocol_version == STATELESS
        stateless = await client.call_tool("search_tools", needs)
        ran = await client.call_tool("create_issue", {})
        assert await tool_names(client) == SEARCH_LIST
    both = [
        {"name": "create_pull_request", "score": 3.561579, "tool": CREATE_PR},
        {"name": "create_issue", "score": 4.796414, "tool": CREATE_ISSUE},
    ]
    assert legacy.structured_content == {
        "query": "open a pull request",
        "queries": ["open a new issue"],
        "results": both,
        "revealed": ["create_issue", "create_pull_request"],
        "errors": [],
    }
    assert stateless.structured_content == {**legacy.structured_content, "revealed": []}
    assert ran.structured_content == {"tool": "create_issue", "args": {}}


async def test_hybrid_search_through_a_real_client_never_returns_an_inaccessible_tool() -> None:
    server = sdk_server(DeliveryConfig(strategy="search"), SearchSettings("hybrid"))
    async with Client(server, mode="auto") as client:
        matched = await client.call_tool(
            "search_tools", {"query": "pull request", "limit": 10, "detail": "full"}
        )
        meaning = await client.call_tool(
            "search_tools", {"query": "propose my code changes", "detail": "full"}
        )
    assert matched.structured_content is not None and meaning.structured_content is not None
    names = [r["name"] for r in matched.structured_content["results"]]
    # hybrid ranks every tool by meaning too: more results than lexical search finds,
    # yet only tools the member may reach
    assert names[:2] == ["create_pull_request", "list_pull_requests"]
    assert len(names) > 2
    assert set(names) <= {
        "ping",
        "get_file",
        "create_pull_request",
        "list_pull_requests",
        "create_issue",
    }
    assert meaning.structured_content["results"]
    assert not {r["name"] for r in meaning.structured_content["results"]} & {
        "merge_pull_request",
        "close_pull_request",
        "pull_request_secret",
    }


async def test_mcp_client_gets_a_tool_error_for_bad_search_input() -> None:
    server = sdk_server(DeliveryConfig(strategy="list_changed", search=True))
    async with Client(server, mode="legacy") as client:
        bad = await client.call_tool("search_tools", {"query": "pull", "limit": "5"})
        regex = await client.call_tool("search_tools_regex", {"pattern": "("})
        assert await tool_names(client) == MENU_LIST
    assert (bad.is_error, bad.structured_content) == (
        True,
        {"error": "limit must be an integer from 1 to 50, got '5'"},
    )
    assert (regex.is_error, regex.structured_content) == (
        True,
        {
            "error": "Invalid regular expression '(': missing ): ( "
            "(RE2 syntax: no backreferences or lookaround)"
        },
    )


async def test_fastmcp_client_on_the_legacy_protocol_sees_a_search_result_join_its_list() -> None:
    mcp: FastMCP[Any] = FastMCP("search-demo")
    ToolgateMiddleware(
        build(), DeliveryConfig(strategy="list_changed", search=True), identity=member_for
    ).attach(mcp)
    notes = Notes()
    async with FastMCPClient(mcp, mode="legacy", message_handler=notes) as client:
        found = await client.call_tool("search_tools", {"query": "new issue", "limit": 1})
        assert await notes.settled() == ["notifications/tools/list_changed"]
        listed = [t.name for t in await client.list_tools()]
        ran = await client.call_tool("create_issue", {})
    assert found.structured_content is not None
    assert found.structured_content["revealed"] == ["create_issue"]
    assert "create_issue" in listed
    assert ran.structured_content == {"tool": "create_issue", "args": {}}


def hidden_twins(ts: ToolSet) -> ToolSet:
    """``ts`` plus tools only a verified principal may use, full of the query's words."""
    ts.add_tools(
        [
            Tool(
                f"secret_{i}",
                # "pullover" and "requestor" begin with query words: prefix matches too
                "Open a pull request and merge the pull request. Pull request pull request. "
                "A pullover for the requestor.",
                handler=echo(f"secret_{i}"),
                policy=Policy(min_trust="verified"),
            )
            for i in range(8)
        ]
    )
    return ts


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
async def test_tools_a_caller_cannot_see_never_move_its_search_scores(mode: SearchMode) -> None:
    """Ranking statistics are the principal's own: adding tools it may not access, even
    ones full of the query's words, leaves its results and scores exactly as they were."""
    query = {"query": "open a pull request", "limit": 5, "detail": "names"}
    results = []
    for ts in (build(), hidden_twins(build())):
        ts.search_settings = SearchSettings(mode)
        served = Served(ts, DeliveryConfig(strategy="search"))
        reply = await served.call("search_tools", query)
        assert reply.result.structured is not None
        results.append(reply.result.structured["results"])
    assert results[0] == results[1]
    assert results[0]  # the member finds its pull-request tools


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_request_told_otherwise_finds_through_a_real_client_what_feedback_adds(
    mode: str,
) -> None:
    """Only "branch" of this request is in the catalog: lexical search's feedback takes
    the words of its best match (create_pull_request) and finds the member's other
    pull-request tool, never the hidden ones that hold those words too."""
    server = sdk_server(DeliveryConfig(strategy="search"))
    query = "branch protection rules for the monorepo release train"
    async with Client(server, mode=mode) as client:
        found = await client.call_tool("search_tools", {"query": query, "detail": "full"})
    assert found.structured_content is not None
    names = [r["name"] for r in found.structured_content["results"]]
    assert names[0] == "create_pull_request"  # the request's own match keeps its place
    assert "list_pull_requests" in names  # shares no word with the request
    assert not set(names) & {"merge_pull_request", "close_pull_request", "pull_request_secret"}


def staged(hidden_tool_errors: str = "hint") -> ToolSet:
    """``payroll_view`` is in group ``hr`` and runs only in stage ``pay``; ``add`` moves
    the session there."""
    ts = ToolSet(hidden_tool_errors=hidden_tool_errors)
    ts.add_groups([Group("hr", "Human resources"), Group("calc", "Arithmetic")])
    ts.set_flow(Flow(initial="browse", stages=(Stage("browse"), Stage("pay"))))
    ts.add_tool(T("payroll_view", "View the payroll of an employee.", ("hr",), stages={"pay"}))
    ts.add_tool(T("add", "Add two numbers.", ("calc",), next_stage="pay"))
    ts.add_tool(T("ping", "Check the server.", ()))
    return ts


async def test_a_hit_a_reveal_would_not_show_is_reported_and_not_recorded() -> None:
    ts = staged()
    d = Delivery(ts, DeliveryConfig(strategy="list_changed", search=True))
    chosen, req = d.request(session_key="s", protocol=LEGACY)
    reply = await d.call_tool(chosen, req, "search_tools", {"query": "payroll employee"})
    data = reply.result.structured
    assert data is not None and data["revealed"] == []
    assert data["errors"] == [
        "Cannot show tool 'payroll_view': Tool 'payroll_view' is only available in stage "
        "'pay'; this session is in stage 'browse'."
    ]
    assert (await ts.store.load("s")).revealed == frozenset()
    await d.call_tool(chosen, req, "enable_tools", {"groups": ["calc"]})
    await d.call_tool(chosen, req, "add", {})  # now in stage "pay": still not shown
    assert (await ts.store.load("s")).stage == "pay"
    assert "payroll_view" not in [t["name"] for t in (await d.list_tools(chosen, req)).items]


@pytest.mark.parametrize(("errors", "named"), [("hint", True), ("opaque", False)])
async def test_with_opaque_errors_search_names_no_tool_a_call_would_call_unknown(
    errors: str, named: bool
) -> None:
    d = Delivery(staged(errors), DeliveryConfig(strategy="search"))
    chosen, req = d.request(session_key=None, protocol=STATELESS)
    reply = await d.call_tool(chosen, req, "search_tools", {"query": "payroll employee"})
    data = reply.result.structured
    assert data is not None
    found = [r["name"] for r in data["results"]] + [m.split("(")[0] for m in data.get("more", [])]
    assert ("payroll_view" in found) is named


async def test_disable_tools_takes_back_what_search_showed_of_a_group_so_a_full_budget_frees() -> (
    None
):
    ts = build()
    ts.max_tools = 3  # ping and two revealed tools fill it
    d = Delivery(ts, DeliveryConfig(strategy="list_changed", search=True))
    chosen, req = d.request(session_key="s", principal=MEMBER, protocol=LEGACY)
    first = await d.call_tool(chosen, req, "search_tools", {"query": "pull request", "limit": 2})
    assert first.result.structured is not None
    assert first.result.structured["revealed"] == ["create_pull_request", "list_pull_requests"]
    issue = {"query": "open a new issue", "limit": 1}
    full = await d.call_tool(chosen, req, "search_tools", issue)
    assert full.result.structured is not None
    [refusal] = full.result.structured["errors"]
    assert refusal.startswith("Cannot show tool 'create_issue': 4 tools would be visible")
    assert refusal.endswith(
        "; disable_tools closes a group, or the tools search showed of one, to make room"
    )
    closed = await d.call_tool(chosen, req, "disable_tools", {"groups": ["code"]})
    assert closed.result.is_error is False
    assert (await ts.store.load("s")).revealed == frozenset()
    again = await d.call_tool(chosen, req, "search_tools", issue)
    assert again.result.structured is not None
    assert again.result.structured["revealed"] == ["create_issue"]
    nothing = await d.call_tool(chosen, req, "disable_tools", {"groups": ["code"]})
    assert nothing.result.is_error is True  # off, and nothing of it shown: as before
