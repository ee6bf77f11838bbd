"""``toolgate check`` on a folder of broken configs, each with the message it must print.

Every ``tests/configs/<name>.(json|toml)`` has a ``<name>.expected`` substring; the
command (its code, in the test process) runs on a copy whose ``{python}`` / ``{servers}``
placeholders point at this interpreter and ``tests/servers``. Broken configs exit 1 with
errors on stderr, one per line.
Prompt and resource patterns that match nothing are warnings, from ``check`` and ``inspect``
alike, over a real backend that offers prompts, resources and a template.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _fixtures.command import command_in_process
from _fixtures.gateway import SERVERS, toolgate_argv
from toolgate.gateway.config.build import ContentProblem, build_toolset
from toolgate.gateway.config.model import parse_config

CONFIGS = Path(__file__).parent / "configs"
CASES = sorted(p for p in CONFIGS.iterdir() if p.suffix in (".json", ".toml"))
# the first test asking for ``checked`` waits for all 35 checks, some starting backends
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def checked(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every config checked once, by the command's code in this process (a process each
    cost more than the checks; the tests below run the ``toolgate`` process itself)."""
    folder = tmp_path_factory.mktemp("configs")
    shutil.copytree(CONFIGS, folder, dirs_exist_ok=True)
    for case in CASES:
        copy = folder / case.name
        text = copy.read_text().replace("{python}", sys.executable)
        copy.write_text(text.replace("{servers}", str(SERVERS)))

    return {case.stem: command_in_process("check", case.name, cwd=folder) for case in CASES}


def test_every_broken_config_has_an_expected_message() -> None:
    assert len(CASES) == 35
    assert all(case.with_suffix(".expected").exists() for case in CASES)


@pytest.mark.parametrize("case", [c for c in CASES if c.stem != "valid"], ids=lambda c: c.stem)
def test_check_fails_on_broken_config_naming_key_and_problem(
    case: Path, checked: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    done = checked[case.stem]
    expected = case.with_suffix(".expected").read_text().strip()
    assert done.returncode == 1
    assert done.stdout == ""
    assert any(expected in line for line in done.stderr.splitlines()), done.stderr


def test_check_passes_a_valid_config_with_exit_code_0(
    checked: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    done = checked["valid"]
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "valid.json: ok: 5 tools from 1 backend(s), 1 groups\n"


def test_check_reports_each_duplicate_tool_on_its_own_line(
    checked: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    lines = checked["duplicate_tool_without_prefix"].stderr.splitlines()
    duplicated = [line.split("tool ")[1].split(" ")[0] for line in lines if "offered by" in line]
    assert duplicated == ["'crash'", "'grow'", "'note_add'", "'note_delete'", "'note_list'"]
    assert lines[-1] == "duplicate_tool_without_prefix.json: 5 problem(s)"


def test_build_marks_what_backends_offer_as_content_problems_and_structure_as_fatal() -> None:
    cfg = parse_config(
        {
            "mcpServers": {
                "a": {"command": "a"},
                "b": {"command": "b"},
            },
            "toolgate": {
                "groups": {"g": {"description": "G.", "tools": ["nothing_*"]}},
                "stages": {
                    "initial": "start",
                    "stages": [{"name": "start", "transitions": [{"on": "gone", "to": "start"}]}],
                    "tool_stages": {"echo": ["nowhere"]},
                },
            },
        }
    )
    listed = {"a": [{"name": "echo"}], "b": [{"name": "echo"}]}
    _, report = build_toolset(cfg, listed, lambda tool: lambda args, ctx: "ok")
    content = [e.message for e in report.errors if isinstance(e, ContentProblem)]
    assert content == [
        "mcpServers.b: tool 'echo' is offered by both 'a' and 'b'; give one of them a \"prefix\"",
        "toolgate.groups.g.tools[0]: pattern 'nothing_*' matches no tool",
        "toolgate.stages.stages.start.transitions: transition on unknown tool 'gone'",
    ]
    assert [e.message for e in report.fatal] == [
        "toolgate.stages.tool_stages.echo: unknown stage 'nowhere'; known: start"
    ]


def test_check_reports_every_problem_of_a_file_at_once(
    checked: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    lines = checked["several_problems"].stderr.splitlines()
    problems = [line.split(": ", 1)[1] for line in lines[:-1]]
    assert sorted(problems) == sorted(
        [
            "mcpServers.nowhere: needs a 'command' (stdio) or a 'url' (HTTP)",
            "mcpServers.notes.evn: unknown key; did you mean 'env'?",
            "toolgate.stratgy: unknown key; did you mean 'strategy'?",
            "toolgate.page_size: Input should be greater than or equal to 1",
            "toolgate.groups.g.descripton: unknown key; did you mean 'description'?",
        ]
    )
    assert lines[-1] == "several_problems.json: 5 problem(s)"


def test_check_shows_the_stderr_of_a_backend_that_fails_to_start(
    checked: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    (line,) = [x for x in checked["backend_stderr"].stderr.splitlines() if "mcpServers" in x]
    assert line.startswith("backend_stderr.json: mcpServers.broken: could not start")
    assert "its stderr: starting | fatal: NOTES_API_KEY is missing" in line


def test_check_expands_environment_variables_in_server_values(tmp_path: Path) -> None:
    config = tmp_path / "toolgate.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "notes": {
                        "command": "${TOOLGATE_TEST_PYTHON}",
                        "args": ["${TOOLGATE_TEST_SERVERS}/gw_notes.py"],
                    }
                }
            }
        )
    )
    env = {
        **os.environ,
        "TOOLGATE_TEST_PYTHON": sys.executable,
        "TOOLGATE_TEST_SERVERS": str(SERVERS),
    }
    done = subprocess.run(
        [*toolgate_argv(), "check", str(config)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.endswith("ok: 5 tools from 1 backend(s), 0 groups\n")


def prompts_config(tmp_path: Path) -> Path:
    """A backend offering prompts, resources and a template (``gw_prompts.py``), and
    groups whose patterns match some of them and nothing in two places."""
    config = tmp_path / "toolgate.json"
    docs = {
        "description": "Docs",
        "tools": ["lookup"],
        "prompts": ["review_*", "docs:nothing_*"],
        "resources": ["docs://pages/*", "docs://readme", "nope://*"],
    }
    other = {"description": "Other", "parent": "docs", "prompts": ["docs:greet"]}
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "docs": {"command": sys.executable, "args": [str(SERVERS / "gw_prompts.py")]}
                },
                "toolgate": {"groups": {"docs": docs, "other": other}},
            }
        )
    )
    return config


def test_check_warns_about_prompt_and_resource_patterns_that_match_nothing(
    tmp_path: Path,
) -> None:
    config = prompts_config(tmp_path)
    done = subprocess.run(
        [*toolgate_argv(), "check", str(config)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"{config}: warning: toolgate.groups.docs.prompts[1]: 'docs:nothing_*' matches no prompt",
        f"{config}: warning: toolgate.groups.docs.resources[2]: 'nope://*' matches no resource",
    ]


def test_inspect_shows_each_groups_prompts_and_resources_and_the_warnings(
    tmp_path: Path,
) -> None:
    config = prompts_config(tmp_path)
    done = subprocess.run(
        [*toolgate_argv(), "inspect", str(config), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    (docs,) = data["groups"]
    (other,) = docs["children"]
    assert (docs["prompts"], docs["resources"]) == (
        ["review_pr"],
        ["docs://pages/{page}", "docs://readme"],
    )
    assert (other["prompts"], other["resources"]) == (["greet"], [])
    assert len(data["warnings"]) == 2


def test_check_reads_resources_of_a_backend_that_has_no_templates_list(tmp_path: Path) -> None:
    config = tmp_path / "toolgate.json"
    server = {"command": sys.executable, "args": [str(SERVERS / "gw_resources_only.py")]}
    group = {"description": "Messages", "tools": ["motd"], "resources": ["motd://*"]}
    config.write_text(
        json.dumps({"mcpServers": {"motd": server}, "toolgate": {"groups": {"motd": group}}})
    )
    done = subprocess.run(
        [*toolgate_argv(), "check", str(config)], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.endswith("ok: 1 tools from 1 backend(s), 1 groups\n")
