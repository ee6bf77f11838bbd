"""An evaluation's results: per strategy, what its runs achieved and cost, with the spread.

``Report`` holds every ``TaskRun`` and sums them per strategy (``StrategySummary``):
success over all runs and the lowest and highest success rate of one repeat, and per
run the mean, lowest and highest tokens, turns and calls. It renders as a rich table
and as JSON (``toolgate.eval.html`` draws the HTML). Edge (``toolgate.eval``).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.table import Table

    from toolgate.eval.loop import TaskRun
    from toolgate.eval.offers import Offer

REPORT_VERSION = 1
#: the per-run numbers a summary gives as mean, min and max
METRICS = (
    "definition_tokens",
    "result_tokens",
    "prompt_tokens",
    "completion_tokens",
    "turns",
    "tool_calls",
    "wall_s",
)


@dataclass(frozen=True)
class Spread:
    mean: float
    min: float
    max: float
    stdev: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            return cls(0.0, 0.0, 0.0, 0.0)
        stdev = statistics.stdev(values) if len(values) > 1 else 0.0
        return cls(statistics.fmean(values), min(values), max(values), stdev)

    def to_dict(self) -> dict[str, float]:
        return {k: round(v, 3) for k, v in vars(self).items()}


@dataclass(frozen=True)
class StrategySummary:
    strategy: str
    about: str
    runs: int
    successes: int
    #: the success rate of each repeat (every task once)
    repeat_rates: tuple[float, ...]
    refused: int
    failed: int
    metrics: Mapping[str, Spread]

    @property
    def success_rate(self) -> float:
        return self.successes / self.runs if self.runs else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "about": self.about,
            "runs": self.runs,
            "successes": self.successes,
            "success_rate": round(self.success_rate, 4),
            "success_rate_per_repeat": [round(r, 4) for r in self.repeat_rates],
            "success_rate_spread": Spread.of(self.repeat_rates).to_dict(),
            "refused_calls": self.refused,
            "failed_calls": self.failed,
            "per_run": {k: v.to_dict() for k, v in self.metrics.items()},
        }


def summarize(strategy: str, about: str, runs: Sequence[TaskRun]) -> StrategySummary:
    repeats = sorted({r.repeat for r in runs})
    rates = tuple(
        sum(r.success for r in runs if r.repeat == i) / sum(1 for r in runs if r.repeat == i)
        for i in repeats
    )
    return StrategySummary(
        strategy=strategy,
        about=about,
        runs=len(runs),
        successes=sum(r.success for r in runs),
        repeat_rates=rates,
        refused=sum(r.refused for r in runs),
        failed=sum(r.failed for r in runs),
        metrics={m: Spread.of([float(getattr(r, m)) for r in runs]) for m in METRICS},
    )


@dataclass(frozen=True)
class Report:
    facts: Mapping[str, Any]
    summaries: tuple[StrategySummary, ...]
    runs: tuple[TaskRun, ...]

    @classmethod
    def of(
        cls, facts: Mapping[str, Any], offers: Sequence[Offer], runs: Sequence[TaskRun]
    ) -> Report:
        summaries = tuple(
            summarize(o.name, o.about, [r for r in runs if r.strategy == o.name]) for o in offers
        )
        return cls(dict(facts), summaries, tuple(runs))

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": REPORT_VERSION,
            **self.facts,
            "strategies": [s.to_dict() for s in self.summaries],
            "runs": [r.to_dict() for r in self.runs],
        }

    def json_text(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def table(self) -> Table:
        from rich.table import Table

        repeat = int(self.facts.get("repeat") or 1)
        table = Table(
            title=f"toolgate eval: {self.facts.get('model')} on {len(self.facts.get('tasks', []))} "
            f"tasks x {repeat}",
            caption=f"per run: mean{' (min-max)' if repeat > 1 else ''}; "
            f"tool tokens counted with {self.facts.get('tokenizer')}",
        )
        for column in (
            "strategy",
            "success",
            "definitions",
            "results",
            "prompt",
            "completion",
            "turns",
            "calls",
            "refused",
            "failed",
            "wall s",
        ):
            table.add_column(column, justify="left" if column == "strategy" else "right")
        for s in self.summaries:
            table.add_row(
                s.strategy,
                success_cell(s),
                *(
                    spread_cell(s.metrics[m], repeat > 1, digits=1 if m == "wall_s" else 0)
                    for m in METRICS[:6]
                ),
                str(s.refused),
                str(s.failed),
                spread_cell(s.metrics["wall_s"], repeat > 1, digits=1),
            )
        return table


def success_cell(s: StrategySummary) -> str:
    text = f"{s.successes}/{s.runs} ({s.success_rate:.0%})"
    if len(s.repeat_rates) > 1:
        text += f" {min(s.repeat_rates):.0%}-{max(s.repeat_rates):.0%}"
    return text


def spread_cell(spread: Spread, with_range: bool, *, digits: int = 0) -> str:
    def num(v: float) -> str:
        return f"{v:,.{digits}f}"

    text = num(spread.mean)
    if with_range:
        text += f" ({num(spread.min)}-{num(spread.max)})"
    return text
