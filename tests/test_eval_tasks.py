"""``toolgate eval``'s inputs and judgement, without a model or a gateway.

A tasks file is validated with errors that name the task and the key; each way of
judging success (required calls with ``equals`` / ``pattern`` checks, the answer's
pattern, a check command) decides as it says; ``--model`` and ``--strategies`` are
checked before anything starts; the report's spread and its HTML chart follow the runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from toolgate.cli import main
from toolgate.errors import ConfigError
from toolgate.eval.html import page
from toolgate.eval.loop import TaskRun
from toolgate.eval.offers import OFFERS, parse_offers
from toolgate.eval.providers import parse_model
from toolgate.eval.report import Report
from toolgate.eval.tasks import CallRecord, Task, judge, load_tasks, parse_tasks

DEMO_TASKS = Path(__file__).resolve().parents[1] / "examples" / "eval" / "demo_tasks.yaml"


def one_task(**expect: Any) -> Task:
    (task,) = parse_tasks({"tasks": [{"name": "t", "prompt": "p", "expect": expect}]})
    return task


def call(tool: str, refused: bool = False, failed: bool = False, **arguments: Any) -> CallRecord:
    return CallRecord(tool, tool, arguments, refused=refused, failed=failed)


def problems(data: Any) -> str:
    with pytest.raises(ConfigError) as raised:
        parse_tasks(data, source="tasks.yaml")
    return raised.value.message


# -- the tasks file ----------------------------------------------------------------------


def test_the_demo_task_file_loads_with_the_files_defaults() -> None:
    tasks = load_tasks(DEMO_TASKS)
    assert [t.name for t in tasks] == ["whoami", "file-bug", "categories"]
    assert [t.max_turns for t in tasks] == [8, 8, 6]
    assert all(t.relist and t.system for t in tasks)
    bug = tasks[1].expect.calls[0]
    assert (bug.tool, sorted(bug.args)) == ("create_issue", ["priority", "project_key", "title"])


def test_a_missing_prompt_is_named_by_task_and_key() -> None:
    data = {
        "tasks": [
            {"name": "ok", "prompt": "p", "expect": {"answer": "x"}},
            {"name": "bad", "expect": {"answer": "x"}},
        ]
    }
    assert problems(data) == "tasks.yaml: task 'bad' (tasks[1]): prompt: Field required"


def test_every_problem_of_a_file_is_reported_at_once() -> None:
    both = {"tool": "x", "args": {"n": {"equals": 1, "pattern": "1"}}}
    data = {
        "max_turns": 0,
        "tasks": [
            {"name": "a", "prompt": "p", "expect": {"answer": "("}},
            {"name": "b", "prompt": "p", "expect": {"calls": [both]}},
            {"name": "c", "prompt": "p", "expect": {}, "retries": 3},
        ],
    }  # fmt: skip
    lines = problems(data).splitlines()
    assert lines[0] == "tasks.yaml: max_turns: Input should be greater than or equal to 1"
    assert lines[1].startswith(
        "tasks.yaml: task 'a' (tasks[0]): expect.answer: "
        "Value error, '(' is not a valid regular expression"
    )
    assert lines[2] == (
        "tasks.yaml: task 'b' (tasks[1]): expect.calls[0].args.n: "
        "Value error, give exactly one of 'equals' or 'pattern'"
    )
    assert lines[3] == (
        "tasks.yaml: task 'c' (tasks[2]): expect: "
        "Value error, say how success is judged: 'calls', 'answer' or 'check'"
    )
    assert lines[4] == "tasks.yaml: task 'c' (tasks[2]): retries: Extra inputs are not permitted"


def test_two_tasks_with_one_name_are_refused() -> None:
    task = {"name": "same", "prompt": "p", "expect": {"answer": "x"}}
    assert "two tasks are named 'same'" in problems({"tasks": [task, task]})


def test_a_file_that_is_not_yaml_or_has_no_tasks_says_so(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("tasks: [unclosed\n")
    with pytest.raises(ConfigError, match=r"broken.yaml: not valid YAML"):
        load_tasks(broken)
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"tasks": []}))
    with pytest.raises(ConfigError, match=r"empty.json: tasks: List should have at least 1 item"):
        load_tasks(empty)
    with pytest.raises(ConfigError, match=r"missing.yaml: cannot read the tasks file"):
        load_tasks(tmp_path / "missing.yaml")


def test_the_command_prints_a_bad_tasks_file_s_problems_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")
    bad = tmp_path / "tasks.yaml"
    bad.write_text(
        "tasks:\n  - name: lost\n    prompt: find it\n    expect: {calls: [{args: {}}]}\n"
    )
    assert main(["eval", "demo", str(bad), "--model", "openai:m"]) == 1
    err = capsys.readouterr().err
    assert f"toolgate: {bad}: task 'lost' (tasks[0]): expect.calls[0].tool: Field required" in err


def test_a_count_or_a_switch_of_the_wrong_type_is_refused_not_coerced() -> None:
    task = {"name": "t", "prompt": "p", "expect": {"answer": "x"}}
    lines = problems({"relist": "no", "tasks": [{**task, "max_turns": True}]}).splitlines()
    assert lines == [
        "tasks.yaml: relist: Input should be a valid boolean",
        "tasks.yaml: task 't' (tasks[0]): max_turns: Input should be a valid integer",
    ]


TASK_YAML = "tasks:\n  - name: a\n    prompt: p\n    expect: {answer: x}\n"


@pytest.mark.parametrize(
    ("name", "raw", "problem"),
    [
        ("tasks.yaml", b"tasks:\n  - name: caf\xe9\n", "not valid UTF-8 at byte 20"),
        ("tasks.json", b'{"tasks": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested more than"),
        ("tasks.yaml", b"tasks: " + b"[" * 100_000 + b"]" * 100_000, "nested too deep to read"),
        ("tasks.yaml", (TASK_YAML + TASK_YAML).encode(), "line 5: key 'tasks' appears twice"),
        ("tasks.json", b'{"tasks": [], "tasks": []}', "tasks: key appears twice"),
        ("TASKS.YAML", TASK_YAML.replace("p\n", "''\n").encode(), "task 'a' (tasks[0]): prompt"),
    ],
    ids=["not-utf8", "json-too-deep", "yaml-too-deep", "yaml-key-twice", "json-key-twice", "YAML"],
)
def test_a_tasks_file_is_read_as_the_gateway_reads_its_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, raw: bytes, problem: str
) -> None:
    path = tmp_path / name
    path.write_bytes(raw)
    assert main(["eval", "demo", str(path), "--model", "openai:m", "--strategies", "flat"]) == 1
    assert capsys.readouterr().err.startswith(f"toolgate: {path}: {problem}")


@pytest.mark.parametrize(
    ("option", "path", "problem"),
    [
        ("--json", "missing/report.json", "its folder missing does not exist"),
        ("--html", ".", "is a folder"),
        ("--log", "missing/gateways.log", "its folder missing does not exist"),
        ("--json", "tasks.yaml", "it is the file it reads (tasks.yaml)"),
    ],
)
def test_a_report_path_that_cannot_be_written_is_refused_before_any_run(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    option: str,
    path: str,
    problem: str,
) -> None:
    """Said before a gateway starts or a model is asked: after the run, its results
    would be lost to the traceback, or the tasks file to the report."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.yaml").write_text(TASK_YAML)
    argv = ["eval", "demo", "tasks.yaml", "--strategies", "flat", option, path]
    model = ["--model", "openai-compatible:m", "--base-url", "http://127.0.0.1:9/v1"]
    assert main([*argv, *model]) == 1
    err = capsys.readouterr().err
    assert err == f"toolgate: {option} {path}: cannot write there: {problem}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks.yaml"]
    assert (tmp_path / "tasks.yaml").read_text() == TASK_YAML


def test_two_reports_to_one_path_are_refused_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", "demo", str(DEMO_TASKS), "--model", "openai-compatible:m"]
    same = str(tmp_path / "report")
    assert main([*argv, "--base-url", "http://127.0.0.1:9/v1", "--json", same, "--log", same]) == 1
    assert capsys.readouterr().err == (
        f"toolgate: --log {same}: cannot write there: it is --json's too\n"
    )


# -- judging -----------------------------------------------------------------------------


def test_a_required_call_needs_a_successful_call_whose_arguments_pass_every_check() -> None:
    checks = {"project_key": {"equals": "WEB"}, "title": {"pattern": "(?i)^checkout"}}
    task = one_task(calls=[{"tool": "create_issue", "args": checks}])
    good = call("create_issue", project_key="WEB", title="Checkout is broken")
    assert judge(task, [good], None).success
    wrong_value = call("create_issue", project_key="API", title="Checkout is broken")
    missing = call("create_issue", project_key="WEB")
    refused = call("create_issue", refused=True, project_key="WEB", title="Checkout")
    failed = call("create_issue", failed=True, project_key="WEB", title="Checkout")
    for calls in ([wrong_value], [missing], [refused], [failed]):
        verdict = judge(task, calls, None)
        assert verdict.reasons == ("no successful call of create_issue passed the argument checks",)
    assert judge(task, [call("close_issue")], None).reasons == ("create_issue was not called",)


def test_equals_compares_json_values_and_pattern_reads_non_text_as_json() -> None:
    task = one_task(
        calls=[{"tool": "t", "args": {"n": {"equals": 2}, "tags": {"pattern": '"bug"'}}}]
    )
    assert judge(task, [call("t", n=2, tags=["bug", "ui"])], None).success
    assert not judge(task, [call("t", n="2", tags=["bug"])], None).success


def test_the_answer_must_match_its_pattern() -> None:
    task = one_task(answer=r"(?i)total: \d+")
    assert judge(task, [], "The TOTAL: 42").success
    assert judge(task, [], "no idea").reasons == (
        "the final answer does not match '(?i)total: \\\\d+'",
    )
    assert not judge(task, [], None).success


def test_a_check_command_sees_the_answer_and_the_calls(tmp_path: Path) -> None:
    script = tmp_path / "check.py"
    script.write_text(
        "import json, os, sys\n"
        "calls = json.loads(os.environ['TOOLGATE_EVAL_CALLS'])\n"
        "ok = os.environ['TOOLGATE_EVAL_ANSWER'] == 'done' and calls[0]['tool'] == 'add'\n"
        "sys.exit(0 if ok else 5)\n"
    )
    task = one_task(check=f"{sys.executable} {script}")
    assert judge(task, [call("add", a=1)], "done").success
    assert judge(task, [call("add", a=1)], "not done").reasons == ("the check command exited 5",)


def test_every_criterion_given_must_hold() -> None:
    task = one_task(calls=[{"tool": "a"}], answer="yes")
    assert judge(task, [call("a")], "yes").success
    assert judge(task, [call("a")], "no").reasons == ("the final answer does not match 'yes'",)


# -- the command's other inputs ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpt-5", "write PROVIDER:MODEL with PROVIDER one of openai, openai-compatible"),
        ("mistral:large", "write PROVIDER:MODEL"),
        ("openai-compatible:llama3", "needs --base-url"),
    ],
)
def test_a_bad_model_names_what_to_write(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_model(text)


def test_a_blank_model_or_a_base_url_that_is_not_http_is_refused_before_anything_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(ConfigError, match=r"--model 'openai: ': write PROVIDER:MODEL"):
        parse_model("openai: ")
    argv = ["eval", "demo", str(DEMO_TASKS), "--model", "openai-compatible:m"]
    assert main([*argv, "--base-url", "127.0.0.1:11434/v1"]) == 1
    assert capsys.readouterr().err == (
        "toolgate: --base-url '127.0.0.1:11434/v1': must start with http:// or https://\n"
    )


def test_the_key_comes_from_the_environment_and_a_local_server_may_need_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="no API key: set ANTHROPIC_API_KEY"):
        parse_model("anthropic:claude").key()
    monkeypatch.setenv("MY_KEY", "k-1")
    assert parse_model("anthropic:claude", key_env="MY_KEY").key() == "k-1"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    local = parse_model("openai-compatible:llama3", base_url="http://127.0.0.1:11434/v1")
    assert local.key() == "unused"


def test_strategies_map_to_the_config_and_native_needs_a_provider_with_tool_search() -> None:
    offers = parse_offers("flat, menu,activators,lazy,list_changed", native_ok=False)
    assert [dict(o.overrides) for o in offers] == [
        {"strategy": "flat"},
        {"strategy": "list_changed", "meta_tools": "menu"},
        {"strategy": "list_changed", "meta_tools": "activators"},
        {"strategy": "flat", "descriptions": {"mode": "lazy"}},
        {"strategy": "list_changed"},
    ]
    with pytest.raises(ConfigError, match="only the Anthropic Messages API"):
        parse_offers("flat,native", native_ok=False)
    with pytest.raises(
        ConfigError, match="unknown strategy 'menus'; known: activators, catalog, flat"
    ):
        parse_offers("menus", native_ok=True)
    with pytest.raises(ConfigError, match="names 'flat' twice"):
        parse_offers("flat,flat", native_ok=True)
    assert set(OFFERS) == {
        "flat",
        "menu",
        "activators",
        "catalog",
        "search",
        "lazy",
        "groups",
        "native",
    }


# -- the report --------------------------------------------------------------------------


def run(strategy: str, task: str, repeat: int, success: bool, tokens: int) -> TaskRun:
    return TaskRun(
        task=task, strategy=strategy, repeat=repeat, success=success,
        reasons=() if success else ("the final answer does not match 'x'",),
        turns=2 + repeat, tool_calls=1, refused=0, failed=0,
        definition_tokens=tokens, result_tokens=10, prompt_tokens=tokens * 2,
        completion_tokens=5, wall_s=0.5, answer="x", out_of_turns=False, error=None,
        calls=(call("a"),),
    )  # fmt: skip


def test_the_html_report_draws_one_bar_per_strategy_and_the_spread_of_repeats() -> None:
    runs = [
        run("flat", "a", 0, True, 900),
        run("flat", "a", 1, False, 900),
        run("menu", "a", 0, True, 300),
        run("menu", "a", 1, True, 500),
    ]
    from toolgate.eval.offers import OFFERS as offers

    report = Report.of(
        {"model": "openai:m", "tasks": ["a"], "repeat": 2}, [offers["flat"], offers["menu"]], runs
    )
    flat, menu = report.to_dict()["strategies"]
    assert (flat["success_rate_per_repeat"], menu["success_rate_per_repeat"]) == (
        [1.0, 0.0],
        [1.0, 1.0],
    )
    assert menu["per_run"]["definition_tokens"] == {
        "mean": 400.0,
        "min": 300.0,
        "max": 500.0,
        "stdev": 141.421,
    }
    html = page(report)
    svg = html[html.index("<svg") : html.index("</svg>")]
    assert svg.count('class="strategy"') == 2
    assert svg.count('class="spread"') == 2  # the lowest and highest rate of one repeat
    assert "<title>flat: 0.0</title>" not in svg and "<title>menu: 100.0</title>" in svg
    assert html.count('class="strategy-row"') == 2
    assert "400 (300-500)" in html
