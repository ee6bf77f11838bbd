"""A horizontal bar chart as inline SVG, drawn on the server (no script, no assets).

Used for token costs: flat vs disclosed listings, and what each group adds when it is
enabled. Labels are escaped here; the template marks the result safe. Edge layer: stdlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape


@dataclass(frozen=True)
class Bar:
    label: str
    value: int
    kind: str = "group"  # a CSS class: "flat" | "disclosed" | "group"
    indent: int = 0
    note: str = ""


def bar_chart(bars: Sequence[Bar], *, title: str, unit: str = "tokens", width: int = 760) -> str:
    """An SVG document fragment with one row per bar, scaled to the largest value."""
    row, label_w, pad = 26, 230, 8
    plot_w = width - label_w - 190  # room for the value text after the longest bar
    top = 30
    height = top + row * len(bars) + pad
    peak = max((b.value for b in bars), default=0) or 1
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<text x="0" y="18" class="chart-title">{escape(title)}</text>',
    ]
    for i, bar in enumerate(bars):
        y = top + i * row
        w = max(1, round(plot_w * bar.value / peak)) if bar.value else 0
        label = ("\u21b3 " * min(bar.indent, 1)) + bar.label  # a child group: "↳ name"
        parts.append(
            f'<g class="bar {escape(bar.kind)}" data-label="{escape(bar.label)}" '
            f'data-value="{bar.value}">'
            f'<text x="{label_w - pad}" y="{y + 17}" text-anchor="end">{escape(label)}</text>'
            f'<rect x="{label_w}" y="{y + 4}" width="{w}" height="{row - 8}" rx="3"/>'
            f'<text x="{label_w + w + 6}" y="{y + 17}" class="value">'
            f"{bar.value} {escape(unit)}{escape(bar.note)}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)
