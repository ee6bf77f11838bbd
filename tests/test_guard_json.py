"""The guard's check of a JSON body (``json_problem``): nesting is measured whatever
shape the body has, and a shallow body is let through however many brackets it holds."""

from __future__ import annotations

import json

import pytest

from toolgate.gateway.ingress.guard import GuardLimits, json_problem

LIMITS = GuardLimits(max_body_bytes=1 << 20, max_json_depth=8, body_timeout=10.0)


def nested(depth: int) -> bytes:
    return ("[" * depth + "]" * depth).encode()


@pytest.mark.parametrize("depth", [1, 8])
def test_a_body_at_the_limit_passes(depth: int) -> None:
    assert json_problem(nested(depth), LIMITS, rpc=False) is None


def test_a_body_past_the_limit_is_refused() -> None:
    problem = json_problem(nested(9), LIMITS, rpc=False)
    assert problem is not None
    assert (problem.status, problem.rpc_code) == (400, -32600)
    assert "nested deeper than 8 levels" in problem.message


def test_many_brackets_at_little_depth_pass() -> None:
    """More brackets than the limit, in siblings and inside strings: the depth is
    walked, and it is two."""
    body = json.dumps({"items": [[i] for i in range(20)], "text": "{[" * 20}).encode()
    assert json_problem(body, LIMITS, rpc=False) is None


def test_a_deep_body_among_siblings_is_refused() -> None:
    inner: object = 0
    for _ in range(9):
        inner = [inner]
    body = json.dumps({"a": [[1], [2]], "b": inner}).encode()
    problem = json_problem(body, LIMITS, rpc=False)
    assert problem is not None and "nested deeper" in problem.message
