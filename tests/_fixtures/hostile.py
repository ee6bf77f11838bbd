"""Hypothesis strategies for what a careless or hostile client sends: any JSON value.

Texts include NUL, control and private-use characters, right-to-left marks and 100 000
characters; numbers past 64 bits and floats; arrays and objects nested a few levels.
NaN and infinities are left out (JSON cannot carry them), and so are lone surrogates:
``fastmcp.Client`` fails to encode them before sending (its telemetry span).
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings


def fuzz_settings(examples: int) -> settings:
    """The settings of every property test here: ``examples`` fixed examples, the same
    on every machine (derandomized, no example database to replay a local run's finds),
    no deadline (a shared CI machine is slow at times)."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


HUGE_TEXT = "x" * 100_000
AWKWARD_TEXTS = ["", " ", "\x00", "\u202etxt", "a\x00b", "é" * 65, HUGE_TEXT]

texts: st.SearchStrategy[str] = st.one_of(
    st.text(max_size=12),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
    st.sampled_from(AWKWARD_TEXTS),
)
json_leaves: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([0, -1, 1, 2**63, -(2**64), 10**40]),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)


def arguments_for(
    keys: list[str], known: list[str] | None = None
) -> st.SearchStrategy[dict[str, Any]]:
    """Objects whose keys are mostly ``keys`` (a tool's own argument names), sometimes
    with unknown ones, and whose values are any JSON (``known`` values, such as real
    group or tool names, often enough to get past the first check)."""
    values = json_values if not known else st.one_of(json_values, st.sampled_from(known))
    values = st.one_of(values, st.lists(values, max_size=4))
    own = st.dictionaries(st.sampled_from(keys or ["x"]), values, max_size=max(len(keys), 1))
    return st.one_of(
        own,
        st.builds(lambda a, b: {**a, **b}, own, st.dictionaries(texts, json_values, max_size=2)),
    )
