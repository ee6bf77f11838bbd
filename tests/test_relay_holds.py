"""What the relay holds to under several clients and principals at once, through a real
``toolgate serve`` (streamable HTTP) and the SDK's ``mcp.ClientSession`` (legacy) and
``fastmcp.Client`` (2026-07-28).

The gateway fronts ``relay`` (``tests/servers/gw_call_relay.py``: a tool that logs during
its call, one that runs until cancelled) and ``alpha`` / ``beta``
(``tests/servers/gw_primitives.py``: prompts, resources, a template each), behind
tokens: alice has ``alpha`` in scope, bob ``beta``, both ``relay``; carol everything.
Held: a backend's log message during a call reaches that call's client or nobody, never
another session; a resource out of scope is refused as one that does not exist, naming
the URI asked for; a cursor is taken only by the list that issued it; after a reload
changes a principal's scope, its live session's subscriptions and ``list_changed``
follow the new scope.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import sys
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fastmcp
import httpx2
import mcp_types as mt
import pytest
from fastmcp.client.transports import StreamableHttpTransport
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from _fixtures.gateway import (
    ALICE_TOKEN,
    BOB_TOKEN,
    SERVERS,
    HttpGateway,
    sha256,
    toolgate_argv,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

#: a principal with every group in scope (over HTTP, every client needs a token here)
CAROL_TOKEN = "carol-secret-token"


def _config(marks: Path, alice_scope: list[str]) -> dict[str, Any]:
    def primitives(tag: str) -> dict[str, Any]:
        return {
            "command": sys.executable,
            "args": [str(SERVERS / "gw_primitives.py"), "--tag", tag],
        }

    relay = {
        "command": sys.executable,
        "args": [str(SERVERS / "gw_call_relay.py"), "--marks", str(marks)],
    }
    return {
        "mcpServers": {"relay": relay, "alpha": primitives("alpha"), "beta": primitives("beta")},
        "toolgate": {
            "strategy": "flat",
            "page_size": 1,
            "groups": {
                "calls": {"description": "Calls", "tools": ["relay:*"]},
                "ga": {
                    "description": "Alpha",
                    "tools": ["alpha:*"],
                    "prompts": ["alpha:*"],
                    "resources": ["memo://alpha/*"],
                },
                "gb": {
                    "description": "Beta",
                    "tools": ["beta:*"],
                    "prompts": ["beta:*"],
                    "resources": ["memo://beta/*"],
                },
            },
            "identity": {
                "default": {"id": "local", "trust": "declared", "scope": ["*"]},
                "tokens": {
                    sha256(ALICE_TOKEN): {"id": "alice", "trust": "verified", "scope": alice_scope},
                    sha256(BOB_TOKEN): {"id": "bob", "trust": "verified", "scope": ["calls", "gb"]},
                    sha256(CAROL_TOKEN): {"id": "carol", "trust": "verified", "scope": ["*"]},
                },
            },
        },
    }


@dataclass
class Served:
    gateway: HttpGateway
    config: Path
    marks: Path

    def log(self) -> str:
        return self.gateway.log.read_text(errors="replace")

    async def logged(self, line: str, count: int = 1, timeout: float = 60.0) -> None:
        async with asyncio.timeout(timeout):
            while self.log().count(line) < count:
                await asyncio.sleep(0.05)


def _serve(tmp: Path, alice_scope: list[str]) -> Iterator[Served]:
    marks = tmp / "marks"
    marks.mkdir()
    config = tmp / "toolgate.json"
    config.write_text(json.dumps(_config(marks, alice_scope), indent=2))
    gateway = HttpGateway([*toolgate_argv(), "serve", str(config)], tmp / "gateway.log")
    gateway.start()
    try:
        gateway.wait_ready()
        yield Served(gateway, config, marks)
    finally:
        gateway.stop()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from _serve(tmp_path_factory.mktemp("relay-holds"), ["calls", "ga"])


# -- a legacy session that records what it hears ----------------------------------------


@dataclass
class Heard:
    logs: list[str] = field(default_factory=list)
    notes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    progressed: asyncio.Event = field(default_factory=asyncio.Event)

    def methods(self) -> list[str]:
        return [method for method, _ in self.notes]

    def updated(self) -> list[str]:
        return [str(p.get("uri")) for m, p in self.notes if m == "notifications/resources/updated"]


@dataclass
class Session:
    raw: ClientSession
    heard: Heard


@contextlib.asynccontextmanager
async def session(url: str, token: str = CAROL_TOKEN) -> AsyncIterator[Session]:
    heard = Heard()

    async def on_log(params: mt.LoggingMessageNotificationParams) -> None:
        heard.logs.append(str(params.data))

    async def on_message(message: Any) -> None:
        method = getattr(message, "method", None)
        if isinstance(method, str):
            params = getattr(message, "params", None)
            dumped = params.model_dump(mode="json", by_alias=True) if params is not None else {}
            heard.notes.append((method, dumped))

    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write, *_),
        ClientSession(read, write, logging_callback=on_log, message_handler=on_message) as raw,
    ):
        await raw.initialize()
        yield Session(raw, heard)


async def set_level(client: Session, level: mt.LoggingLevel) -> None:
    with warnings.catch_warnings():  # deprecated on 2026-07-28; these sessions are legacy
        warnings.simplefilter("ignore")
        await client.raw.set_logging_level(level)


async def eventually(check: Callable[[], Any], timeout: float = 15.0) -> Any:
    async with asyncio.timeout(timeout):
        while not (value := check()):
            await asyncio.sleep(0.05)
        return value


@contextlib.asynccontextmanager
async def calling_slowly(client: Session) -> AsyncIterator[None]:
    """``client`` has a call in flight on ``relay`` (it runs until cancelled)."""

    async def progressed(progress: float, total: float | None, message: str | None) -> None:
        client.heard.progressed.set()

    slow = asyncio.ensure_future(
        client.raw.call_tool("slow_progress", {}, progress_callback=progressed)
    )
    try:
        await asyncio.wait_for(client.heard.progressed.wait(), 20)
        yield
    finally:
        slow.cancel()
        with contextlib.suppress(asyncio.CancelledError, MCPError):
            await slow


# -- #1: a call's log messages ------------------------------------------------------------

DURING = ("debug during the call", "error during the call")


async def test_a_calls_log_messages_never_reach_another_clients_session(served: Served) -> None:
    """Bob's call is in flight on the backend alice calls: the backend's messages for
    alice's call may be either's (nothing on stdio says), so nobody hears them; bob
    above all does not."""
    url = served.gateway.url
    async with session(url, ALICE_TOKEN) as alice, session(url, BOB_TOKEN) as bob:
        await set_level(alice, "debug")
        await set_level(bob, "debug")
        async with calling_slowly(bob):
            result = await alice.raw.call_tool("log", {})
            assert not result.is_error
            await asyncio.sleep(0.3)  # what was sent had time to arrive
        assert not set(DURING) & set(bob.heard.logs)
        assert set(alice.heard.logs) <= set(DURING)


async def test_a_2026_calls_log_messages_never_reach_a_legacy_session(served: Served) -> None:
    url = served.gateway.url
    heard: list[str] = []

    async def on_log(message: Any) -> None:
        heard.append(str(message.data))

    modern = fastmcp.Client(StreamableHttpTransport(url, auth=CAROL_TOKEN), log_handler=on_log)
    async with session(url, BOB_TOKEN) as bob, modern:
        assert modern.protocol_version in MODERN_PROTOCOL_VERSIONS
        await set_level(bob, "debug")
        async with calling_slowly(bob):
            result = await modern.call_tool("log", {}, raise_on_error=False)
            assert not result.is_error
            await asyncio.sleep(0.3)
        assert not set(DURING) & set(bob.heard.logs)
        assert set(heard) <= set(DURING)


async def test_log_messages_of_one_call_and_outside_calls_go_where_they_did(
    served: Served,
) -> None:
    """Alone on its backend, a call hears its own messages; one the backend sends after
    every call ended reaches each session that set a level and hears that backend."""
    url = served.gateway.url
    async with session(url, ALICE_TOKEN) as alice, session(url, BOB_TOKEN) as bob:
        await set_level(alice, "debug")
        await set_level(bob, "debug")
        await alice.raw.call_tool("log", {"later": True})
        assert alice.heard.logs[:2] == list(DURING)
        await eventually(lambda: "warning after the call" in bob.heard.logs)
        await eventually(lambda: "warning after the call" in alice.heard.logs)
        assert not set(DURING) & set(bob.heard.logs)


# -- #3: an out-of-scope resource is an unknown one ---------------------------------------


async def test_a_resource_out_of_scope_is_refused_naming_the_uri_asked_for(
    served: Served,
) -> None:
    hidden, unknown = "memo://beta/items/3", "memo://nothing/items/3"
    async with session(served.gateway.url, ALICE_TOKEN) as alice:
        for uri in (hidden, unknown):
            for ask in (alice.raw.read_resource, alice.raw.subscribe_resource):
                with pytest.raises(MCPError) as refused, warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # subscribe: legacy only
                    await ask(uri)
                assert (refused.value.error.code, refused.value.error.message) == (
                    -32002,
                    f"Resource not found: {uri}",
                )
                assert "{id}" not in json.dumps(refused.value.error.model_dump(mode="json"))
            ref = mt.ResourceTemplateReference(type="ref/resource", uri=uri)
            with pytest.raises(MCPError) as refused:
                await alice.raw.complete(ref, {"name": "id", "value": "1"})
            assert refused.value.error.message == f"Resource not found: {uri}"
        # in scope, the same template serves
        read = await alice.raw.read_resource("memo://alpha/items/3")
        assert "alpha says memo://alpha/items/3" in json.dumps(read.model_dump(mode="json"))


# -- #4: a cursor belongs to its list -------------------------------------------------------


async def test_a_cursor_is_taken_only_by_the_list_that_issued_it(served: Served) -> None:
    async with session(served.gateway.url) as client:
        s = client.raw
        cursors = {
            "tools": (await s.list_tools()).next_cursor,
            "prompts": (await s.list_prompts()).next_cursor,
            "resources": (await s.list_resources()).next_cursor,
            "templates": (await s.list_resource_templates()).next_cursor,
        }
        assert all(cursors.values()), cursors  # every list has a second page (page_size 1)
        lists = {
            "tools": s.list_tools,
            "prompts": s.list_prompts,
            "resources": s.list_resources,
            "templates": s.list_resource_templates,
        }
        for issuer, cursor in cursors.items():
            assert cursor is not None
            for name, listing in lists.items():
                if name == issuer:
                    await listing(
                        params=mt.PaginatedRequestParams(cursor=cursor)
                    )  # its own list pages on
                    continue
                with pytest.raises(MCPError) as refused:
                    await listing(params=mt.PaginatedRequestParams(cursor=cursor))
                assert refused.value.error.code == mt.INVALID_PARAMS, (issuer, name)
                assert refused.value.error.message.startswith("Invalid cursor"), (issuer, name)


async def test_a_cursor_still_names_the_last_item_seen_on_every_page(served: Served) -> None:
    async with session(served.gateway.url) as client:
        s = client.raw
        every = [p.name for p in (await s.list_prompts()).prompts]
        cursor = (await s.list_prompts()).next_cursor
        while cursor is not None:
            page = await s.list_prompts(params=mt.PaginatedRequestParams(cursor=cursor))
            every += [p.name for p in page.prompts]
            cursor = page.next_cursor
        assert every == sorted(every) and len(every) == len(set(every)) > 2
        # a cursor without a kind (issued before cursors had one) names the item seen
        old = base64.urlsafe_b64encode(f"after:{every[0]}".encode()).decode().rstrip("=")
        assert [
            p.name
            for p in (await s.list_prompts(params=mt.PaginatedRequestParams(cursor=old))).prompts
        ] == [every[1]]


# -- #2: a reload that changes a principal's scope -----------------------------------------


async def prompt_names(s: ClientSession) -> set[str]:
    """Every page of ``prompts/list``."""
    names: set[str] = set()
    cursor: str | None = None
    while True:
        page = await s.list_prompts(params=mt.PaginatedRequestParams(cursor=cursor))
        names |= {p.name for p in page.prompts}
        if (cursor := page.next_cursor) is None:
            return names


@pytest.fixture(scope="module")
def reloadable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A gateway of its own: its config is rewritten."""
    yield from _serve(tmp_path_factory.mktemp("relay-reload"), ["calls", "ga"])


NOTE = "memo://alpha/note"
LIST_CHANGED = {
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
}


async def test_after_a_reload_a_live_session_follows_its_principals_new_scope(
    reloadable: Served,
) -> None:
    """Alice's scope goes from ``alpha`` and ``relay`` to ``beta``: her live session is
    told each of its lists changed, and hears no more updates of a resource she may not
    read now, nor ``relay``'s log messages outside calls; carol, whose scope stayed,
    still does."""
    url = reloadable.gateway.url
    async with session(url, ALICE_TOKEN) as alice, session(url) as carol:
        s = alice.raw
        await set_level(alice, "debug")
        await set_level(carol, "debug")
        await s.list_tools()  # what it was shown: its listing is compared after
        assert "only_alpha" in await prompt_names(s)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # subscribe: legacy only
            await s.subscribe_resource(NOTE)
            await carol.raw.subscribe_resource(NOTE)
        await carol.raw.call_tool("touch_alpha", {"uri": NOTE})
        await eventually(lambda: NOTE in alice.heard.updated())
        await eventually(lambda: NOTE in carol.heard.updated())

        reloadable.config.write_text(json.dumps(_config(reloadable.marks, ["gb"]), indent=2))
        alice.heard.notes.clear()
        carol.heard.notes.clear()
        assert reloadable.gateway.proc is not None
        os.kill(reloadable.gateway.proc.pid, signal.SIGHUP)
        await reloadable.logged("config reloaded")

        await eventually(lambda: set(alice.heard.methods()) >= LIST_CHANGED)
        assert "only_beta" in await prompt_names(s)
        with pytest.raises(MCPError, match=f"Resource not found: {NOTE}"):
            await s.read_resource(NOTE)
        await carol.raw.call_tool("touch_alpha", {"uri": NOTE})
        await eventually(lambda: NOTE in carol.heard.updated())
        await carol.raw.call_tool("log", {"later": True})
        await eventually(lambda: "warning after the call" in carol.heard.logs)
        await asyncio.sleep(0.3)  # what was sent had time to arrive
        assert NOTE not in alice.heard.updated()
        assert "warning after the call" not in alice.heard.logs
        # carol's lists did not change: she hears no list_changed
        assert not LIST_CHANGED & set(carol.heard.methods())
