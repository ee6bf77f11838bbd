"""The guard's check of a JSON body (``json_problem``): nesting is measured whatever
shape the body has, and a shallow body is let through however many brackets it holds;
an MCP body must be one JSON-RPC message of the right shape (``envelope_problem``)."""

from __future__ import annotations

import json

import pytest

from toolgate.gateway.ingress.envelope import GuardLimits, envelope_problem, json_problem

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


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "x"}},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": None},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 4, "result": {}},  # a client answering a server's request
        {"jsonrpc": "2.0", "id": 5, "error": {"code": -1, "message": "no"}},
    ],
)
def test_every_shape_of_json_rpc_message_mcp_uses_passes(message: object) -> None:
    assert envelope_problem(message) is None
    assert json_problem(json.dumps(message).encode(), LIMITS, rpc=True) is None


@pytest.mark.parametrize(
    ("message", "code", "rid"),
    [
        ([], -32600, None),
        (3, -32600, None),
        ({"id": 1, "method": "ping"}, -32600, 1),
        ({"jsonrpc": "2.0", "id": 2, "method": None}, -32600, 2),
        ({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": "x"}, -32602, 3),
        ({"jsonrpc": "2.0", "result": {}}, -32600, None),
    ],
)
def test_a_message_of_the_wrong_shape_is_named_with_its_code_and_id(
    message: object, code: int, rid: object
) -> None:
    problem = envelope_problem(message)
    assert problem is not None
    assert (problem.status, problem.rpc_code, problem.rpc_id) == (400, code, rid)
    assert json_problem(json.dumps(message).encode(), LIMITS, rpc=False) is None  # MCP only
