"""``toolgate.agent.filter_tools`` / ``next_state``: TrustGraph's request-side group and
state semantics, one test per rule, on TrustGraph-style dicts and toolgate ``Tool`` values.
No MCP imports."""

from __future__ import annotations

from typing import Any

import pytest

from toolgate import ConfigError, Tool
from toolgate.agent import filter_tools, is_available, next_state, system_prompt


def names(tools: list[Any]) -> list[str]:
    return [t["name"] if isinstance(t, dict) else t.name for t in tools]


KNOWLEDGE: dict[str, Any] = {
    "name": "knowledge-query",
    "group": ["read-only", "knowledge", "basic"],
}
UNGROUPED: dict[str, Any] = {"name": "calculator"}
WRITER: dict[str, Any] = {"name": "graph-update", "group": ["write"]}
TOOLS = [KNOWLEDGE, UNGROUPED, WRITER]


# -- groups ------------------------------------------------------------------------------------


def test_a_request_without_groups_gets_the_default_group() -> None:
    assert names(filter_tools(TOOLS)) == ["calculator"]


def test_a_tool_without_a_group_field_is_in_the_default_group() -> None:
    assert names(filter_tools(TOOLS, ["default"])) == ["calculator"]


def test_a_request_gets_tools_sharing_at_least_one_group() -> None:
    assert names(filter_tools(TOOLS, ["knowledge"])) == ["knowledge-query"]
    assert names(filter_tools(TOOLS, ["basic", "write"])) == ["knowledge-query", "graph-update"]


def test_the_star_wildcard_grants_every_tool() -> None:
    assert names(filter_tools(TOOLS, ["*"])) == ["knowledge-query", "calculator", "graph-update"]
    assert names(filter_tools(TOOLS, ["nothing", "*"])) == names(TOOLS)


def test_an_empty_group_list_means_no_tools() -> None:
    assert filter_tools(TOOLS, []) == []


def test_group_names_are_case_sensitive() -> None:
    assert filter_tools(TOOLS, ["Knowledge"]) == []
    assert filter_tools(TOOLS, ["DEFAULT"]) == []


def test_star_is_a_wildcard_only_on_the_request_side() -> None:
    starred = {"name": "s", "group": ["*"]}
    assert filter_tools([starred], ["read-only"]) == []
    assert filter_tools([starred]) == []
    assert names(filter_tools([starred], ["*"])) == ["s"]


def test_a_tool_with_an_explicit_empty_group_list_matches_only_the_wildcard() -> None:
    orphan = {"name": "o", "group": []}
    assert filter_tools([orphan]) == []
    assert names(filter_tools([orphan], ["*"])) == ["o"]


def test_a_single_group_string_counts_as_a_one_group_list() -> None:
    assert names(filter_tools([{"name": "k", "group": "knowledge"}], ["knowledge"])) == ["k"]


def test_a_mapping_of_tools_stays_a_mapping() -> None:
    by_name = {t["name"]: t for t in TOOLS}
    assert filter_tools(by_name, ["write"]) == {"graph-update": WRITER}


def test_request_groups_given_as_a_string_are_refused() -> None:
    with pytest.raises(ConfigError) as err:
        filter_tools(TOOLS, "write")
    assert err.value.message == (
        "Request groups must be a list of group names, got the string 'write'"
    )


def test_malformed_group_fields_are_refused() -> None:
    with pytest.raises(ConfigError) as err:
        filter_tools([{"name": "bad", "group": [1]}], ["*"])
    assert err.value.message == "Tool 'group' must be a list of strings, got [1]"


# -- states ------------------------------------------------------------------------------------


ANALYSIS = {"name": "analyse", "available_in_states": ["analysis"]}
RESEARCH = {"name": "research", "available_in_states": ["undefined", "research"]}
ANYWHERE = {"name": "anywhere"}
STATEFUL = [ANALYSIS, RESEARCH, ANYWHERE]


def test_a_request_without_a_state_is_in_the_undefined_state() -> None:
    assert names(filter_tools(STATEFUL)) == ["research", "anywhere"]
    assert names(filter_tools(STATEFUL, state="")) == ["research", "anywhere"]
    assert names(filter_tools(STATEFUL, state="undefined")) == ["research", "anywhere"]


def test_a_tool_without_states_is_available_in_every_state() -> None:
    for state in ("undefined", "analysis", "whatever"):
        assert "anywhere" in names(filter_tools(STATEFUL, state=state))


def test_a_tool_with_states_is_available_only_in_them() -> None:
    assert names(filter_tools(STATEFUL, state="analysis")) == ["analyse", "anywhere"]
    assert names(filter_tools(STATEFUL, state="research")) == ["research", "anywhere"]
    assert names(filter_tools(STATEFUL, state="Research")) == ["anywhere"]


def test_trustgraphs_code_spelling_applicable_states_is_accepted() -> None:
    tool = {"name": "t", "applicable-states": ["analysis"]}
    assert filter_tools([tool]) == []
    assert names(filter_tools([tool], state="analysis")) == ["t"]


def test_a_star_state_and_an_empty_state_list() -> None:
    assert names(filter_tools([{"name": "t", "applicable-states": ["*"]}], state="x")) == ["t"]
    assert filter_tools([{"name": "t", "available_in_states": []}], state="undefined") == []


def test_objects_with_a_config_attribute_are_read_like_trustgraphs_tools() -> None:
    class Impl:
        def __init__(self, config: dict[str, Any]) -> None:
            self.config = config
            self.name = config["name"]

    tools = [Impl({"name": "a", "group": ["g"]}), Impl({"name": "b"})]
    assert [t.name for t in filter_tools(tools, ["g"])] == ["a"]


# -- groups and states together ---------------------------------------------------------------


MIXED = [
    {"name": "q", "group": ["read-only"], "available_in_states": ["undefined", "research"]},
    {"name": "w", "group": ["write"], "available_in_states": ["analysis"]},
    {"name": "r", "group": ["read-only", "write"]},
    {"name": "d"},
]


@pytest.mark.parametrize(
    ("groups", "state", "expected"),
    [
        (None, None, ["d"]),
        (["read-only"], None, ["q", "r"]),
        (["read-only"], "analysis", ["r"]),
        (["write"], "analysis", ["w", "r"]),
        (["write"], "research", ["r"]),
        (["*"], "research", ["q", "r", "d"]),
        (["*"], "analysis", ["w", "r", "d"]),
        ([], "analysis", []),
        (["default", "write"], "undefined", ["r", "d"]),
    ],
)
def test_a_tool_must_match_both_the_groups_and_the_state(
    groups: list[str] | None, state: str | None, expected: list[str]
) -> None:
    assert names(filter_tools(MIXED, groups, state)) == expected


# -- toolgate tools ----------------------------------------------------------------------------


TG_TOOLS = [
    Tool("search", groups=("catalog",)),
    Tool("ping"),
    Tool("pay", groups=("cart",), stages=frozenset({"checkout"}), next_stage="done"),
    Tool(
        "add",
        groups=("cart", "catalog"),
        stages=frozenset({"browse", "checkout"}),
        next_stage="checkout",
    ),
]


def test_toolgate_tools_use_their_groups_and_stages() -> None:
    assert names(filter_tools(TG_TOOLS)) == ["ping"]
    assert names(filter_tools(TG_TOOLS, ["catalog"])) == ["search"]
    assert names(filter_tools(TG_TOOLS, ["catalog"], "browse")) == ["search", "add"]
    assert names(filter_tools(TG_TOOLS, ["cart"], "checkout")) == ["pay", "add"]
    assert names(filter_tools(TG_TOOLS, ["*"], "undefined")) == ["search", "ping"]


def test_is_available_answers_for_one_tool() -> None:
    assert is_available(UNGROUPED) is True
    assert is_available(WRITER) is False
    assert is_available(WRITER, ["write"], "anything") is True


# -- state transitions -------------------------------------------------------------------------


def test_a_successful_step_moves_to_the_tools_state() -> None:
    tool = {"name": "knowledge-query", "state": "analysis"}
    assert next_state(tool, "undefined", True) == "analysis"
    assert next_state(tool, None, True) == "analysis"


def test_a_failed_step_keeps_the_state() -> None:
    assert next_state({"name": "k", "state": "analysis"}, "research", False) == "research"
    assert next_state({"name": "k", "state": "analysis"}, None, False) == "undefined"


def test_a_tool_without_a_state_keeps_the_state() -> None:
    assert next_state({"name": "k"}, "research", True) == "research"
    assert next_state({"name": "k", "state": ""}, "research", True) == "research"
    assert next_state({"name": "k", "state": None}, "", True) == "undefined"


def test_toolgate_tools_transition_to_their_next_stage() -> None:
    pay, ping = TG_TOOLS[2], TG_TOOLS[1]
    assert next_state(pay, "checkout", True) == "done"
    assert next_state(pay, "checkout", False) == "checkout"
    assert next_state(ping, "checkout", True) == "checkout"


def test_a_non_string_state_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        next_state({"name": "k", "state": 3}, "x", True)
    assert err.value.message == "Tool 'state' must be a string, got 3"


def test_a_filtered_walk_through_states() -> None:
    """A two-step agent run: research tools first, then the analysis tools it unlocks."""
    tools = [
        {"name": "find", "group": ["research"], "state": "analysis"},
        {"name": "summarise", "group": ["research"], "available_in_states": ["analysis"]},
    ]
    state = None
    step1 = filter_tools(tools, ["research"], state)
    assert names(step1) == ["find"]
    state = next_state(step1[0], state, True)
    assert names(filter_tools(tools, ["research"], state)) == ["find", "summarise"]


@pytest.mark.parametrize(
    ("call", "problem"),
    [
        (lambda: filter_tools(None), "filter_tools' tools must be a list of tools, got None"),  # type: ignore[call-overload]
        (
            lambda: filter_tools("search"),
            "filter_tools' tools must be a list of tools, got 'search'",
        ),
        (lambda: filter_tools(TOOLS, 5), "Request groups must be a list of group names, got 5"),  # type: ignore[call-overload]
        (
            lambda: filter_tools(TOOLS, ["read-only", 5]),  # type: ignore[list-item]
            "Request groups must be a list of group names (strings), got ('read-only', 5)",
        ),
        (lambda: filter_tools(TOOLS, ["*"], 3), "Request state must be a string, got 3"),  # type: ignore[call-overload]
        (lambda: system_prompt(None), "system_prompt's tools must be a list of tools, got None"),  # type: ignore[arg-type]
        (
            lambda: system_prompt([{"description": "No name."}]),
            "system_prompt's tools are wire dicts or models with a name, got "
            "{'description': 'No name.'}",
        ),
    ],
)
def test_a_request_or_tool_list_of_the_wrong_kind_is_refused_naming_it(
    call: Any, problem: str
) -> None:
    with pytest.raises(ConfigError) as err:
        call()
    assert err.value.message == problem
