"""Lists that never mislead, on schemas that are hard to read: through ``toolgate serve``
over streamable HTTP with real clients on both protocol eras.

The backend (``tests/servers/gw_schemas.py``) requires arguments under a root
``allOf``, refers to an anchor, takes an array of enum values, a number under
``multipleOf``, a value type that refers to itself six ways, and a strict object. A
re-listed tool keeps each required argument's type; a refused call names them and
where the rest is; one caller's odd value never turns checking off for the next.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastmcp
import pytest
from fastmcp.client.transports import StreamableHttpTransport

from _fixtures.gateway import HttpGateway, toolgate_argv

ERAS = pytest.mark.parametrize("mode", ["legacy", "auto"])  # 2025-11-25; 2026-07-28
SERVER = Path(__file__).parent / "servers" / "gw_schemas.py"


def pointer(name: str) -> str:
    return f'Call describe_tools with {{"tools": ["{name}"]}} for its full definition.'


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    """``strategy: auto`` over the one backend, its tools in the group ``schemas``."""
    tmp = tmp_path_factory.mktemp("hard-schemas")
    config = {
        "mcpServers": {"schemas": {"command": sys.executable, "args": [str(SERVER)]}},
        "toolgate": {"groups": {"schemas": {"description": "Odd schemas", "tools": ["*"]}}},
    }
    path = tmp / "toolgate.json"
    path.write_text(json.dumps(config))
    served = HttpGateway([*toolgate_argv(), "serve", str(path)], tmp / "gw.log")
    served.start()
    try:
        yield served
    finally:
        served.stop()


def client(url: str, mode: str) -> fastmcp.Client[Any]:
    return fastmcp.Client(StreamableHttpTransport(url), mode=mode)


async def call(c: fastmcp.Client[Any], mode: str, name: str, args: Any) -> tuple[bool, str]:
    """Call ``name`` (on the legacy protocol with its group open: enabled once per
    session, an error result the second time, which is ignored)."""
    if mode == "legacy":
        await c.call_tool_mcp("enable_tools", {"groups": ["schemas"]})
    result = await c.call_tool_mcp(name, args)
    return bool(result.is_error), result.content[0].text  # type: ignore[union-attr]


async def test_a_relisted_tool_keeps_every_required_arguments_type(gateway: HttpGateway) -> None:
    async with client(gateway.url, "legacy") as c:
        await c.call_tool("enable_tools", {"groups": ["schemas"]})
        listed = {t.name: t.input_schema for t in await c.list_tools()}
    assert listed["allof_args"] == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "required": ["a", "b"],
    }
    assert listed["anchor_arg"]["properties"] == {"x": {"type": "number"}}
    assert listed["pick_colours"]["properties"] == {
        "colours": {"type": "array", "items": {"type": "string", "enum": ["red", "green"]}}
    }
    # read once: met again inside itself, the type is left open, not walked six ways
    assert listed["nested"]["properties"] == {"x": {}}


@ERAS
async def test_a_call_missing_arguments_required_under_allof_names_them(
    gateway: HttpGateway, mode: str
) -> None:
    async with client(gateway.url, mode) as c:
        failed, text = await call(c, mode, "allof_args", {})
    assert failed
    assert "'a' is a required property" in text
    assert text.endswith(f"Required arguments: a (integer), b (string). {pointer('allof_args')}")


@ERAS
async def test_a_number_too_large_to_check_is_refused_and_checking_goes_on(
    gateway: HttpGateway, mode: str
) -> None:
    async with client(gateway.url, mode) as c:
        failed, text = await call(c, mode, "pay", {"amount": 10**400})
        assert failed and "cannot be checked against its input schema" in text
        assert "Required arguments: amount (number)." in text
    async with client(gateway.url, mode) as other:  # another caller, after it
        failed, text = await call(other, mode, "pay", {})
        assert failed and not text.startswith("ran ")
        assert "'amount' is a required property" in text
        failed, text = await call(other, mode, "pay", {"amount": 12.5})
    assert not failed and text == 'ran pay {"amount": 12.5}'


@ERAS
async def test_call_tool_given_arguments_that_are_not_an_object_names_the_required_ones(
    gateway: HttpGateway, mode: str
) -> None:
    async with client(gateway.url, mode) as c:
        failed, text = await call(c, mode, "call_tool", {"name": "strict_add", "arguments": [1]})
    assert failed
    assert text == (
        "Invalid arguments for tool 'strict_add': they must be a JSON object, not array. "
        f"Required arguments: a (integer), b (integer). {pointer('strict_add')}"
    )
