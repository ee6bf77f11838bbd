"""Dispatch: ``Session.call`` runs only visible tools, validates arguments against the
input schema before the handler, turns handler failures into error results and hides
nothing it should not. Core only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from toolgate import (
    CallContext,
    Group,
    Principal,
    RegistrationError,
    Tool,
    ToolgateError,
    ToolNotFound,
    ToolResult,
    ToolSet,
)
from toolgate.errors import ToolHidden

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
    "required": ["path"],
    "additionalProperties": False,
}


def recording() -> tuple[list[Mapping[str, Any]], Any]:
    calls: list[Mapping[str, Any]] = []

    def handler(args: Mapping[str, Any], ctx: CallContext) -> str:
        calls.append(args)
        return f"read {args['path']}"

    return calls, handler


async def test_valid_arguments_reach_the_handler() -> None:
    calls, handler = recording()
    ts = ToolSet()
    ts.add_tool(Tool("read", "Read.", handler=handler, input_schema=SCHEMA))
    out = await ts.session("s").call("read", {"path": "a.txt", "limit": 3})
    assert out.result == ToolResult.text("read a.txt")
    assert out.result.is_error is False
    assert calls == [{"path": "a.txt", "limit": 3}]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "Invalid arguments for tool 'read': (root): 'path' is a required property"),
        ({"path": 3}, "Invalid arguments for tool 'read': path: 3 is not of type 'string'"),
        (
            {"path": None},
            "Invalid arguments for tool 'read': path: null is not of type 'string'",
        ),
        (
            {"path": "a", "limit": True},
            "Invalid arguments for tool 'read': limit: true is not of type 'integer'",
        ),
        (
            {"path": "a", "limit": 0},
            "Invalid arguments for tool 'read': limit: 0 is less than the minimum of 1",
        ),
        (
            {"path": "a", "x": 1},
            "Invalid arguments for tool 'read': (root): Additional properties are not allowed "
            "('x' was unexpected)",
        ),
    ],
)  # each ends naming the required arguments and their types
async def test_bad_arguments_are_an_error_result_and_the_handler_does_not_run(
    args: dict[str, Any], message: str
) -> None:
    calls, handler = recording()
    ts = ToolSet()
    ts.add_tool(Tool("read", "Read.", handler=handler, input_schema=SCHEMA))
    out = await ts.session("s").call("read", args)
    assert out.result.is_error is True
    assert out.result.text_content == f"{message}. Required arguments: path (string)."
    assert calls == []


async def test_arguments_that_are_not_an_object_are_an_error_result() -> None:
    calls, handler = recording()
    ts = ToolSet()
    ts.add_tool(Tool("read", "Read.", handler=handler, input_schema=SCHEMA))
    out = await ts.session("s").call("read", ["a"])  # type: ignore[arg-type]
    assert out.result == ToolResult.error(
        "Invalid arguments for tool 'read': they must be a JSON object, not array. "
        "Required arguments: path (string)."
    )
    assert calls == []


async def test_a_value_too_large_to_check_is_refused_and_the_tool_stays_checked() -> None:
    calls, handler = recording()
    ts = ToolSet()
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "cost": {"type": "number", "multipleOf": 0.01}},
        "required": ["path"],
    }
    ts.add_tool(Tool("read", "Read.", handler=handler, input_schema=schema))
    huge = await ts.session("s").call("read", {"path": "a", "cost": 10**400})
    assert huge.result.is_error is True
    assert huge.result.text_content.startswith(
        "Invalid arguments for tool 'read': they cannot be checked against its input schema "
        "(OverflowError: "
    )
    later = await ts.session("other").call("read", {})  # checked as before
    assert later.result.text_content.startswith("Invalid arguments for tool 'read': (root):")
    assert calls == []


async def test_missing_arguments_are_an_empty_object() -> None:
    ts = ToolSet()
    ts.add_tool(Tool("ping", handler=lambda a, c: dict(a)))
    out = await ts.session("s").call("ping", None)
    assert out.result.structured == {}


async def test_a_handler_exception_is_an_error_result() -> None:
    def broken(args: Mapping[str, Any], ctx: CallContext) -> str:
        raise KeyError("disk")

    ts = ToolSet()
    ts.add_tool(Tool("read", handler=broken))
    out = await ts.session("s").call("read")
    assert out.result == ToolResult.error("Tool 'read' failed: 'disk'")
    assert out.stage_changed is False


async def test_a_toolgate_error_from_a_handler_propagates() -> None:
    def refuses(args: Mapping[str, Any], ctx: CallContext) -> str:
        raise ToolgateError("upstream gone")

    ts = ToolSet()
    ts.add_tool(Tool("read", handler=refuses))
    with pytest.raises(ToolgateError) as err:
        await ts.session("s").call("read")
    assert err.value.message == "upstream gone"


async def test_async_handlers_are_awaited_and_values_become_results() -> None:
    async def structured(args: Mapping[str, Any], ctx: CallContext) -> dict[str, int]:
        return {"n": 1}

    ts = ToolSet()
    ts.add_tools(
        [
            Tool("structured", handler=structured),
            Tool("listy", handler=lambda a, c: [1, 2]),
            Tool("nothing", handler=lambda a, c: None),
            Tool("custom", handler=lambda a, c: ToolResult.error("nope")),
        ]
    )
    s = ts.session("s")
    out = (await s.call("structured")).result
    assert (out.structured, out.text_content) == ({"n": 1}, '{"n": 1}')
    assert (await s.call("listy")).result == ToolResult.text("[1, 2]")
    assert (await s.call("nothing")).result == ToolResult()
    assert (await s.call("custom")).result == ToolResult.error("nope")


async def test_the_handler_receives_the_call_context() -> None:
    seen: list[CallContext] = []
    ts = ToolSet()
    ts.add_tool(Tool("who", handler=lambda a, c: seen.append(c)))
    p = Principal(id="alice", trust="verified")
    await ts.session("s9", p).call("who", extras={"request_id": 7})
    assert seen == [CallContext("who", "s9", p, {"request_id": 7})]


async def test_a_handler_given_at_call_time_overrides_the_registered_one() -> None:
    ts = ToolSet()
    ts.add_tool(Tool("proxy"))
    s = ts.session("s")
    with pytest.raises(RegistrationError) as err:
        await s.call("proxy")
    assert err.value.message == "Tool 'proxy' has no handler"
    out = await s.call("proxy", {}, handler=lambda a, c: "forwarded")
    assert out.result.text_content == "forwarded"


async def test_unknown_and_hidden_tools_are_not_dispatched() -> None:
    calls, handler = recording()
    ts = ToolSet()
    ts.add_group(Group("files"))
    ts.add_tool(Tool("read", handler=handler, groups=("files",)))
    s = ts.session("s")
    with pytest.raises(ToolNotFound) as err:
        await s.call("nope")
    assert (err.value.code, err.value.message) == ("unknown_tool", "Unknown tool: nope")
    with pytest.raises(ToolHidden) as hidden:
        await s.call("read", {"path": "x"})
    assert hidden.value.details == {
        "tool": "read",
        "reason": "group-inactive:files",
        "groups": ["files"],
        "enable": ["files"],
    }
    assert calls == []


async def test_hint_for_a_nested_group_names_the_whole_chain() -> None:
    ts = ToolSet()
    ts.add_groups([Group("db"), Group("write", parent="db"), Group("admin", parent="write")])
    ts.add_tool(Tool("drop", handler=lambda a, c: "x", groups=("admin",)))
    with pytest.raises(ToolHidden) as err:
        await ts.session("s").call("drop")
    assert err.value.message == (
        "Tool 'drop' is not enabled. Enable group 'admin' first "
        "(and its parents ['db', 'write']), then call it again."
    )


async def test_a_tool_in_several_groups_is_callable_when_any_is_active() -> None:
    ts = ToolSet()
    ts.add_groups([Group("a"), Group("b")])
    ts.add_tool(Tool("both", handler=lambda a, c: "ok", groups=("a", "b")))
    s = ts.session("s")
    await s.activate(["b"])
    assert (await s.call("both")).result.text_content == "ok"
