"""The gateway relays prompts, resources, resource templates, subscriptions, completions
and the backends' instructions, on both protocol eras.

One real ``toolgate serve`` (streamable HTTP) per module fronts the npm reference servers
``server-everything`` (prompts, resources, templates, subscriptions, completions) and
``server-memory`` (tools only), and two small Python backends (``tests/servers/
gw_primitives.py``: ``alpha``, and ``beta`` with ``prefix: b``) whose resource
``memo://shared`` collides. Every feature is compared with the same server asked
directly, through ``mcp.Client`` and ``fastmcp.Client`` on 2025-11-25 and 2026-07-28.
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastmcp
import mcp_types as mt
import pytest
from fastmcp.client.transports import StreamableHttpTransport
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from _fixtures.gateway import SERVERS, HttpGateway, toolgate_argv
from _fixtures.mcp_servers import Notes
from _fixtures.npm_servers import NpmServers, ensure_npm_servers
from _fixtures.spec import CLIENTS, PROTOCOL, ClientKind, Era
from toolgate.errors import ToolgateError
from toolgate.gateway.commands.check import run_check

OWN = (
    "Tools are disclosed progressively: call list_groups to see what is available and "
    "enable_tools to turn a group on."
)
STATIC_DOC = "demo://resource/static/document/features.md"
PAGE_SIZE = 5  # toolgate's pages: smaller than every list, so the cursor is walked


def primitives(tag: str, *extra: str) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": [str(SERVERS / "gw_primitives.py"), "--tag", tag, *extra],
    }


def dump(model: Any) -> Any:
    """A result as its wire dict, without the envelope fields each era adds."""
    data = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    for key in ("_meta", "resultType", "ttlMs", "cacheScope", "nextCursor"):
        data.pop(key, None)
    return data


# -- the gateway and the direct server --------------------------------------------------


@dataclass
class Relayed:
    gateway: HttpGateway
    down_file: Path
    direct: dict[str, Any]


def _direct(npm: NpmServers) -> dict[str, Any]:
    """What server-everything answers when asked directly (once per module)."""

    async def ask() -> dict[str, Any]:
        argv = npm.argv("everything")
        params = StdioServerParameters(command=argv[0], args=argv[1:])
        async with Client(params, mode="legacy") as client:
            s = client.session
            prompt_ref = mt.PromptReference(type="ref/prompt", name="completable-prompt")
            template_ref = mt.ResourceTemplateReference(
                type="ref/resource", uri="demo://resource/dynamic/text/{resourceId}"
            )
            return {
                "instructions": s.instructions,
                "prompts": [dump(p) for p in (await s.list_prompts()).prompts],
                "resources": [dump(r) for r in (await s.list_resources()).resources],
                "templates": [
                    dump(t) for t in (await s.list_resource_templates()).resource_templates
                ],
                "args-prompt": dump(await s.get_prompt("args-prompt", {"city": "Paris"})),
                "static": dump(await s.read_resource(STATIC_DOC)),
                "complete-prompt": dump(
                    await s.complete(prompt_ref, {"name": "department", "value": "E"})
                ),
                "complete-prompt-context": dump(
                    await s.complete(
                        prompt_ref, {"name": "name", "value": ""}, {"department": "Sales"}
                    )
                ),
                "complete-template": dump(
                    await s.complete(template_ref, {"name": "resourceId", "value": "1"})
                ),
            }

    return asyncio.run(ask())


@pytest.fixture(scope="module")
def relayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Relayed]:
    npm = ensure_npm_servers()
    direct = _direct(npm)
    tmp = tmp_path_factory.mktemp("relay")
    down = tmp / "beta.down"
    config = {
        "mcpServers": {
            "everything": npm.command("everything"),
            "memory": npm.command("memory"),
            "alpha": primitives("alpha"),
            "beta": {**primitives("beta", "--fail-if", str(down)), "prefix": "b"},
        },
        "toolgate": {"page_size": PAGE_SIZE},
    }
    path = tmp / "toolgate.json"
    path.write_text(json.dumps(config, indent=2))
    gateway = HttpGateway([*toolgate_argv(), "serve", str(path)], tmp / "gateway.log")
    gateway.start()
    try:
        yield Relayed(gateway, down, direct)
    finally:
        gateway.stop()


@dataclass
class Wire:
    """One client of the gateway, whichever library: the few calls the tests make."""

    kind: ClientKind
    session: Any  # the mcp ClientSession underneath (both libraries have one)
    client: Any
    notes: Notes

    async def prompts(self) -> list[dict[str, Any]]:
        if self.kind == "fastmcp":
            return [dump(p) for p in await self.client.list_prompts()]
        return [dump(p) for p in await _walk(self.session.list_prompts, "prompts")]

    async def resources(self) -> list[dict[str, Any]]:
        if self.kind == "fastmcp":
            return [dump(r) for r in await self.client.list_resources()]
        return [dump(r) for r in await _walk(self.session.list_resources, "resources")]

    async def templates(self) -> list[dict[str, Any]]:
        if self.kind == "fastmcp":
            return [dump(t) for t in await self.client.list_resource_templates()]
        walk = self.session.list_resource_templates
        return [dump(t) for t in await _walk(walk, "resource_templates")]

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> Any:
        if self.kind == "fastmcp":
            return dump(await self.client.get_prompt_mcp(name, arguments))
        return dump(await self.session.get_prompt(name, arguments))

    async def read(self, uri: str) -> Any:
        if self.kind == "fastmcp":
            return dump(await self.client.read_resource_mcp(uri))
        return dump(await self.session.read_resource(uri))

    async def complete(
        self, ref: Any, argument: dict[str, str], context: dict[str, str] | None = None
    ) -> Any:
        if self.kind == "fastmcp":
            return dump(await self.client.complete_mcp(ref, argument, context))
        return dump(await self.session.complete(ref, argument, context))

    async def call(self, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        return await self.session.call_tool(tool, arguments or {})


async def _walk(list_page: Callable[..., Awaitable[Any]], field: str) -> list[Any]:
    """Every item of a paginated list, following ``nextCursor``."""
    items: list[Any] = []
    cursor: str | None = None
    while True:
        params = mt.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await list_page(params=params)
        items += getattr(page, field)
        cursor = page.next_cursor
        if cursor is None:
            return items


@asynccontextmanager
async def connect(url: str, kind: ClientKind, era: Era) -> AsyncIterator[Wire]:
    notes = Notes()
    mode = "legacy" if era == "legacy" else "auto"
    if kind == "fastmcp":
        fm: fastmcp.Client[Any] = fastmcp.Client(
            StreamableHttpTransport(url), mode=mode, message_handler=notes
        )
        async with fm:
            assert fm.session.protocol_version == PROTOCOL[era]
            yield Wire(kind, fm.session, fm, notes)
        return
    async with Client(url, mode=mode, message_handler=notes) as client:
        assert client.session.protocol_version == PROTOCOL[era]
        yield Wire(kind, client.session, client, notes)


async def until(check: Callable[[], bool], what: str, seconds: float = 15.0) -> None:
    """Wait for something another process does (a notification travelling)."""
    for _ in range(int(seconds / 0.05)):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


def of(items: list[dict[str, Any]], key: str, keys: list[str]) -> list[dict[str, Any]]:
    """The items whose ``key`` is one of ``keys``, in the order listed."""
    return [i for i in items if i[key] in keys]


# -- lists -------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "era"), CLIENTS)
async def test_lists_are_the_backends_own_in_one_namespace(
    relayed: Relayed, kind: ClientKind, era: Era
) -> None:
    direct = relayed.direct
    async with connect(relayed.gateway.url, kind, era) as wire:
        prompts = await wire.prompts()
        resources = await wire.resources()
        templates = await wire.templates()
    everything_prompts = [p["name"] for p in direct["prompts"]]
    assert of(prompts, "name", everything_prompts) == sorted(
        direct["prompts"], key=lambda p: p["name"]
    )
    # beta's prompts carry its prefix, as its tools do; alpha's keep their names
    assert [p["name"] for p in prompts if p["name"] not in everything_prompts] == [
        "b.greet",
        "b.only_beta",
        "greet",
        "only_alpha",
    ]
    assert of(prompts, "name", ["b.greet"])[0]["description"] == "Greet someone (beta)"
    everything_uris = [r["uri"] for r in direct["resources"]]
    assert of(resources, "uri", everything_uris) == sorted(
        direct["resources"], key=lambda r: r["uri"]
    )
    # every page of alpha's and beta's one-per-page lists; memo://shared once (alpha's)
    assert [r["uri"] for r in resources if r["uri"].startswith("memo://")] == [
        "memo://alpha/note",
        "memo://beta/note",
        "memo://shared",
    ]
    assert [t["uriTemplate"] for t in templates] == sorted(
        [t["uriTemplate"] for t in direct["templates"]]
        + ["memo://alpha/items/{id}", "memo://beta/items/{id}"]
    )
    assert of(templates, "uriTemplate", [t["uriTemplate"] for t in direct["templates"]]) == (
        sorted(direct["templates"], key=lambda t: t["uriTemplate"])
    )


async def test_lists_are_paged_with_toolgates_cursor(relayed: Relayed) -> None:
    async with connect(relayed.gateway.url, "sdk", "legacy") as wire:
        first = await wire.session.list_prompts()
        second = await wire.session.list_prompts(
            params=mt.PaginatedRequestParams(cursor=first.next_cursor)
        )
        with pytest.raises(MCPError) as caught:
            await wire.session.list_resources(
                params=mt.PaginatedRequestParams(cursor="not-a-cursor")
            )
    assert len(first.prompts) == PAGE_SIZE and first.next_cursor is not None
    names = [p.name for p in first.prompts + second.prompts]
    assert names == sorted(names) and len(set(names)) == len(names)
    assert caught.value.error.code == mt.INVALID_PARAMS


# -- prompts/get, resources/read, completion/complete ------------------------------------


@pytest.mark.parametrize(("kind", "era"), CLIENTS)
async def test_get_read_and_complete_answer_as_the_backend_does(
    relayed: Relayed, kind: ClientKind, era: Era
) -> None:
    direct = relayed.direct
    prompt_ref = mt.PromptReference(type="ref/prompt", name="completable-prompt")
    template_ref = mt.ResourceTemplateReference(
        type="ref/resource", uri="demo://resource/dynamic/text/{resourceId}"
    )
    async with connect(relayed.gateway.url, kind, era) as wire:
        assert await wire.get_prompt("args-prompt", {"city": "Paris"}) == direct["args-prompt"]
        assert await wire.read(STATIC_DOC) == direct["static"]
        dynamic = await wire.read("demo://resource/dynamic/text/7")
        assert (
            await wire.complete(prompt_ref, {"name": "department", "value": "E"})
            == (direct["complete-prompt"])
        )
        assert (
            await wire.complete(prompt_ref, {"name": "name", "value": ""}, {"department": "Sales"})
            == (direct["complete-prompt-context"])
        )
        assert (
            await wire.complete(template_ref, {"name": "resourceId", "value": "1"})
            == (direct["complete-template"])
        )
        # a prefixed prompt reaches its backend under the backend's own name
        greet = await wire.get_prompt("b.greet", {"name": "Zed"})
        beta_ref = mt.PromptReference(type="ref/prompt", name="b.greet")
        beta_names = await wire.complete(beta_ref, {"name": "name", "value": "beta-b"})
        item = await wire.read("memo://beta/items/12")
        item_ref = mt.ResourceTemplateReference(type="ref/resource", uri="memo://beta/items/{id}")
        ids = await wire.complete(item_ref, {"name": "id", "value": "1"})
    # a template's resource: read from the backend whose template matches the URI
    assert dynamic["contents"][0]["uri"] == "demo://resource/dynamic/text/7"
    assert dynamic["contents"][0]["text"].startswith("Resource 7: This is a plaintext resource")
    assert greet["messages"][0]["content"]["text"] == "[beta] greet: hello Zed"
    assert beta_names["completion"]["values"] == ["beta-bob"]
    assert item["contents"] == [
        {
            "uri": "memo://beta/items/12",
            "mimeType": "text/plain",
            "text": "beta says memo://beta/items/12",
        }
    ]
    assert ids["completion"]["values"] == ["1", "12"]


@pytest.mark.parametrize("era", ["legacy", "2026"])
async def test_unknown_prompt_and_resource_are_clear_errors(relayed: Relayed, era: Era) -> None:
    async with connect(relayed.gateway.url, "sdk", era) as wire:
        with pytest.raises(MCPError) as prompt:
            await wire.get_prompt("no-such-prompt")
        with pytest.raises(MCPError) as resource:
            await wire.read("nowhere://at/all")
    assert (prompt.value.error.code, prompt.value.error.message) == (
        mt.INVALID_PARAMS,
        "Unknown prompt: no-such-prompt",
    )
    # the same answers as for one the caller may not use (toolgate.errors)
    assert (resource.value.error.code, resource.value.error.message) == (
        -32002,
        "Resource not found: nowhere://at/all",
    )


# -- collisions --------------------------------------------------------------------------


async def test_colliding_uri_is_served_by_the_first_backend_and_logged(
    relayed: Relayed,
) -> None:
    async with connect(relayed.gateway.url, "sdk", "legacy") as wire:
        shared = await wire.read("memo://shared")
    assert shared["contents"][0]["text"] == "alpha says memo://shared"
    log = relayed.gateway.log.read_text()
    assert (
        "mcpServers.beta: resource 'memo://shared' is offered by both 'alpha' and 'beta'; "
        "'alpha' serves it" in log
    )


async def test_check_reports_prompt_and_uri_collisions(tmp_path: Path) -> None:
    config = {
        "mcpServers": {"alpha": primitives("alpha"), "beta": primitives("beta")},
        "toolgate": {},
    }
    path = tmp_path / "toolgate.json"
    path.write_text(json.dumps(config))
    out, err = io.StringIO(), io.StringIO()
    code = await run_check(path, out=out, err=err)
    assert code == 1
    assert err.getvalue().splitlines() == [
        f"{path}: mcpServers.beta: prompt 'greet' is offered by both 'alpha' and 'beta'; "
        "'alpha' serves it; give one of them a \"prefix\"",
        f"{path}: mcpServers.beta: resource 'memo://shared' is offered by both 'alpha' and "
        "'beta'; 'alpha' serves it (URIs are global, so a prefix does not rename them: "
        "front only one of the two)",
        f"{path}: 2 problem(s)",
    ]
    # a prefix settles the prompt; the URI stays a problem
    config["mcpServers"]["beta"]["prefix"] = "b"
    path.write_text(json.dumps(config))
    err = io.StringIO()
    assert await run_check(path, out=out, err=err) == 1
    assert [line for line in err.getvalue().splitlines() if "greet" in line] == []
    assert "resource 'memo://shared'" in err.getvalue()


# -- instructions and capabilities -------------------------------------------------------


@pytest.mark.parametrize(("kind", "era"), CLIENTS)
async def test_instructions_are_toolgates_then_each_backends(
    relayed: Relayed, kind: ClientKind, era: Era
) -> None:
    async with connect(relayed.gateway.url, kind, era) as wire:
        instructions = wire.session.instructions
        caps = wire.session.server_capabilities
    assert instructions == "\n\n".join(
        [
            OWN,
            f"## everything\n\n{relayed.direct['instructions'].strip()}",
            "## alpha\n\nUse the alpha memos for notes about alpha.",
            "## beta\n\nUse the beta memos for notes about beta.",
        ]
    )
    assert caps.prompts is not None and caps.resources is not None
    assert caps.completions is not None
    if era == "legacy":
        assert (caps.prompts.list_changed, caps.resources.list_changed) == (True, True)
        assert caps.resources.subscribe is True


# -- list_changed and subscriptions (legacy sessions) ------------------------------------


async def test_backend_list_changes_reach_legacy_sessions(relayed: Relayed) -> None:
    async with connect(relayed.gateway.url, "sdk", "legacy") as wire:
        before = [p["name"] for p in await wire.prompts()]
        await wire.call("grow_alpha")
        await until(
            lambda: (
                {
                    "notifications/prompts/list_changed",
                    "notifications/resources/list_changed",
                }
                <= set(wire.notes.methods)
            ),
            "prompts and resources list_changed",
        )
        after = [p["name"] for p in await wire.prompts()]
        uris = [r["uri"] for r in await wire.resources()]
    assert sorted(set(after) - set(before)) == ["later_alpha"]
    assert "memo://alpha/later" in uris


@pytest.mark.filterwarnings("ignore:resources/.*subscribe is removed as of 2026-07-28")
async def test_subscribed_session_hears_the_backends_updates(relayed: Relayed) -> None:
    url = relayed.gateway.url
    async with connect(url, "sdk", "legacy") as watcher, connect(url, "sdk", "legacy") as other:
        await other.prompts()  # a live session too, but not subscribed
        await watcher.session.subscribe_resource(STATIC_DOC)
        await watcher.call("toggle-subscriber-updates")  # sends one update at once
        try:
            await until(
                lambda: "notifications/resources/updated" in watcher.notes.methods,
                "notifications/resources/updated",
            )
        finally:
            await watcher.call("toggle-subscriber-updates")
        await watcher.session.unsubscribe_resource(STATIC_DOC)
        # alpha announces an update itself: only a subscribed session hears it
        await watcher.session.subscribe_resource("memo://alpha/note")
        await other.call("touch_alpha", {"uri": "memo://alpha/note"})
        await until(
            lambda: watcher.notes.methods.count("notifications/resources/updated") >= 2,
            "the second update",
        )
    assert "notifications/resources/updated" not in other.notes.methods


@pytest.mark.filterwarnings("ignore:resources/.*subscribe is removed as of 2026-07-28")
@pytest.mark.parametrize("era", ["legacy", "2026"])
async def test_concurrent_subscribers_to_a_uri_whose_backend_subscription_fails(
    tmp_path: Path, era: Era
) -> None:
    """Two clients subscribe to one URI at once while the backend's subscribe is under way
    and then fails: neither is recorded as a subscriber (legacy: both are refused; on
    2026-07-28 neither listen stream is acknowledged with the URI), and neither hangs."""
    from mcp.client.subscriptions import listen

    from _fixtures.mcp_servers import serve_http
    from toolgate.gateway.config.model import parse_config
    from toolgate.gateway.serve import Gateway

    gate = tmp_path / "gate"
    asked = tmp_path / "gate.asked"
    alpha = primitives("alpha", "--subscribe-gate", str(gate))
    gateway = Gateway(parse_config({"mcpServers": {"alpha": alpha}}))
    note = "memo://alpha/note"

    async def subscribe(wire: Wire) -> Any:
        if era == "legacy":
            await wire.session.subscribe_resource(note)
            return "subscribed"
        async with listen(wire.session, resource_subscriptions=[note]) as stream:
            return stream.honored.resource_subscriptions

    try:
        async with (
            gateway.running(),
            serve_http(gateway.http_app()) as url,
            connect(url, "sdk", era) as first,
            connect(url, "fastmcp", era) as second,
        ):
            one = asyncio.ensure_future(subscribe(first))
            await until(asked.exists, "the backend was asked to subscribe")
            other = asyncio.ensure_future(subscribe(second))
            await asyncio.wait({other}, timeout=1.0)  # joining while the first is under way
            gate.touch()
            outcomes = await asyncio.gather(one, other, return_exceptions=True)
            recorded = [set(members) for members in gateway.relay._subscribers.values()]
            subscribed = set(gateway.backends["alpha"].subscribed)
    finally:
        await gateway.close()
    if era == "legacy":
        refused = [o.error.message for o in outcomes if isinstance(o, MCPError)]
        assert refused == [f"cannot subscribe to {note}"] * 2, outcomes
    else:
        assert list(outcomes) == [None, None]
    assert not any(recorded)
    assert subscribed == set()


# -- faults ------------------------------------------------------------------------------


async def test_down_backend_gives_clear_errors_and_the_others_serve(relayed: Relayed) -> None:
    """Last in the module: beta stays down once it crashed."""
    relayed.down_file.write_text("down")
    async with connect(relayed.gateway.url, "sdk", "legacy") as wire:
        await wire.call("b.crash_beta")  # its tools carry its prefix too
        with pytest.raises(MCPError) as prompt:
            for _ in range(200):  # until the gateway has seen the process exit
                await wire.get_prompt("b.greet", {"name": "Zed"})
                await asyncio.sleep(0.05)
        with pytest.raises(MCPError) as resource:
            await wire.read("memo://beta/note")
        alpha = await wire.get_prompt("greet", {"name": "Ann"})
        everything = await wire.read(STATIC_DOC)
        listed = [p["name"] for p in await wire.prompts()]
    for caught, what in ((prompt, "prompt"), (resource, "resource")):
        error = caught.value.error
        assert error.code == mt.INTERNAL_ERROR
        assert error.message.startswith("Backend 'beta' is unavailable")
        assert f"try this {what} again shortly" in error.message
        assert error.data is not None
        assert (error.data["code"], error.data["backend"]) == ("backend_unavailable", "beta")
    assert alpha["messages"][0]["content"]["text"] == "[alpha] greet: hello Ann"
    assert everything == relayed.direct["static"]
    assert "b.greet" in listed  # still listed, as its tools are, while it reconnects


# -- toolgate's own resources beside the relayed ones -----------------------------------


async def test_lazy_descriptions_resource_is_served_beside_the_relayed_ones() -> None:
    from _fixtures.mcp_servers import serve_http
    from toolgate.gateway.config.model import parse_config
    from toolgate.gateway.serve import Gateway
    from toolgate.strategies.lazy import DEFAULT_URI

    cfg = parse_config(
        {
            "mcpServers": {"alpha": primitives("alpha")},
            "toolgate": {"descriptions": {"mode": "lazy"}, "page_size": 1},
        }
    )
    gateway = Gateway(cfg)
    try:
        async with (
            gateway.running(),
            serve_http(gateway.http_app()) as url,
            connect(url, "sdk", "legacy") as wire,
        ):
            first = await wire.session.list_resources()
            uris = [r["uri"] for r in await wire.resources()]
            ours = await wire.read(f"{DEFAULT_URI}?tools=grow_alpha")
            theirs = await wire.read("memo://alpha/note")
            # the only backend with resources is asked for a URI it does not list
            unlisted = await wire.read("memo://alpha/unlisted")
    finally:
        await gateway.close()
    # toolgate's resource first, then every relayed page behind the relay's cursor
    assert uris == [DEFAULT_URI, "memo://alpha/note", "memo://shared"]
    assert [str(r.uri) for r in first.resources] == [DEFAULT_URI, "memo://alpha/note"]
    assert first.next_cursor is not None
    assert "grow_alpha" in ours["contents"][0]["text"]
    assert theirs["contents"][0]["text"] == "alpha says memo://alpha/note"
    assert unlisted["contents"][0]["text"] == "alpha says memo://alpha/unlisted"


# -- the access seam -----------------------------------------------------------------------


class AliceOnlyNotes:
    """A ``PrimitiveAccess``: ``memo://alpha/note`` is alice's; everything else is open."""

    def __init__(self) -> None:
        self.asked: list[tuple[str | None, str]] = []

    def visible(self, facts: Any, items: Any) -> list[Any]:
        return [i for i in items if self._may(facts, i)]

    def check(self, facts: Any, item: Any) -> None:
        self.asked.append((facts.principal.id if facts.principal else None, item.name))
        if not self._may(facts, item):
            raise ToolgateError(f"{item.name} is not yours", kind=item.kind)

    @staticmethod
    def _may(facts: Any, item: Any) -> bool:
        return item.name != "memo://alpha/note" or (
            facts.principal is not None and facts.principal.id == "alice"
        )


@pytest.mark.parametrize("era", ["legacy", "2026"])
async def test_every_relayed_request_goes_through_the_gateways_access(era: Era) -> None:
    from _fixtures.gateway import ALICE_TOKEN, BOB_TOKEN, sha256
    from _fixtures.mcp_servers import serve_http
    from toolgate.gateway.config.model import parse_config
    from toolgate.gateway.serve import Gateway

    tokens = {
        sha256(ALICE_TOKEN): {"id": "alice", "trust": "verified"},
        sha256(BOB_TOKEN): {"id": "bob", "trust": "declared"},
    }
    cfg = parse_config(
        {"mcpServers": {"alpha": primitives("alpha")}, "toolgate": {"identity": {"tokens": tokens}}}
    )
    access = AliceOnlyNotes()
    gateway = Gateway(cfg, access=access)
    mode = "legacy" if era == "legacy" else "auto"
    try:
        async with gateway.running(), serve_http(gateway.http_app()) as url:
            seen: dict[str, list[str]] = {}
            for who, token in (("alice", ALICE_TOKEN), ("bob", BOB_TOKEN)):
                transport = StreamableHttpTransport(url, auth=token)
                async with fastmcp.Client(transport, mode=mode) as client:
                    seen[who] = [str(r.uri) for r in await client.list_resources()]
                    if who == "alice":
                        note = await client.read_resource_mcp("memo://alpha/note")
                    else:
                        with pytest.raises(MCPError) as refused:
                            await client.read_resource_mcp("memo://alpha/note")
    finally:
        await gateway.close()
    assert seen == {
        "alice": ["memo://alpha/note", "memo://shared"],
        "bob": ["memo://shared"],
    }
    assert note.contents[0].text == "alpha says memo://alpha/note"
    assert refused.value.error.message == "memo://alpha/note is not yours"
    assert access.asked == [("alice", "memo://alpha/note"), ("bob", "memo://alpha/note")]


# -- prompts and resources in groups, through the real gateway ------------------------------


@pytest.mark.parametrize("era", ["legacy", "2026"])
async def test_group_prompts_and_resources_follow_the_callers_scope(era: Era) -> None:
    """The gateway's default access is ``GroupExposure``: alice's scope holds the group
    ``memos``, bob's holds nothing, and ``groups/get`` carries the group's members."""
    from _fixtures.gateway import ALICE_TOKEN, BOB_TOKEN, sha256
    from _fixtures.mcp_servers import serve_http
    from toolgate.client import GroupsClientExtension
    from toolgate.client.extension import RAW, GetGroupParams, GetGroupRequest
    from toolgate.gateway.config.model import parse_config
    from toolgate.gateway.serve import Gateway

    tokens = {
        sha256(ALICE_TOKEN): {"id": "alice", "trust": "verified", "scope": ["memos"]},
        sha256(BOB_TOKEN): {"id": "bob", "trust": "declared", "scope": []},
    }
    group = {
        "description": "Alpha's memos",
        "tools": ["alpha:touch_*"],
        "prompts": ["alpha:only_*"],
        "resources": ["memo://alpha/*"],
    }
    cfg = parse_config(
        {
            "mcpServers": {"alpha": primitives("alpha")},
            "toolgate": {"identity": {"tokens": tokens}, "groups": {"memos": group}},
        }
    )
    gateway = Gateway(cfg)
    mode = "legacy" if era == "legacy" else "auto"
    seen: dict[str, Any] = {}
    try:
        async with gateway.running(), serve_http(gateway.http_app()) as url:
            for who, token in (("alice", ALICE_TOKEN), ("bob", BOB_TOKEN)):
                transport = StreamableHttpTransport(url, auth=token)
                async with fastmcp.Client(transport, mode=mode) as client:
                    seen[who] = (
                        [p.name for p in await client.list_prompts()],
                        [str(t.uri_template) for t in await client.list_resource_templates()],
                    )
                    try:
                        await client.get_prompt_mcp("only_alpha")
                        seen[f"{who}-get"] = "ok"
                    except MCPError as exc:
                        seen[f"{who}-get"] = (exc.error.code, exc.error.message)
            transport = StreamableHttpTransport(url, auth=ALICE_TOKEN)
            extension = [GroupsClientExtension()]
            async with fastmcp.Client(transport, mode=mode, extensions=extension) as client:
                request = GetGroupRequest(params=GetGroupParams(name="memos"))
                contents = dict(await client.session.send_request(request, RAW))["contents"]
    finally:
        await gateway.close()
    assert "only_alpha" in seen["alice"][0]
    assert seen["alice"][1] == ["memo://alpha/items/{id}"]
    assert seen["bob"] == ([], [])
    assert seen["alice-get"] == "ok"
    assert seen["bob-get"] == (mt.INVALID_PARAMS, "Unknown prompt: only_alpha")
    assert [p["name"] for p in contents["prompts"]] == ["only_alpha"]
    assert [r["uri"] for r in contents["resources"]] == ["memo://alpha/note"]
    assert [t["uriTemplate"] for t in contents["resourceTemplates"]] == ["memo://alpha/items/{id}"]


async def test_the_gateway_hears_of_a_backends_tools_once_they_can_be_called() -> None:
    """On connect the tools are listed before the prompts and resources; the gateway is
    told of them (and tells its clients) only once the backend is up, so a client that
    calls a tool it was just told of is never answered "unavailable"."""
    from toolgate.gateway.backends.backend import Backend
    from toolgate.gateway.backends.supervision import connect
    from toolgate.gateway.config.servers import StdioServer

    seen: list[bool] = []

    async def on_tools(backend: Backend) -> None:
        seen.append(backend.up)

    spec = StdioServer.model_validate(primitives("alpha"))
    backend = Backend("alpha", spec, on_tools=on_tools)
    await connect(backend, watch=False)
    assert backend.tools and backend.prompts  # it lists both kinds
    assert seen == [True]


async def test_a_reworded_prompt_is_announced_like_a_new_one(relayed: Relayed) -> None:
    """A backend that changes a prompt's definition (not its name) and says so: the
    session is told, and the list it reads again carries the new definition."""
    async with connect(relayed.gateway.url, "sdk", "legacy") as wire:
        await wire.prompts()
        await wire.call("reword_alpha")
        await until(
            lambda: "notifications/prompts/list_changed" in wire.notes.methods,
            "prompts list_changed after a reworded prompt",
        )
        reworded = of(await wire.prompts(), "name", ["only_alpha"])
    assert reworded[0]["description"] == "Reworded by alpha"


@pytest.mark.parametrize(("kind", "era"), CLIENTS)
async def test_an_unknown_toolset_on_a_prompts_or_resources_list_is_a_clear_error(
    relayed: Relayed, kind: ClientKind, era: Era
) -> None:
    """``?toolsets=`` naming no group: the same -32602 that ``tools/list`` answers."""
    async with connect(f"{relayed.gateway.url}?toolsets=no-such-group", kind, era) as wire:
        for listing in (wire.prompts, wire.resources):
            with pytest.raises(MCPError) as refused:
                await listing()
            assert refused.value.error.code == -32602
            assert "no-such-group" in refused.value.error.message


def test_a_uri_is_served_by_the_template_it_expands_and_a_broken_template_by_none() -> None:
    from toolgate.gateway.relay.access import Relayed as Item
    from toolgate.gateway.relay.namespace import Namespace

    def template(uri_template: str) -> Item:
        return Item("template", "alpha", uri_template, uri_template)

    items = Namespace(templates=(template("memo://{broken"), template("memo://alpha/items/{id}")))
    assert items.resource("memo://alpha/items/12") == template("memo://alpha/items/{id}")
    assert items.resource("memo://alpha/items/1/2") is None  # {id} is one segment
    assert items.resource("memo://{broken") is None
