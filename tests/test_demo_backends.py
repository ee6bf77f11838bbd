"""The built-in demo backends: real FastMCP servers on a real SQLite file, and their config.

Drives `toolgate.demo.tracker` and `.shop` through `fastmcp.Client`, in memory and
as `python -m` subprocesses over stdio, and checks that the shipped `toolgate.json` and the
lazy docs in `docs/` agree with the tools the servers actually expose.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from collections.abc import AsyncIterator
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError
from mcp.types import Tool

import toolgate.demo
from toolgate.demo import shop, tracker
from toolgate.demo.shop.model import luhn_valid, shipping_quote

DEMO_DIR = Path(toolgate.demo.__file__).parent
CONFIG_PATH = DEMO_DIR / "toolgate.json"
GROUP_NAME = re.compile(r"^[a-z0-9]+([_-][a-z0-9]+)*$")
TOOL_NAME = re.compile(r"^[a-z0-9_]+$")

Tools = dict[str, dict[str, Tool]]  # server name -> tool name -> tool


# --------------------------------------------------------------------------- helpers


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "demo.sqlite3"


@pytest.fixture
async def tracker_client(db_path: Path) -> AsyncIterator[Client[Any]]:
    async with Client(tracker.build_server(db_path)) as client:
        yield client


@pytest.fixture
async def shop_client(db_path: Path) -> AsyncIterator[Client[Any]]:
    async with Client(shop.build_server(db_path)) as client:
        yield client


@pytest.fixture
async def tools(db_path: Path) -> Tools:
    listed: Tools = {}
    servers: dict[str, FastMCP] = {
        "tracker": tracker.build_server(db_path),
        "shop": shop.build_server(db_path),
    }
    for name, server in servers.items():
        async with Client(server) as client:
            listed[name] = {tool.name: tool for tool in await client.list_tools()}
    return listed


@pytest.fixture
def config() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(CONFIG_PATH.read_text())
    return loaded


def snapshot(path: Path) -> list[str]:
    """Every schema object and row in the file, to prove a failed call wrote nothing."""
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def matches(pattern: str, server: str, tool: str) -> bool:
    """The gateway's pattern rule: a glob on tool names, optionally `server:glob`."""
    if ":" in pattern:
        wanted_server, glob = pattern.split(":", 1)
        return wanted_server == server and fnmatchcase(tool, glob)
    return fnmatchcase(tool, pattern)


def matched(pattern: str, tools: Tools) -> set[str]:
    return {t for server, named in tools.items() for t in named if matches(pattern, server, t)}


async def call(client: Client[Any], tool: str, **arguments: Any) -> Any:
    return (await client.call_tool(tool, arguments)).data


# --------------------------------------------------------------------------- tool surface


async def test_the_two_servers_expose_at_least_40_uniquely_named_tools(tools: Tools) -> None:
    tracker_names, shop_names = set(tools["tracker"]), set(tools["shop"])
    assert len(tracker_names) >= 25
    assert len(shop_names) >= 18
    assert len(tracker_names) + len(shop_names) >= 40
    assert not tracker_names & shop_names
    assert all(TOOL_NAME.match(name) for name in tracker_names | shop_names)


async def test_every_tool_has_a_summary_detail_described_parameters_and_annotations(
    tools: Tools,
) -> None:
    for named in tools.values():
        for tool in named.values():
            description = tool.description or ""
            summary, _, detail = description.partition("\n")
            assert summary.endswith("."), tool.name
            assert detail.strip(), f"{tool.name} has no detail after its summary"
            for arg, schema in tool.input_schema.get("properties", {}).items():
                assert schema.get("description"), f"{tool.name}.{arg} has no description"
            hints = tool.annotations
            assert hints is not None, tool.name
            assert hints.read_only_hint is not None, tool.name
            assert hints.destructive_hint is not None, tool.name
            assert hints.idempotent_hint is not None, tool.name
            if hints.read_only_hint:
                assert not hints.destructive_hint, tool.name


async def test_read_and_destructive_hints_match_what_the_tools_do(tools: Tools) -> None:
    flat = {name: tool for named in tools.values() for name, tool in named.items()}

    def hint(name: str, which: str) -> bool | None:
        annotations = flat[name].annotations
        assert annotations is not None
        value: bool | None = getattr(annotations, which)
        return value

    for name in flat:
        if name.startswith(("list_", "get_", "search_")) or name in {"cart_view", "whoami"}:
            assert hint(name, "read_only_hint"), name
        if name.startswith(("create_", "delete_", "add_", "cart_add", "checkout_pay")):
            assert not hint(name, "read_only_hint"), name
    for name in ("delete_project", "delete_issue", "purge_closed_issues", "reset_database"):
        assert hint(name, "destructive_hint"), name
    for name in ("refund_order", "cancel_order", "checkout_pay", "set_price", "update_issue"):
        assert hint(name, "destructive_hint"), name
    for name in ("create_issue", "add_comment", "cart_add", "checkout_start", "create_project"):
        assert hint(name, "destructive_hint") is False, name
        assert hint(name, "idempotent_hint") is False, name


async def test_both_modules_serve_over_stdio_on_one_shared_database(db_path: Path) -> None:
    def launch(module: str) -> StdioTransport:
        return StdioTransport(
            command=sys.executable,
            args=["-m", f"toolgate.demo.{module}", "--db", str(db_path)],
        )

    async with Client(launch("tracker")) as t_client, Client(launch("shop")) as s_client:
        t_tools = await t_client.list_tools()
        s_tools = await s_client.list_tools()
        assert len(t_tools) + len(s_tools) >= 40
        me = await call(t_client, "whoami")
        assert me["user"]["login"] == "local"
        assert Path(me["database"]) == db_path
        issue = await call(t_client, "create_issue", project_key="WEB", title="Over stdio")
        cart = await call(s_client, "cart_add", product_id=7, quantity=2)
        assert cart["item_count"] == 2
        with pytest.raises(ToolError, match="Unknown issue 9999"):
            await call(t_client, "get_issue", issue_id=9999)

    with sqlite3.connect(db_path) as conn:
        title = conn.execute(
            "SELECT title FROM tracker_issues WHERE id = ?", (issue["id"],)
        ).fetchone()
        cart_rows = conn.execute("SELECT product_id, quantity FROM shop_cart_items").fetchall()
    assert title == ("Over stdio",)
    assert cart_rows == [(7, 2)]


async def test_a_new_database_is_seeded_once_and_kept_on_restart(db_path: Path) -> None:
    async with Client(tracker.build_server(db_path)) as client:
        await call(client, "delete_issue", issue_id=1)
    async with Client(tracker.build_server(db_path)) as client:
        projects = await call(client, "list_projects")
        assert [p["key"] for p in projects["projects"]] == ["API", "WEB"]
        with pytest.raises(ToolError, match="Unknown issue 1"):
            await call(client, "get_issue", issue_id=1)


# --------------------------------------------------------------------------- tracker


async def test_an_issue_goes_from_new_project_to_closed_with_comments(
    tracker_client: Client[Any],
) -> None:
    project = await call(
        tracker_client, "create_project", key="OPS", name="Operations", description="On-call"
    )
    assert project["key"] == "OPS"
    assert project["issue_counts"] == {"open": 0, "in_progress": 0, "closed": 0}
    await call(
        tracker_client, "create_milestone", project_key="ops", title="Q1", due_date="2027-03-31"
    )

    issue = await call(
        tracker_client,
        "create_issue",
        project_key="OPS",
        title="Pager fires twice for one alert",
        body="Dedup key is ignored.",
        priority="high",
        assignee="grace",
        labels=["bug"],
    )
    assert (issue["status"], issue["reporter"], issue["labels"]) == ("open", "local", ["bug"])
    issue_id = issue["id"]

    await call(tracker_client, "update_issue", issue_id=issue_id, status="in_progress")
    await call(tracker_client, "set_milestone", issue_id=issue_id, milestone="Q1")
    comment = await call(tracker_client, "add_comment", issue_id=issue_id, body="Root cause found.")
    assert comment["author"] == "local"
    closed = await call(
        tracker_client, "close_issue", issue_id=issue_id, resolution="fixed", comment="Deployed."
    )
    assert (closed["status"], closed["resolution"], closed["milestone"]) == (
        "closed",
        "fixed",
        "Q1",
    )
    assert closed["closed_at"]

    full = await call(tracker_client, "get_issue", issue_id=issue_id)
    assert [c["body"] for c in full["comments"]] == ["Root cause found.", "Deployed."]
    listed = await call(tracker_client, "list_issues", project_key="OPS", status="closed")
    assert [i["id"] for i in listed["issues"]] == [issue_id]
    milestones = await call(tracker_client, "list_milestones", project_key="OPS")
    assert milestones["milestones"][0]["progress_percent"] == 100
    found = await call(tracker_client, "search_issues", query="pager dedup", status="closed")
    assert [i["id"] for i in found["issues"]] == [issue_id]
    report = await call(tracker_client, "project_report", project_key="OPS")
    assert report["by_status"] == {"closed": 1}

    reopened = await call(tracker_client, "reopen_issue", issue_id=issue_id, reason="Back again")
    assert (reopened["status"], reopened["resolution"]) == ("open", None)


async def test_admin_tools_delete_purge_and_reset(
    tracker_client: Client[Any], db_path: Path
) -> None:
    purged = await call(tracker_client, "purge_closed_issues", project_key="WEB")
    assert purged["deleted_issue_ids"] == [3]
    deleted = await call(tracker_client, "delete_project", project_key="API")
    assert deleted == {"deleted_project": "API", "deleted_issues": 3}
    with sqlite3.connect(db_path) as conn:
        orphans = conn.execute(
            "SELECT COUNT(*) FROM tracker_comments c"
            " LEFT JOIN tracker_issues i ON i.id = c.issue_id WHERE i.id IS NULL"
        ).fetchone()
    assert orphans == (0,)

    reset = await call(tracker_client, "reset_database")
    assert reset["rows"]["tracker_issues"] == 6
    projects = await call(tracker_client, "list_projects")
    assert [p["key"] for p in projects["projects"]] == ["API", "WEB"]


TRACKER_BAD_CALLS = [
    ("create_issue", {"project_key": "NOPE", "title": "x"}, "Unknown project 'NOPE'"),
    ("create_issue", {"project_key": "WEB", "title": "x", "labels": ["bug", "nope"]},
     "label 'nope'"),
    ("create_issue", {"project_key": "WEB", "title": "x", "assignee": "bob"}, "Unknown user 'bob'"),
    ("create_issue", {"project_key": "WEB", "title": ""}, "title"),
    ("create_project", {"key": "lower", "name": "x"}, "key"),
    ("create_project", {"key": "WEB", "name": "Again"}, "already used"),
    ("create_milestone", {"project_key": "WEB", "title": "M", "due_date": "2026-02-30"},
     "due_date"),
    ("close_issue", {"issue_id": 3}, "already closed"),
    ("reopen_issue", {"issue_id": 1}, "not closed"),
    ("close_issue", {"issue_id": 1, "resolution": "done"}, "resolution"),
    ("add_comment", {"issue_id": 999, "body": "hi"}, "Unknown issue 999"),
    ("assign_issue", {"issue_id": 1, "assignee": "bob"}, "Unknown user 'bob'"),
    ("update_issue", {"issue_id": 1}, "Nothing to update"),
    ("set_milestone", {"issue_id": 4, "milestone": "Beta"}, "Unknown milestone 'Beta'"),
    ("remove_label", {"issue_id": 1, "label": "docs"}, "does not have the label"),
    ("delete_project", {"project_key": "ZZZ"}, "Unknown project 'ZZZ'"),
    ("purge_closed_issues", {"closed_before": "yesterday"}, "closed_before"),
]  # fmt: skip


@pytest.mark.parametrize(("tool", "arguments", "message"), TRACKER_BAD_CALLS)
async def test_bad_tracker_input_is_a_clear_error_and_changes_nothing(
    tracker_client: Client[Any], db_path: Path, tool: str, arguments: dict[str, Any], message: str
) -> None:
    before = snapshot(db_path)
    with pytest.raises(ToolError, match=re.escape(message)):
        await tracker_client.call_tool(tool, arguments)
    assert snapshot(db_path) == before


async def test_archived_projects_refuse_new_issues_until_unarchived(
    tracker_client: Client[Any],
) -> None:
    await call(tracker_client, "archive_project", project_key="API")
    listed = await call(tracker_client, "list_projects")
    assert [p["key"] for p in listed["projects"]] == ["WEB"]
    with pytest.raises(ToolError, match="archived"):
        await call(tracker_client, "create_issue", project_key="API", title="x")
    await call(tracker_client, "archive_project", project_key="API", archived=False)
    issue = await call(tracker_client, "create_issue", project_key="API", title="x")
    assert issue["project_key"] == "API"


# --------------------------------------------------------------------------- shop


async def test_a_customer_browses_fills_the_cart_checks_out_and_pays(
    shop_client: Client[Any],
) -> None:
    found = await call(shop_client, "search_products", query="coffee")
    product = found["products"][0]
    assert product["name"] == "Pour-over coffee set"
    page = await call(shop_client, "browse_catalog", category="outdoor", sort="price_asc")
    assert [p["price_cents"] for p in page["products"]] == sorted(
        p["price_cents"] for p in page["products"]
    )
    reviews = await call(shop_client, "list_reviews", product_id=1)
    assert reviews["review_count"] == 2

    await call(shop_client, "cart_add", product_id=product["id"], quantity=2)
    cart = await call(shop_client, "cart_add", product_id=9)
    assert cart["subtotal_cents"] == 2 * 3200 + 8900
    quote = await call(shop_client, "estimate_shipping", country="us")
    assert quote["free_shipping_applied"] is True

    order = await call(
        shop_client,
        "checkout_start",
        ship_to_name="Ada Lovelace",
        ship_to_address="12 Analytical Way, Springfield",
        country="US",
        shipping_method="express",
    )
    assert order["status"] == "pending_payment"
    assert order["total_cents"] == order["subtotal_cents"] + order["shipping_cents"]
    assert (await call(shop_client, "cart_view"))["items"] == []

    paid = await call(
        shop_client, "checkout_pay", order_id=order["id"], card_number="4242 4242 4242 4242"
    )
    assert paid["status"] == "paid"
    assert paid["payment_ref"].startswith("pay_")
    status = await call(shop_client, "order_status", order_id=order["id"])
    assert [h["status"] for h in status["history"]] == ["pending_payment", "paid"]
    assert (await call(shop_client, "get_product", product_id=product["id"]))["stock"] == 13


async def test_an_operator_ships_refunds_and_cancels_orders(shop_client: Client[Any]) -> None:
    await call(shop_client, "cart_add", product_id=8, quantity=4)
    order = await call(
        shop_client, "checkout_start", ship_to_name="A", ship_to_address="1 Main St", country="CA"
    )
    await call(shop_client, "checkout_pay", order_id=order["id"], card_number="4242424242424242")
    assert (await call(shop_client, "get_product", product_id=8))["stock"] == 36
    cancelled = await call(shop_client, "cancel_order", order_id=order["id"], reason="Changed mind")
    assert cancelled["status"] == "cancelled"
    assert (await call(shop_client, "get_product", product_id=8))["stock"] == 40

    shipped = await call(shop_client, "list_orders", status="shipped")
    assert [o["id"] for o in shipped["orders"]] == [1]
    refunded = await call(shop_client, "refund_order", order_id=1, reason="Returned")
    assert refunded["status"] == "refunded"
    assert (await call(shop_client, "get_product", product_id=7))["stock"] == 26

    priced = await call(shop_client, "set_price", product_id=2, price_cents=3500)
    assert (priced["old_price_cents"], priced["price"]) == (3900, "$35.00")
    restocked = await call(shop_client, "restock_product", product_id=5, quantity=4)
    assert restocked["in_stock"] is True


async def test_abandoning_checkout_puts_the_items_back_in_the_cart(
    shop_client: Client[Any],
) -> None:
    await call(shop_client, "cart_add", product_id=3)
    order = await call(
        shop_client, "checkout_start", ship_to_name="A", ship_to_address="1 Main St", country="FR"
    )
    result = await call(shop_client, "checkout_cancel", order_id=order["id"])
    assert result["order"]["status"] == "cancelled"
    assert [(i["product_id"], i["quantity"]) for i in result["cart"]["items"]] == [(3, 1)]


SHOP_BAD_CALLS = [
    ("cart_add", {"product_id": 999}, "Unknown product 999"),
    ("cart_add", {"product_id": 5}, "Not enough stock"),
    ("cart_add", {"product_id": 6, "quantity": 21}, "quantity"),
    ("cart_remove", {"product_id": 1}, "not in the cart"),
    ("checkout_start", {"ship_to_name": "A", "ship_to_address": "1 Main St", "country": "US"},
     "cart is empty"),
    ("checkout_pay", {"order_id": 1, "card_number": "4242424242424242"}, "status is 'shipped'"),
    ("checkout_pay", {"order_id": 77, "card_number": "4242424242424242"}, "Unknown order 77"),
    ("estimate_shipping", {"country": "USA", "product_id": 1}, "country"),
    ("estimate_shipping", {"country": "US"}, "cart is empty"),
    ("browse_catalog", {"category": "toys"}, "Unknown category 'toys'"),
    ("search_products", {"query": "tent", "category": "toys"}, "Unknown category 'toys'"),
    ("add_review", {"product_id": 1, "rating": 6, "title": "t", "body": "b"}, "rating"),
    ("cancel_order", {"order_id": 1, "reason": "late"}, "cannot be cancelled"),
    ("ship_order", {"order_id": 1, "carrier": "ups", "tracking_number": "1Z99999999"},
     "cannot be shipped"),
    ("set_price", {"product_id": 1, "price_cents": -1}, "price_cents"),
]  # fmt: skip


@pytest.mark.parametrize(("tool", "arguments", "message"), SHOP_BAD_CALLS)
async def test_bad_shop_input_is_a_clear_error_and_changes_nothing(
    shop_client: Client[Any], db_path: Path, tool: str, arguments: dict[str, Any], message: str
) -> None:
    before = snapshot(db_path)
    with pytest.raises(ToolError, match=re.escape(message)):
        await shop_client.call_tool(tool, arguments)
    assert snapshot(db_path) == before


@pytest.mark.parametrize(
    ("card", "message"),
    [
        ("4000 0000 0000 0002", "declined"),
        ("4242 4242 4242 4241", "checksum"),
        ("4242-4242-4242-4242", "card_number"),
    ],
)
async def test_a_failed_payment_leaves_order_and_stock_unchanged(
    shop_client: Client[Any], db_path: Path, card: str, message: str
) -> None:
    await call(shop_client, "cart_add", product_id=2)
    order = await call(
        shop_client, "checkout_start", ship_to_name="A", ship_to_address="1 Main St", country="DE"
    )
    before = snapshot(db_path)
    with pytest.raises(ToolError, match=message):
        await call(shop_client, "checkout_pay", order_id=order["id"], card_number=card)
    assert snapshot(db_path) == before
    assert (await call(shop_client, "order_status", order_id=order["id"]))["status"] == (
        "pending_payment"
    )


def test_shipping_quotes_follow_zone_method_weight_and_free_threshold() -> None:
    assert shipping_quote("us", "standard", 900, 3200)["cost_cents"] == 499 + 100
    assert shipping_quote("US", "standard", 900, 7500)["cost_cents"] == 0
    assert shipping_quote("US", "express", 900, 7500)["cost_cents"] == 1299 + 200
    assert shipping_quote("de", "standard", 2300, 0)["zone"] == "europe"
    assert shipping_quote("JP", "standard", 2001, 0)["cost_cents"] == 1999 + 3 * 600
    assert luhn_valid("4242424242424242")
    assert not luhn_valid("4242424242424241")


# --------------------------------------------------------------------------- toolgate.json


def test_config_launches_both_modules_with_the_python_and_db_placeholders(
    config: dict[str, Any],
) -> None:
    assert config["mcpServers"] == {
        name: {
            "command": "{python}",
            "args": ["-m", f"toolgate.demo.{name}", "--db", "{db}"],
        }
        for name in ("tracker", "shop")
    }
    settings = config["toolgate"]
    assert settings["strategy"] == "auto"
    assert settings["meta_tools"] == "menu"
    assert settings["descriptions"] == {"mode": "full", "dir": "docs"}
    assert settings["identity"]["default"] == {"id": "local", "trust": "declared", "scope": ["*"]}


def test_every_config_pattern_matches_at_least_one_tool(
    config: dict[str, Any], tools: Tools
) -> None:
    settings = config["toolgate"]
    patterns = [*settings["always"], *settings["stages"]["tool_stages"]]
    patterns += [p for group in settings["groups"].values() for p in group["tools"]]
    patterns += [p for policy in settings["policies"] for p in policy["tools"]]
    for pattern in patterns:
        server = pattern.split(":", 1)[0] if ":" in pattern else None
        assert server is None or server in config["mcpServers"], pattern
        assert matched(pattern, tools), f"pattern {pattern!r} matches no tool"


def test_every_tool_is_grouped_except_a_few_root_tools(
    config: dict[str, Any], tools: Tools
) -> None:
    settings = config["toolgate"]
    grouped = {
        tool
        for group in settings["groups"].values()
        for pattern in group["tools"]
        for tool in matched(pattern, tools)
    }
    root = {tool for pattern in settings["always"] for tool in matched(pattern, tools)}
    everything = {tool for named in tools.values() for tool in named}
    assert 2 <= len(root) <= 4
    assert not root & grouped, "root tools must stay ungrouped"
    assert everything - grouped == root


def test_groups_form_a_valid_three_level_tree_with_an_exclusion_set(
    config: dict[str, Any],
) -> None:
    groups: dict[str, dict[str, Any]] = config["toolgate"]["groups"]
    assert len(groups) >= 6
    for name, group in groups.items():
        assert GROUP_NAME.match(name) and len(name) <= 64, name
        assert group["description"], name
        assert group.get("parent") in (None, *groups), name

    def depth(name: str) -> int:
        parent = groups[name].get("parent")
        return 1 if parent is None else 1 + depth(parent)

    assert max(depth(name) for name in groups) == 3
    wire_names = {name.replace("_", "-") for name in groups}
    assert len(wire_names) == len(groups), "names collide on the groups-extension wire"
    exclusive = config["toolgate"]["exclusive"]
    assert exclusive
    for members in exclusive:
        assert len(members) >= 2 and set(members) <= set(groups)


def test_destructive_admin_tools_are_trust_gated_and_rate_limited(
    config: dict[str, Any], tools: Tools
) -> None:
    flat = {name: tool for named in tools.values() for name, tool in named.items()}
    policies = config["toolgate"]["policies"]
    gated: set[str] = set()
    for policy in policies:
        assert policy["min_trust"] == "verified"
        assert policy["rate_limit"]["max"] >= 1 and policy["rate_limit"]["window_s"] > 0
        gated |= {tool for pattern in policy["tools"] for tool in matched(pattern, tools)}
    for name in gated:
        annotations = flat[name].annotations
        assert annotations is not None and annotations.destructive_hint, name
    wanted = {"delete_project", "delete_issue", "purge_closed_issues", "reset_database"}
    assert wanted | {"cancel_order", "refund_order"} <= gated


def test_the_stage_flow_locks_checkout_until_cart_add(config: dict[str, Any], tools: Tools) -> None:
    flow = config["toolgate"]["stages"]
    stages = {stage["name"]: stage for stage in flow["stages"]}
    assert flow["initial"] == "browse"
    assert {"on": "cart_add", "to": "checkout"} in stages["browse"]["transitions"]
    for stage in stages.values():
        assert set(stage.get("enables", [])) <= set(stages)
        for transition in stage.get("transitions", []):
            assert transition["to"] in stages
            assert matched(transition["on"], tools), transition
    locked = {
        tool
        for pattern, allowed in flow["tool_stages"].items()
        for tool in matched(pattern, tools)
        if set(allowed) <= set(stages)
    }
    assert locked == {name for name in tools["shop"] if name.startswith("checkout_")}
    assert flow["tool_stages"] == {"checkout_*": ["checkout"]}


# --------------------------------------------------------------------------- lazy docs


def test_lazy_docs_parse_and_match_the_generated_schemas(
    config: dict[str, Any], tools: Tools
) -> None:
    flat = {name: tool for named in tools.values() for name, tool in named.items()}
    docs_dir = DEMO_DIR / config["toolgate"]["descriptions"]["dir"]
    files = sorted(docs_dir.glob("*.json"))
    assert len(files) >= 6
    for path in files:
        doc = json.loads(path.read_text())
        assert doc["name"] == path.stem and doc["name"] in flat, path.name
        assert doc["description"].strip()
        assert doc["inputSchema"] == flat[doc["name"]].input_schema, path.name
        assert doc["examples"], path.name
        for example in doc["examples"]:
            assert example["description"] and example["explanation"], path.name
            jsonschema.validate(example["input"], doc["inputSchema"])
        guidance = doc["usage_guidance"]
        assert guidance["common_patterns"] and guidance["important_notes"], path.name
        for error in doc["error_guidance"]["common_errors"]:
            assert error["error"] and error["cause"] and error["solution"], path.name
