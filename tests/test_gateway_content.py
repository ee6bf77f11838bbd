"""Content blocks through the real gateway: ``toolgate serve`` over HTTP (strategy ``flat``)
in front of ``tests/servers/conformance_reference.py`` over stdio. Image, audio, embedded
resource and mixed results, tool errors and a JSON Schema 2020-12 input schema must reach
an MCP client field for field as the backend produced them (the conformance suite's
``tools-call-*`` and ``json-schema-2020-12`` scenarios, checked here without Node)."""

from __future__ import annotations

import base64
import importlib.util
import json
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from _fixtures.gateway import SERVERS, HttpGateway, toolgate_argv

REFERENCE = SERVERS / "conformance_reference.py"


def _reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_reference", REFERENCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = _reference()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    tmp = tmp_path_factory.mktemp("content-gateway")
    config = tmp / "toolgate.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {"ref": {"command": sys.executable, "args": [str(REFERENCE)]}},
                "toolgate": {"strategy": "flat"},
            }
        )
    )
    gw = HttpGateway([*toolgate_argv(), "serve", str(config)], tmp / "gateway.log")
    gw.start()
    try:
        yield gw
    finally:
        gw.stop()


def _blocks(result: Any) -> list[dict[str, Any]]:
    return [b.model_dump(by_alias=True, exclude_none=True, mode="json") for b in result.content]


async def _call(gateway: HttpGateway, name: str) -> Any:
    async with Client(StreamableHttpTransport(gateway.url)) as client:
        return await client.call_tool(name, {}, raise_on_error=False)


async def test_image_block_passes_intact(gateway: HttpGateway) -> None:
    result = await _call(gateway, "test_image_content")
    assert not result.is_error
    assert _blocks(result) == [{"type": "image", "data": ref.PNG_B64, "mimeType": "image/png"}]
    assert base64.b64decode(_blocks(result)[0]["data"]).startswith(b"\x89PNG\r\n\x1a\n")


async def test_audio_block_passes_intact(gateway: HttpGateway) -> None:
    result = await _call(gateway, "test_audio_content")
    assert not result.is_error
    assert _blocks(result) == [{"type": "audio", "data": ref.WAV_B64, "mimeType": "audio/wav"}]
    assert base64.b64decode(_blocks(result)[0]["data"])[:4] == b"RIFF"


async def test_embedded_resource_passes_intact(gateway: HttpGateway) -> None:
    result = await _call(gateway, "test_embedded_resource")
    assert not result.is_error
    [block] = _blocks(result)
    assert block["type"] == "resource"
    assert block["resource"] == {
        "uri": "test://embedded-resource",
        "mimeType": "text/plain",
        "text": ref.EMBEDDED_TEXT,
    }


async def test_mixed_content_keeps_order_and_fields(gateway: HttpGateway) -> None:
    result = await _call(gateway, "test_multiple_content_types")
    assert _blocks(result) == [
        {"type": "text", "text": "Multiple content types test:"},
        {"type": "image", "data": ref.PNG_B64, "mimeType": "image/png"},
        {
            "type": "resource",
            "resource": {
                "uri": "test://mixed-content-resource",
                "mimeType": "application/json",
                "text": ref.MIXED_JSON,
            },
        },
    ]


async def test_gateway_matches_backend_called_directly(gateway: HttpGateway) -> None:
    names = [
        "test_simple_text",
        "test_image_content",
        "test_audio_content",
        "test_embedded_resource",
        "test_multiple_content_types",
    ]
    async with Client(ref.mcp) as direct:
        for name in names:
            expected = _blocks(await direct.call_tool(name, {}))
            assert _blocks(await _call(gateway, name)) == expected, name


async def test_tool_error_is_a_result_with_its_message(gateway: HttpGateway) -> None:
    result = await _call(gateway, "test_error_handling")
    assert result.is_error
    assert _blocks(result) == [{"type": "text", "text": ref.ERROR_TEXT}]


async def test_json_schema_2020_12_keywords_survive_the_listing(gateway: HttpGateway) -> None:
    async with Client(StreamableHttpTransport(gateway.url)) as client:
        tools = {t.name: t for t in await client.list_tools()}
    schema = tools["json_schema_2020_12_tool"].input_schema
    assert schema["$schema"] == ref.SCHEMA_2020_12
    assert schema["$defs"]["address"]["properties"] == {
        "street": {"type": "string"},
        "city": {"type": "string"},
    }
    assert schema["properties"]["address"] == {"$ref": "#/$defs/address"}
    assert schema["additionalProperties"] is False
