"""A running ``toolgate serve`` reads its config again without a restart.

One real gateway over streamable HTTP (a SQLite store, an operator token) serves a
legacy session and a 2026-07-28 client while its config file is rewritten: SIGHUP
applies groups, a policy and backends added, removed and changed, and the live session
keeps its id and its still-existing group; a config with errors is refused with
``toolgate check``'s own lines through ``POST /admin/reload`` and ``toolgate reload``,
and the running config stays; the endpoint wants the operator token and refuses a body
or a query it would not read. The dashboard shows the config the gateway serves; its
event stream refuses an ``after`` that is no event id, and its explain API a principal
written wrong (400) or not there (404). A reload that changes what a session may list
of the backends' prompts and resources tells that session (legacy, or a 2026-07-28
listen stream) and nobody else. The store-level rule (a removed group leaves every
stored session) runs on memory, SQLite and Redis.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import listen
from mcp.shared.exceptions import MCPError

from _fixtures.core import visible_names
from _fixtures.gateway import SERVERS, HttpGateway, gateway_env, sha256, toolgate_argv
from _fixtures.mcp_servers import structured, text, tool_names
from toolgate import Flow, Stage, Tool, ToolResult, ToolSet
from toolgate.gateway.ops.reload import drop_groups
from toolgate.state import MemoryStore, SessionListing, SessionState
from toolgate.state.base import EMPTY
from toolgate.state.redis import RedisStore
from toolgate.state.sqlite import SqliteStore

LIST_CHANGED = "notifications/tools/list_changed"
OPERATOR = "operator-secret-token"
ADMIN = {"Authorization": f"Bearer {OPERATOR}"}
TAKES_NOTHING = (
    "POST /admin/reload takes no body and no query: it reads the gateway's own config file again"
)
META = ["call_tool", "describe_tools", "disable_tools", "enable_tools", "list_groups"]


def notes_server(tmp: Path, *, flag: str) -> dict[str, Any]:
    # the file named by --fail-if never exists: a new path is only a new command line
    return {
        "command": sys.executable,
        "args": [str(SERVERS / "gw_notes.py"), "--fail-if", str(tmp / flag)],
    }


def math_server(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SERVERS / "gw_math.py")], **extra}


def first_config(tmp: Path) -> dict[str, Any]:
    """``notes`` and ``math``, a group each; ``note_delete`` wants trust ``verified``."""
    return {
        "mcpServers": {"notes": notes_server(tmp, flag="a"), "math": math_server()},
        "toolgate": {
            "always": ["notes:grow"],
            "groups": {
                "notes": {"description": "Take notes", "tools": ["notes:note_*"]},
                "math": {"description": "Arithmetic", "tools": ["math:*"]},
            },
            "policies": [{"tools": ["note_delete"], "min_trust": "verified"}],
            "store": str(tmp / "state.sqlite"),
            "dashboard": {"enabled": True, "tokens": [sha256(OPERATOR)]},
        },
    }


def second_config(tmp: Path) -> dict[str, Any]:
    """``math`` and its group gone; ``calc`` (math again, prefixed) and its group new;
    ``notes`` reached by another command line; ``note_delete`` open, ``grow`` denied."""
    return {
        "mcpServers": {
            "notes": notes_server(tmp, flag="b"),
            "calc": math_server(prefix="calc"),
        },
        "toolgate": {
            "always": ["notes:grow"],
            "groups": {
                "notes": {"description": "Take notes", "tools": ["notes:note_*"]},
                "calc": {"description": "A calculator", "tools": ["calc:*"]},
            },
            "policies": [{"tools": ["notes:grow"], "decision": "deny"}],
            "store": str(tmp / "state.sqlite"),
            "dashboard": {"enabled": True, "tokens": [sha256(OPERATOR)]},
        },
    }


class Heard:
    """The notifications a client received, with an event per arrival."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.arrived = asyncio.Event()

    async def __call__(self, message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if isinstance(method, str):
            self.methods.append(method)
            self.arrived.set()

    async def wait_for(self, method: str, timeout: float = 60.0) -> None:
        async with asyncio.timeout(timeout):
            while method not in self.methods:
                self.arrived.clear()
                await self.arrived.wait()


@dataclass
class Served:
    gateway: HttpGateway
    config: Path
    tmp: Path

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.gateway.port}"

    def write(self, config: dict[str, Any]) -> None:
        self.config.write_text(json.dumps(config, indent=2))

    def log(self) -> str:
        return self.gateway.log.read_text("utf-8", errors="replace")

    async def logged(self, line: str, count: int = 1, timeout: float = 90.0) -> None:
        async with asyncio.timeout(timeout):
            while self.log().count(line) < count:
                await asyncio.sleep(0.05)

    def reload_cli(
        self, *args: str, token: str | None = OPERATOR
    ) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in gateway_env().items() if k != "TOOLGATE_OPERATOR_TOKEN"}
        if token is not None:
            env["TOOLGATE_OPERATOR_TOKEN"] = token
        return subprocess.run(
            [*toolgate_argv(), "reload", "--url", self.root, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )

    def check(self, *args: str) -> list[str]:
        """What ``toolgate check`` prints for the config file now, minus its count line."""
        done = subprocess.run(
            [*toolgate_argv(), "check", str(self.config), *args],
            capture_output=True,
            text=True,
            env=gateway_env(),
            timeout=60,
        )
        assert done.returncode == 1, done.stderr
        return [line for line in done.stderr.splitlines() if not line.endswith("problem(s)")]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("reload")
    config = tmp / "toolgate.json"
    config.write_text(json.dumps(first_config(tmp), indent=2))
    # two Python backends start before the port opens: patient on a busy machine
    gateway = HttpGateway(
        [*toolgate_argv(), "serve", str(config)], tmp / "gateway.log", start_timeout=90
    )
    gateway.start()
    try:
        yield Served(gateway, config, tmp)
    finally:
        gateway.stop()


def hang_up(served: Served) -> None:
    assert served.gateway.proc is not None
    os.kill(served.gateway.proc.pid, signal.SIGHUP)


async def names(client: Client[Any]) -> list[str]:
    return sorted(await tool_names(client))


async def group_names(client: Client[Any]) -> list[str]:
    groups = await client.call_tool("list_groups", {})
    return sorted(g["name"] for g in structured(groups)["groups"])


async def test_sighup_applies_the_new_config_to_a_live_legacy_session_on_the_same_id(
    served: Served,
) -> None:
    heard = Heard()
    legacy = Client(
        StreamableHttpTransport(served.gateway.url), mode="legacy", message_handler=heard
    )
    async with legacy, Client(StreamableHttpTransport(served.gateway.url)) as modern:
        await legacy.call_tool("enable_tools", {"groups": ["notes", "math"]})
        session_id = legacy.transport.get_session_id()
        assert await names(legacy) == sorted(
            [*META, "add", "crash", "echo", "grow", "multiply", "note_add", "note_list"]
        )
        note = await legacy.call_tool("note_add", {"text": "before the reload"})
        assert note.structured_content == {"id": 1}
        assert await group_names(modern) == ["math", "notes"]
        assert text(await modern.call_tool("add", {"a": 1, "b": 2})) == "3"
        shown = await dashboard_groups(served)
        assert (sorted(shown["backends"]), group_tree(shown)) == (
            ["math", "notes"],
            ["math", "notes"],
        )

        served.write(second_config(served.tmp))
        heard.methods.clear()
        hang_up(served)
        await served.logged("config reloaded")
        await heard.wait_for(LIST_CHANGED)

        # the same session, not dropped: "notes" is still active, "math" went with its backend
        assert legacy.transport.get_session_id() == session_id
        assert await group_names(legacy) == ["calc", "notes"]
        # the policies: grow is denied (so hidden), note_delete no longer wants "verified"
        assert await names(legacy) == sorted(
            [*META, "crash", "note_add", "note_delete", "note_list"]
        )
        # "notes" was reconnected by its new command line: a new process, no notes yet
        fresh = await legacy.call_tool("note_list", {})
        assert fresh.structured_content == {"notes": []}
        deleted = await legacy.call_tool("note_delete", {"id": 1})
        assert deleted.structured_content == {"deleted": 1}
        with pytest.raises(MCPError, match="grow"):
            await legacy.call_tool("grow", {})
        # the new backend's tools, through the new group
        enabled = await legacy.call_tool("enable_tools", {"groups": ["calc"]})
        assert structured(enabled)["enabled"] == ["calc"]
        added = await legacy.call_tool("calc.add", {"a": 2, "b": 40})
        assert text(added) == "42"
        with pytest.raises(MCPError):
            await legacy.call_tool("add", {"a": 1, "b": 1})

        # the dashboard shows the config the gateway serves now
        shown = await dashboard_groups(served)
        assert (sorted(shown["backends"]), group_tree(shown)) == (
            ["calc", "notes"],
            ["calc", "notes"],
        )
        assert shown["backends"]["calc"]["tools"] == 3  # calc.add, calc.echo, calc.multiply

        # a 2026-07-28 client sees the new catalog on its next request
        assert await group_names(modern) == ["calc", "notes"]
        assert text(await modern.call_tool("calc.multiply", {"a": 6, "b": 7})) == "42"
        with pytest.raises(MCPError):
            await modern.call_tool("add", {"a": 1, "b": 1})
    log = served.log()
    assert "backends added: calc; backends removed: math; backends reconnected: notes" in log
    assert "groups added: calc; groups removed: math" in log
    assert "a removed group left 1 stored session(s)" in log  # this session, in SQLite


def operator() -> dict[str, str]:
    return {"Authorization": f"Bearer {OPERATOR}"}


async def dashboard_groups(served: Served) -> dict[str, Any]:
    """What the dashboard's ``/api/groups`` answers the operator."""
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.get(f"{served.root}/dashboard/api/groups", headers=operator())
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()
    return data


def group_tree(shown: dict[str, Any]) -> list[str]:
    return sorted(g["name"] for g in shown["groups"])


async def admin_reload(served: Served, token: str | None = OPERATOR) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with httpx.AsyncClient(timeout=60) as http:
        return await http.post(f"{served.root}/admin/reload", headers=headers)


async def test_a_config_with_errors_is_refused_with_check_s_lines_and_the_running_one_stays(
    served: Served,
) -> None:
    running = served.config.read_text()  # what the gateway serves now
    legacy = Client(StreamableHttpTransport(served.gateway.url), mode="legacy")
    async with legacy:
        await legacy.call_tool("enable_tools", {"groups": ["notes"]})
        groups, listed = await group_names(legacy), await names(legacy)

        # a misspelt key: found reading the file
        broken = json.loads(running)
        broken["toolgate"]["polices"] = []
        served.write(broken)
        expected, answer = await asyncio.gather(
            asyncio.to_thread(served.check), admin_reload(served)
        )
        assert any("polices: unknown key; did you mean 'policies'?" in line for line in expected)
        assert (answer.status_code, answer.json()["applied"]) == (422, False)
        assert answer.json()["problems"] == expected

        # a group under a parent that does not exist: found building the catalog
        broken = json.loads(running)
        group = sorted(broken["toolgate"]["groups"])[0]
        broken["toolgate"]["groups"][group]["parent"] = "nowhere"
        served.write(broken)
        expected, done = await asyncio.gather(
            asyncio.to_thread(served.check, "--offline"), asyncio.to_thread(served.reload_cli)
        )
        assert expected == [
            f"{served.config}: toolgate.groups: Group {group!r} names unknown parent 'nowhere'"
        ]
        assert done.returncode == 1
        assert done.stderr.splitlines()[:-1] == expected
        assert "reload refused" in done.stderr.splitlines()[-1]
        hang_up(served)  # the same, by signal: refused in the log
        await served.logged("config reload refused", count=3)

        # a store URL no store opens: check's line, not only "needs a restart"
        broken = json.loads(running)
        broken["toolgate"]["store"] = "sqlite://"
        served.write(broken)
        expected, answer = await asyncio.gather(
            asyncio.to_thread(served.check, "--offline"), admin_reload(served)
        )
        assert [line.split("; use ")[0] for line in expected] == [
            f"{served.config}: toolgate.store: Bad SQLite store URL: it names no database file"
        ]
        assert (answer.status_code, answer.json()["problems"]) == (422, expected)

        # a key only a restart applies
        other = json.loads(running)
        other["toolgate"]["strategy"] = "flat"
        served.write(other)
        answer = await admin_reload(served)
        assert (answer.status_code, answer.json()["restart"]) == (422, ["toolgate.strategy"])

        # nothing changed: the same session lists and calls as before, the dashboard
        # shows the running config
        assert (await group_names(legacy), await names(legacy)) == (groups, listed)
        shown = await dashboard_groups(served)
        assert sorted(shown["backends"]) == sorted(json.loads(running)["mcpServers"])
        assert (await legacy.call_tool("note_list", {})).is_error is False

    # the file as it was: a reload applies it, changing nothing
    served.config.write_text(running)
    done = served.reload_cli("--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["applied"], report["changed"], report["removed_groups"]) == (True, [], [])
    assert OPERATOR not in done.stdout + done.stderr


async def test_a_config_not_utf8_or_with_a_key_twice_is_refused_and_its_bytes_never_logged(
    served: Served,
) -> None:
    running = served.config.read_text()
    secret = "sk-SECRET-0123456789"  # in a backend's env: it must not reach the log
    broken = json.loads(running)
    broken["mcpServers"]["notes"]["env"] = {"API_KEY": secret}
    group = sorted(broken["toolgate"]["groups"])[0]
    broken["toolgate"]["groups"][group]["description"] = "Take notes \u00e9"
    raw = json.dumps(broken, ensure_ascii=False).encode("latin-1")
    try:
        served.config.write_bytes(raw)
        refused, events = (
            served.log().count(x) for x in ("config reload refused", "config.refused {")
        )
        hang_up(served)  # the way that once ended in "Task exception was never retrieved"
        await served.logged("config reload refused", count=refused + 1)
        answer = await admin_reload(served)
        where = f"{served.config}: not valid UTF-8 at byte {raw.index(0xE9)}"
        assert (answer.status_code, answer.json()["problems"]) == (422, [where])
        # a second "groups" would silently drop the first one's groups, and their sessions
        served.config.write_text(running.replace('"groups": {', '"groups": {}, "groups": {', 1))
        answer = await admin_reload(served)
        assert (answer.status_code, answer.json()["problems"]) == (
            422,
            [f"{served.config}: toolgate.groups: key appears twice"],
        )
        log = served.log()
        assert log.count("config.refused {") == events + 3  # the event, each time
        assert secret not in log and "never retrieved" not in log
    finally:
        served.config.write_text(running)


async def test_the_reload_endpoint_wants_the_operator_token(served: Served) -> None:
    assert (await admin_reload(served, token=None)).status_code == 401
    assert (await admin_reload(served, token="not-the-operator")).status_code == 403
    async with httpx.AsyncClient() as http:
        assert (await http.get(f"{served.root}/admin/reload")).status_code == 405
    done = served.reload_cli(token="not-the-operator")
    assert done.returncode == 2
    assert "answered 403" in done.stderr
    assert "not-the-operator" not in done.stdout + done.stderr


PROMPTS_CHANGED = "notifications/prompts/list_changed"
RESOURCES_CHANGED = "notifications/resources/list_changed"


def with_memos(running: dict[str, Any], **placed: dict[str, list[str]]) -> dict[str, Any]:
    """``running`` with the backend ``alpha`` (two prompts, two resources, a template)
    and ``placed``: group name -> its ``prompts`` / ``resources`` patterns."""
    config: dict[str, Any] = json.loads(json.dumps(running))
    config["mcpServers"]["alpha"] = {
        "command": sys.executable,
        "args": [str(SERVERS / "gw_primitives.py"), "--tag", "alpha"],
    }
    for group, patterns in placed.items():
        config["toolgate"]["groups"][group].update(patterns)
    return config


class Counted(Heard):
    def primitives(self) -> list[str]:
        """The prompts and resources list_changed heard, in order."""
        return [m for m in self.methods if m in (PROMPTS_CHANGED, RESOURCES_CHANGED)]

    async def count(self, method: str, n: int, timeout: float = 20.0) -> None:
        async with asyncio.timeout(timeout):
            while self.methods.count(method) < n:
                self.arrived.clear()
                await self.arrived.wait()


async def test_a_reload_tells_whose_prompts_or_resources_list_it_changed_and_nobody_else(
    served: Served,
) -> None:
    """Three live clients: a legacy session viewing ``notes`` (fastmcp, ``?toolsets=``),
    one seeing everything (``mcp.ClientSession``) and a 2026-07-28 listen stream viewing
    ``notes`` (fastmcp, ``X-MCP-Toolsets``). A backend with prompts and resources added
    (its ``only_*`` prompt and ``memo://alpha/*`` resources in ``calc``) tells all three;
    moving the prompt, then the resources, into ``notes`` tells only the two viewing
    ``notes``, each about that list; a reload changing no prompt or resource tells
    nobody; the backend removed tells all three again. The dashboard shows each
    group's prompts and resources as the reloaded config places them."""
    running = json.loads(served.config.read_text())
    in_calc = {"prompts": ["only_*"], "resources": ["memo://alpha/*"]}
    viewer, everyone, stream = Counted(), Counted(), Counted()
    notes_view = StreamableHttpTransport(f"{served.gateway.url}?toolsets=notes")
    legacy = Client(notes_view, mode="legacy", message_handler=viewer)
    modern = Client(
        StreamableHttpTransport(served.gateway.url, headers={"X-MCP-Toolsets": "notes"}),
        message_handler=stream,
    )
    async with (
        legacy,
        modern,
        streamable_http_client(served.gateway.url) as (read, write),
        ClientSession(read, write, message_handler=everyone) as session,
        listen(modern.session, prompts_list_changed=True, resources_list_changed=True),
    ):
        await session.initialize()
        assert modern.session.protocol_version == "2026-07-28"
        for client in (legacy, modern):
            assert await client.list_prompts() == []
        assert (await session.list_prompts()).prompts == []

        async def reload_with(config: dict[str, Any]) -> None:
            served.write(config)
            answer = await admin_reload(served)
            assert (answer.status_code, answer.json()["applied"]) == (200, True), answer.text

        async def told(*counts: tuple[Counted, int, int]) -> None:
            for heard, prompts, resources in counts:
                await heard.count(PROMPTS_CHANGED, prompts)
                await heard.count(RESOURCES_CHANGED, resources)

        # a backend added: everyone may list what it offers at the top level
        await reload_with(with_memos(running, calc=in_calc))
        await told((viewer, 1, 1), (stream, 1, 1), (everyone, 1, 1))
        assert [p.name for p in await legacy.list_prompts()] == ["greet"]
        assert [p.name for p in (await session.list_prompts()).prompts] == ["greet", "only_alpha"]

        # the prompt moves into notes: only the two viewing notes list it now
        await reload_with(
            with_memos(
                running, notes={"prompts": ["only_*"]}, calc={"resources": in_calc["resources"]}
            )
        )
        await told((viewer, 2, 1), (stream, 2, 1))
        for client in (legacy, modern):
            assert [p.name for p in await client.list_prompts()] == ["greet", "only_alpha"]
        listed = await modern.list_prompts_mcp()
        assert (listed.ttl_ms, listed.cache_scope) == (0, "private")  # re-listed each time
        shown = {g["name"]: g for g in (await dashboard_groups(served))["groups"]}
        assert (shown["notes"]["prompts"], shown["calc"]["prompts"]) == (["only_alpha"], [])
        assert shown["calc"]["resources"] == ["memo://alpha/items/{id}", "memo://alpha/note"]
        async with httpx.AsyncClient(timeout=30) as http:
            page = await http.get(f"{served.root}/dashboard/groups", headers=operator())
        assert '<span class="prompts">prompts: only_alpha</span>' in page.text

        # then the resources (and the template)
        moved = {"prompts": ["only_*"], "resources": ["memo://alpha/*"]}
        await reload_with(with_memos(running, notes=moved))
        await told((viewer, 2, 2), (stream, 2, 2))
        uris = sorted(str(r.uri) for r in await legacy.list_resources())
        assert uris == ["memo://alpha/note", "memo://shared"]

        # a reload changing only a group's description, then the backend removed
        renamed = with_memos(running, notes=moved)
        renamed["toolgate"]["groups"]["calc"]["description"] = "Sums and products"
        await reload_with(renamed)
        await reload_with(running)
        await told((viewer, 3, 3), (stream, 3, 3), (everyone, 2, 2))
        assert await legacy.list_prompts() == []
    # each stream delivers in order: the removal's came after anything the description
    # change sent, and a reload sends each list's notification once
    for heard in (viewer, stream):
        assert heard.primitives() == [PROMPTS_CHANGED, RESOURCES_CHANGED] * 3
    assert everyone.primitives() == [PROMPTS_CHANGED, RESOURCES_CHANGED] * 2


async def test_a_removed_group_leaves_every_stored_session_on_memory_sqlite_and_redis(
    tmp_path: Path, redis_url: str
) -> None:
    stores: list[SessionListing] = [
        MemoryStore(),
        SqliteStore(path=str(tmp_path / "state.db")),
        RedisStore(url=redis_url),
    ]
    try:
        for store in stores:

            async def put(state: SessionState, key: str, store: SessionListing = store) -> None:
                async def change(_: SessionState) -> tuple[SessionState, None]:
                    return state, None

                await store.mutate(key, change)

            await put(SessionState(active=frozenset({"notes", "math"}), stage="paid"), "a")
            await put(SessionState(active=frozenset({"notes"})), "b")
            dropped = await drop_groups(store, [], frozenset({"math", "gone"}))
            assert dropped == 1, type(store).__name__
            assert (await store.load("a")).active == {"notes"}
            assert (await store.load("a")).stage == "paid"  # the rest of its state stays
            assert (await store.load("b")).active == {"notes"}
            assert await store.load("never") == EMPTY
    finally:
        for store in stores:
            await store.close()


def staged(*stages: str) -> ToolSet:
    """A toolset whose flow has ``stages`` (the first initial), a tool for each of two."""

    def ok(arguments: Any, ctx: Any) -> ToolResult:
        return ToolResult.text("ok")

    toolset = ToolSet(flow=Flow(initial=stages[0], stages=tuple(Stage(s) for s in stages)))
    toolset.add_tool(Tool("look", handler=ok, stages=frozenset({"browse"})))
    toolset.add_tool(Tool("pay", handler=ok, stages=frozenset({"pay"})))
    return toolset


async def test_a_kept_stage_stays_and_a_removed_one_reads_as_the_new_initial_stage() -> None:
    live = staged("browse", "pay", "ship")
    paying, shipping = live.session("paying"), live.session("shipping")
    await paying.set_stage("pay")
    await shipping.set_stage("ship")
    assert await visible_names(shipping) == []
    live.reconfigure(staged("browse", "pay"))  # "ship" is gone
    assert await visible_names(paying) == ["pay"]
    assert await visible_names(shipping) == ["look"]
    assert (await live.store.load("shipping")).stage == "ship"  # read as initial, not rewritten


async def test_a_reload_asked_with_a_body_or_a_query_is_refused_and_the_file_is_not_read(
    served: Served,
) -> None:
    running = served.config.read_text()
    served.config.write_text(running.replace('"groups": {', '"groups": {}, "groups": {', 1))
    try:  # a reload would read the broken file and answer 422; these never read it
        async with httpx.AsyncClient(timeout=60) as http:
            url = f"{served.root}/admin/reload"
            for answer in (
                await http.post(url, headers=ADMIN, json={"path": "/elsewhere.json"}),
                await http.post(f"{url}?config=other.json", headers=ADMIN),
            ):
                assert (answer.status_code, answer.json()["error"]) == (400, TAKES_NOTHING)
    finally:
        served.config.write_text(running)
    assert (await admin_reload(served)).status_code == 200


async def test_the_event_stream_refuses_an_after_that_is_not_an_event_id(served: Served) -> None:
    stream = f"{served.root}/dashboard/api/events/stream"
    async with httpx.AsyncClient(timeout=60) as http:
        superscript = await http.get(stream, params={"after": "²"}, headers=ADMIN)
        word = await http.get(stream, params={"after": "latest"}, headers=ADMIN)
        header = await http.get(stream, headers={**ADMIN, "Last-Event-ID": "-1"})
    assert (superscript.status_code, superscript.json()) == (
        400,
        {"error": "'after' must be an event id (up to 18 digits 0-9), not '²'"},
    )
    assert (word.status_code, header.status_code) == (400, 400)
    assert header.json()["error"].startswith("the Last-Event-ID header must be an event id")


async def test_the_explain_api_names_its_principal_parameter_and_tells_wrong_from_missing(
    served: Served,
) -> None:
    explain = f"{served.root}/dashboard/api/explain"
    async with httpx.AsyncClient(timeout=60) as http:
        answers = [
            await http.get(explain, params={"principal": spec}, headers=ADMIN)
            for spec in ("id=x,foo=1", "id=x,trust=bogus", "nobody")
        ]
    assert [(a.status_code, a.json()["error"].partition(";")[0]) for a in answers] == [
        (400, "principal: unknown field 'foo'"),
        (400, "principal.trust: Unknown trust level 'bogus'"),
        (404, "principal 'nobody': no such principal"),
    ]
