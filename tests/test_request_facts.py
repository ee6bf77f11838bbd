"""One reading of each MCP request: the principal is resolved once, and every part that
serves the request (tools, the groups extension, the dashboard's session recorder) sees
the same facts: one session key, one principal. Errors leave by one mapping."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from _fixtures.core import listing
from toolgate import BudgetExceeded, Group, GroupNotFound, Principal, Tool, ToolSet
from toolgate.client import GroupsClient, GroupsClientExtension
from toolgate.errors import Unauthenticated
from toolgate.gateway.ops.dashboard.sessions import SessionRecorder, record_sessions
from toolgate.groups_extension import bind_groups
from toolgate.identity import Caller, IdentityResolver
from toolgate.lowlevel import bind
from toolgate.request import Resolved
from toolgate.strategies import DeliveryConfig
from toolgate.wire import mcp_error, raise_or_result


def build(
    resolved: list[str], requests: list[str], made: list[str] | None = None
) -> tuple[Server[Any], ToolSet]:
    def identity(caller: Caller) -> Principal:
        resolved.append(caller.transport)
        return Principal(id="ada", scope=("*",))

    toolset = ToolSet()
    toolset.add_group(Group("issues", "Issue tracking"))
    toolset.add_tool(Tool("search", "Search issues.", lambda a, c: "found", groups=("issues",)))
    server: Server[Any] = Server("facts")
    binding = bind(server, toolset, DeliveryConfig(strategy="auto"), identity=identity)
    if made is not None:  # note each strategy and session the delivery makes
        make = binding.delivery.request

        def request(**facts: Any) -> Any:
            made.append(facts["principal"].id)
            return make(**facts)

        binding.delivery.request = request  # type: ignore[method-assign]
    bind_groups(server, binding.delivery, facts=binding.facts)
    server.middleware.append(record_sessions(binding, SessionRecorder(toolset, every=0)))

    async def count(ctx: Any, call_next: Any) -> Any:
        if ctx.request_id is not None and ctx.method not in ("initialize", "ping"):
            requests.append(ctx.method)
        return await call_next(ctx)

    server.middleware.insert(0, count)
    return server, toolset


async def test_each_request_resolves_its_principal_once_for_every_part_that_serves_it() -> None:
    resolved: list[str] = []
    requests: list[str] = []
    server, toolset = build(resolved, requests)
    async with Client(server, mode="legacy", extensions=[GroupsClientExtension()]) as client:
        groups = GroupsClient(client)
        assert await groups.start() == "groups"  # tools/list
        assert [g["name"] for g in await groups.list_groups()] == ["issues"]  # groups/list
        searched = await client.call_tool("search", {})  # tools/call
        infos = [info async for info in listing(toolset.store).infos()]  # recorded while connected
    assert (searched.is_error, searched.content[0].text) == (False, "found")  # type: ignore[union-attr]
    assert {"tools/list", "groups/list", "tools/call"} <= set(requests)
    assert resolved == ["local"] * len(requests)  # one per request, not one per reader
    assert [(i.principal, i.key.startswith("conn:")) for i in infos] == [("ada", True)]
    assert [info async for info in listing(toolset.store).infos()] == []  # forgotten once closed


async def test_a_call_makes_its_strategy_and_session_once_for_the_tool_and_the_recorder() -> None:
    resolved: list[str] = []
    requests: list[str] = []
    made: list[str] = []
    server, toolset = build(resolved, requests, made)
    async with Client(server, mode="legacy", extensions=[GroupsClientExtension()]) as client:
        await GroupsClient(client).start()
        made.clear()
        requests.clear()
        searched = await client.call_tool("search", {})
        infos = [info async for info in listing(toolset.store).infos()]
    assert searched.is_error is False
    assert "tools/call" in requests
    # one per request: the handler's, shared by the session recorder around it
    assert made == ["ada"] * len(requests)
    assert [i.principal for i in infos] == ["ada"]


def test_every_toolgate_error_maps_to_one_jsonrpc_error_that_names_the_problem() -> None:
    mapped = mcp_error(GroupNotFound("ops")).error
    assert (mapped.code, mapped.message, mapped.data) == (
        -32002,
        "Unknown group: ops",
        {"code": "group_not_found", "group": "ops"},
    )
    fallback = mcp_error(BudgetExceeded("Over budget", limit=3)).error
    assert (fallback.code, fallback.data) == (-32603, {"code": "budget_exceeded", "limit": 3})
    with pytest.raises(MCPError):
        raise_or_result(GroupNotFound("ops"))
    refused = raise_or_result(BudgetExceeded("Over budget", limit=3))
    assert (refused.is_error, refused.structured) == (
        True,
        {"error": "Over budget", "code": "budget_exceeded", "limit": 3},
    )


async def test_a_resolver_that_fails_refuses_the_request_rather_than_crash_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A resolver's own fault (a bug, a provider's odd answer it did not expect) fails
    closed: the request is refused as unauthenticated (HTTP 401), and the fault logged."""

    class Broken(IdentityResolver):
        async def resolve_with_scopes(self, caller: Caller) -> tuple[Principal | None, list[str]]:
            raise TypeError("'NoneType' object is not iterable")

    resolved = await Resolved.of(Broken(), Caller("http", {"authorization": "Bearer x"}))
    with pytest.raises(Unauthenticated, match="could not be verified"):
        _ = resolved.admitted
    assert "the identity resolver failed" in caplog.text
