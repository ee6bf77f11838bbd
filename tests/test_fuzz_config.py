"""``toolgate check --offline`` on mutations of the configs the project ships: values
swapped for other kinds, keys dropped or added, values wrapped a level deeper, and raw
bytes inserted or cut (broken UTF-8, broken JSON and TOML syntax).

The property: the command exits 0, or 1 with a reason; every line on stderr is a
problem (or a warning) of the file, by its name, one line each; it never raises, prints
a traceback or exits otherwise. The command runs in the test process
(``toolgate.cli.main``): nothing here needs a backend.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
from hypothesis import given

from _fixtures.command import command_in_process
from _fixtures.hostile import fuzz_settings, json_values, texts

ROOT = Path(__file__).parent.parent
SHIPPED = [ROOT / "examples/gateway/toolgate.json", ROOT / "src/toolgate/demo/toolgate.json"]
TOML = """\
[mcpServers.todo]
command = "python"
args = ["todo_server.py"]

[mcpServers.units]
command = "python"
args = ["units_server.py"]
prefix = "units"

[toolgate]
strategy = "auto"
always = ["todo:whoami"]

[toolgate.groups.todo]
description = "Keep a to-do list."
tools = ["todo:todo_add", "todo:todo_list"]

[[toolgate.policies]]
tools = ["todo_clear"]
min_trust = "verified"
rate_limit = { max = 1, window_s = 60 }
"""
SETTINGS = fuzz_settings(60)
Path_ = tuple[int | str, ...]


def locations(node: Any, at: Path_ = ()) -> Iterator[Path_]:
    """Every place in a parsed config, the root first."""
    yield at
    if isinstance(node, dict):
        for key, value in node.items():
            yield from locations(value, (*at, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from locations(value, (*at, i))


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    """A shipped config with one to three changes, each at a place of the config."""
    doc = json.loads(draw(st.sampled_from(SHIPPED)).read_text())
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.sampled_from(list(locations(doc))))
        change = draw(st.sampled_from(["replace", "drop", "add", "wrap"]))
        if not at:
            doc = draw(json_values) if change == "replace" else doc
            continue
        parent = doc
        for part in at[:-1]:
            parent = parent[part]
        last = at[-1]
        if change == "replace":
            parent[last] = draw(json_values)
        elif change == "drop":
            del parent[last]
        elif change == "add" and isinstance(parent[last], dict):
            parent[last][draw(texts)] = draw(json_values)
        elif change == "wrap":
            parent[last] = draw(st.sampled_from([[parent[last]], {"x": parent[last]}]))
    return doc


def check_file(folder: Path, name: str, data: bytes) -> None:
    (folder / name).write_bytes(data)
    done = command_in_process("check", name, "--offline", cwd=folder)  # raising fails here
    assert done.returncode in (0, 1), done
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert done.returncode == 0 or lines, "exit 1 says why"
    # each line a problem of the file: "<file>: <key path>: ..." (or the command's own)
    assert all(f"{name}: " in line or line.startswith("toolgate: ") for line in lines), lines


def test_any_change_to_a_shipped_config_is_checked_to_a_clear_problem_or_passes(
    tmp_path: Path,
) -> None:
    @SETTINGS
    @given(doc=mutated())
    def any_config(doc: Any) -> None:
        check_file(tmp_path, "toolgate.json", json.dumps(doc).encode())

    any_config()


def test_any_bytes_spliced_into_a_config_file_are_a_clear_problem_or_pass(
    tmp_path: Path,
) -> None:
    bases = [(p.name, p.read_bytes()) for p in SHIPPED] + [("toolgate.toml", TOML.encode())]
    edits = st.lists(
        st.tuples(st.integers(0, 4000), st.binary(max_size=4), st.integers(0, 3)),
        min_size=1,
        max_size=4,
    )

    @SETTINGS
    @given(base=st.sampled_from(bases), edits=edits)
    def any_bytes(base: tuple[str, bytes], edits: list[tuple[int, bytes, int]]) -> None:
        name, original = base
        data = bytearray(original)
        for at, insert, cut in edits:
            at %= len(data) + 1
            data[at : at + cut] = insert
        check_file(tmp_path, name, bytes(data))

    any_bytes()


def test_the_bases_the_mutations_start_from_are_valid_configs(tmp_path: Path) -> None:
    (tmp_path / "toolgate.toml").write_text(TOML)
    done = [command_in_process("check", "toolgate.toml", "--offline", cwd=tmp_path)]
    done += [command_in_process("check", str(p), "--offline") for p in SHIPPED]
    assert [d.returncode for d in done] == [0, 0, 0]
    lines = [line for d in done for line in d.stderr.splitlines()]
    assert all(": warning: " in line for line in lines), lines  # patterns, backends offline


# -- the minimal case the property found --------------------------------------------------


def test_a_key_a_dotted_path_cannot_show_is_quoted_and_its_problem_stays_one_line(
    tmp_path: Path,
) -> None:
    toolgate = {"a\u2028b": 1, "": 2, "x.y": 3, "\x1e": 4}
    config = {"mcpServers": {"a": {"command": "a"}}, "toolgate": toolgate}
    (tmp_path / "toolgate.json").write_text(json.dumps(config))
    done = command_in_process("check", "toolgate.json", "--offline", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.replace(f"{tmp_path}/", "").splitlines() == [
        'toolgate.json: toolgate["a\\u2028b"]: unknown key',
        'toolgate.json: toolgate[""]: unknown key',
        'toolgate.json: toolgate["x.y"]: unknown key',
        'toolgate.json: toolgate["\\u001e"]: unknown key',
        "toolgate.json: 4 problem(s)",
    ]
