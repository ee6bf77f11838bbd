"""Rate limits and stages hold under confirmation and concurrency (DESIGN §3, §4).

A call spends a rate-limit slot only when it runs: not when it is refused or declined,
and not on the asking leg of a 2026-07-28 confirmation; a human is not asked about a
call the limit would refuse. A stage transition is worked out from the stage the session
is in when it is written, and a stage change never takes the view over a budget.
Real clients for the protocol paths (fastmcp.Client, legacy and 2026-07-28).
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as mt
import pytest
from fastmcp import Client, FastMCP

from _fixtures.core import visible_names
from toolgate import (
    CallContext,
    Event,
    Flow,
    Group,
    Policy,
    RateLimit,
    Stage,
    Tool,
    ToolSet,
    Transition,
)
from toolgate.errors import BudgetExceeded, ConfirmationRefused, RateLimited
from toolgate.fastmcp import ToolgateMiddleware
from toolgate.policy import ConfirmRequest
from toolgate.state import StateStore
from toolgate.state.redis import RedisStore


def confirmed_drop(limit: int) -> Tool:
    return Tool(
        "drop",
        "Drop the table.",
        handler=lambda a, c: "dropped",
        policy=Policy(decision="confirm", rate_limit=RateLimit(limit, 60)),
    )


class Yes:
    def __init__(self) -> None:
        self.asked = 0

    async def confirm(self, request: ConfirmRequest) -> bool:
        self.asked += 1
        return True


# -- rate limits and confirmation ---------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_confirmed_call_spends_one_slot_and_a_declined_one_none(mode: str) -> None:
    mcp = FastMCP("drops")
    ts = ToolSet()
    ts.add_tool(confirmed_drop(1))
    ToolgateMiddleware(ts).attach(mcp)
    answers = iter(["decline", "accept", "accept"])
    asked: list[str] = []

    async def human(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append(message)
        if next(answers) == "decline":
            return mt.ElicitResult(action="decline")
        return {"confirm": True}

    options: dict[str, Any] = {"mode": "legacy"} if mode == "legacy" else {}
    async with Client(mcp, elicitation_handler=human, **options) as client:
        declined = await client.call_tool_mcp("drop", {})
        ran = await client.call_tool_mcp("drop", {})
        limited = await client.call_tool_mcp("drop", {})
    assert declined.is_error is True
    assert declined.structured_content is not None
    assert declined.structured_content["code"] == "confirmation_refused"
    assert (ran.is_error, ran.content[0].text) == (False, "dropped")
    assert limited.structured_content is not None
    assert limited.structured_content["code"] == "rate_limited"
    assert len(asked) == 2  # the third call is refused before anyone is asked


async def test_a_client_that_cannot_confirm_is_refused_each_time_and_spends_nothing() -> None:
    ts = ToolSet()
    ts.add_tool(confirmed_drop(2))
    s = ts.session("s")
    for _ in range(3):
        with pytest.raises(ConfirmationRefused):
            await s.call("drop", {})
    human = Yes()
    assert (await s.call("drop", {}, confirmer=human)).result.text_content == "dropped"
    assert (await s.call("drop", {}, confirmer=human)).result.text_content == "dropped"
    with pytest.raises(RateLimited):
        await s.call("drop", {}, confirmer=human)
    assert human.asked == 2


# -- stage transitions ------------------------------------------------------------------


CART = Flow(
    initial="cart",
    stages=(
        Stage(
            "cart",
            transitions=(Transition("checkout", "paying"), Transition("cancel", "cancelled")),
        ),
        Stage("paying"),
        Stage("cancelled"),
    ),
)


def cart(
    gate: asyncio.Event,
    started: asyncio.Event,
    *,
    own_next: bool = False,
    store: StateStore | None = None,
) -> ToolSet:
    async def checkout(arguments: Any, call: CallContext) -> str:
        started.set()
        await gate.wait()
        return "checked out"

    flow = CART
    if own_next:  # the move is the tool's own next_stage, not the flow's transition
        flow = Flow(
            initial="cart",
            stages=(
                Stage("cart", transitions=(Transition("cancel", "cancelled"),)),
                Stage("paying"),
                Stage("cancelled"),
            ),
        )
    ts = ToolSet(flow=flow, store=store)
    ts.add_tools(
        [
            Tool(
                "checkout",
                "Check out.",
                handler=checkout,
                stages=frozenset({"cart"}),
                next_stage="paying" if own_next else None,
            ),
            Tool("cancel", "Cancel.", handler=lambda a, c: "cancelled", stages=frozenset({"cart"})),
            Tool("pay", "Pay.", handler=lambda a, c: "paid", stages=frozenset({"paying"})),
        ]
    )
    return ts


@pytest.mark.parametrize("own_next", [False, True], ids=["flow-transition", "tool-next-stage"])
async def test_a_call_that_finishes_after_the_stage_moved_takes_no_transition_it_lacks(
    own_next: bool,
) -> None:
    gate, started = asyncio.Event(), asyncio.Event()
    ts = cart(gate, started, own_next=own_next)
    s = ts.session("s")
    slow = asyncio.create_task(s.call("checkout", {}))
    await started.wait()  # checkout passed its checks in stage 'cart' and is running
    cancelled = await s.call("cancel", {})
    gate.set()
    out = await slow
    assert (cancelled.stage_from, cancelled.stage_to) == ("cart", "cancelled")
    assert out.result.text_content == "checked out"
    assert (out.stage_changed, out.state_error) == (False, None)
    assert (await s.state()).stage == "cancelled"
    assert await visible_names(s) == []


async def test_replicas_sharing_redis_take_transitions_from_the_stored_stage(
    redis_url: str,
) -> None:
    gate, started = asyncio.Event(), asyncio.Event()
    stores = [RedisStore(url=redis_url), RedisStore(url=redis_url)]
    try:
        one, two = (cart(gate, started, store=store) for store in stores)
        slow = asyncio.create_task(one.session("s").call("checkout", {}))
        await started.wait()
        await two.session("s").call("cancel", {})
        gate.set()
        out = await slow
        assert out.stage_changed is False
        assert (await stores[0].load("s")).stage == "cancelled"
    finally:
        for store in stores:
            await store.close()


# -- stage changes and budgets ---------------------------------------------------------


def wide(events: list[Event]) -> ToolSet:
    flow = Flow(
        initial="browse",
        stages=(Stage("browse", transitions=(Transition("go", "wide"),)), Stage("wide")),
    )
    ts = ToolSet(max_tools=3, flow=flow, initial_groups=("g",))
    ts.events.subscribe(events.append)
    ts.add_group(Group("g", "G."))
    ts.add_tool(Tool("go", "Go.", handler=lambda a, c: "went"))
    ts.add_tool(
        Tool("b0", "B.", handler=lambda a, c: "b", groups=("g",), stages=frozenset({"browse"}))
    )
    for i in range(3):
        ts.add_tool(
            Tool(f"w{i}", "W.", handler=lambda a, c: "w", groups=("g",), stages=frozenset({"wide"}))
        )
    return ts


async def test_a_transition_that_would_exceed_max_tools_is_refused_and_reported() -> None:
    events: list[Event] = []
    s = wide(events).session("s")
    out = await s.call("go", {})
    assert out.result.text_content == "went"  # the tool ran: its result stands
    assert (out.stage_from, out.stage_to, out.stage_changed) == ("browse", None, False)
    assert out.state_error == (
        "4 tools would be visible, over max_tools=3 (the move to stage 'wide' adds 2; "
        "the budget leaves 1)"
    )
    assert await visible_names(s) == ["b0", "go"]
    assert (await s.state()).stage is None
    exceeded = [e.data for e in events if e.type == "budget.exceeded"]
    assert exceeded == [{"stage": "wide", "trigger": "go", "detail": out.state_error}]
    assert not [e for e in events if e.type == "tool.progressed"]


async def test_set_stage_over_a_budget_raises_and_changes_nothing() -> None:
    events: list[Event] = []
    s = wide(events).session("s")
    with pytest.raises(BudgetExceeded) as err:
        await s.set_stage("wide")
    assert err.value.message.startswith("Cannot move to stage 'wide': 4 tools would be visible")
    assert await visible_names(s) == ["b0", "go"]
    assert [e.type for e in events if e.type == "budget.exceeded"] == ["budget.exceeded"]
