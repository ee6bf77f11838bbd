"""Behind the shipped HAProxy configuration: each client's own address, and a Redis
failover under Sentinel.

HAProxy (``deploy/haproxy.cfg``, ``option forwardfor``) connects from 127.0.0.1 and
says who the client was in ``X-Forwarded-For``; a replica that lists 127.0.0.1 in
``http.trusted_proxies`` counts legacy sessions per client by that address, so two
clients on two loopback addresses each get their own share, and one client is still
held to its own. Without the setting, every client behind the balancer is one client.
The replica's store is Redis with Sentinel: when the primary dies, calls through the
balancer fail closed with a retryable error, then the same session is served again with
the state it was told it had.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastmcp import Client
from mcp.shared.exceptions import MCPError

from _fixtures.gateway import INIT, MCP_HEADERS
from _fixtures.redis_sentinel import SentinelGroup
from _fixtures.replicas import ReplicaSet, ReplicaSetup, start_replicas

pytestmark = pytest.mark.timeout(300)
PER_CLIENT = 2


def balanced(tmp: Any, store: str, **http: Any) -> ReplicaSet:
    """One token-less replica (a client is its address) behind HAProxy."""
    toolgate = {"identity": {}, "http": {"max_sessions_per_client": PER_CLIENT, **http}}
    return start_replicas(ReplicaSetup(tmp, store, count=1, toolgate=toolgate))


@pytest.fixture(scope="module")
def behind_trusted_balancer(
    tmp_path_factory: pytest.TempPathFactory, sentinel_group: SentinelGroup
) -> Iterator[ReplicaSet]:
    tmp = tmp_path_factory.mktemp("trusted")
    replicas = balanced(tmp, sentinel_group.url(), trusted_proxies=["127.0.0.1"])
    try:
        yield replicas
    finally:
        replicas.stop()


async def initialize_from(url: str, address: str) -> int:
    """The status of a legacy ``initialize`` sent from one loopback address."""
    transport = httpx.AsyncHTTPTransport(local_address=address)
    async with httpx.AsyncClient(transport=transport) as http:
        response = await http.post(url, json=INIT, headers=MCP_HEADERS)
        return response.status_code


async def test_each_client_behind_the_balancer_has_its_own_share_of_sessions(
    behind_trusted_balancer: ReplicaSet,
) -> None:
    url = behind_trusted_balancer.url
    first = [await initialize_from(url, "127.0.0.2") for _ in range(PER_CLIENT + 1)]
    # the same balancer address, another client: its own share
    second = [await initialize_from(url, "127.0.0.3") for _ in range(PER_CLIENT)]
    assert first == [200] * PER_CLIENT + [429]
    assert second == [200] * PER_CLIENT


# -- the store fails over ---------------------------------------------------------------------


async def test_a_redis_failover_fails_calls_closed_then_the_session_has_its_stage(
    behind_trusted_balancer: ReplicaSet, sentinel_group: SentinelGroup
) -> None:
    async with Client(behind_trusted_balancer.url, mode="legacy") as session:
        began = await session.call_tool_mcp("begin", {})
        assert not began.is_error  # acknowledged: the stage is on the Redis replica too
        old = await asyncio.to_thread(sentinel_group.kill_primary)
        with pytest.raises(MCPError) as refused:
            await session.call_tool_mcp("finish", {})
        assert refused.value.error.data == {"code": "store_unavailable", "retryable": True}
        await asyncio.to_thread(
            sentinel_group.wait_until,
            lambda: sentinel_group.primary_port() not in (None, old),
            "the sentinels to promote the replica",
        )
        deadline = time.monotonic() + 30
        while True:  # the replica reconnects to the new primary on its next request
            try:
                finished = await session.call_tool_mcp("finish", {})
                break
            except MCPError as exc:
                assert exc.error.data == {"code": "store_unavailable", "retryable": True}
                assert time.monotonic() < deadline, "the store never came back"
                await asyncio.sleep(0.2)
        assert not finished.is_error, finished
