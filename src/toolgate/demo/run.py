"""``toolgate demo``: the gateway over the built-in demo backends, and ``--tour``.

Fills the demo config's ``{python}`` / ``{db}`` placeholders, prints how to connect
(stderr), and serves over stdio or HTTP; ``--tour`` instead drives a scripted agent
session in-process and prints what the agent sees at each step; ``--fresh`` first puts
the demo data back as shipped. Edge layer.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import mcp_types as mt
from mcp import Client
from mcp.shared.exceptions import MCPError

from toolgate.demo.db import Database
from toolgate.demo.shop.schema import SHOP_SCHEMA
from toolgate.demo.tracker.schema import TRACKER_SCHEMA
from toolgate.errors import ConfigError
from toolgate.gateway.config.model import GatewayConfig, parse_config
from toolgate.gateway.serve import Gateway, serve
from toolgate.tokens import TokenCounter, best_counter, model_text

DEMO_DIR = Path(__file__).parent
CONFIG_PATH = DEMO_DIR / "toolgate.json"


def demo_db_path() -> Path:
    """``$XDG_CACHE_HOME/toolgate/demo.sqlite3`` (``~/.cache``), else the temp dir."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "toolgate"
    try:
        base.mkdir(parents=True, exist_ok=True)
        probe = base / ".writable"
        probe.touch()
        probe.unlink()
    except OSError:
        base = Path(tempfile.gettempdir()) / "toolgate"
        base.mkdir(parents=True, exist_ok=True)
    return base / "demo.sqlite3"


def _fill(value: Any, values: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for key, text in values.items():
            value = value.replace("{" + key + "}", text)
        return value
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    return value


def demo_config(
    db: str | Path | None = None, toolgate: Mapping[str, Any] | None = None
) -> GatewayConfig:
    """The shipped demo config with ``{python}`` and ``{db}`` filled in; each key of
    ``toolgate`` replaces the shipped one (``{"dashboard": {...}}`` turns it on).

    >>> demo_config(toolgate={"dashboard": {"enabled": True, "tokens": [digest]}})
    """
    data = json.loads(CONFIG_PATH.read_text(encoding="utf-8"))
    values = {"python": sys.executable, "db": str(db or demo_db_path())}
    data["mcpServers"] = _fill(data["mcpServers"], values)
    data["toolgate"].update(toolgate or {})
    return parse_config(data, source=CONFIG_PATH)


def usable_db(db: Path) -> None:
    """Refuse (``ConfigError``) a ``--db`` no backend could open, before they start: a
    folder, or a file in a folder that does not exist."""
    if db.is_dir():
        raise ConfigError(f"--db: {db} is a directory, not a SQLite file", key="db")
    if not db.parent.exists():
        raise ConfigError(f"--db: the folder {db.parent} does not exist", key="db")
    if not db.parent.is_dir():
        raise ConfigError(f"--db: {db.parent} is not a folder", key="db")


def reset_demo_data(db: Path) -> bool:
    """Drop and re-seed the demo's tables in ``db`` (the tracker's and the shop's, in
    one transaction each); False when there is no file yet (the backends seed a new one).
    A file that is no SQLite database raises ``ConfigError`` and is left as it was."""
    if not db.exists():
        return False
    for schema in (TRACKER_SCHEMA, SHOP_SCHEMA):
        database = Database(db, schema)
        try:
            with database.write() as conn:
                database.reset(conn)
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"--fresh: cannot reset the demo data in {db}: {exc}", key="db"
            ) from None
    return True


def connect_help(transport: str, host: str, port: int, db: Path, out: TextIO) -> None:
    """How to connect, and what to try (stderr: stdout may be the MCP channel)."""

    def p(line: str = "") -> None:
        print(line, file=out)

    p("toolgate demo: a project tracker and a shop (49 real tools on SQLite) behind one")
    p(f"gateway with progressive disclosure. Demo data: {db}")
    p()
    if transport == "stdio":
        snippet = {
            "mcpServers": {
                "toolgate-demo": {
                    "command": sys.executable,
                    "args": ["-m", "toolgate.cli", "demo"],
                }
            }
        }
        p("This process now speaks MCP on stdin/stdout. Add it to your MCP client:")
        p()
        p(json.dumps(snippet, indent=2))
        p()
        p("Or watch a scripted agent session:  toolgate demo --tour")
        p("Or serve over HTTP:                  toolgate demo --transport http")
    else:
        url = f"http://{host}:{port}/mcp"
        p(f"Streamable HTTP endpoint: {url}")
        p()
        p(f"  npx -y @modelcontextprotocol/inspector --cli {url} --method tools/list")
        p(f'  {{"mcpServers": {{"toolgate-demo": {{"type": "http", "url": "{url}"}}}}}}')
    p()
    p("What to try, as the agent:")
    p("  1. list_groups                       - the menu: tracker, issues, shopper, ...")
    p('  2. enable_tools {"groups": ["tracker", "issues"]}  - the issue tools appear')
    p('  3. create_issue {"project_key": "WEB", "title": "Hello"}')
    p("  4. delete_issue                      - needs trust 'verified': unknown to you")
    p('  5. enable_tools {"groups": ["shopper"]}, cart_add {"product_id": 1}')
    p("     - the checkout stage opens and checkout_* tools appear")
    p("Ctrl-C stops the demo.")


async def run_demo(
    *,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    tour: bool = False,
    db: str | None = None,
    allowed_hosts: Sequence[str] = (),
    out: TextIO | None = None,
    fresh: bool = False,
) -> int:
    db_path = Path(db) if db else demo_db_path()
    usable_db(db_path)
    if fresh and reset_demo_data(db_path):
        print(f"toolgate demo: demo data reset to the shipped data in {db_path}", file=sys.stderr)
    cfg = demo_config(db_path)
    if tour:
        return await run_tour(cfg, out=out or sys.stdout)
    connect_help(transport, host, port, db_path, sys.stderr)
    await serve(cfg, transport=transport, host=host, port=port, allowed_hosts=allowed_hosts)
    return 0


# -- the tour ---------------------------------------------------------------------------


class Tour:
    """Prints a scripted agent session against an in-process gateway."""

    def __init__(self, gateway: Gateway, client: Client, out: TextIO, counter: TokenCounter):
        self.gateway = gateway
        self.client = client
        self.out = out
        self.counter = counter
        self.step = 0
        self.notifications: list[str] = []

    def say(self, text: str = "") -> None:
        print(text, file=self.out)

    def heading(self, text: str) -> None:
        self.step += 1
        self.say()
        self.say(f"Step {self.step}. {text}")
        self.say("-" * (len(text) + 9))

    def tokens(self, wires: Sequence[Mapping[str, Any]]) -> int:
        return sum(self.counter.count(model_text(w)) for w in wires)

    async def listing(self) -> list[dict[str, Any]]:
        result = await self.client.session.list_tools()
        return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in result.tools]

    async def show_list(self, before: Sequence[str] = ()) -> list[str]:
        wires = await self.listing()
        names = [str(w["name"]) for w in wires]
        self.say(f"tools/list: {len(names)} tools, {self.tokens(wires)} tokens")
        for n in names:
            mark = "  + " if before and n not in before else "    "
            self.say(f"{mark}{n}")
        return names

    async def call(self, name: str, arguments: dict[str, Any]) -> mt.CallToolResult | None:
        self.say(f"call {name} {json.dumps(arguments)}")
        try:
            result = await self.client.call_tool(name, arguments)
        except MCPError as exc:
            self.say(f"  -> JSON-RPC error {exc.error.code}: {exc.error.message}")
            return None
        text = "".join(c.text for c in result.content if isinstance(c, mt.TextContent))
        if len(text) > 400:
            text = text[:400] + " ..."
        self.say(f"  -> {'error' if result.is_error else 'ok'}: {text}")
        return result

    def heard(self) -> str:
        got = [n for n in self.notifications if n.endswith("list_changed")]
        self.notifications.clear()
        return f"notifications: {', '.join(got) if got else 'none'}"


async def run_tour(cfg: GatewayConfig, *, out: TextIO) -> int:
    counter = best_counter()
    # the backends' own start-up chatter would interleave with the tour
    devnull = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the backends
    gateway = Gateway(cfg, errlog=devnull)
    try:
        async with gateway.running():
            tour: Tour | None = None

            async def on_message(message: Any) -> None:
                method = getattr(message, "method", None)
                if tour is not None and isinstance(method, str):
                    tour.notifications.append(method)

            async with Client(gateway.server, mode="legacy", message_handler=on_message) as client:
                tour = Tour(gateway, client, out, counter)
                await _script(tour)
    finally:
        await gateway.close()
        devnull.close()
    return 0


async def _script(t: Tour) -> None:
    toolset = t.gateway.toolset
    down = [n for n, b in t.gateway.backends.items() if not b.up]
    t.say("toolgate demo --tour: a scripted agent session through the gateway")
    t.say(
        f"backends: {', '.join(sorted(t.gateway.backends))}"
        + (f" (down: {', '.join(down)})" if down else "")
        + f"; {len(toolset.catalog.tools)} tools in {len(toolset.catalog.groups)} groups;"
        f" principal: {toolset.default_principal.id!r} (trust"
        f" {toolset.default_principal.trust!r}); tokens counted with {t.counter.name}"
    )

    t.heading("Connect: the agent sees a small menu, not every tool")
    first_wires = await t.listing()
    first = await t.show_list()
    flat = [tool.wire() for tool in toolset.catalog.tools.values()]
    t.say(f"(without toolgate the agent would get {len(flat)} tools, {t.tokens(flat)} tokens)")

    t.heading("list_groups: what can be enabled")
    result = await t.client.call_tool("list_groups", {})
    for g in (result.structured_content or {}).get("groups", []):
        parent = f" (in {g['parent']})" if g.get("parent") else ""
        t.say(f"    {g['name']:<14} {g['tool_count']:>2} tools{parent}: {g['description'][:60]}")

    t.heading("Calling a hidden tool gets a hint, not a dead end")
    await t.call("create_issue", {"project_key": "WEB", "title": "Try toolgate"})

    t.heading("enable_tools: the issue tools appear (and the client is told)")
    await t.call("enable_tools", {"groups": ["tracker", "issues"]})
    t.say(t.heard())
    after = await t.show_list(first)

    t.heading("The new tool works")
    await t.call("create_issue", {"project_key": "WEB", "title": "Try toolgate"})

    t.heading("Access: delete_issue needs trust 'verified', so it does not exist for you")
    await t.call("enable_tools", {"groups": ["issue_admin"]})
    names = [str(w["name"]) for w in await t.listing()]
    t.say(f"delete_issue in tools/list: {'delete_issue' in names}")
    await t.call("delete_issue", {"issue_id": 1})
    await t.call("no_such_tool", {})
    t.say("(the same error as a tool that does not exist: access hides, it does not hint)")

    t.heading("Stages: checkout opens only after something is in the cart")
    await t.call("disable_tools", {"groups": ["tracker"]})
    t.say(t.heard())
    await t.call("enable_tools", {"groups": ["shopper"]})
    t.say(t.heard())
    before = await t.show_list(after)
    await t.call("checkout_start", {"ship_to_name": "Ada", "ship_to_address": "1 Main St"})
    await t.call("cart_add", {"product_id": 1})
    t.say(t.heard())
    final = await t.show_list(before)

    t.heading("Tokens: what the agent carries in its context")
    wires = await t.listing()
    flat_tokens, connect_tokens = t.tokens(flat), t.tokens(first_wires)
    rows = [
        ("flat (every tool, no toolgate)", len(flat), flat_tokens),
        ("toolgate at connect", len(first), connect_tokens),
        ("toolgate now (shopper, checkout)", len(final), t.tokens(wires)),
    ]
    for label, count, tokens in rows:
        t.say(f"    {label:<34} {count:>3} tools {tokens:>6} tokens")
    saved = flat_tokens - connect_tokens
    t.say(
        f"saved at connect: {saved} tokens ({100 * saved / max(flat_tokens, 1):.0f}%),"
        f" counted with {t.counter.name}"
    )
