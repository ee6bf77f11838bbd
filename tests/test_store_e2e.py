"""Session stores end to end: the real ``toolgate serve`` command, real clients, real stores.

A SQLite-backed gateway is stopped and a new one started on the same file: a bearer
principal's stage and rate-limit count are back. A Redis-backed gateway whose Redis is
stopped mid-run fails closed with a retryable JSON-RPC error (and logs it), then serves
again once Redis is back, without a restart. Two replicas on one Redis share a principal's
stage and rate limit. Protocol 2026-07-28 (``fastmcp.Client`` default mode) keys the state
by the authenticated principal, so the same token finds the same state on every process.
The gateways reach one pair of backends over HTTP (``shared_backends``): these tests are
about the store, not how a backend starts, and a note's id counts up across them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp.shared.exceptions import MCPError

from _fixtures.gateway import (
    ALICE_TOKEN,
    BOB_TOKEN,
    HttpGateway,
    gateway_config,
    toolgate_argv,
)
from _fixtures.redis_server import RedisServer
from toolgate.state import SessionState, open_store
from toolgate.state.sqlite import SqliteStore

# ``note_add`` moves a session from "browse" to "checkout"; ``multiply`` runs only there.
STAGES = {
    "initial": "browse",
    "stages": [
        {"name": "browse", "transitions": [{"on": "note_add", "to": "checkout"}]},
        {"name": "checkout"},
    ],
    "tool_stages": {"math:multiply": ["checkout"]},
}
# ``add`` runs at most 3 times a minute per principal.
POLICIES = [
    {"tools": ["note_delete"], "min_trust": "verified"},
    {"tools": ["math:add"], "rate_limit": {"max": 3, "window_s": 60}},
]


@pytest.fixture
def config(shared_backends: dict[str, Any]) -> Callable[[Path, str], Path]:
    """A gateway config on ``store`` fronting the module's backends."""

    def write(tmp: Path, store: str) -> Path:
        return gateway_config(
            tmp, tokens=True, servers=shared_backends, stages=STAGES, policies=POLICIES, store=store
        )

    return write


@contextmanager
def serving(cfg: Path, log: Path) -> Iterator[HttpGateway]:
    with replicas(cfg, [log]) as [gateway]:
        yield gateway


@contextmanager
def replicas(cfg: Path, logs: list[Path]) -> Iterator[list[HttpGateway]]:
    """``toolgate serve --transport http`` processes on one config, started in parallel."""
    gateways = [HttpGateway([*toolgate_argv(), "serve", str(cfg)], log) for log in logs]
    try:
        with ThreadPoolExecutor(len(gateways)) as pool:
            list(pool.map(HttpGateway.start, gateways))
        yield gateways
    finally:
        for gateway in gateways:
            gateway.stop()


def modern(gateway: HttpGateway, token: str = BOB_TOKEN) -> Client[Any]:
    """A 2026-07-28 client (fastmcp's default mode): stateless HTTP, state by principal."""
    return Client(StreamableHttpTransport(gateway.url, auth=token))


def legacy(gateway: HttpGateway, token: str = BOB_TOKEN) -> Client[Any]:
    return Client(StreamableHttpTransport(gateway.url, auth=token), mode="legacy")


async def call(client: Client[Any], name: str, arguments: dict[str, Any]) -> Any:
    """The structured content of a call (success or error result)."""
    result = await client.call_tool_mcp(name, arguments)
    return (result.is_error, result.structured_content)


def stage_locked(current: str) -> tuple[bool, dict[str, Any]]:
    return (
        True,
        {
            "error": (
                "Tool 'multiply' is only available in stage 'checkout'; "
                f"this session is in stage '{current}'."
            ),
            "code": "tool_hidden",
            "tool": "multiply",
            "reason": "stage-locked:checkout",
            "stages": ["checkout"],
            "current_stage": current,
        },
    )


async def enter_checkout(state: SessionState) -> tuple[SessionState, None]:
    return replace(state, stage="checkout"), None


MULTIPLIED = (False, {"result": 6})
ADDED = (False, {"result": 5})


def note_added(outcome: tuple[bool, dict[str, Any]]) -> bool:
    """A successful ``note_add``: its id is the backend's next (the backends are shared)."""
    is_error, data = outcome
    return not is_error and list(data) == ["id"] and isinstance(data["id"], int)


def rate_limited(outcome: tuple[bool, dict[str, Any]]) -> float:
    """The refusal's ``retry_after`` after checking the rest of the refusal exactly."""
    is_error, data = outcome
    retry_after = float(data["retry_after"])
    assert (is_error, data) == (
        True,
        {
            "error": f"Rate limit reached for tool 'add'; retry after {retry_after:.1f} s.",
            "code": "rate_limited",
            "tool": "add",
            "retry_after": retry_after,
        },
    )
    assert 0 < retry_after <= 60
    return retry_after


# -- restart: SQLite keeps a principal's state ---------------------------------------------


async def test_a_restarted_sqlite_gateway_gives_the_same_token_its_stage_and_rate_count_back(
    tmp_path: Path, config: Callable[[Path, str], Path]
) -> None:
    db = tmp_path / "state.db"
    cfg = config(tmp_path, f"sqlite://{db}")
    with serving(cfg, tmp_path / "first.log") as first:
        async with modern(first) as bob:
            assert bob.protocol_version == "2026-07-28"
            assert await call(bob, "multiply", {"a": 2, "b": 3}) == stage_locked("browse")
            assert note_added(await call(bob, "note_add", {"text": "milk"}))
            assert await call(bob, "multiply", {"a": 2, "b": 3}) == MULTIPLIED
            assert [await call(bob, "add", {"a": 2, "b": 3}) for _ in range(2)] == [ADDED] * 2
    assert first.proc is not None and first.proc.returncode is not None
    with serving(cfg, tmp_path / "second.log") as second:
        async with modern(second) as bob:
            assert await call(bob, "multiply", {"a": 2, "b": 3}) == MULTIPLIED
            assert await call(bob, "add", {"a": 2, "b": 3}) == ADDED  # the 3rd of 3
            rate_limited(await call(bob, "add", {"a": 2, "b": 3}))
    sessions = SqliteStore(path=str(db))
    try:
        bob_state = await sessions.load("principal:bob")
    finally:
        await sessions.close()
    assert (bob_state.stage, bob_state.active) == ("checkout", frozenset())


async def test_a_bare_store_path_is_a_sqlite_file_beside_the_config(
    tmp_path: Path, config: Callable[[Path, str], Path]
) -> None:
    cfg = config(tmp_path, "state/bob.db")
    (tmp_path / "state").mkdir()
    with serving(cfg, tmp_path / "gateway.log") as gateway:
        async with modern(gateway) as bob:
            assert note_added(await call(bob, "note_add", {"text": "milk"}))
    sessions = SqliteStore(path=str(tmp_path / "state" / "bob.db"))
    try:
        assert (await sessions.load("principal:bob")).stage == "checkout"
    finally:
        await sessions.close()


@pytest.mark.parametrize("relative", [False, True])
async def test_open_store_takes_a_bare_path_as_a_sqlite_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    path = "state.db" if relative else str(tmp_path / "state.db")
    store = open_store(path, idle_ttl=5.0)
    try:
        assert isinstance(store, SqliteStore)
        assert (store.path, store.idle_ttl) == (path, 5.0)
        await store.mutate("k", enter_checkout)
        assert (tmp_path / "state.db").is_file()
        assert (await store.load("k")).stage == "checkout"
    finally:
        await store.close()


# -- fault: Redis stops under a running gateway ---------------------------------------------

STORE_DOWN = "Session store unavailable"


def store_error(raised: pytest.ExceptionInfo[MCPError]) -> tuple[int, str, Any]:
    error = raised.value.error
    return (error.code, error.message[: len(STORE_DOWN)], error.data)


async def test_a_redis_gateway_fails_closed_while_redis_is_down_and_recovers_without_restart(
    tmp_path: Path, config: Callable[[Path, str], Path], redis_server: RedisServer, redis_url: str
) -> None:
    log = tmp_path / "gateway.log"
    with serving(config(tmp_path, redis_url), log) as gateway:
        async with legacy(gateway) as old, modern(gateway) as new:
            await old.call_tool_mcp("enable_tools", {"groups": ["math"]})
            assert "add" in [t.name for t in await old.list_tools()]
            assert note_added(await call(new, "note_add", {"text": "milk"}))
            assert await call(new, "multiply", {"a": 2, "b": 3}) == MULTIPLIED
            redis_server.stop()
            try:
                failures = []
                with pytest.raises(MCPError) as listing:
                    await old.list_tools()
                failures.append(store_error(listing))
                with pytest.raises(MCPError) as calling:
                    await old.call_tool_mcp("add", {"a": 2, "b": 3})
                failures.append(store_error(calling))
                with pytest.raises(MCPError) as gated:
                    await new.call_tool_mcp("multiply", {"a": 2, "b": 3})
                failures.append(store_error(gated))
                with pytest.raises(MCPError) as limited:
                    await new.call_tool_mcp("add", {"a": 2, "b": 3})
                failures.append(store_error(limited))
            finally:
                redis_server.start()
            expected = (-32603, STORE_DOWN, {"code": "store_unavailable", "retryable": True})
            assert failures == [expected] * 4
            # Redis is back (empty: persistence is off), the same clients are served again
            assert "add" not in [t.name for t in await old.list_tools()]
            await old.call_tool_mcp("enable_tools", {"groups": ["math"]})
            assert await call(old, "add", {"a": 2, "b": 3}) == ADDED
            assert await call(new, "multiply", {"a": 2, "b": 3}) == stage_locked("browse")
    refused = [
        line.split(" toolgate.gateway: ")[1].split(":")[0]
        for line in log.read_text().splitlines()
        if f"refused (retryable): {STORE_DOWN}" in line
    ]
    assert refused == [
        "tools/list refused (retryable)",
        *["tools/call refused (retryable)"] * 3,
    ]
    # nothing ran while the state could not be read: one multiply before, one add after
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    ran = [e["tool"] for e in events if e["type"] == "tool.executed" and e["outcome"] == "success"]
    assert ran == ["note_add", "multiply", "add"]


# -- two replicas on one Redis ---------------------------------------------------------------


async def test_two_replicas_on_one_redis_share_a_principals_stage_and_rate_limit(
    tmp_path: Path, config: Callable[[Path, str], Path], redis_url: str
) -> None:
    cfg = config(tmp_path, redis_url)
    with replicas(cfg, [tmp_path / "a.log", tmp_path / "b.log"]) as [a, b]:
        async with modern(a) as on_a, modern(b) as on_b:
            assert await call(on_b, "multiply", {"a": 2, "b": 3}) == stage_locked("browse")
            assert note_added(await call(on_a, "note_add", {"text": "milk"}))
            assert await call(on_b, "multiply", {"a": 2, "b": 3}) == MULTIPLIED
            outcomes = [
                await call(client, "add", {"a": 2, "b": 3}) for client in (on_a, on_b, on_a)
            ]
            assert outcomes == [ADDED] * 3
            rate_limited(await call(on_b, "add", {"a": 2, "b": 3}))
            rate_limited(await call(on_a, "add", {"a": 2, "b": 3}))
        async with modern(b, ALICE_TOKEN) as alice:
            # alice (scope "notes") has her own stage: she is still browsing on either replica
            with pytest.raises(MCPError) as hidden:
                await alice.call_tool_mcp("multiply", {"a": 2, "b": 3})
            assert hidden.value.error.message == "Unknown tool: multiply"
