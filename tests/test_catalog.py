"""Registration: the catalog validates every tool, group, exclusion set and stage at the
call that is wrong, registers nothing on error, and bumps its version on each change.
Core only: no MCP imports."""

from __future__ import annotations

from typing import Any

import pytest

from _fixtures.core import T, ok
from toolgate import (
    Catalog,
    ConfigError,
    Flow,
    Group,
    RegistrationError,
    Stage,
    Tool,
    ToolDoc,
    ToolgateError,
    ToolNotFound,
    ToolSet,
    When,
)

# -- tool names ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["a", "A.b-c_9", "x" * 128, "files.read_file", "UPPER", "a-b", "a_b", "1"],
)
def test_valid_mcp_tool_names_register(name: str) -> None:
    cat = Catalog()
    cat.add_tool(T(name))
    assert cat.sorted_names() == (name,)


@pytest.mark.parametrize(
    "name",
    ["", "x" * 129, "has space", "slash/name", "colon:name", "tab\tname", "é", "a,b", "a*"],
)
def test_invalid_tool_names_are_refused_with_the_mcp_rule_in_the_message(name: str) -> None:
    cat = Catalog()
    with pytest.raises(RegistrationError) as err:
        cat.add_tool(T(name))
    assert err.value.message == (
        f"Invalid tool name {name!r}: MCP tool names are 1-128 characters of A-Z a-z 0-9 _ . -"
    )
    assert cat.tools == {}
    assert cat.version == 0


def test_a_129_character_name_is_one_too_many() -> None:
    cat = Catalog()
    cat.add_tool(T("a" * 128))
    with pytest.raises(RegistrationError):
        cat.add_tool(T("b" * 129))
    assert list(cat.tools) == ["a" * 128]


# -- group names -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["files", "file_ops", "file-ops", "a1", "x" * 64, "a_b-c"])
def test_valid_group_names_register(name: str) -> None:
    cat = Catalog()
    cat.add_group(Group(name))
    assert list(cat.groups) == [name]


@pytest.mark.parametrize(
    "name",
    ["", "Files", "file ops", "file.ops", "_files", "files_", "file__ops", "a-_b", "x" * 65, "é"],
)
def test_invalid_group_names_are_refused(name: str) -> None:
    cat = Catalog()
    with pytest.raises(RegistrationError) as err:
        cat.add_group(Group(name))
    assert err.value.message.startswith(f"Invalid group name {name!r}: ")
    assert cat.groups == {}


def test_default_is_reserved_for_ungrouped_tools() -> None:
    cat = Catalog()
    with pytest.raises(RegistrationError) as err:
        cat.add_group(Group("default"))
    assert err.value.message == ("Group name 'default' is reserved: it stands for ungrouped tools")


def test_duplicate_group_is_refused() -> None:
    cat = Catalog()
    cat.add_group(Group("files"))
    with pytest.raises(RegistrationError) as err:
        cat.add_group(Group("files"))
    assert err.value.message == "Duplicate group 'files'"


def test_duplicate_group_within_one_batch_is_refused_and_nothing_registers() -> None:
    cat = Catalog()
    with pytest.raises(RegistrationError):
        cat.add_groups([Group("files"), Group("net"), Group("files")])
    assert cat.groups == {}


def test_groups_colliding_on_the_groups_extension_wire_are_refused() -> None:
    cat = Catalog()
    cat.add_group(Group("file_ops"))
    with pytest.raises(RegistrationError) as err:
        cat.add_group(Group("file-ops"))
    assert err.value.message == (
        "Group 'file-ops' collides with group 'file_ops': both are 'file-ops' on the "
        "groups-extension wire"
    )
    assert list(cat.groups) == ["file_ops"]


def test_wire_collision_within_one_batch_is_refused() -> None:
    cat = Catalog()
    with pytest.raises(RegistrationError):
        cat.add_groups([Group("a-b"), Group("a_b")])
    assert cat.groups == {}


def test_unknown_parent_is_refused() -> None:
    cat = Catalog()
    with pytest.raises(RegistrationError) as err:
        cat.add_group(Group("write", parent="database"))
    assert err.value.message == "Group 'write' names unknown parent 'database'"


def test_parents_may_follow_their_children_in_one_batch() -> None:
    cat = Catalog()
    cat.add_groups([Group("leaf", parent="mid"), Group("mid", parent="top"), Group("top")])
    assert cat.ancestors("leaf") == ["mid", "top"]
    assert cat.children(None) == ("top",)
    assert cat.descendants("top") == ["mid", "leaf"]
    assert [cat.depth(g) for g in ("top", "mid", "leaf")] == [0, 1, 2]


def test_a_cycle_through_add_groups_is_refused_and_nothing_registers() -> None:
    cat = Catalog()
    with pytest.raises(RegistrationError) as err:
        cat.add_groups([Group("a", parent="b"), Group("b", parent="c"), Group("c", parent="a")])
    assert err.value.message == "Group cycle: a -> b -> c -> a"
    assert cat.groups == {}
    assert cat.version == 0


def test_a_group_cannot_be_its_own_parent() -> None:
    cat = Catalog()
    with pytest.raises(RegistrationError) as err:
        cat.add_groups([Group("a", parent="a")])
    assert err.value.message == "Group cycle: a -> a"


# -- tools and their references --------------------------------------------------------


def test_duplicate_tool_is_refused() -> None:
    cat = Catalog()
    cat.add_tool(T("read"))
    with pytest.raises(RegistrationError) as err:
        cat.add_tool(T("read"))
    assert err.value.message == "Duplicate tool 'read'"


def test_duplicate_tool_within_one_batch_registers_nothing() -> None:
    cat = Catalog()
    with pytest.raises(RegistrationError):
        cat.add_tools([T("a"), T("b"), T("a")])
    assert cat.tools == {}


def test_tool_in_unknown_group_is_refused() -> None:
    cat = Catalog()
    with pytest.raises(RegistrationError) as err:
        cat.add_tool(T("read", "files"))
    assert err.value.message == "Tool 'read' names unknown group 'files'"
    assert err.value.details == {"name": "read", "group": "files"}


@pytest.mark.parametrize(
    "schema",
    [{}, {"type": "string"}, {"type": "array"}, {"properties": {}}],
)
def test_input_schema_must_be_an_object_schema(schema: dict[str, Any]) -> None:
    cat = Catalog()
    with pytest.raises(RegistrationError) as err:
        cat.add_tool(T("read", input_schema=schema))
    assert err.value.message == (
        'Tool \'read\': inputSchema must be a JSON Schema object with "type": "object"'
    )


def test_non_tool_values_are_refused() -> None:
    cat = Catalog()
    with pytest.raises(RegistrationError) as err:
        cat.add_tools(["read"])  # type: ignore[list-item]
    assert err.value.message == "Expected a Tool, got str"
    with pytest.raises(RegistrationError) as err:
        cat.add_groups(["files"])  # type: ignore[list-item]
    assert err.value.message == "Expected a Group, got str"


def test_a_tool_given_one_group_as_a_string_is_in_that_group() -> None:
    tool = Tool("read", groups="files")  # type: ignore[arg-type]
    assert tool.groups == ("files",)


def test_tool_summary_is_the_first_sentence_unless_given() -> None:
    assert Tool("a", "Read a file. Returns text.").summary_text == "Read a file."
    assert Tool("a", "First line\nsecond line").summary_text == "First line"
    assert Tool("a", "Read it. More.", summary="Reads.").summary_text == "Reads."


# -- reserved meta-tool names ----------------------------------------------------------


def test_reserving_a_meta_tool_name_then_adding_a_tool_with_it_is_refused() -> None:
    cat = Catalog()
    cat.reserve(["list_groups", "call_tool"], owner="menu")
    with pytest.raises(RegistrationError) as err:
        cat.add_tool(T("list_groups"))
    assert err.value.message == (
        "Tool name 'list_groups' is reserved for the meta-tool 'menu'; "
        "rename the tool or configure a different meta-tool name"
    )
    assert cat.tools == {}


def test_adding_a_tool_then_reserving_its_name_is_refused() -> None:
    cat = Catalog()
    cat.add_tool(T("call_tool"))
    with pytest.raises(RegistrationError) as err:
        cat.reserve(["list_groups", "call_tool"], owner="menu")
    assert err.value.message == (
        "Meta-tool name 'call_tool' (menu) collides with a registered tool; "
        "configure a different meta-tool name or rename the tool"
    )
    # all-or-nothing: list_groups was not reserved either
    cat.add_tool(T("list_groups"))
    assert cat.sorted_names() == ("call_tool", "list_groups")


def test_released_names_can_be_used_by_tools() -> None:
    cat = Catalog()
    cat.reserve(["search_tools"], owner="search")
    cat.release("search")
    cat.add_tool(T("search_tools"))
    assert "search_tools" in cat.tools


# -- exclusion sets --------------------------------------------------------------------


def test_exclusion_set_needs_two_known_groups() -> None:
    cat = Catalog()
    cat.add_groups([Group("a"), Group("b")])
    with pytest.raises(RegistrationError) as err:
        cat.add_exclusion(["a"])
    assert err.value.message == "An exclusion set needs two or more groups: ['a']"
    with pytest.raises(RegistrationError) as err:
        cat.add_exclusion(["a", "a"])
    assert err.value.message == "An exclusion set needs two or more groups: ['a', 'a']"
    with pytest.raises(RegistrationError) as err:
        cat.add_exclusion(["a", "zzz"])
    assert err.value.message == "Exclusion set names unknown group 'zzz'"
    with pytest.raises(RegistrationError) as err:
        cat.add_exclusion("ab")
    assert err.value.message == "An exclusion set is a list of group names, not a string"
    assert cat.exclusions == ()


def test_an_exclusion_set_cannot_hold_a_group_and_its_ancestor() -> None:
    cat = Catalog()
    cat.add_groups([Group("db"), Group("write", parent="db"), Group("other")])
    with pytest.raises(RegistrationError) as err:
        cat.add_exclusion(["write", "db"])
    assert err.value.message == (
        "Exclusion set ['db', 'write'] holds group 'write' and its ancestor 'db'; "
        "a group cannot exclude its own ancestor"
    )
    cat.add_exclusion(["write", "other"])
    assert cat.exclusions == (frozenset({"write", "other"}),)


# -- stages ----------------------------------------------------------------------------


def test_tool_in_an_unknown_stage_is_refused() -> None:
    cat = Catalog(Flow(initial="browse", stages=(Stage("browse"), Stage("checkout"))))
    with pytest.raises(RegistrationError) as err:
        cat.add_tool(T("pay", stages=["payment"]))
    assert err.value.message == (
        "Tool 'pay' is available in unknown stage 'payment'; known stages: browse, checkout"
    )
    with pytest.raises(RegistrationError) as err:
        cat.add_tool(T("add", next_stage="payment"))
    assert err.value.message == "Tool 'add' leads to unknown stage 'payment'"
    assert cat.tools == {}


def test_replacing_the_flow_rechecks_registered_tools() -> None:
    cat = Catalog(Flow(initial="browse", stages=(Stage("checkout"),)))
    cat.add_tool(T("pay", stages=["checkout"]))
    with pytest.raises(RegistrationError):
        cat.set_flow(Flow(initial="browse"))
    assert cat.flow.names == frozenset({"browse", "checkout"})


def test_star_stage_means_every_stage_in_any_container() -> None:
    assert Tool("a", stages=["*"]).stages is None  # type: ignore[arg-type]
    assert Tool("a", stages=frozenset({"*"})).stages is None
    assert Tool("a", stages="browse").stages == frozenset({"browse"})  # type: ignore[arg-type]


# -- versions --------------------------------------------------------------------------


def test_every_change_bumps_the_version_and_a_refused_one_does_not() -> None:
    cat = Catalog(Flow(initial="browse", stages=(Stage("checkout"),)))
    versions = [cat.version]
    cat.add_group(Group("a"))
    versions.append(cat.version)
    cat.add_groups([Group("b"), Group("c", parent="a")])
    versions.append(cat.version)
    cat.add_exclusion(["a", "b"])
    versions.append(cat.version)
    cat.add_tool(T("x", "a"))
    versions.append(cat.version)
    cat.update_tool("x", description="Changed.")
    versions.append(cat.version)
    cat.reserve(["meta"], owner="m")
    versions.append(cat.version)
    cat.set_flow(Flow(initial="browse", stages=(Stage("checkout"), Stage("paid"))))
    versions.append(cat.version)
    cat.touch()
    versions.append(cat.version)
    cat.remove_tool("x")
    versions.append(cat.version)
    cat.remove_group("c")
    versions.append(cat.version)
    assert versions == list(range(11))
    with pytest.raises(RegistrationError):
        cat.add_tool(T("bad name"))
    with pytest.raises(RegistrationError):
        cat.remove_tool("nope")
    assert cat.version == 10


def test_listeners_hear_every_change() -> None:
    cat = Catalog()
    seen: list[int] = []
    cat.on_change(lambda c: seen.append(c.version))
    cat.add_group(Group("a"))
    cat.add_tool(T("x", "a"))
    assert seen == [1, 2]


# -- removal ---------------------------------------------------------------------------


def test_a_group_with_children_or_tools_cannot_be_removed() -> None:
    cat = Catalog()
    cat.add_groups([Group("a"), Group("b", parent="a"), Group("c")])
    cat.add_tool(T("x", "c"))
    with pytest.raises(RegistrationError) as err:
        cat.remove_group("a")
    assert err.value.message == "Group 'a' has child groups ['b']; remove them first"
    with pytest.raises(RegistrationError) as err:
        cat.remove_group("c")
    assert err.value.message == "Group 'c' still has tools ['x']; remove them first"
    with pytest.raises(RegistrationError) as err:
        cat.remove_group("zzz")
    assert err.value.message == "Unknown group 'zzz'"


def test_removing_a_group_shrinks_its_exclusion_sets() -> None:
    cat = Catalog()
    cat.add_groups([Group("a"), Group("b"), Group("c")])
    cat.add_exclusion(["a", "b", "c"])
    cat.add_exclusion(["a", "b"])
    cat.remove_group("b")
    assert cat.exclusions == (frozenset({"a", "c"}),)


async def test_unregistering_a_tool_at_run_time_hides_it_from_live_sessions() -> None:
    ts = ToolSet()
    ts.add_group(Group("files"))
    ts.add_tools([T("read", "files"), T("ping")])
    s = ts.session("s1")
    await s.activate(["files"])
    assert [t.name for t in await s.list_tools()] == ["ping", "read"]
    removed = ts.remove_tool("read")
    assert removed.name == "read"
    assert [t.name for t in await s.list_tools()] == ["ping"]
    with pytest.raises(ToolNotFound) as err:
        await s.call("read")
    assert err.value.message == "Unknown tool: read"
    # the group stays active and a re-registered tool reappears
    ts.add_tool(T("read", "files"))
    assert [t.name for t in await s.list_tools()] == ["ping", "read"]


def test_indexes_follow_the_catalog() -> None:
    cat = Catalog()
    cat.add_groups([Group("a"), Group("b")])
    cat.add_tools([T("z", "a"), T("y", "a", "b"), T("root")])
    assert cat.tools_in("a") == ("y", "z")
    assert cat.tools_in("b") == ("y",)
    assert cat.ungated() == ("root",)
    cat.remove_tool("y")
    assert cat.tools_in("b") == ()
    assert cat.sorted_names() == ("root", "z")


# -- values of the wrong kind: refused at the call, named, nothing registered ------------------


def _registered(ts: ToolSet) -> tuple[int, dict[str, Tool], dict[str, Group], tuple[Any, ...]]:
    cat = ts.catalog
    return cat.version, dict(cat.tools), dict(cat.groups), tuple(cat.exclusions)


def _toolset() -> ToolSet:
    ts = ToolSet()
    ts.add_groups([Group("files"), Group("notes")])
    ts.add_tool(T("read", "files"))
    return ts


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        (
            {"handler": "run"},
            "handler must be a function (arguments, context) or None, got str 'run'",
        ),
        (
            {"visibility": "always"},
            "visibility must be ALWAYS, BY_GROUP or When(predicate), got str 'always'",
        ),
        (
            {"visibility": When("flag")},  # type: ignore[arg-type]
            "the When predicate must be a function of a StateSnapshot, got str 'flag'",
        ),
        ({"policy": "deny"}, "policy must be a Policy, got str 'deny'"),
        ({"description": None}, "description must be text, got NoneType None"),
        ({"title": 5}, "title must be text or None, got int 5"),
        ({"output_schema": "object"}, "output_schema must be a dict or None, got str 'object'"),
        (
            {"annotations": ["readOnly"]},
            "annotations must be a dict or None, got list ['readOnly']",
        ),
        ({"next_stage": 2}, "next_stage must be a stage name or None, got int 2"),
        ({"doc": "see the README"}, "doc must be a ToolDoc or None, got str 'see the README'"),
        ({"icons": "icon.png"}, "icons must be a list of icon dicts or None, got str 'icon.png'"),
        (
            {"doc": ToolDoc(examples="write('a')")},  # type: ignore[arg-type]
            "doc.examples must be a list of example dicts, got str \"write('a')\"",
        ),
        (
            {"doc": ToolDoc(usage_guidance="Use it rarely.")},  # type: ignore[arg-type]
            "doc.usage_guidance must be a dict or None, got str 'Use it rarely.'",
        ),
    ],
)
def test_a_tool_field_of_the_wrong_kind_is_refused_at_registration_and_nothing_registers(
    fields: dict[str, Any], problem: str
) -> None:
    ts = _toolset()
    before = _registered(ts)
    bad = Tool("write", **{"description": "Write.", "handler": ok, **fields})
    with pytest.raises(RegistrationError) as err:
        ts.add_tools([T("list_files", "files"), bad])
    assert err.value.message == f"Tool 'write': {problem}"
    assert _registered(ts) == before


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"groups": None}, "groups must be a list of names, got None"),
        ({"groups": [["files"]]}, "groups must be a list of names, got [['files']]"),
        ({"stages": [1]}, "stages must be a list of names, got [1]"),
    ],
)
def test_a_tools_groups_or_stages_that_are_not_names_are_refused_when_the_tool_is_made(
    fields: dict[str, Any], problem: str
) -> None:
    with pytest.raises(RegistrationError) as err:
        Tool("write", "Write.", handler=ok, **fields)
    assert err.value.message == f"Tool 'write': {problem}"


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        (
            {"on_activate": "open_db"},
            "on_activate must be a function taking a HookContext, got str 'open_db'",
        ),
        ({"on_deactivate": 5}, "on_deactivate must be a function taking a HookContext, got int 5"),
        ({"description": None}, "description must be text, got NoneType None"),
        ({"title": 5}, "title must be text or None, got int 5"),
        ({"instructions": ["step"]}, "instructions must be text or None, got list ['step']"),
    ],
)
def test_a_group_field_of_the_wrong_kind_is_refused_at_registration_and_nothing_registers(
    fields: dict[str, Any], problem: str
) -> None:
    ts = _toolset()
    before = _registered(ts)
    with pytest.raises(RegistrationError) as err:
        ts.add_groups([Group("admin"), Group("db", **fields)])
    assert err.value.message == f"Group 'db': {problem}"
    assert _registered(ts) == before


@pytest.mark.parametrize(
    ("call", "problem"),
    [
        (
            lambda ts: ts.add_tools(T("write")),
            "add_tools takes a list of Tool values, got Tool; for one, use add_tool",
        ),
        (lambda ts: ts.add_tools(None), "add_tools takes a list of Tool values, got NoneType"),
        (lambda ts: ts.add_tool("write"), "Expected a Tool, got str"),
        (lambda ts: ts.add_tools([T("write"), "list_files"]), "Expected a Tool, got str"),
        (
            lambda ts: ts.add_groups(Group("admin")),
            "add_groups takes a list of Group values, got Group; for one, use add_group",
        ),
        (
            lambda ts: ts.exclusive(["files", "notes"]),
            "An exclusion set lists group names (strings), one per argument: "
            "exclusive('a', 'b'); it holds list ['files', 'notes']",
        ),
        (
            lambda ts: ts.set_flow({"initial": "draft"}),
            "flow must be a Flow (Flow.from_mapping makes one from config), got dict "
            "{'initial': 'draft'}",
        ),
        (
            lambda ts: ts.catalog.update_tool("read", desciption="Typo."),
            "Tool 'read': no field 'desciption' to update",
        ),
    ],
)
def test_a_registration_call_given_the_wrong_kind_of_argument_is_refused_and_changes_nothing(
    call: Any, problem: str
) -> None:
    ts = _toolset()
    before = _registered(ts)
    with pytest.raises(RegistrationError) as err:
        call(ts)
    assert err.value.message == problem
    assert _registered(ts) == before
    assert ts.catalog.flow == Flow()


@pytest.mark.parametrize(
    ("wire", "got"), [({}, "no name"), ({"name": 5}, "no name"), ("read", "a str")]
)
def test_a_tool_from_a_wire_definition_without_a_name_is_a_registration_error(
    wire: Any, got: str
) -> None:
    with pytest.raises(RegistrationError) as err:
        Tool.from_wire(wire)
    assert err.value.message == (
        f'Tool.from_wire takes an MCP tool definition, a dict with a string "name"; got {got}'
    )


@pytest.mark.parametrize(
    ("kwargs", "error", "problem"),
    [
        (
            {"initial_groups": "files"},
            ConfigError,
            "initial_groups must be a list of group names, got the string 'files'",
        ),
        (
            {"initial_groups": None},
            ConfigError,
            "initial_groups must be a list of group names, got NoneType None",
        ),
        (
            {"trust_levels": "low"},
            ConfigError,
            "trust_levels must be a list of level names, got the string 'low'",
        ),
        ({"max_tools": True}, ConfigError, "max_tools must be a positive integer, got True"),
        ({"page_size": True}, ConfigError, "page_size must be a positive integer, got True"),
        (
            {"store": "memory://"},
            ConfigError,
            "store must be a StateStore (open_store(url) makes one from a URL), got str "
            "'memory://'",
        ),
        (
            {"default_principal": "admin"},
            ConfigError,
            "default_principal must be a Principal, got str",
        ),
        (
            {"flow": {"initial": "draft"}},
            RegistrationError,
            "flow must be a Flow (Flow.from_mapping makes one from config), got dict "
            "{'initial': 'draft'}",
        ),
    ],
)
def test_a_toolset_argument_of_the_wrong_kind_is_refused_naming_it(
    kwargs: dict[str, Any], error: type[ToolgateError], problem: str
) -> None:
    with pytest.raises(error) as err:
        ToolSet(**kwargs)
    assert err.value.message == problem


@pytest.mark.parametrize(
    ("key", "principal", "problem"),
    [
        (7, None, "A session key must be a string or None, got int"),
        ("s", "admin", "A session's principal must be a Principal, got str 'admin'"),
    ],
)
def test_a_session_asked_for_with_the_wrong_kind_of_key_or_principal_is_refused(
    key: Any, principal: Any, problem: str
) -> None:
    ts = _toolset()
    with pytest.raises(ConfigError) as err:
        ts.session(key, principal)
    assert err.value.message == problem
