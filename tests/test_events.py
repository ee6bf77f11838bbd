"""Events (DESIGN §8): every decision that changes what an agent sees or can do is an
event carrying time, session key and principal id; sinks never break a request. Core."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from _fixtures.core import ok
from toolgate import (
    Event,
    EventBus,
    Group,
    JsonlSink,
    LoggingSink,
    Policy,
    Principal,
    Sink,
    Tool,
    ToolSet,
)
from toolgate.errors import ToolHidden
from toolgate.events import EVENT_TYPES
from toolgate.strategies import Delivery, DeliveryConfig


def boom(args: Any, ctx: Any) -> str:
    raise RuntimeError("disk on fire")


class Recorder:
    def __init__(self, ts: ToolSet) -> None:
        self.events: list[Event] = []
        ts.events.subscribe(self.events.append)

    def brief(self) -> list[tuple[Any, ...]]:
        return [(e.type, e.session, e.principal, without_duration(e)) for e in self.events]


def without_duration(event: Event) -> dict[str, Any]:
    """The event's data without ``duration_s``, which a call that ran must carry."""
    data = dict(event.data)
    ran = event.type == "tool.executed" and data["outcome"] != "blocked"
    if ran and data.get("reason") != "invalid-arguments":
        took = data.pop("duration_s")
        assert isinstance(took, float) and took >= 0
    assert "duration_s" not in data
    return data


async def test_registration_and_unregistration_are_events() -> None:
    ts = ToolSet()
    log = Recorder(ts)
    ts.add_group(Group("g"))
    ts.add_tool(Tool("a", handler=ok, groups=("g",)))
    ts.add_tools([Tool("b", handler=ok)])
    ts.remove_tool("a")
    assert log.brief() == [
        ("tool.registered", None, None, {"tool": "a", "groups": ["g"]}),
        ("tool.registered", None, None, {"tool": "b", "groups": []}),
        ("tool.unregistered", None, None, {"tool": "a"}),
    ]


async def test_activation_emits_group_and_surfaced_events_for_that_session() -> None:
    ts = ToolSet()
    ts.add_groups([Group("db"), Group("write", parent="db"), Group("net")])
    ts.exclusive("db", "net")
    ts.add_tools(
        [
            Tool("q", handler=ok, groups=("db",)),
            Tool("w", handler=ok, groups=("write",)),
            Tool("g", handler=ok, groups=("net",)),
        ]
    )
    log = Recorder(ts)
    s = ts.session("s1", Principal(id="alice"))
    await s.activate(["db", "write"])
    await s.activate(["net"])
    await s.activate(["db"])
    await s.deactivate(["db"])
    assert log.brief() == [
        ("group.activated", "s1", "alice", {"group": "db"}),
        ("group.activated", "s1", "alice", {"group": "write"}),
        ("tool.surfaced", "s1", "alice", {"tool": "q", "state": "enabled"}),
        ("tool.surfaced", "s1", "alice", {"tool": "w", "state": "enabled"}),
        ("group.activated", "s1", "alice", {"group": "net"}),
        ("group.deactivated", "s1", "alice", {"group": "write", "cause": "exclusion"}),
        ("group.deactivated", "s1", "alice", {"group": "db", "cause": "exclusion"}),
        ("tool.surfaced", "s1", "alice", {"tool": "g", "state": "enabled"}),
        ("tool.surfaced", "s1", "alice", {"tool": "q", "state": "disabled"}),
        ("tool.surfaced", "s1", "alice", {"tool": "w", "state": "disabled"}),
        ("group.activated", "s1", "alice", {"group": "db"}),
        ("group.deactivated", "s1", "alice", {"group": "net", "cause": "exclusion"}),
        ("tool.surfaced", "s1", "alice", {"tool": "q", "state": "enabled"}),
        ("tool.surfaced", "s1", "alice", {"tool": "g", "state": "disabled"}),
        ("group.deactivated", "s1", "alice", {"group": "db"}),
        ("tool.surfaced", "s1", "alice", {"tool": "q", "state": "disabled"}),
    ]


async def test_cascaded_deactivation_names_its_cause() -> None:
    ts = ToolSet()
    ts.add_groups([Group("db"), Group("write", parent="db")])
    s = ts.session("s")
    await s.activate(["db", "write"])
    log = Recorder(ts)
    await s.deactivate(["db"])
    assert [(e.type, dict(e.data)) for e in log.events] == [
        ("group.deactivated", {"group": "db"}),
        ("group.deactivated", {"group": "write", "cause": "cascade"}),
    ]


async def test_a_refused_or_empty_request_emits_nothing() -> None:
    ts = ToolSet()
    ts.add_group(Group("g"))
    s = ts.session("s")
    await s.activate(["g"])
    log = Recorder(ts)
    await s.activate(["g", "nope"])
    await s.deactivate(["nope"])
    assert log.events == []


async def test_calls_emit_executed_with_their_outcome() -> None:
    ts = ToolSet()
    ts.add_group(Group("hidden"))
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    ts.add_tools(
        [
            Tool("fine", handler=ok, input_schema=schema),
            Tool("broken", handler=boom),
            Tool("secret", handler=ok, groups=("hidden",)),
        ]
    )
    log = Recorder(ts)
    s = ts.session("s", Principal(id="p"))
    await s.call("fine")
    await s.call("broken")
    await s.call("fine", {"n": "x"})
    with pytest.raises(ToolHidden):
        await s.call("secret")
    assert log.brief() == [
        ("tool.executed", "s", "p", {"tool": "fine", "outcome": "success"}),
        (
            "tool.executed",
            "s",
            "p",
            {"tool": "broken", "outcome": "error", "reason": "disk on fire"},
        ),
        (
            "tool.executed",
            "s",
            "p",
            {"tool": "fine", "outcome": "error", "reason": "invalid-arguments"},
        ),
        (
            "tool.executed",
            "s",
            "p",
            {"tool": "secret", "outcome": "blocked", "reason": "group-inactive:hidden"},
        ),
    ]


async def test_describe_before_call_refusal_is_a_blocked_event() -> None:
    ts = ToolSet(describe_before_call=True)
    ts.add_tool(Tool("lazy", handler=ok))
    log = Recorder(ts)
    s = ts.session("s")
    from toolgate import DescriptionRequired

    with pytest.raises(DescriptionRequired):
        await s.call("lazy")
    await s.mark(described=["lazy"])
    assert (await s.call("lazy")).result.text_content == "ok"
    assert [without_duration(e) for e in log.events if e.type == "tool.executed"] == [
        {"tool": "lazy", "outcome": "blocked", "reason": "description-required"},
        {"tool": "lazy", "outcome": "success"},
    ]


async def test_budget_exceeded_is_an_event() -> None:
    ts = ToolSet(max_tools=1)
    ts.add_group(Group("big"))
    ts.add_tools([Tool("a", handler=ok, groups=("big",)), Tool("b", handler=ok, groups=("big",))])
    log = Recorder(ts)
    await ts.session("s").activate(["big"])
    assert log.brief() == [
        (
            "budget.exceeded",
            "s",
            "local",
            {
                "group": "big",
                "detail": "2 tools would be visible, over max_tools=1 "
                "(the activation adds 2; the budget leaves 1)",
            },
        )
    ]


async def test_revealing_tools_is_a_surfaced_event() -> None:
    ts = ToolSet()
    ts.add_group(Group("g"))
    ts.add_tool(Tool("found", handler=ok, groups=("g",)))
    log = Recorder(ts)
    s = ts.session("s")
    await s.mark(revealed=["found"])
    assert [t.name for t in await s.list_tools()] == ["found"]
    assert log.brief() == [("tool.surfaced", "s", "local", {"tool": "found", "state": "enabled"})]


def test_every_event_type_is_known_and_events_serialize_flat() -> None:
    assert {
        "tool.registered",
        "tool.unregistered",
        "tool.surfaced",
        "tool.executed",
        "tool.progressed",
        "group.activated",
        "group.deactivated",
        "budget.exceeded",
        "tool.selection",
        "config.reloaded",
        "config.refused",
    } == EVENT_TYPES
    e = Event("tool.executed", "s", "p", {"tool": "x"}, time=12.5)
    assert e.to_dict() == {
        "type": "tool.executed",
        "time": 12.5,
        "session": "s",
        "principal": "p",
        "tool": "x",
    }


def test_a_failing_sink_is_logged_and_does_not_stop_other_sinks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken(Sink):
        def handle(self, event: Event) -> None:
            raise RuntimeError("sink down")

    bus = EventBus()
    got: list[str] = []
    bus.add_sink(Broken())
    unsubscribe = bus.subscribe(lambda e: got.append(e.type))
    with caplog.at_level(logging.ERROR, logger="toolgate.events"):
        bus.emit("tool.registered", tool="x")
    assert got == ["tool.registered"]
    assert "failed on tool.registered" in caplog.text
    unsubscribe()
    bus.emit("tool.registered", tool="y")
    assert got == ["tool.registered"]


@pytest.mark.parametrize(
    ("register", "problem"),
    [
        (
            lambda bus: bus.add_sink("events.jsonl"),
            "add_sink() takes a Sink (an object with handle(event)), not str; "
            "use subscribe() for a function",
        ),
        (
            lambda bus: bus.subscribe(["audit"]),
            "subscribe() takes a function of an event, not list",
        ),
    ],
)
def test_a_sink_or_subscriber_of_the_wrong_kind_is_refused_when_added(
    register: Any, problem: str
) -> None:
    bus = EventBus()
    got: list[str] = []
    bus.subscribe(lambda e: got.append(e.type))
    with pytest.raises(TypeError) as err:
        register(bus)
    assert str(err.value) == problem
    bus.emit("tool.registered", tool="x")  # delivered as before, nothing logged
    assert got == ["tool.registered"]


def test_jsonl_and_logging_sinks_write_one_record_per_event(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bus = EventBus()
    path = tmp_path / "events" / "log.jsonl"
    bus.add_sink(JsonlSink(path))
    bus.add_sink(LoggingSink())
    with caplog.at_level(logging.INFO, logger="toolgate.events"):
        bus.emit("group.activated", session="s", principal="p", group="g")
        bus.emit("group.deactivated", session="s", principal="p", group="g")
    bus.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["type"], r["session"], r["principal"], r["group"]) for r in lines] == [
        ("group.activated", "s", "p", "g"),
        ("group.deactivated", "s", "p", "g"),
    ]
    assert all(isinstance(r["time"], float) for r in lines)
    assert [r.message.split(" ", 1)[0] for r in caplog.records] == [
        "group.activated",
        "group.deactivated",
    ]


async def test_each_listing_and_search_is_one_selection_event_of_counts() -> None:
    ts = ToolSet(page_size=2)
    ts.add_groups([Group("files", "Files"), Group("admin", "Admin")])
    ts.add_tools(
        [
            Tool("whoami", "Who am I.", handler=ok),
            Tool("read_file", "Read a file from disk.", handler=ok, groups=("files",)),
            Tool("write_file", "Write a file to disk.", handler=ok, groups=("files",)),
            Tool(
                "wipe_disk",
                "Erase the disk.",
                handler=ok,
                groups=("admin",),
                policy=Policy(min_trust="linked"),
            ),
        ]
    )
    delivery = Delivery(ts, DeliveryConfig(strategy="list_changed", search=True))
    log = Recorder(ts)
    strategy, request = delivery.request(session_key="s", principal=Principal(id="p"))
    page = await delivery.list_tools(strategy, request)
    await delivery.list_tools(strategy, request, page.next_cursor)  # same listing: no event
    searched = await delivery.call_tool(
        strategy, request, "search_tools", {"query": "file disk", "detail": "full"}
    )
    selections = [without_duration(e) for e in log.events if e.type == "tool.selection"]
    listed, found = selections
    flat = sum(ts.tool_tokens(t) for t in ts.catalog.tools.values() if t.name != "wipe_disk")
    assert {k: v for k, v in listed.items() if k != "tokens_shown"} == {
        "kind": "list",
        "strategy": "list_changed",
        "candidates": 4,
        "shown": 1,  # whoami; files is not active
        "meta": 7,  # enable/disable, list_groups, call_tool, describe, search_tools(_regex)
        "hidden_access": 1,  # wipe_disk needs trust "linked"
        "hidden_discovery": 2,
        "tokens_flat": flat,
        "tokenizer": ts.token_counter.name,
    }
    assert listed["tokens_shown"] > 0
    assert found == {
        "kind": "search",
        "strategy": "list_changed",
        "candidates": 4,
        "shown": 2,
        "meta": 0,
        "hidden_access": 1,
        "hidden_discovery": 1,
        # a meta-tool's answer counts as the model reads it: its text
        "tokens_shown": ts.token_counter.count(searched.result.text_content),
        "tokens_flat": flat,
        "tokenizer": ts.token_counter.name,
    }
