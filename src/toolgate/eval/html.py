"""The HTML report of ``toolgate eval``: one self-contained page, an inline SVG chart.

Three panels, one row per strategy: tasks solved (the bar is the success rate, the
whisker the lowest and highest rate of one repeat), tool tokens per run (definitions
and results the model read) and model turns per run; then the summary table and every
run. No script, no external file. Edge (``toolgate.eval``).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from pathlib import Path

from toolgate.eval.report import METRICS, Report, StrategySummary, spread_cell, success_cell

ROW = 30
LABEL = 110
PANEL = 250
GAP = 30
TOP = 44
COLORS = {"success": "#2e7d32", "definitions": "#1565c0", "results": "#90caf9", "turns": "#ef6c00"}


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _panel(
    x: float,
    title: str,
    summaries: Sequence[StrategySummary],
    parts: Callable[[StrategySummary], list[tuple[float, str]]],
    scale: float,
    label: Callable[[StrategySummary], str],
) -> list[str]:
    out = [f'<text x="{x}" y="{TOP - 18}" class="title">{_e(title)}</text>']
    for i, s in enumerate(summaries):
        y = TOP + i * ROW
        start = x
        for value, color in parts(s):
            width = PANEL * value / scale if scale else 0.0
            out.append(
                f'<rect x="{start:.1f}" y="{y + 5}" width="{width:.1f}" height="{ROW - 12}" '
                f'fill="{color}"><title>{_e(s.strategy)}: {value:,.1f}</title></rect>'
            )
            start += width
        out.append(f'<text x="{start + 4:.1f}" y="{y + ROW / 2 + 4}">{_e(label(s))}</text>')
    return out


def chart(report: Report) -> str:
    """The SVG: success, tool tokens and turns per strategy, side by side."""
    rows = report.summaries
    height = TOP + ROW * max(len(rows), 1) + 30
    width = LABEL + 3 * (PANEL + 70) + 2 * GAP
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="results per strategy">',
        "<style>text{font:12px sans-serif;fill:#222}.title{font-weight:bold}</style>",
    ]
    for i, s in enumerate(rows):
        y = TOP + i * ROW + ROW / 2 + 4
        parts.append(f'<text x="4" y="{y}" class="strategy">{_e(s.strategy)}</text>')
    x1 = LABEL
    parts += _panel(
        x1,
        "tasks solved",
        rows,
        lambda s: [(s.success_rate * 100, COLORS["success"])],
        100.0,
        lambda s: f"{s.success_rate:.0%}",
    )
    for i, s in enumerate(rows):  # the spread over repeats
        if len(s.repeat_rates) > 1:
            lo, hi = (x1 + PANEL * r for r in (min(s.repeat_rates), max(s.repeat_rates)))
            y = TOP + i * ROW + ROW - 4  # under the bar, clear of its label
            parts.append(
                f'<path d="M{lo:.1f} {y - 3}v6M{lo:.1f} {y}H{hi:.1f}M{hi:.1f} {y - 3}v6" '
                'stroke="#000" stroke-width="1.5" fill="none" class="spread">'
                f"<title>{_e(s.strategy)}: {min(s.repeat_rates):.0%} to "
                f"{max(s.repeat_rates):.0%} per repeat</title></path>"
            )
    x2 = x1 + PANEL + 70 + GAP
    top_tokens = max(
        (s.metrics["definition_tokens"].mean + s.metrics["result_tokens"].mean for s in rows),
        default=0.0,
    )
    parts += _panel(
        x2,
        "tool tokens per run (definitions + results)",
        rows,
        lambda s: [
            (s.metrics["definition_tokens"].mean, COLORS["definitions"]),
            (s.metrics["result_tokens"].mean, COLORS["results"]),
        ],
        top_tokens,
        lambda s: f"{s.metrics['definition_tokens'].mean + s.metrics['result_tokens'].mean:,.0f}",
    )
    x3 = x2 + PANEL + 70 + GAP
    top_turns = max((s.metrics["turns"].mean for s in rows), default=0.0)
    parts += _panel(
        x3,
        "model turns per run",
        rows,
        lambda s: [(s.metrics["turns"].mean, COLORS["turns"])],
        top_turns,
        lambda s: f"{s.metrics['turns'].mean:.1f}",
    )
    parts.append("</svg>")
    return "\n".join(parts)


def page(report: Report) -> str:
    """The whole report as one HTML document."""
    facts = report.facts
    repeat = int(facts.get("repeat") or 1)
    head = ["strategy", "success", "definitions", "results", "prompt", "completion"]
    head += ["turns", "calls", "refused", "failed", "wall s"]
    rows = []
    for s in report.summaries:
        cells = [success_cell(s)]
        cells += [spread_cell(s.metrics[m], repeat > 1) for m in METRICS[:6]]
        cells += [
            str(s.refused),
            str(s.failed),
            spread_cell(s.metrics["wall_s"], repeat > 1, digits=1),
        ]
        rows.append(
            f'<tr class="strategy-row"><th title="{_e(s.about)}">{_e(s.strategy)}</th>'
            + "".join(f"<td>{_e(c)}</td>" for c in cells)
            + "</tr>"
        )
    runs = []
    for r in report.runs:
        why = "; ".join(r.reasons) if r.reasons else ""
        runs.append(
            "<tr>"
            + "".join(
                f"<td>{_e(v)}</td>"
                for v in (
                    r.strategy,
                    r.task,
                    r.repeat + 1,
                    "ok" if r.success else "failed",
                    r.definition_tokens,
                    r.result_tokens,
                    r.prompt_tokens,
                    r.completion_tokens,
                    r.turns,
                    r.tool_calls,
                    r.refused,
                    r.failed,
                    f"{r.wall_s:.1f}",
                    why,
                )
            )
            + "</tr>"
        )
    run_head = ["strategy", "task", "#", "result", "definitions", "results", "prompt"]
    run_head += ["completion", "turns", "calls", "refused", "failed", "wall s", "why"]
    legend = (
        f'<span style="color:{COLORS["definitions"]}">&#9632;</span> definitions '
        f'<span style="color:{COLORS["results"]}">&#9632;</span> results'
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>toolgate eval: {_e(facts.get("model"))}</title>
<style>
body{{font-family:sans-serif;margin:2em;color:#222}}
table{{border-collapse:collapse;margin:1em 0}}
th,td{{border:1px solid #ccc;padding:4px 8px;text-align:right;white-space:nowrap}}
#summary th,#runs td:nth-child(-n+2),#runs td:last-child{{text-align:left}}
caption{{caption-side:bottom;font-size:90%;color:#555}}
</style></head><body>
<h1>toolgate eval</h1>
<p>Model <b>{_e(facts.get("model"))}</b>, config <code>{_e(facts.get("config"))}</code>,
{len(facts.get("tasks", []))} tasks from <code>{_e(facts.get("tasks_file"))}</code>,
{repeat} run(s) each{"" if facts.get("seed") is None else f", seed {_e(facts.get('seed'))}"}.
Tool tokens counted with {_e(facts.get("tokenizer"))}; prompt and completion tokens as the
provider reported them. {legend}</p>
{chart(report)}
<table id="summary"><caption>per run: mean{" (min-max)" if repeat > 1 else ""}</caption>
<tr>{"".join(f"<th>{_e(h)}</th>" for h in head)}</tr>
{"".join(rows)}
</table>
<h2>Every run</h2>
<table id="runs"><tr>{"".join(f"<th>{_e(h)}</th>" for h in run_head)}</tr>
{"".join(runs)}
</table>
<p>A few tasks and runs say little: a difference smaller than the spread over repeats is
noise.</p>
</body></html>
"""


def write_html(report: Report, path: Path) -> None:
    path.write_text(page(report), encoding="utf-8")
