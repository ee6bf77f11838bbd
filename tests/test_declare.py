"""Declarations: functions, group classes and ``@in_group`` handler methods become the
same ``Tool`` and ``Group`` values, with input schemas from type hints. Core only."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import pytest
from pydantic import BaseModel, Field

from toolgate import (
    ALWAYS,
    CallContext,
    Flow,
    Group,
    HookContext,
    Policy,
    Principal,
    RegistrationError,
    Stage,
    Tool,
    ToolSet,
    group,
    in_group,
    subgroup,
    tool,
)
from toolgate.declare import snake_case, tool_from_function

# -- schemas from type hints ------------------------------------------------------------------


def read_file(
    path: Annotated[str, Field(description="File path")],
    tags: list[str] = [],  # noqa: B006 - a default the schema must show
    limit: Optional[int] = None,  # noqa: UP045 - the Optional spelling is what we test
    mode: str = "r",
    count: int = Field(3, description="How many", ge=1),
) -> str:
    """Read a file. Returns its text."""
    return f"{path}:{tags}:{limit}:{mode}:{count}"


def test_schema_comes_from_hints_with_descriptions_defaults_optionals_and_lists() -> None:
    t = tool_from_function(read_file)
    assert t.name == "read_file"
    assert t.description == "Read a file. Returns its text."
    assert t.summary_text == "Read a file."
    assert t.input_schema == {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path"},
            "tags": {"type": "array", "items": {"type": "string"}, "default": []},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "mode": {"type": "string", "default": "r"},
            "count": {"type": "integer", "default": 3, "description": "How many", "minimum": 1},
        },
        "required": ["path"],
    }


class Point(BaseModel):
    x: int
    y: int


def test_pep604_optional_and_nested_models_get_schemas() -> None:
    def move(to: Point, speed: float | None = None) -> str:
        return f"{to.x},{to.y}"

    t = tool_from_function(move)
    assert t.input_schema["required"] == ["to"]
    assert t.input_schema["properties"]["to"] == {"$ref": "#/$defs/Point"}
    assert t.input_schema["$defs"]["Point"]["required"] == ["x", "y"]
    assert t.input_schema["properties"]["speed"] == {
        "anyOf": [{"type": "number"}, {"type": "null"}],
        "default": None,
    }


async def test_the_generated_handler_applies_defaults_and_parses_arguments() -> None:
    ts = ToolSet()
    ts.add_tool(tool_from_function(read_file))
    out = await ts.session("s").call("read_file", {"path": "a", "tags": ["x"]})
    assert out.result.text_content == "a:['x']:None:r:3"


async def test_a_call_context_parameter_is_injected_and_not_in_the_schema() -> None:
    def whoami(greeting: str, ctx: CallContext) -> str:
        return f"{greeting} {ctx.principal.id} in {ctx.session_key} via {ctx.tool}"

    t = tool_from_function(whoami)
    assert t.input_schema == {
        "type": "object",
        "properties": {"greeting": {"type": "string"}},
        "required": ["greeting"],
    }
    ts = ToolSet()
    ts.add_tool(t)
    out = await ts.session("s1", Principal(id="ann")).call("whoami", {"greeting": "hi"})
    assert out.result.text_content == "hi ann in s1 via whoami"


def test_a_function_without_parameters_has_an_empty_object_schema() -> None:
    def ping() -> str:
        return "pong"

    assert tool_from_function(ping).input_schema == {"type": "object", "properties": {}}


def test_unusable_hints_are_a_registration_error() -> None:
    def bad(x: UndefinedName) -> str:  # type: ignore[name-defined]  # noqa: F821
        return ""

    with pytest.raises(RegistrationError) as err:
        tool_from_function(bad)
    assert err.value.message.startswith("Cannot read the type hints of ")


# -- @tool options ------------------------------------------------------------------------------


def test_tool_options_override_the_function() -> None:
    @tool(
        name="fetch",
        description="Fetch a URL.",
        title="Fetch",
        groups="net",
        always=True,
        policy=Policy(min_trust="verified"),
        annotations={"readOnlyHint": True},
    )
    def get(url: str) -> str:
        """Ignored docstring."""
        return url

    t = tool_from_function(get)
    assert (t.name, t.description, t.title, t.groups) == (
        "fetch",
        "Fetch a URL.",
        "Fetch",
        ("net",),
    )
    assert t.visibility == ALWAYS
    assert t.policy == Policy(min_trust="verified")
    assert t.annotations == {"readOnlyHint": True}


def test_one_tool_decorator_object_can_mark_two_functions() -> None:
    mark = tool(groups=["files"])

    @mark
    def one() -> None: ...

    @mark
    def two() -> None: ...

    assert tool_from_function(one).groups == ("files",)
    assert tool_from_function(two).groups == ("files",)


async def test_toolset_tool_decorator_registers_a_function() -> None:
    ts = ToolSet()
    ts.add_group(Group("files"))

    @ts.tool(groups=["files"])
    def read(path: str) -> str:
        """Read."""
        return path

    @ts.tool
    def ping() -> str:
        return "pong"

    assert read("x") == "x"  # the function itself is unchanged
    assert ts.catalog.tools["read"].groups == ("files",)
    assert [t.name for t in await ts.session("s").list_tools()] == ["ping"]


# -- @in_group -------------------------------------------------------------------------------


class Handlers:
    @in_group("issues")
    @in_group("read_only", "issues")
    def list_issues(self, repo: str) -> str:
        """List issues."""
        return f"issues of {repo}"

    @in_group("admin")
    def delete_repo(self, repo: str) -> str:
        return repo

    def helper(self) -> str:  # not a tool
        return ""


async def test_in_group_stacks_and_deduplicates() -> None:
    ts = ToolSet()
    ts.add_groups([Group("issues"), Group("read_only"), Group("admin")])
    ts.include(Handlers())
    assert sorted(ts.catalog.tools) == ["delete_repo", "list_issues"]
    assert ts.catalog.tools["list_issues"].groups == ("issues", "read_only")
    s = ts.session("s")
    await s.activate(["read_only"])
    out = await s.call("list_issues", {"repo": "toolgate"})
    assert out.result.text_content == "issues of toolgate"


# -- group classes -------------------------------------------------------------------------------


@group(description="File operations", on_activate="opened")
class FileOps:
    def __init__(self) -> None:
        self.log: list[str] = []

    def opened(self, ctx: HookContext) -> None:
        self.log.append(f"{ctx.action}:{ctx.group}")

    @tool
    def read_file(self, path: str) -> str:
        """Read a file."""
        return f"content of {path}"

    @tool(always=True)
    def help(self) -> str:
        return "help"

    @subgroup
    def write(self) -> FileWrite:
        return FileWrite()


@group(name="write", show_deactivator=False)
class FileWrite:
    """Write operations."""

    @tool
    async def write_file(self, path: str, text: str = "") -> dict[str, Any]:
        return {"ok": True, "path": path}


@group(description="Network", exclusive=[("file_ops", "network")])
class Network:
    @tool
    def get(self, url: str) -> str:
        return url


async def test_group_classes_register_groups_tools_subgroups_hooks_and_exclusions() -> None:
    ts = ToolSet()
    files = FileOps()
    ts.include(files)
    ts.include(Network())
    assert ts.catalog.groups["file_ops"].description == "File operations"
    assert ts.catalog.groups["write"] == Group(
        "write", "Write operations.", parent="file_ops", show_deactivator=False
    )
    assert ts.catalog.tools["write_file"].groups == ("write",)
    assert ts.catalog.exclusions == (frozenset({"file_ops", "network"}),)
    s = ts.session("s")
    assert [t.name for t in await s.list_tools()] == ["help"]
    await s.activate(["write", "file_ops"])
    assert files.log == ["activate:file_ops"]
    assert [t.name for t in await s.list_tools()] == ["help", "read_file", "write_file"]
    out = await s.call("write_file", {"path": "x"})
    assert out.result.structured == {"ok": True, "path": "x"}


def test_group_names_default_to_the_snake_cased_class_name() -> None:
    assert snake_case("FileOps") == "file_ops"
    assert snake_case("HTTPClient") == "http_client"
    assert snake_case("already_snake") == "already_snake"


def test_including_an_exclusion_with_an_unknown_group_registers_nothing() -> None:
    ts = ToolSet()
    with pytest.raises(RegistrationError) as err:
        ts.include(Network())
    assert err.value.message == "Exclusion set names unknown group 'file_ops'"
    assert (dict(ts.catalog.groups), dict(ts.catalog.tools)) == ({}, {})


def test_a_subgroup_returning_a_plain_object_is_refused() -> None:
    @group
    class Broken:
        @subgroup
        def child(self) -> object:
            return object()

    with pytest.raises(RegistrationError) as err:
        ToolSet().include(Broken())
    assert err.value.message == (
        "Broken.child is a @subgroup but returned a object, which is not a @group class"
    )


def test_a_hook_naming_a_missing_method_is_refused() -> None:
    @group(on_activate="nope")
    class Hooked:
        pass

    with pytest.raises(RegistrationError) as err:
        ToolSet().include(Hooked())
    assert err.value.message == "Hooked has no hook method 'nope'"


@pytest.mark.parametrize(
    ("separator", "names"),
    [
        (".", ["file_ops.help", "file_ops.read_file", "file_ops.write.write_file"]),
        ("_", ["file_ops_help", "file_ops_read_file", "file_ops_write_write_file"]),
        ("-", ["file_ops-help", "file_ops-read_file", "file_ops-write-write_file"]),
    ],
)
async def test_namespace_tools_names_tools_by_group_path_with_each_separator(
    separator: str, names: list[str]
) -> None:
    ts = ToolSet(namespace_tools=True, separator=separator)
    ts.include(FileOps())
    assert sorted(ts.catalog.tools) == names
    s = ts.session("s")
    await s.activate(["file_ops", "write"])
    out = await s.call(names[2], {"path": "p"})
    assert out.result.structured == {"ok": True, "path": "p"}


def test_namespaced_names_still_obey_the_mcp_name_rule() -> None:
    @group(name="g" * 64)
    class Long:
        @tool(name="t" * 64)
        def x(self) -> None: ...

    with pytest.raises(RegistrationError) as err:
        ToolSet(namespace_tools=True).include(Long())
    assert err.value.message.startswith("Invalid tool name 'gggg")


# -- declarations written wrong: refused where they are written, nothing registered ----------


@pytest.mark.parametrize(
    ("declare", "problem"),
    [
        (lambda: tool(summry="Reads."), "@tool has no option 'summry'; its options: name, "),
        (lambda: group(descripton="Files."), "@group has no option 'descripton'; its options: "),
        (lambda: tool(groups=None), "@tool: groups must be a list of names, got None"),
        (lambda: tool(stages=[1]), "@tool: stages must be a list of names, got [1]"),
        (
            lambda: in_group(["files", "admin"]),  # type: ignore[arg-type]
            "in_group takes one or more group names, one per argument: "
            "in_group('files', 'admin'); got [['files', 'admin']]",
        ),
        (
            lambda: in_group(),
            "in_group takes one or more group names, one per argument: "
            "in_group('files', 'admin'); got []",
        ),
        (
            lambda: group(exclusive=["drafts", "published"]),
            "@group exclusive is a list of exclusion sets, each a list of group names: "
            "exclusive=[['drafts', 'published']]; got ['drafts', 'published']",
        ),
    ],
)
def test_a_declaration_written_wrong_is_refused_where_it_is_written(
    declare: Any, problem: str
) -> None:
    with pytest.raises(RegistrationError) as err:
        declare()
    assert err.value.message.startswith(problem)


def test_a_tool_declared_with_one_stage_as_a_string_is_in_that_stage() -> None:
    ts = ToolSet(flow=Flow(initial="browse", stages=(Stage("review"),)))

    @ts.tool(stages="review")
    def approve() -> str:
        return "approved"

    @tool(stages="review")
    def reject() -> str:
        return "rejected"

    ts.tool(reject)
    assert ts.catalog.tools["approve"].stages == frozenset({"review"})
    assert ts.catalog.tools["reject"].stages == frozenset({"review"})


@pytest.mark.parametrize("value", ["read_file", 5])
def test_registering_something_that_is_not_a_function_as_a_tool_is_refused(value: Any) -> None:
    ts = ToolSet()
    with pytest.raises(RegistrationError) as err:
        ts.tool(value)
    assert (
        err.value.message == f"A tool is made from a function; got {type(value).__name__} {value!r}"
    )
    assert (ts.catalog.version, dict(ts.catalog.tools)) == (0, {})


def test_including_a_group_whose_tool_is_refused_registers_neither_the_group_nor_its_tools() -> (
    None
):
    ts = ToolSet()
    ts.add_tool(Tool("search", "Search.", handler=lambda a, c: "ok"))
    before = (ts.catalog.version, dict(ts.catalog.groups), dict(ts.catalog.tools))

    @group
    class Notes:
        @tool
        def search(self) -> str:  # the name a registered tool has
            return "found"

        @tool
        def write(self) -> str:
            return "written"

    with pytest.raises(RegistrationError) as err:
        ts.include(Notes())
    assert err.value.message == "Duplicate tool 'search'"
    assert (ts.catalog.version, dict(ts.catalog.groups), dict(ts.catalog.tools)) == before


def test_including_a_class_instead_of_an_instance_is_refused() -> None:
    @group
    class Notes:
        @tool
        def write(self) -> str:
            return "written"

    ts = ToolSet()
    with pytest.raises(RegistrationError) as err:
        ts.include(Notes)
    assert err.value.message == (
        "include() found no @group, @tool or @in_group declarations on the class Notes; "
        "pass an instance of a @group class or of a class with marked methods"
    )
    assert (ts.catalog.version, dict(ts.catalog.groups)) == (0, {})


def test_a_hook_that_is_neither_a_function_nor_a_method_name_is_refused() -> None:
    @group(on_activate=5)
    class Hooked:
        pass

    ts = ToolSet()
    with pytest.raises(RegistrationError) as err:
        ts.include(Hooked())
    assert err.value.message == "Hooked: a hook is a function or the name of a method, got int 5"
    assert dict(ts.catalog.groups) == {}
