"""Token counting: real o200k/cl100k counts offline, where vocabularies are found, the
chars/4 fallback, and the per-tool / per-group / outlier estimate."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from toolgate.errors import ConfigError
from toolgate.tokens import (
    TiktokenCounter,
    TokenCounter,
    best_counter,
    encoding_spec,
    estimate_tokens,
    find_vocabulary,
    model_form,
    model_text,
    wire_text,
)

O200K_CACHE_NAME = "fb374d419588a4632f3f557e76b4b70aebbca790"  # sha1 of the download URL
CL100K_CACHE_NAME = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"

# (text, o200k_base tokens, cl100k_base tokens), computed once with tiktoken itself.
KNOWN_COUNTS = [
    ("hello world", 2, 2),
    ("Search GitHub issues by label.", 7, 6),
    ("get_pull_request_diff", 4, 4),
    ('{"name":"create_issue","description":"Create a new issue in a GitHub repository."}', 19, 18),
    ("日本語のテキスト", 6, 8),
    ("<|endoftext|>", 7, 7),  # special-token text in a description is plain text
]


@pytest.fixture(autouse=True)
def _only_the_vocabularies_set_up(no_ambient_vocabulary: None) -> None:
    """Before any fixture that sets a vocabulary up (an autouse fixture comes first)."""


@pytest.fixture(scope="module")
def vocab_dir(shared_data: Path) -> Path:
    return shared_data / "tokenizers"


@pytest.fixture(scope="module")
def o200k(vocab_dir: Path) -> TiktokenCounter:
    return TiktokenCounter("o200k_base", vocab_dir)


def tool_wire(name: str, description: str, **props: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": props},
    }


def test_o200k_counts_known_strings_exactly(o200k: TiktokenCounter) -> None:
    assert o200k.name == "tiktoken:o200k_base"
    assert [o200k.count(text) for text, _, _ in KNOWN_COUNTS] == [n for _, n, _ in KNOWN_COUNTS]


def test_cl100k_counts_known_strings_exactly(vocab_dir: Path) -> None:
    counter = TiktokenCounter("cl100k_base", vocab_dir)
    assert counter.name == "tiktoken:cl100k_base"
    assert [counter.count(text) for text, _, _ in KNOWN_COUNTS] == [n for _, _, n in KNOWN_COUNTS]


def test_empty_text_costs_zero_tokens(o200k: TiktokenCounter) -> None:
    assert o200k.count("") == 0


def test_repeated_counts_come_from_the_cache(vocab_dir: Path) -> None:
    counter = TiktokenCounter("o200k_base", vocab_dir, cache_size=2)
    assert [counter.count(t) for t in ("a b", "c d", "a b", "e f")] == [2, 2, 2, 2]
    assert counter.cache_info == (2, 2)


def test_encoding_spec_is_read_from_tiktoken_without_downloading() -> None:
    spec = encoding_spec("o200k_base")
    assert spec.url == "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    assert spec.file_name == "o200k_base.tiktoken"
    assert spec.cache_name == O200K_CACHE_NAME
    assert encoding_spec("cl100k_base").cache_name == CL100K_CACHE_NAME
    assert spec.constructor_args["special_tokens"] == {
        "<|endoftext|>": 199999,
        "<|endofprompt|>": 200018,
    }


def test_tokenizer_dir_env_var_supplies_the_vocabulary(
    monkeypatch: pytest.MonkeyPatch, vocab_dir: Path
) -> None:
    monkeypatch.setenv("TOOLGATE_TOKENIZER_DIR", str(vocab_dir))
    counter = best_counter("cl100k_base")
    assert counter.name == "tiktoken:cl100k_base"
    assert counter.count("Search GitHub issues by label.") == 6


def test_tiktoken_cache_dir_supplies_the_vocabulary_under_its_sha1_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, vocab_dir: Path
) -> None:
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    shutil.copy(vocab_dir / "o200k_base.tiktoken", cache / O200K_CACHE_NAME)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    assert find_vocabulary("o200k_base") == cache / O200K_CACHE_NAME
    counter = best_counter()
    assert counter.name == "tiktoken:o200k_base"
    assert counter.count("Search GitHub issues by label.") == 7


def test_explicit_vocab_dir_wins_over_the_env_var(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, vocab_dir: Path
) -> None:
    monkeypatch.setenv("TOOLGATE_TOKENIZER_DIR", str(tmp_path))
    assert find_vocabulary("o200k_base", vocab_dir) == vocab_dir / "o200k_base.tiktoken"


def test_best_counter_falls_back_to_chars_over_four_when_no_vocabulary_exists() -> None:
    counter = best_counter()
    assert counter.name == "chars/4"
    assert counter.count("12345") == 2


def test_best_counter_falls_back_when_vocab_dir_lacks_the_file(tmp_path: Path) -> None:
    assert best_counter(vocab_dir=tmp_path).name == "chars/4"


def test_tiktoken_counter_without_a_vocabulary_is_a_config_error_naming_where_it_looked(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError, match=r"No o200k_base vocabulary found.*o200k_base\.tiktoken"):
        TiktokenCounter(vocab_dir=tmp_path)


def test_corrupt_vocabulary_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "o200k_base.tiktoken").write_bytes(b"not a vocabulary\n")
    with pytest.raises(ConfigError, match="is corrupt or not o200k_base"):
        best_counter(vocab_dir=tmp_path)


def test_unknown_encoding_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="Unknown tiktoken encoding 'o300k'"):
        best_counter("o300k")


def test_estimate_lists_tools_by_name_with_characters_and_tokens(o200k: TiktokenCounter) -> None:
    wires = [tool_wire("zeta", "Last."), tool_wire("alpha", "First.")]
    result = estimate_tokens(wires, o200k)
    assert result["tokenizer"] == "tiktoken:o200k_base"
    assert [row["name"] for row in result["per_tool"]] == ["alpha", "zeta"]
    alpha = wire_text(wires[1])
    assert result["per_tool"][0] == {
        "name": "alpha",
        "characters": len(alpha),
        "tokens": o200k.count(alpha),
    }
    assert result["total"] == sum(row["tokens"] for row in result["per_tool"])


def test_estimate_with_the_default_counter_counts_chars_over_four() -> None:
    wire = {"name": "a", "description": "", "inputSchema": {}}
    result = estimate_tokens([wire], TokenCounter())
    assert wire_text(wire) == '{"description":"","inputSchema":{},"name":"a"}'
    assert result == {
        "total": 12,
        "tokenizer": "chars/4",
        "per_tool": [{"name": "a", "characters": 46, "tokens": 12}],
        "per_group": {},
        "outliers": [],
    }


def test_estimate_without_a_counter_uses_the_best_available() -> None:
    assert estimate_tokens([tool_wire("a", "")])["tokenizer"] == "chars/4"


def test_estimate_of_nothing_is_zero() -> None:
    assert estimate_tokens([], TokenCounter()) == {
        "total": 0,
        "tokenizer": "chars/4",
        "per_tool": [],
        "per_group": {},
        "outliers": [],
    }


def test_tools_costing_over_three_times_the_median_are_outliers() -> None:
    small = [tool_wire(f"t{i}", "x" * 40) for i in range(4)]  # 30 tokens each at chars/4
    big = tool_wire("huge", "x" * 400)  # 120 tokens: > 3 * 30
    borderline = tool_wire("medium", "x" * 276)  # 90 tokens: == 3 * 30, not over
    result = estimate_tokens([*small, big, borderline], TokenCounter())
    assert [r["tokens"] for r in result["per_tool"]] == [120, 90, 30, 30, 30, 30]
    assert result["outliers"] == ["huge"]


def test_per_group_totals_count_a_tool_in_each_of_its_groups() -> None:
    wires = [tool_wire("a", "x" * 40), tool_wire("b", "x" * 80), tool_wire("c", "")]
    groups_of = {"a": ["code"], "b": ["code", "issues"], "c": ["default"]}
    result = estimate_tokens(wires, TokenCounter(), groups_of=groups_of)
    a, b, c = (row["tokens"] for row in result["per_tool"])
    assert (a, b, c) == (30, 40, 20)
    assert result["per_group"] == {
        "code": {"tools": 2, "tokens": a + b},
        "default": {"tools": 1, "tokens": c},
        "issues": {"tools": 1, "tokens": b},
    }


def github_wires(shared_data: Path, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    tools = json.loads((shared_data / "catalogs/github-mcp-server.json").read_text("utf-8"))
    return [{k: t[k] for k in keys if k in t} for t in tools]


def test_github_catalog_flat_estimate_sums_its_tools_and_stays_under_the_readme_figure(
    shared_data: Path, o200k: TiktokenCounter
) -> None:
    wires = github_wires(shared_data, ("name", "description", "inputSchema"))
    result = estimate_tokens(wires, o200k)
    assert len(result["per_tool"]) == 117
    assert result["total"] == sum(row["tokens"] for row in result["per_tool"])
    # Compact JSON (our wire_text) is 15% cheaper than the README's ~29.7K, which was
    # measured on json.dumps with its default ", " / ": " separators (next test).
    assert result["total"] == 25_218
    assert 0.8 * 29_700 < result["total"] <= 29_700
    assert max(row["tokens"] for row in result["per_tool"]) == 1_568


def test_github_catalog_with_default_json_separators_reproduces_the_readme_figure(
    shared_data: Path, o200k: TiktokenCounter
) -> None:
    wires = github_wires(shared_data, ("name", "description", "inputSchema"))
    counts = [o200k.count(json.dumps(w)) for w in wires]
    assert sum(counts) == 29_760  # README: "about 29.7K ... mean 254 per tool, max 1,796"
    assert max(counts) == 1_796
    assert round(sum(counts) / len(counts)) == 254


def test_github_full_wire_estimate_counts_what_a_model_reads_and_reports_outliers(
    shared_data: Path, o200k: TiktokenCounter
) -> None:
    # every field the server sends: annotations, icons (base64 PNGs) and _meta too
    wires = github_wires(
        shared_data, ("name", "description", "inputSchema", "annotations", "icons", "_meta")
    )
    groups_of = {w["name"]: [w["name"].split("_", 1)[0]] for w in wires}
    result = estimate_tokens(wires, o200k, groups_of=groups_of)
    assert sum(g["tools"] for g in result["per_group"].values()) == 117
    assert sum(g["tokens"] for g in result["per_group"].values()) == result["total"]
    # hosts hand a model name, description and schema only: the UI fields cost nothing
    assert result["total"] == 25_218
    assert sorted(r["tokens"] for r in result["per_tool"])[58] == 158  # the median
    assert "actions_list" in result["outliers"] and "issue_write" in result["outliers"]


def test_a_model_reads_name_description_and_schema_and_a_title_only_without_a_description(
    o200k: TiktokenCounter,
) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    bare = {"name": "fork", "description": "Fork a repository.", "inputSchema": schema}
    dressed = {
        **bare,
        "title": "Fork",
        "annotations": {"title": "Fork it", "readOnlyHint": False},
        "outputSchema": {"type": "object"},
        "icons": [{"src": "data:image/png;base64," + "A" * 4000, "mimeType": "image/png"}],
        "_meta": {"ui": {"visibility": ["app"]}},
    }
    assert model_form(dressed) == bare
    assert model_text(dressed) == model_text(bare)
    assert estimate_tokens([dressed], o200k)["total"] == estimate_tokens([bare], o200k)["total"]
    untitled = {"name": "fork", "title": "Fork a repository", "inputSchema": schema}
    assert model_form(untitled)["description"] == "Fork a repository"


@pytest.mark.parametrize(
    ("wires", "message"),
    [
        ("abc", "estimate_tokens' tools must be a list of tool definitions, got str 'abc'"),
        ({"name": "a"}, "estimate_tokens' tools must be a list of tool definitions, got dict"),
        ([None], "estimate_tokens' tools[0] must be a tool definition (a dict), got NoneType"),
        (
            [{"name": "a"}, {"description": "x"}],
            "estimate_tokens' tools[1] has no name: a tool definition needs a non-empty "
            "string 'name', got NoneType None",
        ),
    ],
    ids=["text", "one definition", "not a definition", "no name"],
)
def test_estimate_tokens_refuses_what_is_no_list_of_tool_definitions_by_name(
    wires: Any, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        estimate_tokens(wires, TokenCounter())
    assert caught.value.message.startswith(message)
