"""Redis with Sentinel: a real primary, one replica and three sentinels (quorum 2), and the
real ``toolgate serve`` on a ``redis+sentinel://`` store URL, with real clients of both eras.

A session-state write counts once a replica holds it (``WAIT``): one that cannot reach the
replicas asked for fails closed. Killing the primary fails requests closed while the
sentinels fail over (no tool is listed or run on state that cannot be read), then the
same clients are served again by the promoted replica, with every acknowledged state
intact. A malformed Sentinel URL is a config error naming what is wrong.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp.shared.exceptions import MCPError

from _fixtures.core import asked_again
from _fixtures.gateway import BOB_TOKEN, HttpGateway, gateway_config, toolgate_argv
from _fixtures.redis_sentinel import SentinelGroup
from toolgate.errors import ConfigError
from toolgate.state import SessionState, open_store
from toolgate.state.redis import SentinelTarget

# ``note_add`` moves a principal from "browse" to "checkout"; ``note_list`` runs only there
STAGES = {
    "initial": "browse",
    "stages": [
        {"name": "browse", "transitions": [{"on": "note_add", "to": "checkout"}]},
        {"name": "checkout"},
    ],
    "tool_stages": {"notes:note_list": ["checkout"]},
}


def notes_only(tmp: Path, store: str) -> Path:
    """The gateway's test config with its one quick backend, ``notes``."""
    path = gateway_config(tmp, tokens=True, stages=STAGES, store=store)
    config = json.loads(path.read_text())
    del config["mcpServers"]["math"], config["toolgate"]["groups"]["math"]
    path.write_text(json.dumps(config))
    return path


def test_a_sentinel_url_names_sentinels_service_database_and_options() -> None:
    target = SentinelTarget.of(
        "rediss+sentinel://:s%40cret@10.0.0.1,[::1]:26380/my-service/3?wait_replicas=2"
        "&wait_timeout=0.5&sentinel_password=p"
    )
    assert target == SentinelTarget(
        sentinels=(("10.0.0.1", 26379), ("::1", 26380)),
        service="my-service",
        db=3,
        password="s@cret",
        sentinel_password="p",
        tls=True,
        wait_replicas=2,
        wait_timeout=0.5,
    )


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("redis+sentinel:///svc/0", "name at least one sentinel"),
        ("redis+sentinel://h:26379", "name the service Sentinel monitors"),
        ("redis+sentinel://h:26379/svc/x", "the database must be a number, got 'x'"),
        ("redis+sentinel://h:port/svc", "'h:port' is not a sentinel's host[:port]"),
        ("redis+sentinel://h/svc?socket_timeout=1", "unknown option 'socket_timeout'"),
        ("redis+sentinel://h/svc?wait_replicas=-1", "wait_replicas must be >= 0"),
    ],
)
def test_a_malformed_sentinel_url_is_a_config_error_naming_the_problem(
    url: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        open_store(url)
    assert str(raised.value).startswith("Bad Redis Sentinel store URL: ")
    assert problem in str(raised.value)


async def test_a_write_no_replica_confirms_in_time_fails_closed(
    sentinel_group: SentinelGroup,
) -> None:
    # one replica exists; two are asked for: the write stands on the primary, unconfirmed
    # (a second is ample for the one replica to confirm, even on a loaded machine)
    store = open_store(sentinel_group.url(5, "wait_replicas=2&wait_timeout=1"))
    try:
        with pytest.raises(Exception, match=r"reached 1 of 2 replica\(s\) within 1(\.0)?s"):
            await store.compare_and_set("k", 0, SessionState(version=1, touched_at=store.clock()))
        confirmed = open_store(sentinel_group.url(6))  # one replica asked for: it holds it
        try:
            fresh = SessionState(version=1, touched_at=confirmed.clock())
            assert await confirmed.compare_and_set("k", 0, fresh)
            assert (await confirmed.load("k")).version == 1
        finally:
            await confirmed.close()
    finally:
        await store.close()


def store_down(raised: pytest.ExceptionInfo[MCPError]) -> dict[str, Any]:
    data = raised.value.error.data
    assert isinstance(data, dict)
    return data


async def test_a_failover_fails_requests_closed_then_serves_the_acknowledged_state(
    tmp_path: Path, sentinel_group: SentinelGroup
) -> None:
    config = notes_only(tmp_path, sentinel_group.url(1))
    gateway = HttpGateway([*toolgate_argv(), "serve", str(config)], tmp_path / "gateway.log")
    gateway.start()
    try:
        transport = StreamableHttpTransport
        async with (
            Client(transport(gateway.url, auth=BOB_TOKEN), mode="legacy") as old,
            Client(transport(gateway.url, auth=BOB_TOKEN)) as new,
        ):
            assert "note_add" not in [t.name for t in await old.list_tools()]
            await old.call_tool_mcp("enable_tools", {"groups": ["notes"]})
            assert "note_add" in [t.name for t in await old.list_tools()]
            added = await new.call_tool_mcp("note_add", {"text": "milk"})
            assert not added.is_error  # the principal is in "checkout" now
            before = sentinel_group.kill_primary()
            failures = []
            with pytest.raises(MCPError) as listing:
                await old.list_tools()
            failures.append(store_down(listing))
            with pytest.raises(MCPError) as calling:
                await new.call_tool_mcp("note_list", {})
            failures.append(store_down(calling))
            assert failures == [{"code": "store_unavailable", "retryable": True}] * 2
            await asyncio.to_thread(
                sentinel_group.wait_until,
                lambda: sentinel_group.primary_port() not in (None, before),
                "the sentinels to promote the replica",
            )
            tools = await asked_again(old.list_tools, MCPError, 30.0, 0.2)
            # what was acknowledged before the kill is all there on the promoted replica
            assert "note_add" in [t.name for t in tools]
            listed = await new.call_tool_mcp("note_list", {})
            assert listed.structured_content == {"notes": ["milk"]}
    finally:
        gateway.stop()
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    ran = [e["tool"] for e in events if e["type"] == "tool.executed" and e["outcome"] == "success"]
    assert ran == ["note_add", "note_list"]
