"""What a group change answers on the wire: two members of an exclusion set in one
request are refused alike whatever is on; a group switched off by the change (a
displaced exclusion peer, a cascaded child) is named within the menu's fields; the
stateless ``catalog`` view never asks to enable a parent "first".

``toolgate.lowlevel`` on the SDK's server with its real client in memory: the legacy
era gets ``list_changed``'s menu, 2026-07-28 the ``catalog`` view (``strategy: auto``).
"""

from __future__ import annotations

import json
from typing import Any

from mcp import Client
from mcp.server import Server

from _fixtures.core import T
from toolgate import Group, ToolSet
from toolgate.lowlevel import bind

ENABLE_FIELDS = {
    "enabled",
    "enabled_groups",
    "available_tools",
    "available_groups",
    "errors",
    "tools",
}
DISABLE_FIELDS = {"disabled", "enabled_groups", "available_tools", "errors"}
EXCLUSIVE = (
    "Cannot enable group 'shopper' together with 'operator' in one request: "
    "they are mutually exclusive"
)


def server() -> Server[Any]:
    """A tracker with its child ``issues``; ``shopper`` and ``operator`` exclude each
    other."""
    ts = ToolSet()
    ts.add_groups(
        [
            Group("tracker", "Track projects."),
            Group("issues", "Open and close issues.", parent="tracker"),
            Group("shopper", "Shop."),
            Group("operator", "Run the shop."),
        ]
    )
    ts.add_tools(
        [
            T("projects", "tracker"),
            T("open_issue", "issues"),
            T("cart", "shopper"),
            T("refund", "operator"),
        ]
    )
    ts.exclusive("shopper", "operator")
    served: Server[Any] = Server("group-changes")
    bind(served, ts)
    return served


async def call(client: Client, name: str, groups: list[str]) -> tuple[bool, dict[str, Any], Any]:
    """A meta-tool's ``isError``, structured content and the JSON of its text."""
    result = await client.call_tool(name, {"groups": groups})
    text = next(c.text for c in result.content if c.type == "text")
    return bool(result.is_error), dict(result.structured_content or {}), json.loads(text)


async def test_two_exclusive_groups_in_one_request_are_refused_alike_whatever_is_on() -> None:
    served = server()
    async with Client(served, mode="legacy") as fresh:
        failed, data, _ = await call(fresh, "enable_tools", ["operator", "shopper"])
        assert (failed, data["enabled"], data["errors"]) == (False, ["operator"], [EXCLUSIVE])
    async with Client(served, mode="legacy") as client:
        await call(client, "enable_tools", ["operator"])
        failed, data, _ = await call(client, "enable_tools", ["operator", "shopper"])
        assert failed is True
        assert data["enabled"] == []
        assert data["errors"] == ["Group 'operator' is already enabled", EXCLUSIVE]
        assert data["enabled_groups"] == ["operator"]


async def test_a_displaced_peer_is_named_in_the_text_and_the_fields_stay_the_menus() -> None:
    async with Client(server(), mode="legacy") as client:
        await call(client, "enable_tools", ["shopper"])
        failed, data, text = await call(client, "enable_tools", ["operator"])
    assert failed is False
    assert set(data) == ENABLE_FIELDS
    assert (data["enabled"], data["enabled_groups"]) == (["operator"], ["operator"])
    assert (text["enabled"], text["disabled"]) == (["operator"], ["shopper"])


async def test_disabling_a_parent_lists_the_children_it_turned_off_in_disabled() -> None:
    async with Client(server(), mode="legacy") as client:
        await call(client, "enable_tools", ["tracker", "issues"])
        failed, data, text = await call(client, "disable_tools", ["tracker"])
    assert failed is False
    assert set(data) == DISABLE_FIELDS
    assert (data["disabled"], data["enabled_groups"]) == (["tracker", "issues"], [])
    assert text == data


async def test_the_catalog_view_asks_for_parent_and_child_in_one_request_never_first() -> None:
    async with Client(server()) as client:  # 2026-07-28: the catalog view records nothing
        failed, data, _ = await call(client, "enable_tools", ["issues"])
        assert failed is True
        assert data["errors"] == [
            "Cannot enable group 'issues': its parent group 'tracker' is not enabled. "
            "Name 'tracker' and 'issues' in one request."
        ]
        failed, data, _ = await call(client, "enable_tools", ["issues", "tracker"])
    assert (failed, data["enabled"], data["errors"]) == (False, ["tracker", "issues"], [])
