"""``toolgate eval`` end to end: real gateways, the real ``openai`` and ``anthropic``
SDK clients, and a replaying provider (``tests/servers/replay_provider.py``).

The demo's example task file runs through the command; the loop's accounting is checked
against what the provider double received and reported, for chat completions, the
Responses API and the Messages API, the groups extension's host and the providers'
own tool search; a host that does not re-list, refused calls, repeats and a check
command are judged as the report says.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from _fixtures.mcp_servers import free_port
from _fixtures.replay_scripts import DEMO_SCRIPTS
from servers.replay_provider import ReplayProvider
from toolgate.cli import main
from toolgate.errors import ConfigError
from toolgate.eval.gateway import GatewayPool, ServedGateway
from toolgate.eval.offers import parse_offers
from toolgate.eval.providers import parse_model
from toolgate.eval.report import Report
from toolgate.eval.run import EvalPlan, run_eval
from toolgate.eval.tasks import parse_tasks
from toolgate.tokens import TokenCounter, estimate_tokens

ROOT = Path(__file__).resolve().parents[1]
SERVERS = ROOT / "tests" / "servers"
DEMO_TASKS = ROOT / "examples" / "eval" / "demo_tasks.yaml"
SECRET = "sk-test-4f1c9a-never-in-a-report"
ADD = {"a": 2, "b": 3}
COUNTER = TokenCounter()  # the accounting is checked with the same counter

#: the math backend behind the loop's gateways: ``echo`` always listed, ``add`` in the
#: group ``arith``, ``multiply`` for verified principals only (hidden from this one)
MATH_SCRIPTS: list[dict[str, Any]] = [
    {
        "match": "Add 2 and 3",
        "goals": [
            {
                "call": "add",
                "args": ADD,
                "ways": [
                    {"call": "enable_tools", "args": {"groups": ["arith"]}},
                    {"call": "get_group", "args": {"name": "arith"}},
                    {"call": "search_tools", "args": {"query": "add two integers"}},
                    {
                        "call": "call_tool",
                        "args": {"name": "add", "arguments": ADD},
                        "completes": True,
                    },
                ],
            }
        ],
        "answer": "The sum is {result}.",
    },
    {
        "match": "Multiply 6 and 7",
        "goals": [
            {
                "call": "multiply",
                "args": {"a": 6, "b": 7},
                "ways": [
                    {"call": "enable_tools", "args": {"groups": ["arith"]}},
                    {
                        "call": "call_tool",
                        "args": {"name": "multiply", "arguments": {"a": 6, "b": 7}},
                        "completes": True,
                    },
                ],
            }
        ],
        "answer": "I could not multiply.",
    },
    {
        "match": "Echo the word",
        "goals": [{"call": "echo", "args": {"text": "hello"}}],
        "answer": "{result}",
        "wrong_every": 2,
        "wrong": "I would rather not.",
    },
]
ADD_TASK = {
    "name": "add",
    "prompt": "Add 2 and 3 with the calculator.",
    "expect": {
        "calls": [{"tool": "add", "args": {"a": {"equals": 2}, "b": {"equals": 3}}}],
        "answer": "sum is 5",
    },
}


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayProvider]:
    with ReplayProvider([*DEMO_SCRIPTS, *MATH_SCRIPTS]) as provider:
        yield provider


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayPool]:
    """Gateways (one per strategy, started when first used) over one math backend served
    over HTTP, so each gateway is a single process."""
    tmp = tmp_path_factory.mktemp("eval")
    port = free_port()
    backend = subprocess.Popen(
        [sys.executable, str(SERVERS / "gw_math.py"), "--http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    config = tmp / "toolgate.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {"math": {"url": f"http://127.0.0.1:{port}/mcp"}},
                "toolgate": {
                    "always": ["echo"],
                    "groups": {
                        "arith": {
                            "description": "Arithmetic on integers.",
                            "tools": ["add", "multiply"],
                        }
                    },
                    "policies": [{"tools": ["multiply"], "min_trust": "verified"}],
                },
            }
        )
    )
    log = (tmp / "gateways.log").open("wb")
    gateways = GatewayPool(str(config), log=log)
    try:
        yield gateways
    finally:
        gateways.close()
        log.close()
        backend.terminate()
        backend.wait(10)


def make_plan(
    pool: GatewayPool,
    tasks: Sequence[Mapping[str, Any]],
    model: str,
    base_url: str,
    strategies: str,
    **options: Any,
) -> EvalPlan:
    spec = parse_model(model, base_url=base_url)
    return EvalPlan(
        pool.config,
        tuple(parse_tasks({"tasks": list(tasks)})),
        spec,
        tuple(parse_offers(strategies, native_ok=True)),
        **options,
    )


async def evaluate(plan: EvalPlan, pool: GatewayPool, replay: ReplayProvider) -> Report:
    replay.clear()
    return await run_eval(plan, pool=pool, counter=COUNTER)


def definitions(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The tool definitions a request carried, in MCP wire form (deferred ones and the
    providers' own tools left out: the model does not read them up front)."""
    out = []
    for t in tools:
        if t.get("defer_loading") or t.get("type") in ("namespace", "tool_search"):
            continue
        if "function" in t:
            f = t["function"]
            out.append(
                {"name": f["name"], "description": f["description"], "inputSchema": f["parameters"]}
            )
        elif t.get("type") == "function":
            out.append(
                {"name": t["name"], "description": t["description"], "inputSchema": t["parameters"]}
            )
        elif "input_schema" in t:
            out.append(
                {
                    "name": t["name"],
                    "description": t["description"],
                    "inputSchema": t["input_schema"],
                }
            )
    return out


def definition_tokens(log: Sequence[Mapping[str, Any]]) -> int:
    return sum(
        int(estimate_tokens(definitions(entry["body"].get("tools") or []), COUNTER)["total"])
        for entry in log
        if definitions(entry["body"].get("tools") or [])
    )


def result_texts(entry: Mapping[str, Any]) -> list[str]:
    """The tool results a request sent back to the model (its whole conversation)."""
    body = entry["body"]
    if entry["api"] == "chat":
        return [m["content"] for m in body["messages"] if m.get("role") == "tool"]
    if entry["api"] == "responses":
        return [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]
    return [
        b["content"]
        for m in body["messages"]
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


def assert_accounting(report: Report, log: Sequence[Mapping[str, Any]]) -> None:
    """One run's numbers are what the provider double received and reported."""
    (run,) = report.runs
    assert run.turns == len(log)
    assert run.prompt_tokens == sum(e["prompt_tokens"] for e in log)
    assert run.completion_tokens == sum(e["completion_tokens"] for e in log)
    assert run.definition_tokens == definition_tokens(log)
    assert run.result_tokens == sum(COUNTER.count(t) for t in result_texts(log[-1]))
    assert run.result_tokens > 0


def offered(entry: Mapping[str, Any]) -> list[str]:
    return sorted(d["name"] for d in definitions(entry["body"].get("tools") or []))


# -- the demo, through the command -------------------------------------------------------


def test_the_demo_task_file_runs_through_the_command_into_a_table_json_and_html(
    replay: ReplayProvider,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    replay.clear()
    out_json, out_html, log = tmp_path / "r.json", tmp_path / "r.html", tmp_path / "gw.log"
    code = main(
        [
            "eval", "demo", str(DEMO_TASKS),
            "--model", "openai:replayed-model", "--base-url", replay.openai_base_url,
            "--strategies", "flat,menu", "--seed", "7",
            "--json", str(out_json), "--html", str(out_html), "--log", str(log),
        ]
    )  # fmt: skip
    printed = capsys.readouterr()
    assert code == 0, printed.err
    report = json.loads(out_json.read_text())
    assert [s["strategy"] for s in report["strategies"]] == ["flat", "menu"]
    assert report["tasks"] == ["whoami", "file-bug", "categories"]
    for row in report["strategies"]:
        assert (row["strategy"], row["successes"], row["runs"]) == (row["strategy"], 3, 3)
    flat, menu = report["strategies"]
    # the menu lists 7 tools where flat lists 40: fewer definition tokens per run
    assert (
        menu["per_run"]["definition_tokens"]["mean"] < flat["per_run"]["definition_tokens"]["mean"]
    )
    # under the menu the model first enables a group: more turns for the same tasks
    assert menu["per_run"]["turns"]["mean"] > flat["per_run"]["turns"]["mean"]
    file_bug = next(
        r for r in report["runs"] if r["strategy"] == "menu" and r["task"] == "file-bug"
    )
    assert [c["tool"] for c in file_bug["calls"]] == ["enable_tools", "create_issue"]
    assert len(report["runs"]) == 6
    assert report["seed"] == 7
    assert all(e["body"]["seed"] == 7 for e in replay.log)
    assert all(e["headers"]["authorization"] == f"Bearer {SECRET}" for e in replay.log)
    for name in ("flat", "menu", "3/3 (100%)", "definitions", "turns"):
        assert name in printed.out
    page = out_html.read_text()
    assert "<svg" in page and "<script" not in page
    assert "src=" not in page and "href=" not in page  # self-contained: nothing loaded
    assert page.count('class="strategy-row"') == 2
    assert ">flat</th>" in page and ">menu</th>" in page
    for text in (printed.out, printed.err, out_json.read_text(), page, log.read_text()):
        assert SECRET not in text


# -- the loop, per API and host ----------------------------------------------------------


async def test_chat_completions_accounting_equals_what_the_provider_received_and_reported(
    pool: GatewayPool, replay: ReplayProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    plan = make_plan(pool, [ADD_TASK], "openai:m", replay.openai_base_url, "menu")
    report = await evaluate(plan, pool, replay)
    (run,) = report.runs
    assert run.success, run.reasons
    assert [c.tool for c in run.calls] == ["enable_tools", "add"]
    assert (run.turns, run.tool_calls, run.refused, run.failed) == (3, 2, 0, 0)
    # the host re-listed after list_changed: add is offered from the second turn on
    assert "add" not in offered(replay.log[0]) and "add" in offered(replay.log[1])
    assert_accounting(report, replay.log)


async def test_the_responses_api_runs_the_loop_and_its_usage_is_summed(
    pool: GatewayPool, replay: ReplayProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    plan = make_plan(pool, [ADD_TASK], "openai-responses:m", replay.openai_base_url, "menu")
    report = await evaluate(plan, pool, replay)
    (run,) = report.runs
    assert run.success, run.reasons
    assert {e["api"] for e in replay.log} == {"responses"}
    assert_accounting(report, replay.log)


async def test_the_messages_api_through_the_groups_extension_opens_the_group_it_needs(
    pool: GatewayPool, replay: ReplayProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    plan = make_plan(pool, [ADD_TASK], "anthropic:m", replay.anthropic_base_url, "groups")
    report = await evaluate(plan, pool, replay)
    (run,) = report.runs
    assert run.success, run.reasons
    assert [c.tool for c in run.calls] == ["get_group", "add"]
    assert offered(replay.log[0]) == ["call_tool", "echo", "get_group", "list_groups"]
    assert "add" in offered(replay.log[1])
    # this SDK sends the key as a bearer token (older ones as x-api-key)
    assert all(
        SECRET
        in (
            e["headers"].get("x-api-key"),
            e["headers"].get("authorization", "").removeprefix("Bearer "),
        )
        for e in replay.log
    )
    assert_accounting(report, replay.log)


@pytest.mark.parametrize(
    ("model", "key"),
    [("anthropic:m", "ANTHROPIC_API_KEY"), ("openai-responses:m", "OPENAI_API_KEY")],
)
async def test_native_tool_search_defers_every_group_tool_and_counts_only_the_eager_ones(
    pool: GatewayPool,
    replay: ReplayProvider,
    monkeypatch: pytest.MonkeyPatch,
    model: str,
    key: str,
) -> None:
    monkeypatch.setenv(key, SECRET)
    base = replay.anthropic_base_url if model.startswith("anthropic") else replay.openai_base_url
    report = await evaluate(make_plan(pool, [ADD_TASK], model, base, "native"), pool, replay)
    (run,) = report.runs
    assert run.success, run.reasons
    assert [c.tool for c in run.calls] == ["add"]  # found by the provider's search
    tools = replay.log[0]["body"]["tools"]
    if model.startswith("anthropic"):
        assert replay.log[0]["headers"]["anthropic-beta"] == "advanced-tool-use-2025-11-20"
        assert {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"} in tools
        assert [t["name"] for t in tools if t.get("defer_loading")] == ["add"]
    else:
        assert {"type": "tool_search"} in tools
        (space,) = [t for t in tools if t.get("type") == "namespace"]
        assert (space["name"], [t["name"] for t in space["tools"]]) == ("arith", ["add"])
    assert offered(replay.log[0]) == ["echo"]  # up front: the top-level tools
    assert_accounting(report, replay.log)


async def test_catalog_and_search_reach_a_group_tool_through_their_own_meta_tools(
    pool: GatewayPool, replay: ReplayProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    plan = make_plan(pool, [ADD_TASK], "openai:m", replay.openai_base_url, "catalog,search")
    report = await evaluate(plan, pool, replay)
    catalog, search = ([(c.name, c.tool) for c in r.calls] for r in report.runs)
    assert all(r.success for r in report.runs)
    # enable_tools is the catalog's alias that changes nothing; get_group shows the tool,
    # and the catalog's fixed list reaches it through call_tool
    assert catalog == [
        ("enable_tools", "enable_tools"),
        ("get_group", "get_group"),
        ("call_tool", "add"),
    ]
    assert search == [("search_tools", "search_tools"), ("call_tool", "add")]
    assert [s.strategy for s in report.summaries] == ["catalog", "search"]


async def test_a_host_that_does_not_relist_reaches_the_tool_through_the_dispatcher(
    pool: GatewayPool, replay: ReplayProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    task = {**ADD_TASK, "relist": False}
    report = await evaluate(
        make_plan(pool, [task], "openai:m", replay.openai_base_url, "menu"), pool, replay
    )
    (run,) = report.runs
    assert run.success, run.reasons
    assert [(c.name, c.tool) for c in run.calls] == [
        ("enable_tools", "enable_tools"),
        ("call_tool", "add"),
    ]
    assert all("add" not in offered(e) for e in replay.log)


async def test_refused_calls_are_counted_and_the_task_fails(
    pool: GatewayPool, replay: ReplayProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    task = {
        "name": "multiply",
        "prompt": "Multiply 6 and 7.",
        "expect": {"calls": [{"tool": "multiply"}]},
    }
    report = await evaluate(
        make_plan(pool, [task], "openai:m", replay.openai_base_url, "menu"), pool, replay
    )
    (run,) = report.runs
    assert not run.success
    assert run.reasons == ("no successful call of multiply passed the argument checks",)
    assert [(c.tool, c.refused) for c in run.calls] == [("enable_tools", False), ("multiply", True)]
    (summary,) = report.to_dict()["strategies"]
    assert (summary["refused_calls"], summary["failed_calls"], summary["successes"]) == (1, 0, 0)
    assert "Unknown tool: multiply" in result_texts(replay.log[-1])[-1]


async def test_repeats_report_the_spread_of_the_success_rate(
    pool: GatewayPool, replay: ReplayProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    echo = {"name": "echo", "prompt": "Echo the word hello.", "expect": {"answer": "^hello$"}}
    plan = make_plan(pool, [ADD_TASK, echo], "openai:m", replay.openai_base_url, "menu", repeat=2)
    report = await evaluate(plan, pool, replay)
    assert [(r.task, r.repeat, r.success) for r in report.runs] == [
        ("add", 0, True),
        ("echo", 0, True),
        ("add", 1, True),
        ("echo", 1, False),  # the double answers every second echo conversation wrongly
    ]
    (summary,) = report.to_dict()["strategies"]
    assert summary["success_rate_per_repeat"] == [1.0, 0.5]
    assert summary["success_rate_spread"]["min"] == 0.5
    assert summary["success_rate_spread"]["max"] == 1.0
    turns = summary["per_run"]["turns"]
    assert (turns["min"], turns["max"]) == (1, 3)
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(report.table())
    assert "3/4 (75%) 50%-100%" in console.export_text()


async def test_a_check_command_judges_the_run_with_the_answer_and_the_gateway_url(
    pool: GatewayPool, replay: ReplayProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    script = (
        "import os, sys; ok = os.environ['TOOLGATE_EVAL_ANSWER'] == 'hello' and "
        "os.environ['TOOLGATE_EVAL_URL'].startswith('http://127.0.0.1:'); sys.exit(0 if ok else 3)"
    )
    echo = "Echo the word hello."
    passes = f'{sys.executable} -c "{script}"'
    fails = f"{sys.executable} -c 'raise SystemExit(4)'"
    tasks = [
        {"name": "passes", "prompt": echo, "expect": {"check": passes}},
        {"name": "fails", "prompt": echo, "expect": {"check": fails}},
    ]
    report = await evaluate(
        make_plan(pool, tasks, "openai:m", replay.openai_base_url, "menu"), pool, replay
    )
    assert [(r.task, r.success, r.reasons) for r in report.runs] == [
        ("passes", True, ()),
        ("fails", False, ("the check command exited 4",)),
    ]


async def test_a_refused_key_stops_the_evaluation_and_is_never_printed(
    pool: GatewayPool, replay: ReplayProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "reject-" + SECRET)
    plan = make_plan(pool, [ADD_TASK], "openai:m", replay.openai_base_url, "menu")
    with pytest.raises(ConfigError) as raised:
        await evaluate(plan, pool, replay)
    assert "refused the API key from OPENAI_API_KEY (HTTP 401)" in raised.value.message
    assert SECRET not in str(raised.value)


def test_a_gateway_that_cannot_start_says_what_it_printed(tmp_path: Path) -> None:
    config = tmp_path / "toolgate.json"
    config.write_text(json.dumps({"mcpServers": {}, "toolgate": {"page_size": 0}}))
    gateway = ServedGateway(str(config), {"strategy": "flat"})
    with pytest.raises(ConfigError) as raised:
        gateway.start()
    message = raised.value.message
    assert message.startswith(f"the gateway for {config} exited with 1 before it served; it said:")
    assert "toolgate.page_size: Input should be greater than or equal to 1" in message
