"""Gateway replicas behind the shipped HAProxy configuration, with real clients.

Two ``toolgate serve`` replicas share one real Redis behind Debian's HAProxy running
``deploy/haproxy.cfg`` itself (``_fixtures.replicas``). A legacy session stays on the
replica that opened it (the balancer learns its ``Mcp-Session-Id`` from the response);
2026-07-28 requests go to every replica; a principal's stage written through one replica
is read through another; a replica killed under load costs only the calls it was running,
and its legacy sessions get the spec's 404, after which a new ``initialize`` works.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from _fixtures.gateway import ALICE_TOKEN, BOB_TOKEN, MCP_HEADERS
from _fixtures.replicas import Nginx, ReplicaSet

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def replicas(replica_set: ReplicaSet) -> Iterator[ReplicaSet]:
    """The module's replicas, every one running and up in HAProxy before the test."""
    replica_set.all_up()
    yield replica_set


def modern(url: str, token: str = BOB_TOKEN) -> Client[Any]:
    """A 2026-07-28 client (fastmcp's default mode): no session, state by principal."""
    return Client(StreamableHttpTransport(url, auth=token))


def legacy(url: str, token: str = BOB_TOKEN) -> Client[Any]:
    return Client(StreamableHttpTransport(url, auth=token), mode="legacy")


async def served_by(client: Client[Any], tool: str = "whoami", **arguments: Any) -> str:
    """The replica that ran one call of ``tool``."""
    result = await client.call_tool(tool, arguments)
    assert result.structured_content is not None
    replica: str = result.structured_content["replica"]
    return replica


def session_id(client: Client[Any]) -> str:
    transport = client.transport
    assert isinstance(transport, StreamableHttpTransport)
    sid = transport.get_session_id()
    assert sid is not None
    return sid


# -- routing ------------------------------------------------------------------------------


async def test_a_legacy_session_stays_on_the_replica_that_opened_it(
    replicas: ReplicaSet,
) -> None:
    async with legacy(replicas.url) as first, legacy(replicas.url) as second:
        homes = []
        for client in (first, second):
            calls = [await served_by(client) for _ in range(6)]
            assert len(set(calls)) == 1, calls
            homes.append(calls[0])
            # HAProxy learned the id from the response to initialize, for that replica
            table = replicas.balancer.command("show table toolgate")
            server = replicas.server(replicas.by_name(calls[0]))
            server_id = server.removeprefix("gw")
            assert f"key={session_id(client)} use=0 exp=" in table
            entry = next(line for line in table.splitlines() if session_id(client) in line)
            assert entry.endswith(f"server_id={server_id} server_key={server}"), entry
        # two new sessions are balanced like any new work: each went to the least busy
        assert sorted(homes) == ["r1", "r2"]


async def test_a_legacy_session_on_the_sdks_client_stays_on_its_replica(
    replicas: ReplicaSet,
) -> None:
    headers = {"Authorization": f"Bearer {BOB_TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        streamable_http_client(replicas.url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        calls = []
        for _ in range(6):
            result = await session.call_tool("whoami", {})
            assert result.structured_content is not None
            calls.append(result.structured_content["replica"])
        assert len(set(calls)) == 1, calls


async def test_2026_07_28_requests_go_to_every_replica(replicas: ReplicaSet) -> None:
    async with modern(replicas.url) as client:
        calls = [await served_by(client) for _ in range(8)]
    assert set(calls) == {"r1", "r2"}, calls


async def test_a_principals_stage_written_through_one_replica_is_read_through_another(
    replicas: ReplicaSet,
) -> None:
    async with modern(replicas.url, ALICE_TOKEN) as alice, modern(replicas.url) as bob:
        assert await stage_refusal(alice) == "idle"
        began_on = await served_by(alice, "begin")
        finished_on = {await served_by(alice, "finish") for _ in range(4)}
        # alice's stage is in Redis: the replica that did not run ``begin`` knows it
        assert finished_on - {began_on}, (began_on, finished_on)
        # bob is another principal: his stage did not move, on either replica
        assert [await stage_refusal(bob) for _ in range(2)] == ["idle", "idle"]


async def stage_refusal(client: Client[Any]) -> str:
    """The stage a refused ``finish`` names (it runs only in stage ``started``)."""
    result = await client.call_tool_mcp("finish", {})
    assert result.is_error and result.structured_content is not None
    assert result.structured_content["reason"] == "stage-locked:started"
    stage: str = result.structured_content["current_stage"]
    return stage


# -- nginx ---------------------------------------------------------------------------------


def test_the_shipped_nginx_configuration_is_valid(tmp_path: Path) -> None:
    config = Path(__file__).resolve().parents[1] / "deploy" / "nginx.conf"
    checked = subprocess.run(
        [*Nginx.argv(config, tmp_path), "-t"], capture_output=True, text=True, timeout=30
    )
    assert checked.returncode == 0, checked.stderr
    assert "test is successful" in checked.stderr


async def test_behind_nginx_legacy_clients_keep_their_replica_and_2026_07_28_spreads(
    replicas: ReplicaSet, tmp_path: Path
) -> None:
    nginx = Nginx(replicas.replicas, tmp_path)
    nginx.start()
    try:
        async with legacy(nginx.url) as first, legacy(nginx.url) as second:
            # one client address, one replica, for every session it opens
            calls = [await served_by(c) for c in (first, second) for _ in range(4)]
            assert len(set(calls)) == 1, calls
        async with modern(nginx.url) as client:
            spread = {await served_by(client) for _ in range(12)}
        assert spread == {"r1", "r2"}
    finally:
        nginx.stop()


# -- a reload -------------------------------------------------------------------------------


async def test_a_reload_of_every_replica_changes_what_live_sessions_see(
    replicas: ReplicaSet,
) -> None:
    config = replicas.replicas[0].config
    original = config.read_text()
    stricter = json.loads(original)
    stricter["toolgate"]["policies"] = [{"tools": ["whoami"], "min_trust": "verified"}]
    async with legacy(replicas.url) as session, modern(replicas.url) as stateless:
        home = await served_by(session)
        sid = session_id(session)
        config.write_text(json.dumps(stricter))
        try:
            await asyncio.to_thread(replicas.reload)
            # bob (trust "declared") no longer sees whoami, in his live legacy session...
            with pytest.raises(MCPError) as hidden:
                await session.call_tool("whoami", {})
            assert hidden.value.error.message == "Unknown tool: whoami"
            # ...which was not dropped: same id, same replica
            assert await served_by(session, "work", ms=1) == home
            assert session_id(session) == sid
            # nor on 2026-07-28, asked of each replica itself, while alice ("verified") is
            with pytest.raises(MCPError):
                await stateless.call_tool("whoami", {})
            for replica in replicas.replicas:
                async with modern(replica.url) as bob, modern(replica.url, ALICE_TOKEN) as alice:
                    with pytest.raises(MCPError):
                        await bob.call_tool("whoami", {})
                    assert await served_by(alice) == replica.name
        finally:
            config.write_text(original)
            await asyncio.to_thread(replicas.reload)
        assert await served_by(session) == home


# -- a rolling restart ---------------------------------------------------------------------


async def test_a_rolling_restart_under_load_loses_no_call(replicas: ReplicaSet) -> None:
    stop, outcomes = asyncio.Event(), list[Outcome]()
    load = [asyncio.create_task(keep_calling(replicas.url, stop, outcomes)) for _ in range(5)]
    sessions = [asyncio.create_task(keep_a_session(replicas.url, stop, outcomes))]
    await until(lambda: {o.replica for o in outcomes} >= {"r1", "r2"} and len(outcomes) > 20)
    for replica in replicas.replicas:
        replica.signal(signal.SIGTERM)
        assert await asyncio.to_thread(replica.wait, 60) == 0, replica.tail()
        await asyncio.to_thread(replica.start)
        await asyncio.to_thread(replicas.all_up)
        restarted = time.monotonic()
        await until(started_after(outcomes, restarted))
    stop.set()
    await asyncio.gather(*load, *sessions)
    calls = [o for o in outcomes if o.replica != "legacy"]
    assert [o for o in calls if o.error is not None] == []
    # a legacy session on a stopped replica ends with it: the spec's 404, then a new one
    # a legacy session lives on its replica: once that one is gone, the spec's 404 and a
    # new session; a call still running when the drain's time is up gets a retryable error
    legacy_failures = [o.error for o in outcomes if o.replica == "legacy" and o.error]
    assert all(
        SESSION_GONE in error or "'retryable': True" in error for error in legacy_failures
    ), legacy_failures


def started_after(outcomes: list[Outcome], moment: float) -> Callable[[], bool]:
    return lambda: any(o.started > moment for o in outcomes)


#: what a legacy client is told when its session's replica is gone: the SDK's 404 body
SESSION_GONE = "Session not found"


async def keep_a_session(url: str, stop: asyncio.Event, outcomes: list[Outcome]) -> None:
    """A legacy client calling until ``stop``, with a new session after a failure; its
    failures are recorded under the replica name ``legacy``."""
    while not stop.is_set():
        try:
            async with legacy(url) as client:
                while not stop.is_set():
                    started = time.monotonic()
                    try:
                        await served_by(client, "work", ms=20)
                    except Exception as exc:
                        failure = Outcome(started, time.monotonic(), "legacy", str(exc))
                        outcomes.append(failure)
                        break
        except Exception as exc:  # a refused initialize, or the ended session's exit
            outcomes.append(Outcome(time.monotonic(), time.monotonic(), "legacy", str(exc)))
        await asyncio.sleep(0.05)


# -- a replica dies -------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One call of the load: when it started and ended, and who answered (or the error)."""

    started: float
    ended: float
    replica: str | None
    error: str | None = None


async def keep_calling(url: str, stop: asyncio.Event, outcomes: list[Outcome]) -> None:
    """One 2026-07-28 client calling ``work(20 ms)`` until ``stop``; after a failure it
    connects again, as an agent would."""
    while not stop.is_set():
        try:
            async with modern(url) as client:
                while not stop.is_set():
                    started = time.monotonic()
                    try:
                        replica = await served_by(client, "work", ms=20)
                    except Exception as exc:  # every failure counts, whatever it is
                        outcomes.append(Outcome(started, time.monotonic(), None, repr(exc)))
                        break
                    outcomes.append(Outcome(started, time.monotonic(), replica))
        except Exception:  # the broken client's own exit: already counted
            pass
        await asyncio.sleep(0.05)


async def test_a_killed_replica_costs_only_the_calls_it_was_running(
    replicas: ReplicaSet,
) -> None:
    async with legacy(replicas.url) as stranded:
        victim = replicas.by_name(await served_by(stranded))
        survivor = next(r for r in replicas.replicas if r is not victim)
        stale = session_id(stranded)

        stop, outcomes = asyncio.Event(), list[Outcome]()
        load = [asyncio.create_task(keep_calling(replicas.url, stop, outcomes)) for _ in range(6)]
        await until(lambda: {o.replica for o in outcomes} >= {"r1", "r2"} and len(outcomes) > 20)
        killed = time.monotonic()
        victim.kill()
        await asyncio.to_thread(replicas.balancer.wait_states, {replicas.server(victim): False})
        noticed = time.monotonic()
        await asyncio.sleep(1.0)
        stop.set()
        await asyncio.gather(*load)

        served = [o for o in outcomes if o.error is None]
        failed = [o for o in outcomes if o.error is not None]
        assert {o.replica for o in served if o.ended < killed} == {"r1", "r2"}
        # the only calls that may fail are those the victim was running when it died
        assert all(o.started < killed < o.ended for o in failed), failed
        # once the balancer took it out, every call is served, by the survivor
        after = [o for o in outcomes if o.started > noticed]
        assert after and all(o.replica == survivor.name for o in after), after

        # the stranded legacy session: its replica is gone, the survivor does not know it
        raw = await post_with_session(replicas.url, stale)
        assert raw.status_code == 404
        assert raw.json()["error"] == {"code": -32600, "message": SESSION_GONE}
        with pytest.raises(MCPError) as gone:
            await stranded.call_tool("whoami", {})
        assert (gone.value.error.code, gone.value.error.message) == (-32600, SESSION_GONE)

    # a fresh initialize works, on the survivor
    async with legacy(replicas.url) as fresh:
        assert await served_by(fresh) == survivor.name
        assert session_id(fresh) != stale


async def until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the load never got going"
        await asyncio.sleep(0.05)


async def post_with_session(url: str, sid: str) -> httpx.Response:
    """A legacy ``tools/call`` sent as a client that kept a session id would send it."""
    headers = {
        **MCP_HEADERS,
        "Authorization": f"Bearer {BOB_TOKEN}",
        "Mcp-Session-Id": sid,
        "MCP-Protocol-Version": "2025-11-25",
    }
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "whoami", "arguments": {}},
    }
    async with httpx.AsyncClient() as http:
        return await http.post(url, json=body, headers=headers)
