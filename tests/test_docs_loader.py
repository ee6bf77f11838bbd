"""Doc files for lazy descriptions: validated at start-up, derived when absent, cached."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from data.lazy.tracker import COMMENT_SCHEMA, DOCS, MALFORMED, tracker_toolset
from toolgate import ConfigError, Tool, ToolDoc
from toolgate.docs import ToolDocs, derive, load_doc_file, load_docs_dir
from toolgate.strategies.lazy import LazyDescriptions

GOOD: dict[str, Any] = json.loads((DOCS / "add_comment.json").read_text("utf-8"))


def write(folder: Path, name: str, data: Any) -> Path:
    path = folder / f"{name}.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), "utf-8")
    return path


def with_(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(GOOD))
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def test_a_folder_of_doc_files_loads_by_tool_name() -> None:
    files = load_docs_dir(DOCS)
    assert list(files) == ["add_comment"]
    doc = files["add_comment"]
    assert doc.path == DOCS / "add_comment.json"
    assert doc.input_schema == dict(COMMENT_SCHEMA)
    assert doc.doc.usage_guidance == GOOD["usage_guidance"]


def test_the_demo_gateways_doc_files_are_valid() -> None:
    demo = Path(__file__).parents[1] / "src" / "toolgate" / "demo" / "docs"
    assert "create_issue" in load_docs_dir(demo)


def test_a_malformed_file_is_rejected_at_startup_naming_the_file_and_field() -> None:
    with pytest.raises(ConfigError) as info:
        LazyDescriptions(tracker_toolset(), docs_dir=MALFORMED)
    path = MALFORMED / "add_comment.json"
    assert info.value.message == (
        f"Tool description file {path}: field 'examples[0].input' is required: "
        "the arguments of the example call"
    )
    assert info.value.details == {"key": "examples[0].input", "path": str(path)}


@pytest.mark.parametrize(
    ("data", "field", "problem"),
    [
        (with_(name=None), "name", "is required: the tool's name, a non-empty string"),
        (with_(name="other"), "name", "is 'other' but the file is named 'add_comment.json'"),
        (with_(name="bad name"), "name", "'bad name' is not a valid MCP tool name"),
        (with_(input_schema={}), "input_schema", "is not allowed; a doc file holds name, title"),
        (with_(description=3), "description", "must be a string, got int"),
        (with_(inputSchema={"type": "string"}), "inputSchema", "must be an object schema"),
        (
            with_(inputSchema={"type": "object", "properties": {"a": {"type": "nope"}}}),
            "inputSchema/properties/a/type",
            "is not a valid JSON Schema: 'nope' is not valid under any of the given schemas",
        ),
        (with_(examples={}), "examples", "must be a list, got dict"),
        (with_(examples=[{"input": {}, "note": "x"}]), "examples[0].note", "is not allowed"),
        (with_(examples=[{"input": []}]), "examples[0].input", "must be a JSON object, got list"),
        (
            with_(examples=[{"input": {}, "explanation": 1}]),
            "examples[0].explanation",
            "must be a string",
        ),
        (
            with_(usage_guidance={"common_patterns": [1]}),
            "usage_guidance.common_patterns",
            "must be a string or a list of strings",
        ),
        (
            with_(error_guidance={"common_errors": [{"error": "E", "cause": "C"}]}),
            "error_guidance.common_errors[0].solution",
            "is required and must be a string",
        ),
        (with_(annotations=[]), "annotations", "must be a JSON object, got list"),
        ([], "(root)", "must be a JSON object, got list"),
    ],
)
def test_malformed_doc_files_name_the_field_and_the_problem(
    tmp_path: Path, data: Any, field: str, problem: str
) -> None:
    path = write(tmp_path, "add_comment", data)
    with pytest.raises(ConfigError) as info:
        load_doc_file(path)
    assert info.value.message.startswith(f"Tool description file {path}: field {field!r} {problem}")
    assert info.value.details["key"] == field


def test_invalid_json_names_the_file_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "add_comment", '{\n  "name": "add_comment",\n}')
    with pytest.raises(ConfigError) as info:
        load_doc_file(path)
    # the parser's own wording after the position differs between Python versions
    assert info.value.message.startswith(
        f"Tool description file {path}: invalid JSON at line 3, column 1: "
    )


def test_a_missing_docs_folder_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist or is not a folder"):
        load_docs_dir(tmp_path / "nowhere")


def test_a_file_for_an_unregistered_tool_is_rejected_when_bound(tmp_path: Path) -> None:
    write(tmp_path, "ghost", with_(name="ghost"))
    with pytest.raises(ConfigError) as info:
        LazyDescriptions(tracker_toolset(), docs_dir=tmp_path)
    assert info.value.message == (
        f"Tool description file {tmp_path / 'ghost.json'}: field 'name' names 'ghost', "
        "which is not a registered tool"
    )


def test_binding_can_wait_until_the_tools_are_registered(tmp_path: Path) -> None:
    write(tmp_path, "ghost", with_(name="ghost", inputSchema=None, examples=None))
    ts = tracker_toolset()
    lazy = LazyDescriptions(ts, docs_dir=tmp_path, check_names=False)
    with pytest.raises(ConfigError, match="not a registered tool"):
        lazy.check_docs()
    ts.add_tool(Tool("ghost", "Boo."))
    lazy.check_docs()


def test_a_schema_that_disagrees_with_the_tool_is_rejected_when_bound(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"issue_id": {"type": "string"}}}
    write(tmp_path, "add_comment", with_(inputSchema=schema, examples=None))
    with pytest.raises(ConfigError) as info:
        LazyDescriptions(tracker_toolset(), docs_dir=tmp_path)
    assert info.value.details["key"] == "inputSchema"
    assert "differs from the registered tool's inputSchema" in info.value.message


def test_an_example_that_does_not_fit_the_input_schema_is_rejected_when_bound(
    tmp_path: Path,
) -> None:
    bad = [{"input": {"issue_id": 0, "body": "x"}}]
    write(tmp_path, "add_comment", with_(examples=bad))
    with pytest.raises(ConfigError) as info:
        LazyDescriptions(tracker_toolset(), docs_dir=tmp_path)
    assert info.value.details["key"] == "examples[0].input.issue_id"
    assert info.value.message.endswith(
        "does not fit the tool's input schema: 0 is less than the minimum of 1"
    )


def test_a_tool_without_a_file_gets_docs_derived_from_its_own_metadata() -> None:
    tool = Tool(
        "t",
        "Do t. Carefully.",
        title="T",
        input_schema={"type": "object", "properties": {"x": {"type": "integer"}}},
        output_schema={"type": "object"},
        annotations={"readOnlyHint": True},
        doc=ToolDoc(
            examples=({"input": {"x": 1}},),
            usage_guidance={"important_notes": ["n"]},
            error_guidance={"common_errors": []},
        ),
    )
    assert derive(tool) == {
        "name": "t",
        "title": "T",
        "description": "Do t. Carefully.",
        "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}},
        "outputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
        "examples": [{"input": {"x": 1}}],
        "usage_guidance": {"important_notes": ["n"]},
        "error_guidance": {"common_errors": []},
    }


def test_a_file_fills_only_what_it_says_and_the_tool_supplies_the_rest(tmp_path: Path) -> None:
    write(tmp_path, "whoami", {"name": "whoami", "error_guidance": {"hint": "Never fails."}})
    ts = tracker_toolset()
    docs = ToolDocs.from_dir(tmp_path)
    docs.check(ts.catalog)
    assert docs.describe(ts.catalog.tools["whoami"]) == {
        "name": "whoami",
        "description": "Tell who the current user is. Returns the login and display name.",
        "inputSchema": {"type": "object", "properties": {}},
        "examples": [{"description": "No arguments", "input": {}}],
        "usage_guidance": {"important_notes": ["The login never changes within a session."]},
        "error_guidance": {"hint": "Never fails."},
    }


def test_descriptions_are_cached_per_tool_version() -> None:
    ts = tracker_toolset()
    docs = ToolDocs.from_dir(DOCS)
    tool = ts.catalog.tools["add_comment"]
    first = docs.describe(tool)
    assert docs.describe(tool) is first
    changed = replace(tool, annotations={"destructiveHint": False})
    assert docs.describe(changed)["annotations"] == {"destructiveHint": False}
