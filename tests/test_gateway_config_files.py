"""A config file that cannot be read as data is refused with the file's name and the
problem, never a traceback and never the file's bytes (a file holds backends' secrets):
bytes that are not UTF-8, nesting past ``MAX_DEPTH``, a key written twice in one object.
``check --offline`` cannot tell a pattern matches nothing, so it passes the shipped
example. The commands run in this process (``_fixtures.command``); a reload refusing such
files is in ``test_gateway_reload.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _fixtures.command import command_in_process
from toolgate.errors import ConfigError
from toolgate.gateway.config.files import MAX_DEPTH, read_config_data

EXAMPLE = Path(__file__).parent.parent / "examples" / "gateway" / "toolgate.json"
SECRET = "sk-SECRET-0123456789"
GOOD = {
    "mcpServers": {"todo": {"command": "todo-server", "env": {"API_KEY": SECRET}}},
    "toolgate": {"groups": {"todo": {"description": "Keep a to-do list.", "tools": ["todo:*"]}}},
}
TOML_GOOD = f"""[mcpServers.todo]
command = "todo-server"
env = {{ API_KEY = "{SECRET}" }}

[toolgate.groups.todo]
description = "Keep a to-do list."
tools = ["todo:*"]
"""


def latin1(suffix: str) -> bytes:
    """A good config with one Latin-1 byte in a description, after the secret."""
    text = json.dumps(GOOD) if suffix == ".json" else TOML_GOOD
    return text.encode().replace(b"to-do list.", b"to-do list \xe9.")


@pytest.mark.parametrize("command", ["check", "inspect"])
@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_a_config_that_is_not_utf8_is_refused_at_its_first_bad_byte(
    tmp_path: Path, suffix: str, command: str
) -> None:
    path = tmp_path / f"toolgate{suffix}"
    raw = latin1(suffix)
    path.write_bytes(raw)
    # refused before any backend would start: ``inspect`` has no ``--offline``
    done = command_in_process(command, *(["--offline"] if command == "check" else []), str(path))
    assert (done.returncode, done.stdout) == (1, "")
    assert f"{path}: not valid UTF-8 at byte {raw.index(0xE9)}\n" in done.stderr
    assert SECRET not in done.stderr


@pytest.mark.parametrize(
    "text",
    ['{"mcpServers": {"x": ' + "[" * 100_000 + "]" * 100_000 + "}}", "x = " + "[" * 100_000],
    ids=["json", "toml"],
)
def test_a_config_nested_100000_levels_deep_is_refused_by_check(tmp_path: Path, text: str) -> None:
    path = tmp_path / ("toolgate.json" if text.startswith("{") else "toolgate.toml")
    path.write_text(text)
    done = command_in_process("check", "--offline", str(path))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"{path}: nested more than {MAX_DEPTH} levels deep\n"


def test_a_config_is_read_up_to_max_depth_levels_and_no_deeper(tmp_path: Path) -> None:
    path = tmp_path / "toolgate.json"
    for levels in (MAX_DEPTH, MAX_DEPTH + 1):
        path.write_text("[" * levels + "]" * levels)  # the file's own object counts as one
        if levels == MAX_DEPTH:
            assert read_config_data(path) is not None
        else:
            with pytest.raises(ConfigError, match="nested more than 64 levels deep"):
                read_config_data(path)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('{"mcpServers": {}, "mcpServers": {}}', "mcpServers"),
        ('{"mcpServers": {"todo": {"command": "x"}, "todo": {"command": "y"}}}', "mcpServers.todo"),
        ('{"toolgate": {"strategy": "auto", "strategy": "flat"}}', "toolgate.strategy"),
        (
            '{"toolgate": {"policies": [{"tools": ["a"]}, {"decision": "deny", "decision": "x"}]}}',
            "toolgate.policies[1].decision",
        ),
    ],
)
def test_a_key_written_twice_in_one_json_object_is_refused_naming_its_path(
    tmp_path: Path, text: str, key: str
) -> None:
    path = tmp_path / "toolgate.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        read_config_data(path)
    assert caught.value.message == f"{path}: {key}: key appears twice"


def test_a_key_written_twice_in_toml_is_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "toolgate.toml"
    path.write_text('[toolgate]\nstrategy = "auto"\nstrategy = "flat"\n')
    done = command_in_process("check", "--offline", str(path))
    assert done.returncode == 1
    assert done.stderr.startswith(f"{path}: not valid TOML: Cannot overwrite a value")


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_a_config_that_begins_with_a_byte_order_mark_reads_as_without_one(
    tmp_path: Path, suffix: str
) -> None:
    """Editors on Windows may write a UTF-8 byte-order mark; it is not part of the text."""
    path = tmp_path / f"toolgate{suffix}"
    text = json.dumps(GOOD) if suffix == ".json" else TOML_GOOD
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert read_config_data(path) == GOOD
    done = command_in_process("check", "--offline", str(path))
    assert done.returncode == 0, done.stderr
    assert f"{path}: ok" in done.stdout


def test_check_offline_passes_the_shipped_example_and_warns_what_it_could_not_match() -> None:
    done = command_in_process("check", "--offline", str(EXAMPLE))
    assert (done.returncode, done.stdout) == (
        0,
        f"{EXAMPLE}: ok: 0 tools from 0 backend(s), 3 groups\n",
    )
    assert "matches no tool" not in done.stderr
    # nothing is started, so no pattern can be matched: one line says so, not one a pattern
    assert done.stderr.splitlines() == [
        f"{EXAMPLE}: warning: 6 tool pattern(s) not matched: --offline starts no backend, "
        "so what they name is unknown"
    ]
