"""``toolgate inspect``, by its code and as a process: JSON numbers that add up, and ``--as``.

Runs against a config fronting two real backends (served over HTTP once for the module:
how a backend starts is not what inspect is about); checks the group tree, per-group and
flat/disclosed token totals (each total is the sum of its parts) and the explained view
of a default, a token-table and an inline principal.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _fixtures.command import command_in_process
from _fixtures.gateway import gateway_config, gateway_env, http_backends, toolgate_argv
from toolgate.errors import ConfigError
from toolgate.gateway.commands.inspect import parse_principal
from toolgate.gateway.config.model import parse_config

META = ["call_tool", "describe_tools", "disable_tools", "enable_tools", "list_groups"]


def inspect(config: Path, *extra: str) -> dict[str, Any]:
    """``toolgate inspect --format json`` by the command's code in this process (the
    tables below run the ``toolgate`` process itself)."""
    done = command_in_process("inspect", str(config), "--format", "json", *extra)
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The two backends over HTTP, started once: every inspect below reads them."""
    with http_backends(tmp_path_factory.mktemp("backends") / "backends.log") as servers:
        yield servers


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory, servers: dict[str, Any]) -> Path:
    return gateway_config(tmp_path_factory.mktemp("inspect"), tokens=True, servers=servers)


@pytest.fixture(scope="module")
def default_view(config: Path) -> dict[str, Any]:
    return inspect(config, "--as", "default")


def test_inspect_lists_the_group_tree_with_tool_counts(default_view: dict[str, Any]) -> None:
    groups = {g["name"]: g for g in default_view["groups"]}
    assert sorted(groups) == ["math", "notes"]
    assert groups["math"]["tools"] == ["add", "echo", "multiply"]
    assert groups["notes"]["tools"] == ["note_add", "note_delete", "note_list"]
    assert default_view["root"]["tools"] == ["crash", "grow"]
    assert default_view["backends"] == {
        "math": {"status": "up", "tools": 3},
        "notes": {"status": "up", "tools": 5},
    }


def test_inspect_token_numbers_are_sums_of_their_parts(default_view: dict[str, Any]) -> None:
    cost = {t["name"]: t["tokens"] for t in default_view["tools"]}
    assert len(cost) == default_view["totals"]["tools"] == 8
    for group in default_view["groups"]:
        assert group["tokens"] == sum(cost[n] for n in group["tools"])
        assert group["tool_count"] == len(group["tools"])
    assert default_view["root"]["tokens"] == sum(cost[n] for n in default_view["root"]["tools"])
    totals = default_view["totals"]
    assert totals["catalog"] == {"tools": 8, "tokens": sum(cost.values())}
    # flat: every tool the principal may access (note_delete needs trust "verified")
    assert totals["flat"] == {"tools": 7, "tokens": sum(cost.values()) - cost["note_delete"]}
    assert totals["disclosed"]["names"] == sorted([*META, "crash", "grow"])
    assert totals["disclosed"]["tools"] == 7
    assert totals["saved_tokens"] == totals["flat"]["tokens"] - totals["disclosed"]["tokens"]


def test_inspect_as_default_explains_the_trust_gate(default_view: dict[str, Any]) -> None:
    reasons = {row["name"]: row["reason"] for row in default_view["explain"]}
    assert reasons == {
        "add": "group-inactive:math",
        "crash": "visible",
        "echo": "group-inactive:math",
        "grow": "visible",
        "multiply": "group-inactive:math",
        "note_add": "group-inactive:notes",
        "note_delete": "trust-too-low:declared<verified",
        "note_list": "group-inactive:notes",
    }


def test_inspect_as_a_token_principal_applies_its_scope_and_trust(config: Path) -> None:
    data = inspect(config, "--as", "alice")
    assert data["principal"] == {
        "id": "alice",
        "trust": "verified",
        "scope": ["notes"],
        "agent_class": None,
    }
    reasons = {row["name"]: row["reason"] for row in data["explain"]}
    assert reasons["note_delete"] == "group-inactive:notes"
    assert reasons["add"] == reasons["grow"] == "out-of-scope"
    assert data["totals"]["disclosed"]["names"] == META


def test_inspect_as_a_scoped_principal_compares_with_the_tools_it_may_access(
    config: Path,
) -> None:
    # flat is every tool alice may access, as tool.selection's tokens_flat counts it,
    # never the tools of groups out of her scope
    data = inspect(config, "--as", "alice")
    cost = {t["name"]: t["tokens"] for t in data["tools"]}
    allowed = [r["name"] for r in data["explain"] if r["access"] == "allowed"]
    assert allowed == ["note_add", "note_delete", "note_list"]
    totals = data["totals"]
    assert totals["flat"] == {"tools": 3, "tokens": sum(cost[n] for n in allowed)}
    assert totals["catalog"] == {"tools": 8, "tokens": sum(cost.values())}
    assert totals["saved_tokens"] == totals["flat"]["tokens"] - totals["disclosed"]["tokens"]


def test_inspect_as_an_inline_principal(config: Path) -> None:
    data = inspect(config, "--as", "id=ci,trust=linked,scope=math+default")
    assert data["principal"]["scope"] == ["math", "default"]
    assert data["totals"]["disclosed"]["names"] == sorted([*META, "crash", "grow"])
    assert {r["name"] for r in data["explain"] if r["reason"] == "out-of-scope"} == {
        "note_add",
        "note_delete",
        "note_list",
    }


def test_inspect_without_as_has_no_explained_view(config: Path) -> None:
    data = inspect(config)
    assert "explain" not in data
    assert data["totals"]["tools"] == 8


def test_inspect_search_ranks_tools_with_scores_per_signal_and_field(config: Path) -> None:
    data = inspect(config, "--search", "multiply two numbers")
    found = data["search"]
    assert found["query"] == "multiply two numbers"
    assert found["mode"] == "lexical"
    first = found["results"][0]
    assert first["name"] == "multiply"
    assert first["semantic"] is None and first["coverage"] is None
    assert "name" in first["fields"]
    for row in found["results"]:
        assert sum(row["fields"].values()) == pytest.approx(row["bm25"], rel=1e-4)
    assert found["feedback"] == []  # the best match covers the request
    assert all(row["gain"] is None for row in found["results"])
    assert all(row["latest"] is None for row in found["results"])  # a short request


def test_inspect_search_shows_the_words_feedback_added(config: Path) -> None:
    query = "multiply the quarterly revenue forecast spreadsheet"
    found = inspect(config, "--search", query)["search"]
    assert found["results"][0]["name"] == "multiply"
    assert "arithmet" in found["feedback"]  # a word of multiply's description
    for row in found["results"]:
        assert sum(row["fields"].values()) == pytest.approx(row["bm25"], rel=1e-4)
        assert row["score"] == pytest.approx(row["bm25"] + row["gain"], rel=1e-4)
    assert any(row["bm25"] == 0 < row["gain"] for row in found["results"])  # found by it
    table = subprocess.run(
        [*toolgate_argv(), "inspect", str(config), "--format", "table", "--search", query],
        capture_output=True,
        text=True,
        timeout=60,
        env=gateway_env(),
    )
    assert table.returncode == 0, table.stderr
    assert "feedback words: " in table.stdout and "arithmet" in table.stdout


def test_inspect_hybrid_search_shows_each_tools_similarity_coverage_and_tail_standing(
    tmp_path: Path, servers: dict[str, Any]
) -> None:
    hybrid = gateway_config(tmp_path, servers=servers, search={"mode": "hybrid"})
    found = inspect(hybrid, "--search", "multiply two numbers")["search"]
    assert found["mode"] == "hybrid"
    first = found["results"][0]
    assert first["name"] == "multiply"
    assert first["semantic"] is not None
    assert 0 < first["coverage"] <= 1  # "multiply" is one of its words
    assert all(0 <= row["coverage"] <= 1 for row in found["results"])
    table = subprocess.run(
        [*toolgate_argv(), "inspect", str(hybrid), "--search", "multiply two numbers"],
        capture_output=True,
        text=True,
        timeout=60,
        env=gateway_env(),
    )
    assert table.returncode == 0, table.stderr
    assert "coverage" in table.stdout
    assert all(row["latest"] is None for row in found["results"])  # a short request
    told = (
        "Yesterday I added up the invoices of the first quarter and wrote the totals into "
        "the spreadsheet, one row for every client we billed. Then I checked each row "
        "against the bank statements and corrected the rows that did not match. After "
        "that I sorted the clients by the amount they owe and sent the list to the team. "
        "Now multiply the total by the tax rate."
    )
    long = inspect(hybrid, "--search", told)["search"]
    assert long["results"][0]["name"] == "multiply"  # the need of the last sentence
    assert all(isinstance(row["latest"], float) for row in long["results"])
    table = subprocess.run(
        [*toolgate_argv(), "inspect", str(hybrid), "--format", "table", "--search", told],
        capture_output=True,
        text=True,
        timeout=60,
        env={**gateway_env(), "COLUMNS": "200"},
    )
    assert table.returncode == 0, table.stderr
    assert "latest" in table.stdout


def test_inspect_search_indexes_the_backend_server_key(config: Path) -> None:
    # "math" is the backend's key (and its group): every tool it serves matches it
    data = inspect(config, "--search", "math")
    names = {r["name"] for r in data["search"]["results"]}
    assert {"add", "echo", "multiply"} <= names
    assert all("server" in r["fields"] for r in data["search"]["results"] if r["name"] in names)


def test_inspect_search_never_ranks_tools_the_principal_may_not_access(config: Path) -> None:
    data = inspect(config, "--as", "alice", "--search", "add numbers note")
    names = [r["name"] for r in data["search"]["results"]]
    assert names and all(n.startswith("note_") for n in names)


def test_inspect_search_ranks_as_search_tools_does_for_the_principal(
    tmp_path: Path, servers: dict[str, Any]
) -> None:
    """A tool alice may use is also in a group she may not know of: that group's words
    neither match her query nor move her scores, as in ``search_tools``; and a query
    ``search_tools`` refuses is refused."""
    groups = {
        "notes": {"description": "Take notes", "tools": ["notes:note_*"]},
        "math": {"description": "Arithmetic", "tools": ["math:*"]},
        "hr": {"description": "Zebracorp confidential payroll", "tools": ["notes:note_add"]},
    }
    config = gateway_config(tmp_path, tokens=True, servers=servers, groups=groups)
    assert (
        inspect(config, "--as", "alice", "--search", "zebracorp confidential")["search"]["results"]
        == []
    )
    found = inspect(config, "--as", "default", "--search", "zebracorp confidential")
    assert [r["name"] for r in found["search"]["results"]] == ["note_add"]
    done = command_in_process("inspect", str(config), "--search", "a" * 1001)
    assert done.returncode == 1
    assert done.stderr == "toolgate: --search: 'query' is 1001 characters; the limit is 1000\n"


@pytest.mark.parametrize(
    ("spec", "scope"),
    [("id=ci", ["*"]), ("id=ci,scope=", []), ("id=ci,scope=math+notes", ["math", "notes"])],
    ids=["no-scope-field", "scope-written-empty", "two-groups"],
)
def test_an_inline_principal_without_a_scope_sees_every_group_and_one_with_an_empty_scope_none(
    spec: str, scope: list[str]
) -> None:
    cfg = parse_config({"mcpServers": {}})
    assert list(parse_principal(cfg, spec).scope) == scope


def test_an_inline_principal_with_an_empty_id_is_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"^--as\.id: empty; a principal needs an id$"):
        parse_principal(parse_config({"mcpServers": {}}), "id=,trust=verified")
