"""Behind the shipped HAProxy configuration, the gateway sees each client's own address.

HAProxy (``deploy/haproxy.cfg``, ``option forwardfor``) connects from 127.0.0.1 and
says who the client was in ``X-Forwarded-For``; a replica that lists 127.0.0.1 in
``http.trusted_proxies`` counts legacy sessions per client by that address, so two
clients on two loopback addresses each get their own share, and one client is still
held to its own. Without the setting, every client behind the balancer is one client.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from _fixtures.gateway import INIT, MCP_HEADERS
from _fixtures.replicas import ReplicaSet, ReplicaSetup, start_replicas

pytestmark = pytest.mark.timeout(300)
PER_CLIENT = 2


def balanced(tmp: Any, **http: Any) -> ReplicaSet:
    """One token-less replica (a client is its address) behind HAProxy."""
    toolgate = {"identity": {}, "http": {"max_sessions_per_client": PER_CLIENT, **http}}
    return start_replicas(ReplicaSetup(tmp, "memory://", count=1, toolgate=toolgate))


@pytest.fixture(scope="module")
def behind_trusted_balancer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplicaSet]:
    replicas = balanced(tmp_path_factory.mktemp("trusted"), trusted_proxies=["127.0.0.1"])
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
