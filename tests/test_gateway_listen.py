"""``subscriptions/listen`` through the gateway (2026-07-28): the backends' list changes
and resource updates reach the listen streams that asked for them and may see them.

A real gateway (in process, so its tasks can be counted) over streamable HTTP fronts
``tests/servers/gw_notes.py`` (``grow`` adds a tool), ``gw_math.py`` and
``gw_primitives.py`` (``grow_alpha`` adds a prompt and a resource, ``touch_alpha``
announces an update), and ``server-everything`` from npm; the listeners are
``mcp.Client`` (``Client.listen``) and ``fastmcp.Client`` in its default mode (the SDK's
``listen`` driver on its session), each with its own principal or view.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import fastmcp
import httpx2
import pytest
from fastmcp.client.transports import StreamableHttpTransport
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
    listen,
)

from _fixtures.gateway import ALICE_TOKEN, BOB_TOKEN, SERVERS, sha256
from _fixtures.mcp_servers import Notes, serve_http
from _fixtures.npm_servers import NpmServers
from toolgate.gateway.config.model import parse_config
from toolgate.gateway.serve import Gateway

TOOLS_CHANGED = "notifications/tools/list_changed"
PROMPTS_CHANGED = "notifications/prompts/list_changed"
RESOURCES_CHANGED = "notifications/resources/list_changed"
UPDATED = "notifications/resources/updated"
STATIC_DOC = "demo://resource/static/document/features.md"


def backend(script: str, *args: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SERVERS / script), *args]}


def config(**servers: Any) -> Any:
    """notes, math and alpha; alice's scope holds every group, bob's only ``math``."""
    tokens = {
        sha256(ALICE_TOKEN): {
            "id": "alice",
            "trust": "verified",
            "scope": ["default", "notes", "math", "memos"],
        },
        sha256(BOB_TOKEN): {"id": "bob", "trust": "declared", "scope": ["math"]},
    }
    groups = {
        "notes": {"description": "Take notes", "tools": ["notes:note_*"]},
        "math": {"description": "Arithmetic", "tools": ["math:*"]},
        "memos": {
            "description": "Alpha's memos",
            "tools": ["alpha:touch_*"],
            "resources": ["memo://alpha/*"],
        },
    }
    return parse_config(
        {
            "mcpServers": {
                "notes": backend("gw_notes.py"),
                "math": backend("gw_math.py"),
                "alpha": backend("gw_primitives.py", "--tag", "alpha"),
                **servers,
            },
            "toolgate": {
                "always": ["notes:grow", "alpha:grow_alpha", "alpha:touch_alpha"],
                "groups": groups,
                "identity": {"tokens": tokens},
            },
        }
    )


@asynccontextmanager
async def gateway_url(**servers: Any) -> AsyncIterator[tuple[Gateway, str]]:
    gateway = Gateway(config(**servers))
    try:
        async with gateway.running(), serve_http(gateway.http_app()) as url:
            await until(lambda: gateway.live() == set(gateway.backends), "every backend up")
            await gateway.sync(reason="start")  # the catalog holds every backend's tools
            yield gateway, url
    finally:
        await gateway.close()


def headers(token: str, toolsets: str | None = None) -> dict[str, str]:
    out = {"Authorization": f"Bearer {token}"}
    if toolsets is not None:
        out["X-MCP-Toolsets"] = toolsets
    return out


@asynccontextmanager
async def sdk_client(url: str, head: dict[str, str], notes: Notes) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers=head) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, message_handler=notes) as client:
            assert client.session.protocol_version == "2026-07-28"
            yield client


@asynccontextmanager
async def fastmcp_client(
    url: str, head: dict[str, str], notes: Notes
) -> AsyncIterator[fastmcp.Client[Any]]:
    transport = StreamableHttpTransport(url, headers=head)
    async with fastmcp.Client(transport, message_handler=notes) as client:
        assert client.session.protocol_version == "2026-07-28"
        yield client


async def until(check: Callable[[], bool], what: str, seconds: float = 20.0) -> None:
    """Wait for something the gateway or a backend does (a notification travelling)."""
    for _ in range(int(seconds / 0.05)):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


async def barrier(gateway: Gateway, notes: Notes) -> None:
    """Everything the gateway decided to send so far has reached ``notes``: a sync
    waits for the one under way, then an event every stream hears is sent and awaited
    (a stream delivers in order)."""
    await gateway.sync(reason="barrier")
    before = notes.methods.count(PROMPTS_CHANGED)
    await gateway.listen.publish(PromptsListChanged())
    await until(lambda: notes.methods.count(PROMPTS_CHANGED) > before, "the barrier event")


# -- tools -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sdk", "fastmcp"])
async def test_tools_list_changed_reaches_the_listeners_whose_view_changed(kind: str) -> None:
    """``grow`` adds ``note_count`` to the group ``notes``: the listener whose view holds
    ``notes`` hears tools/list_changed; the one viewing ``math`` does not."""
    grown, still = Notes(), Notes()
    async with gateway_url() as (gateway, url):
        if kind == "sdk":
            async with (
                sdk_client(url, headers(ALICE_TOKEN, "notes"), grown) as alice,
                sdk_client(url, headers(ALICE_TOKEN, "math"), still) as other,
                alice.listen(tools_list_changed=True) as sub,
                other.listen(tools_list_changed=True, prompts_list_changed=True),
            ):
                before = {t.name for t in (await alice.list_tools()).tools}
                await alice.call_tool("grow", {})
                await until(lambda: TOOLS_CHANGED in grown.methods, "tools/list_changed")
                event = await anext(aiter(sub))
                after = {t.name for t in (await alice.list_tools()).tools}
                await barrier(gateway, still)
                unchanged = {t.name for t in (await other.list_tools()).tools}
        else:
            async with (
                fastmcp_client(url, headers(ALICE_TOKEN, "notes"), grown) as fm_alice,
                fastmcp_client(url, headers(ALICE_TOKEN, "math"), still) as fm_other,
                listen(fm_alice.session, tools_list_changed=True) as sub,
                listen(fm_other.session, tools_list_changed=True, prompts_list_changed=True),
            ):
                before = {t.name for t in await fm_alice.list_tools()}
                await fm_alice.call_tool("grow", {})
                await until(lambda: TOOLS_CHANGED in grown.methods, "tools/list_changed")
                event = await anext(aiter(sub))
                after = {t.name for t in await fm_alice.list_tools()}
                await barrier(gateway, still)
                unchanged = {t.name for t in await fm_other.list_tools()}
    assert event == ToolsListChanged()
    assert after - before == {"note_count"}
    assert "note_count" not in unchanged
    assert TOOLS_CHANGED not in still.methods
    assert still.methods.count(PROMPTS_CHANGED) == 1  # the barrier, so the stream was live


# -- prompts, resources, updates, and who may hear them ---------------------------------------


@pytest.mark.parametrize("kind", ["sdk", "fastmcp"])
async def test_updates_and_list_changes_reach_only_who_may_read_them(kind: str) -> None:
    """alice (scope ``memos`` and ``default``) and bob (``math`` only) both listen to
    ``memo://alpha/note`` and to prompt and resource list changes: only alice's
    subscription is acknowledged, only she hears its update and the list changes
    ``grow_alpha`` makes to what she may see (a prompt at the top level, a resource in
    ``memos``); bob sees neither list change."""
    alice_notes, bob_notes = Notes(), Notes()
    note = "memo://alpha/note"
    wanted = partial(
        listen,
        prompts_list_changed=True,
        resources_list_changed=True,
        resource_subscriptions=[note],
    )
    async with gateway_url() as (gateway, url):
        opened: Callable[..., Any] = sdk_client if kind == "sdk" else fastmcp_client
        async with (
            opened(url, headers(ALICE_TOKEN), alice_notes) as alice,
            opened(url, headers(BOB_TOKEN), bob_notes) as bob,
            wanted(alice.session) as alice_sub,
            wanted(bob.session) as bob_sub,
        ):
            assert alice_sub.honored.resource_subscriptions == [note]
            assert bob_sub.honored.resource_subscriptions is None
            await alice.session.call_tool("touch_alpha", {"uri": note})
            events = aiter(alice_sub)
            assert await anext(events) == ResourceUpdated(uri=note)
            await alice.session.call_tool("grow_alpha", {})
            both = {PROMPTS_CHANGED, RESOURCES_CHANGED}
            await until(lambda: both <= set(alice_notes.methods), "both list_changed")
            grown = {await anext(events), await anext(events)}
            heard = list(alice_notes.methods)
            await barrier(gateway, bob_notes)
            prompts = [p.name for p in (await alice.session.list_prompts()).prompts]
    assert grown == {PromptsListChanged(), ResourcesListChanged()}
    assert heard == [UPDATED, PROMPTS_CHANGED, RESOURCES_CHANGED]
    assert "later_alpha" in prompts
    assert bob_notes.methods == [PROMPTS_CHANGED]  # the barrier only


@pytest.mark.parametrize("kind", ["sdk", "fastmcp"])
async def test_server_everythings_updates_reach_only_the_uris_listener(
    kind: str, npm_servers: NpmServers
) -> None:
    """A third-party backend: ``server-everything``'s subscription updates reach a listener
    of the URI, and only one that asked for it."""
    watcher, other = Notes(), Notes()
    everything = npm_servers.command("everything")
    async with gateway_url(everything=everything) as (gateway, url):
        opened: Callable[..., Any] = sdk_client if kind == "sdk" else fastmcp_client
        async with (
            opened(url, headers(ALICE_TOKEN), watcher) as client,
            opened(url, headers(ALICE_TOKEN), other) as bystander,
            listen(client.session, resource_subscriptions=[STATIC_DOC]) as sub,
            listen(bystander.session, prompts_list_changed=True),
        ):
            assert sub.honored.resource_subscriptions == [STATIC_DOC]
            await client.session.call_tool("toggle-subscriber-updates", {})
            try:
                assert await anext(aiter(sub)) == ResourceUpdated(uri=STATIC_DOC)
            finally:
                await client.session.call_tool("toggle-subscriber-updates", {})
            await barrier(gateway, other)
    assert set(watcher.methods) == {UPDATED}
    assert other.methods == [PROMPTS_CHANGED]


# -- the stream's end ------------------------------------------------------------------------


async def test_a_closed_listen_stream_leaves_nothing_behind() -> None:
    """A 2026-07-28 client is told changes can be listened to; a client that goes away
    ends its stream: the gateway forgets it (no subscriber, no live entry) and no task
    of the stream is left."""
    note = "memo://alpha/note"
    async with gateway_url() as (gateway, url):
        live = gateway.binding.live if gateway.binding is not None else None
        assert live is not None
        baseline = {t for t in asyncio.all_tasks() if not t.done()}
        notes = Notes()
        async with (
            sdk_client(url, headers(ALICE_TOKEN), notes) as client,
            client.listen(tools_list_changed=True, resource_subscriptions=[note]) as sub,
        ):
            assert sub.honored.resource_subscriptions == [note]
            assert len(live) == 1
            caps = client.server_capabilities  # what a 2026-07-28 client is told
            assert caps.tools is not None and caps.tools.list_changed is True
            assert caps.prompts is not None and caps.prompts.list_changed is True
            assert caps.resources is not None and caps.resources.subscribe is True
            await client.call_tool("touch_alpha", {"uri": note})
            assert await anext(aiter(sub)) == ResourceUpdated(uri=note)
        await until(lambda: len(live) == 0, "the stream left the live connections")
        await until(
            lambda: not {t for t in asyncio.all_tasks() if not t.done()} - baseline,
            "every task of the stream ended",
        )
        assert not gateway.relay._subscribers  # the backend was unsubscribed too
