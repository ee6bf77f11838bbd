"""``flat``: no disclosure. Every accessible tool is listed; no meta-tools.

The baseline every other strategy is measured against. Delivery layer.
"""

from __future__ import annotations

from toolgate.strategies.base import Strategy


class FlatStrategy(Strategy):
    name = "flat"
    open_groups = True
