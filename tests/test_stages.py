"""Stages (DESIGN §4): a flow moves a session from stage to stage after successful calls,
never after failed ones; stage-locked tools get a hint naming the stage they need.
Core only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from _fixtures.core import visible_names
from toolgate import (
    ConfigError,
    Event,
    Flow,
    Stage,
    Tool,
    ToolNotFound,
    ToolResult,
    ToolSet,
    Transition,
)
from toolgate.errors import ToolHidden

SHOP = Flow(
    initial="browse",
    stages=(
        Stage("browse", transitions=(Transition(on="cart_add", to="checkout"),)),
        Stage("checkout", enables=("browse",), transitions=(Transition("pay", "done"),)),
        Stage("done"),
    ),
)


def shop(*, fail_add: bool = False, error_add: bool = False) -> ToolSet:
    def add(args: Mapping[str, Any], ctx: Any) -> Any:
        if fail_add:
            raise RuntimeError("out of stock")
        if error_add:
            return ToolResult.error("cart is full")
        return "added"

    ts = ToolSet(flow=SHOP)
    ts.add_tools(
        [
            Tool("search", handler=lambda a, c: "found", stages=frozenset({"browse"})),
            Tool("cart_add", handler=add, stages=frozenset({"browse"})),
            Tool("pay", handler=lambda a, c: "paid", stages=frozenset({"checkout"})),
            Tool("receipt", handler=lambda a, c: "r", stages=frozenset({"done"})),
            Tool("help", handler=lambda a, c: "h"),
        ]
    )
    return ts


async def test_a_session_starts_in_the_initial_stage() -> None:
    s = shop().session("s")
    assert await visible_names(s) == ["cart_add", "help", "search"]
    assert (await s.view()).ctx.stage == "browse"


async def test_a_successful_trigger_moves_to_the_next_stage_and_reports_it() -> None:
    ts = shop()
    seen: list[Event] = []
    ts.events.subscribe(seen.append)
    s = ts.session("s")
    out = await s.call("cart_add")
    assert out.result.text_content == "added"
    assert (out.stage_from, out.stage_to, out.stage_changed) == ("browse", "checkout", True)
    assert out.visible_changed is True
    # checkout enables browse, so browse tools stay available
    assert await visible_names(s) == ["cart_add", "help", "pay", "search"]
    progressed = [e.data for e in seen if e.type == "tool.progressed"]
    assert progressed == [{"from": "browse", "to": "checkout", "trigger": "cart_add"}]
    assert [e.session for e in seen if e.type == "tool.progressed"] == ["s"]


async def test_a_handler_that_raises_causes_no_transition() -> None:
    s = shop(fail_add=True).session("s")
    out = await s.call("cart_add")
    assert out.result.is_error is True
    assert (out.stage_from, out.stage_to, out.visible_changed) == (None, None, False)
    assert (await s.state()).stage is None
    assert await visible_names(s) == ["cart_add", "help", "search"]


async def test_a_handler_returning_an_error_result_causes_no_transition() -> None:
    s = shop(error_add=True).session("s")
    out = await s.call("cart_add")
    assert out.result == ToolResult.error("cart is full")
    assert out.stage_changed is False
    assert (await s.view()).ctx.stage == "browse"


async def test_bad_arguments_cause_no_transition() -> None:
    ts = shop()
    schema = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
    ts.catalog.update_tool("cart_add", input_schema=schema)
    s = ts.session("s")
    assert (await s.call("cart_add", {})).result.is_error is True
    assert (await s.view()).ctx.stage == "browse"


async def test_enables_keeps_other_stages_tools_but_not_the_reverse() -> None:
    s = shop().session("s")
    await s.call("cart_add")
    await s.call("pay")
    assert await visible_names(s) == ["help", "receipt"]
    with pytest.raises(ToolHidden):
        await s.call("search")


async def test_a_stage_locked_call_hints_at_the_needed_and_current_stage() -> None:
    s = shop().session("s")
    with pytest.raises(ToolHidden) as err:
        await s.call("pay")
    assert err.value.message == (
        "Tool 'pay' is only available in stage 'checkout'; this session is in stage 'browse'."
    )
    assert err.value.details == {
        "tool": "pay",
        "reason": "stage-locked:checkout",
        "stages": ["checkout"],
        "current_stage": "browse",
    }


async def test_opaque_hidden_tool_errors_make_a_stage_locked_tool_unknown() -> None:
    ts = shop()
    ts.hidden_tool_errors = "opaque"
    with pytest.raises(ToolNotFound) as err:
        await ts.session("s").call("pay")
    assert err.value.message == "Unknown tool: pay"


async def test_a_tools_own_next_stage_applies_when_the_stage_has_no_transition() -> None:
    ts = ToolSet(flow=Flow(initial="a", stages=(Stage("b"),)))
    ts.add_tools(
        [Tool("go", handler=lambda a, c: "ok", next_stage="b"), Tool("x", handler=lambda a, c: 1)]
    )
    s = ts.session("s")
    out = await s.call("go")
    assert (out.stage_from, out.stage_to, out.visible_changed) == ("a", "b", False)
    out = await s.call("go")  # already there: nothing to report
    assert (out.stage_to, out.stage_changed) == (None, False)
    assert (await s.call("x")).stage_changed is False


async def test_set_stage_checks_the_stage_and_reports_visible_changes() -> None:
    ts = shop()
    s = ts.session("s")
    with pytest.raises(ConfigError) as err:
        await s.set_stage("shipping")
    assert err.value.message == (
        "Unknown stage 'shipping' in set_stage; known stages: browse, checkout, done"
    )
    assert await s.set_stage("checkout") is True
    assert await s.set_stage("checkout") is False


async def test_stages_are_per_session() -> None:
    ts = shop()
    a, b = ts.session("a"), ts.session("b")
    await a.call("cart_add")
    assert (await a.view()).ctx.stage == "checkout"
    assert (await b.view()).ctx.stage == "browse"


def test_flow_validation_names_the_problem() -> None:
    with pytest.raises(ConfigError) as err:
        Flow(stages=(Stage("a", enables=("zzz",)),))
    assert err.value.message == "Stage 'a' enables unknown stage 'zzz'"
    with pytest.raises(ConfigError) as err:
        Flow(stages=(Stage("a", transitions=(Transition("t", "zzz"),)),))
    assert err.value.message == "Stage 'a' transitions to unknown stage 'zzz'"
    with pytest.raises(ConfigError) as err:
        Flow(stages=(Stage("a"), Stage("a")))
    assert err.value.message == "Duplicate stage 'a'"


def test_flow_from_config_mapping() -> None:
    flow = Flow.from_mapping(
        {
            "initial": "browse",
            "stages": [
                {"name": "browse", "transitions": [{"on": "cart_add", "to": "checkout"}]},
                {"name": "checkout", "enables": ["browse"]},
            ],
        }
    )
    assert flow.initial == "browse"
    assert flow.next_stage("browse", "cart_add", None) == "checkout"
    assert flow.allowed_stages("checkout") == frozenset({"checkout", "browse"})
    assert list(flow.transition_triggers()) == ["cart_add"]
    with pytest.raises(ConfigError) as err:
        Flow.from_mapping({"stages": [{"name": "a", "transitions": [{"on": "x"}]}]})
    assert err.value.message == "stages.stages[0].transitions[0] needs 'on' and 'to'"


def test_the_default_flow_is_one_undefined_stage_that_allows_everything() -> None:
    flow = Flow()
    assert flow.names == frozenset({"undefined"})
    assert flow.allows(None, "undefined") is True
    assert flow.allows(frozenset({"undefined"}), "undefined") is True


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (
            lambda: Flow(stages=Stage("review")),  # type: ignore[arg-type]
            "The flow's stages must be a list of Stage values, got Stage(name='review', "
            "enables=(), transitions=())",
        ),
        (
            lambda: Flow(stages=({"name": "review"},)),  # type: ignore[arg-type]
            "The flow's stages must be Stage values, got {'name': 'review'}",
        ),
        (
            lambda: Flow(initial=None),  # type: ignore[arg-type]
            "The flow's initial stage must be a non-empty string, got None",
        ),
        (lambda: Stage(""), "A stage's name must be a non-empty string, got ''"),
        (
            lambda: Stage("draft", enables="review"),  # type: ignore[arg-type]
            "Stage 'draft': enables must be a list of stage names, got 'review'",
        ),
        (
            lambda: Stage("draft", transitions=(("submit", "review"),)),  # type: ignore[arg-type]
            "Stage 'draft': transitions must be Transition(on, to) values, got "
            "('submit', 'review')",
        ),
        (
            lambda: Stage("draft", transitions=Transition("submit", "review")),  # type: ignore[arg-type]
            "Stage 'draft': transitions must be a list of Transition(on, to), got "
            "Transition(on='submit', to='review')",
        ),
        (
            lambda: Transition("submit", None),  # type: ignore[arg-type]
            "The transition on 'submit': to must be a non-empty string, got None",
        ),
        (
            lambda: Flow.from_mapping({"stages": [{"name": "draft", "enables": "review"}]}),
            "Stage 'draft': enables must be a list of stage names, got 'review'",
        ),
    ],
)
def test_a_flow_built_from_values_of_the_wrong_kind_is_a_config_error_naming_them(
    make: Any, problem: str
) -> None:
    with pytest.raises(ConfigError) as err:
        make()
    assert err.value.message == problem
