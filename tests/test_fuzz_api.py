"""The public constructors given values of the wrong kind, then used: a ``ToolSet``
built from them lists, opens a group, runs every tool and counts tokens.

The property: each value is refused where it is given, with a ``TypeError``,
``ValueError`` or toolgate error that names the argument (or the tool, group or stage
it names), or it is taken and everything after works; never an ``AttributeError``,
an "unhashable" or "not iterable" ``TypeError`` deep inside at first use. Regression
cases below it are the minimal inputs the property found, each fixed in ``src``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given

from _fixtures.command import command_in_process
from _fixtures.hostile import fuzz_settings
from toolgate import (
    CallContext,
    Flow,
    Group,
    JsonlSink,
    MemoryStore,
    Policy,
    Principal,
    RateLimit,
    Stage,
    Tool,
    ToolDoc,
    ToolgateError,
    ToolSet,
    Transition,
)
from toolgate.errors import ConfigError, RegistrationError

ROOT = Path(__file__).parent.parent
SETTINGS = fuzz_settings(150)
#: what a caller might pass by mistake: other kinds, empty and odd values
wrong_values: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 2**70),
    st.floats(),
    st.text(max_size=4),
    st.sampled_from(["", "x" * 300, "code", "verified", "false"]),
    st.lists(st.one_of(st.text(max_size=3), st.integers()), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.tuples(st.text(max_size=3)),
    st.sampled_from([object(), b"x", frozenset({"a"})]),
)


WRONG_INT: Any = 5
WRONG_ZERO: Any = 0
WRONG_LIST: Any = ["code"]


def ok(arguments: Mapping[str, Any], ctx: CallContext) -> str:
    return "ok"


def with_tool(tool: Tool | None = None, group: Group | None = None, **options: Any) -> ToolSet:
    ts = ToolSet(**options)
    ts.add_group(group or Group("g", "G."))
    ts.add_tool(tool or Tool("t", "T.", ok, groups=("g",)))
    return ts


#: one keyword of one constructor, the rest valid; the ToolSet it ends up in
BUILDS: dict[str, Callable[[str, Any], tuple[ToolSet, Principal | None]]] = {
    "Tool": lambda k, v: (with_tool(Tool(**{"name": "t", "description": "T.", k: v})), None),
    "Group": lambda k, v: (
        with_tool(group=Group(**{"name": "g", "description": "G.", k: v})),
        None,
    ),
    "Policy": lambda k, v: (with_tool(Tool("t", "T.", ok, policy=Policy(**{k: v}))), None),
    "RateLimit": lambda k, v: (
        with_tool(
            Tool(
                "t",
                "T.",
                ok,
                policy=Policy(rate_limit=RateLimit(**{"max": 1, "window_s": 1.0, k: v})),
            )
        ),
        None,
    ),
    "Principal": lambda k, v: (with_tool(), Principal(**{k: v})),
    "Stage": lambda k, v: (with_tool(flow=Flow("s", (Stage(**{"name": "s", k: v}),))), None),
    "Transition": lambda k, v: (
        with_tool(
            flow=Flow("s", (Stage("s", transitions=(Transition(**{"on": "t", "to": "s", k: v}),)),))
        ),
        None,
    ),
    "Flow": lambda k, v: (
        with_tool(flow=Flow(**{"initial": "s", "stages": (Stage("s"),), k: v})),
        None,
    ),
    "ToolDoc": lambda k, v: (with_tool(Tool("t", "T.", ok, doc=ToolDoc(**{k: v}))), None),
    "MemoryStore": lambda k, v: (with_tool(store=MemoryStore(**{k: v})), None),
    "ToolSet": lambda k, v: (with_tool(**{k: v}), None),
}
KEYWORDS = {
    "Tool": ["handler", "input_schema", "title", "summary", "output_schema", "annotations",
             "groups", "visibility", "policy", "stages", "next_stage", "doc", "meta", "icons"],
    "Group": ["description", "title", "parent", "instructions", "on_activate", "on_deactivate"],
    "Policy": ["min_trust", "allowed_classes", "decision", "rate_limit"],
    "RateLimit": ["max", "window_s"],
    "Principal": ["id", "trust", "agent_class", "scope", "attributes"],
    "Stage": ["enables", "transitions"],
    "Transition": ["on", "to"],
    "Flow": ["initial", "stages"],
    "ToolDoc": ["examples", "usage_guidance", "error_guidance"],
    "MemoryStore": ["idle_ttl", "clock", "timeout"],
    "ToolSet": ["store", "flow", "trust_levels", "initial_groups", "max_tools", "max_tokens",
                "token_counter", "hidden_tool_errors", "page_size", "namespace_tools",
                "separator", "rules", "describe_before_call", "default_principal", "events",
                "search"],
}  # fmt: skip


async def use(ts: ToolSet, principal: Principal | None) -> None:
    """What a server does with a toolset: list, open the group, run each tool, count."""
    session = ts.session("k", principal)
    await session.list_tools()
    await session.list_groups()
    await session.activate(["g"])
    for name in list(ts.catalog.tools):
        with contextlib.suppress(ToolgateError):  # refused (trust, stage, rate) is fine
            await session.call(name, {})
    await session.estimate_tokens()


def names_it(error: Exception, keyword: str) -> bool:
    text = str(error).lower()
    named = keyword in text or keyword.replace("_", " ") in text
    if isinstance(error, ToolgateError):
        named = named or error.details.get("key") == keyword
        # a registration error names the tool, group or stage the value points at
        named = named or (isinstance(error, RegistrationError) and "unknown" in text)
        named = named or (keyword == "input_schema" and "inputschema" in text)
    return named


@pytest.mark.parametrize("kind", list(BUILDS))
def test_a_wrong_value_for_any_public_constructor_is_refused_by_name_or_works(kind: str) -> None:
    @SETTINGS
    @given(keyword=st.sampled_from(KEYWORDS[kind]), value=wrong_values)
    def any_value(keyword: str, value: Any) -> None:
        try:
            ts, principal = BUILDS[kind](keyword, value)
        except (TypeError, ValueError, ToolgateError) as refused:
            assert names_it(refused, keyword), (keyword, repr(refused))
            return
        try:
            asyncio.run(use(ts, principal))
        except ToolgateError as refused:  # caught at first use: still by name, never deep
            assert names_it(refused, keyword), (keyword, repr(refused))

    any_value()


# -- the minimal cases the property found ------------------------------------------------


@pytest.mark.parametrize(
    ("make", "keyword", "value", "message"),
    [
        (ToolSet, "events", [], "events must be an EventBus, got list []"),
        (ToolSet, "token_counter", "x", "token_counter must be a TokenCounter, got str 'x'"),
        (ToolSet, "rules", None, "rules must be a list of Rule, got NoneType None"),
        (ToolSet, "rules", ["x"], "each of rules must be a Rule, got str 'x'"),
        (
            ToolSet,
            "namespace_tools",
            "false",
            "namespace_tools must be True or False, got str 'false'",
        ),
        (
            ToolSet,
            "describe_before_call",
            1,
            "describe_before_call must be True or False, got int 1",
        ),
        (ToolSet, "clock", 5, "clock must be a function like time.time, got int 5"),
        (MemoryStore, "clock", 5, "store clock must be a function like time.time, got int 5"),
        (Principal, "id", ["bob"], "a principal's id must be a string, got list ['bob']"),
        (Principal, "agent_class", [], "agent_class must be a string or None, got list []"),
        (JsonlSink, "path", 5, "path must be a file path, got int 5"),
        (
            ToolSet,
            "trust_levels",
            ["low", "high"],
            "default_principal's trust 'declared' is not one of trust_levels ('low', 'high'); "
            "give a default_principal=Principal(trust=...) on the ladder",
        ),
    ],
)
def test_a_part_of_the_wrong_kind_is_refused_by_name_where_it_is_given(
    make: Callable[..., object], keyword: str, value: Any, message: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        make(**{keyword: value})
    assert (refused.value.message, refused.value.details) == (message, {"key": keyword})


@pytest.mark.parametrize(
    ("tool", "group", "message"),
    [
        (
            Tool("t", "T.", ok, groups=("g",), icons=WRONG_INT),
            None,
            "Tool 't': icons must be a list of icon dicts or None, got int 5",
        ),
        (
            Tool("t", "T.", ok, groups=("g",), doc=ToolDoc(examples=WRONG_ZERO)),
            None,
            "Tool 't': doc.examples must be a list of example dicts, got int 0",
        ),
        (None, Group("g", "G.", parent=WRONG_LIST), "Group 'g': parent must be text or None"),
    ],
)
def test_a_tool_or_group_field_of_the_wrong_kind_is_refused_at_registration(
    tool: Tool | None, group: Group | None, message: str
) -> None:
    with pytest.raises(RegistrationError) as refused:
        with_tool(tool, group)
    assert refused.value.message.startswith(message)


def test_an_events_file_that_cannot_be_opened_stops_serve_with_its_key_not_a_traceback(
    tmp_path: Path,
) -> None:
    config = json.loads((ROOT / "examples/gateway/toolgate.json").read_text())
    config["toolgate"]["events"] = {"jsonl": str(tmp_path)}  # a directory, not a file
    (tmp_path / "toolgate.json").write_text(json.dumps(config))
    done = command_in_process("serve", str(tmp_path / "toolgate.json"), "--port", "0")
    assert done.returncode == 1
    assert done.stderr == (
        f"toolgate: toolgate.events.jsonl: cannot open the events file {tmp_path}: Is a directory\n"
    )
