"""``toolgate eval``: every task, every strategy, ``--repeat`` times, into one ``Report``.

For each strategy a gateway serves CONFIG with that strategy (``ServedGateway``), each
task runs in a new MCP session through the host the strategy needs, is judged, and
becomes a ``TaskRun``; then the reports are written. Edge (``toolgate.eval``): the
command itself sits in ``toolgate.cli``, which calls :func:`run_command`.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from toolgate.errors import ConfigError
from toolgate.eval.gateway import GatewayPool, build_config
from toolgate.eval.host import connect
from toolgate.eval.loop import TaskRun, converse
from toolgate.eval.offers import DEFAULT_OFFERS, Offer, parse_offers
from toolgate.eval.providers import ModelSpec, conversation, parse_model, sdk_client
from toolgate.eval.report import Report
from toolgate.eval.tasks import Task, judge, load_tasks
from toolgate.tokens import TokenCounter, best_counter

Progress = Callable[[TaskRun], None]


@dataclass(frozen=True)
class EvalPlan:
    """What to run: the gateway config, the tasks, the model, the strategies."""

    config: str
    tasks: tuple[Task, ...]
    model: ModelSpec
    offers: tuple[Offer, ...]
    repeat: int = 1
    seed: int | None = None
    tasks_path: str = ""

    def check(self) -> None:
        """Raise ``ConfigError`` now for a config that no strategy could serve."""
        for offer in self.offers:
            with tempfile.TemporaryDirectory() as tmp:
                build_config(self.config, offer.overrides, db=Path(tmp) / "demo.sqlite3")


async def run_offer(
    plan: EvalPlan,
    offer: Offer,
    client: Any,
    counter: TokenCounter,
    pool: GatewayPool,
    *,
    progress: Progress | None = None,
) -> list[TaskRun]:
    """Every task of ``plan`` ``repeat`` times under ``offer``, on one gateway."""
    url = await asyncio.to_thread(pool.url, offer.overrides)
    runs = []
    for repeat in range(plan.repeat):
        for task in plan.tasks:
            run = await run_task(plan, offer, task, repeat, url, client, counter)
            if progress is not None:
                progress(run)
            runs.append(run)
    return runs


async def run_task(
    plan: EvalPlan,
    offer: Offer,
    task: Task,
    repeat: int,
    url: str,
    client: Any,
    counter: TokenCounter,
) -> TaskRun:
    async with connect(url, offer.host, relist=task.relist, native=plan.model.native) as host:
        chat = conversation(plan.model, client, task.prompt, system=task.system, seed=plan.seed)
        done = await converse(task, chat, host, counter)
    if done.fatal is not None:
        raise done.fatal
    env = {"TOOLGATE_EVAL_URL": url, "TOOLGATE_EVAL_STRATEGY": offer.name}
    verdict = await asyncio.to_thread(judge, task, done.calls, done.answer, env=env)
    reasons = verdict.reasons
    if done.error is not None:
        reasons = (f"the provider failed: {done.error}", *reasons)
    elif done.out_of_turns:
        reasons = (f"no final answer within {task.max_turns} turns", *reasons)
    return TaskRun(
        task=task.name,
        strategy=offer.name,
        repeat=repeat,
        success=verdict.success and done.error is None,
        reasons=reasons,
        turns=done.tally.turns,
        tool_calls=len(done.calls),
        refused=sum(c.refused for c in done.calls),
        failed=sum(c.failed for c in done.calls),
        definition_tokens=done.tally.definition_tokens,
        result_tokens=done.tally.result_tokens,
        prompt_tokens=done.tally.prompt_tokens,
        completion_tokens=done.tally.completion_tokens,
        wall_s=round(done.wall_s, 3),
        answer=done.answer,
        out_of_turns=done.out_of_turns,
        error=done.error,
        calls=done.calls,
    )


async def run_eval(
    plan: EvalPlan,
    *,
    log: IO[bytes] | None = None,
    progress: Progress | None = None,
    counter: TokenCounter | None = None,
    pool: GatewayPool | None = None,
) -> Report:
    """Run the whole plan; the report of every run. Each strategy's gateway is stopped
    when its runs are done, unless it comes from ``pool`` (which its owner closes)."""
    counter = counter or best_counter()
    own = pool is None
    gateways = GatewayPool(plan.config, log=log) if pool is None else pool
    client = sdk_client(plan.model)
    runs: list[TaskRun] = []
    try:
        for offer in plan.offers:
            runs += await run_offer(plan, offer, client, counter, gateways, progress=progress)
            later = plan.offers[plan.offers.index(offer) + 1 :]
            if own and not any(o.overrides == offer.overrides for o in later):
                await asyncio.to_thread(gateways.stop, offer.overrides)
    finally:
        await client.close()
        if own:
            await asyncio.to_thread(gateways.close)
    return Report.of(plan_facts(plan, counter), plan.offers, runs)


def plan_facts(plan: EvalPlan, counter: TokenCounter) -> dict[str, Any]:
    """What the report says it measured (never the API key)."""
    return {
        "config": plan.config,
        "tasks_file": plan.tasks_path,
        "tasks": [t.name for t in plan.tasks],
        "model": plan.model.label,
        "api": plan.model.api,
        "base_url": plan.model.base_url,
        "repeat": plan.repeat,
        "seed": plan.seed,
        "tokenizer": counter.name,
    }


def make_plan(
    config: str,
    tasks: str,
    model: str,
    *,
    strategies: str | None = None,
    repeat: int = 1,
    seed: int | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
) -> EvalPlan:
    """The plan the command's arguments describe; ``ConfigError`` for any bad one."""
    if repeat < 1:
        raise ConfigError("--repeat must be at least 1", key="repeat")
    spec = parse_model(model, base_url=base_url, key_env=api_key_env)
    offers = parse_offers(strategies or ",".join(DEFAULT_OFFERS), native_ok=spec.native is not None)
    plan = EvalPlan(
        config, tuple(load_tasks(tasks)), spec, tuple(offers), repeat, seed, tasks_path=tasks
    )
    plan.check()
    spec.key()  # a missing key is said before any gateway starts
    return plan


def check_outputs(paths: Mapping[str, str | None], inputs: Sequence[str] = ()) -> None:
    """Each report path (``{"--json": path}``) can be written and is none of ``inputs``
    (the config, the tasks file) nor another report's, said before any model is asked:
    a run's results are never lost to a missing folder, nor a file it read to them."""
    seen = {Path(i).resolve(): f"the file it reads ({i})" for i in inputs}
    for option, path in paths.items():
        if path is None:
            continue
        target = Path(path)
        folder = target.parent
        if target.resolve() in seen:
            problem = f"it is {seen[target.resolve()]}"
        elif target.is_dir():
            problem = "is a folder"
        elif not folder.is_dir():
            problem = f"its folder {folder} does not exist"
        elif not os.access(folder, os.W_OK):
            problem = f"its folder {folder} is not writable"
        else:
            seen[target.resolve()] = f"{option}'s too"
            continue
        raise ConfigError(f"{option} {path}: cannot write there: {problem}", key=option)


def _write(option: str, path: str, write: Callable[[Path], object]) -> None:
    try:
        write(Path(path))
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot write: {exc.strerror}", key=option) from None


def run_command(args: Any, *, out: IO[str] | None = None) -> int:
    """``toolgate eval`` with parsed ``args``: run, print the table, write the reports."""
    from rich.console import Console

    from toolgate.eval.html import write_html

    plan = make_plan(
        args.config,
        args.tasks,
        args.model,
        strategies=args.strategies,
        repeat=args.repeat,
        seed=args.seed,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
    )
    outputs = {"--json": args.json, "--html": args.html, "--log": args.log}
    check_outputs(outputs, inputs=[args.tasks, *([] if args.config == "demo" else [args.config])])
    stream = out or sys.stdout
    # a file or a pipe gets the whole table, not 80 columns of wrapped cells
    console = Console(file=stream, width=None if stream.isatty() else 160)
    err = Console(file=sys.stderr)

    def progress(run: TaskRun) -> None:
        mark = "ok  " if run.success else "FAIL"
        err.print(f"{mark} {run.strategy:<12} {run.task} (#{run.repeat + 1})", highlight=False)

    log_path = Path(args.log) if args.log else None
    log = log_path.open("wb") if log_path else None
    try:
        report = asyncio.run(run_eval(plan, log=log, progress=progress))
    finally:
        if log is not None:
            log.close()
    console.print(report.table())
    if args.json:
        _write("--json", args.json, lambda p: p.write_text(report.json_text(), encoding="utf-8"))
    if args.html:
        _write("--html", args.html, lambda p: write_html(report, p))
    return 0


__all__: Sequence[str] = ("EvalPlan", "check_outputs", "make_plan", "run_command", "run_eval")
