"""The gateway's ``search`` key: ``true``/``false`` or ``{mode, embedder, cache, weight}``;
what it gives the toolset's index (mode, backend keys and titles) and what it refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolgate.errors import ConfigError
from toolgate.gateway.config.build import build_toolset, delivery_config, search_settings
from toolgate.gateway.config.model import parse_config

SERVERS = {
    "crm": {"command": "python", "args": ["crm.py"], "title": "Customer records"},
    "files": {"url": "http://127.0.0.1:9/mcp"},
}


def config(search: Any) -> dict[str, Any]:
    return {"mcpServers": SERVERS, "toolgate": {"search": search}}


def test_search_true_is_lexical_search_for_every_strategy() -> None:
    cfg = parse_config(config(True))
    assert delivery_config(cfg).search is True
    settings = search_settings(cfg)
    assert settings.mode == "lexical"
    assert settings.servers == {"crm": "Customer records", "files": ""}


def test_a_search_block_turns_search_on_with_its_mode_embedder_and_cache(tmp_path: Path) -> None:
    cache = str(tmp_path / "vectors.sqlite")
    cfg = parse_config(
        config({"mode": "hybrid", "embedder": "wordllama", "cache": cache, "weight": 0.5})
    )
    assert delivery_config(cfg).search is True
    settings = search_settings(cfg)
    assert (settings.mode, settings.embedder, settings.cache, settings.weight) == (
        "hybrid",
        "wordllama",
        cache,
        0.5,
    )


def test_without_a_search_key_search_is_off_and_lexical() -> None:
    cfg = parse_config({"mcpServers": SERVERS})
    assert delivery_config(cfg).search is False
    assert search_settings(cfg).mode == "lexical"


def test_the_built_toolset_indexes_backend_keys_and_titles_in_the_configured_mode() -> None:
    cfg = parse_config(config({"mode": "hybrid"}))
    listed = {
        "crm": [{"name": "lookup", "description": "Find one by id.", "inputSchema": {}}],
        "files": [{"name": "read", "description": "Read one by id.", "inputSchema": {}}],
    }
    toolset, report = build_toolset(cfg, listed, lambda tool: lambda args, ctx: {})
    assert not report.errors
    index = toolset.search_index
    assert index.mode == "hybrid"
    assert index.search("customer", limit=2)[0].name == "lookup"
    [why] = index.explain("customer records", limit=1)
    assert why.name == "lookup" and "server" in why.fields
    assert toolset.catalog.tools["read"].source == "files"


@pytest.mark.parametrize(
    ("search", "problem"),
    [
        ({"mode": "semantic"}, "toolgate.search.mode"),
        ({"weight": 2}, "toolgate.search.weight"),
        ({"embedder": 3}, "toolgate.search.embedder"),
        ({"modes": "hybrid"}, "toolgate.search.modes"),
    ],
)
def test_a_bad_search_block_names_the_key(search: Any, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem.replace(".", r"\.")):
        parse_config(config(search))


@pytest.mark.parametrize(
    ("search", "message"),
    [
        (
            {"mode": "hybrid", "weight": True},
            "toolgate.search.weight: Input should be a valid number",
        ),
        (
            {"mode": "hybrid", "weight": "0.5"},
            "toolgate.search.weight: Input should be a valid number",
        ),
        ({"full_results": "2"}, "toolgate.search.full_results: Input should be a valid integer"),
        ({"enabled": "no"}, "toolgate.search.enabled: Input should be a valid boolean"),
        (
            {"embedder": "minilm"},
            "toolgate.search.embedder: set, but mode is 'lexical', which does not use it; "
            'add "mode": "hybrid" (or remove it)',
        ),
        ({"cache": "vectors.sqlite"}, "toolgate.search.cache: set, but mode is 'lexical'"),
        ({"weight": 0.5}, "toolgate.search.weight: set, but mode is 'lexical'"),
        (
            "lexical",
            "toolgate.search: search is true, false or an object such as "
            '{"mode": "hybrid"}, not str \'lexical\'',
        ),
    ],
    ids=[
        "bool weight",
        "text weight",
        "text count",
        "text switch",
        "embedder",
        "cache",
        "weight",
        "a mode as text",
    ],
)
def test_a_search_value_of_another_type_or_for_the_other_mode_is_refused_by_name(
    search: Any, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(config(search))
    assert message in caught.value.message


def test_a_whole_number_is_a_weight() -> None:
    assert search_settings(parse_config(config({"mode": "hybrid", "weight": 1}))).weight == 1.0
