"""Lazy descriptions through ``Delivery``: summaries, full docs on demand, the gate."""

from __future__ import annotations

import json
from typing import Any

import pytest

from data.lazy.tracker import COMMENT_SCHEMA, DOCS, SEARCH_SCHEMA, tracker_toolset
from toolgate import DescriptionRequired, MemoryStore, Principal, RegistrationError, Tool
from toolgate.agent import system_prompt
from toolgate.policy import RateLimit
from toolgate.strategies import Delivery, DeliveryConfig, MetaNames
from toolgate.strategies.base import LEGACY, STATELESS, Request, Strategy
from toolgate.strategies.lazy import LazyDescriptions, workflow_text

URI = "resource:///tool_descriptions"
VISIBLE = ["add_comment", "search_issues", "whoami"]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def serve(
    schema: str = "full", config: DeliveryConfig | None = None, **toolset: Any
) -> tuple[Delivery, LazyDescriptions]:
    ts = tracker_toolset(**toolset)
    lazy = LazyDescriptions(ts, schema=schema, docs_dir=DOCS)  # type: ignore[arg-type]
    return Delivery(ts, config, addons=[lazy]), lazy


def req(
    delivery: Delivery,
    key: str | None = "s1",
    protocol: str = LEGACY,
    principal: Principal | None = None,
) -> tuple[Strategy, Request]:
    return delivery.request(session_key=key, protocol=protocol, principal=principal)


async def read(delivery: Delivery, uri: str, key: str | None = "s1", **kw: Any) -> Any:
    _, request = req(delivery, key, **kw)
    text = await delivery.read_resource(request, uri)
    assert text is not None
    return json.loads(text)


async def call(delivery: Delivery, name: str, args: dict[str, Any], key: str | None = "s1") -> Any:
    strategy, request = req(delivery, key)
    return await delivery.call_tool(strategy, request, name, args)


# -- tools/list ---------------------------------------------------------------------------


async def test_tools_list_carries_summaries_and_keeps_full_schemas_by_default() -> None:
    delivery, _ = serve()
    strategy, request = req(delivery)
    page = await delivery.list_tools(strategy, request)
    tools = {t["name"]: t for t in page.items}
    assert tools["search_issues"] == {
        "name": "search_issues",
        "description": "Search issues by keyword. Full definition: describe_tools.",
        "inputSchema": dict(SEARCH_SCHEMA),
        "outputSchema": {
            "type": "object",
            "properties": {"issues": {"type": "array", "items": {"type": "integer"}}},
            "required": ["issues"],
        },
        "annotations": {"readOnlyHint": True},
    }
    assert tools["add_comment"]["description"] == (
        "Add a comment to an issue. Full definition: describe_tools."
    )
    assert tools["add_comment"]["inputSchema"] == dict(COMMENT_SCHEMA)


async def test_an_explicit_summary_wins_over_the_first_sentence() -> None:
    delivery, _ = serve()
    strategy, request = req(delivery)
    tools = {t["name"]: t for t in (await delivery.list_tools(strategy, request)).items}
    assert tools["whoami"]["description"] == "Who am I? Full definition: describe_tools."


async def test_minimal_mode_sends_the_seeds_minimal_tool_with_its_required_arguments() -> None:
    delivery, _ = serve("minimal")
    strategy, request = req(delivery)
    tools = {t["name"]: t for t in (await delivery.list_tools(strategy, request)).items}
    assert tools["search_issues"] == {
        "name": "search_issues",
        "description": "Search issues by keyword. Full definition: describe_tools.",
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    }
    assert tools["whoami"]["inputSchema"] == {"type": "object"}  # nothing is required


async def test_describe_tools_is_listed_with_a_fixed_description() -> None:
    delivery, _ = serve()
    strategy, request = req(delivery)
    names = [t["name"] for t in (await delivery.list_tools(strategy, request)).items]
    assert names == [
        "add_comment",
        "call_tool",
        "describe_tools",
        "disable_tools",
        "enable_tools",
        "list_groups",
        "search_issues",
        "whoami",
    ]
    meta = strategy.meta_tool("describe_tools")
    assert meta is not None
    assert meta.input_schema["required"] == ["tools"]


async def test_a_real_tool_named_describe_tools_is_a_registration_error() -> None:
    delivery, _ = serve()
    with pytest.raises(RegistrationError, match="'describe_tools'"):
        delivery.toolset.add_tool(Tool("describe_tools", "Clash."))


def test_a_bad_schema_mode_is_a_config_error() -> None:
    from toolgate import ConfigError

    with pytest.raises(ConfigError, match="'full' or 'minimal', got 'tiny'"):
        LazyDescriptions(tracker_toolset(), schema="tiny")  # type: ignore[arg-type]


def test_installing_lazy_descriptions_turns_the_gate_on() -> None:
    ts = tracker_toolset()
    assert ts.describe_before_call is False
    LazyDescriptions(ts)
    assert ts.describe_before_call is True


# -- resources ----------------------------------------------------------------------------


async def test_resources_list_shows_the_descriptions_resource_with_the_workflow() -> None:
    delivery, _ = serve()
    _, request = req(delivery)
    assert await delivery.list_resources(request) == [
        {
            "uri": URI,
            "name": "tool_descriptions",
            "title": "Tool Descriptions - Required for tool use",
            "description": workflow_text(URI, "describe_tools"),
            "mimeType": "application/json",
        }
    ]
    text = workflow_text(URI, "describe_tools")
    assert "Step 2: FETCH full description: resource:///tool_descriptions?tools=TOOL_NAME" in text
    assert "You CANNOT call a tool until you fetch its description." in text


async def test_reading_one_tool_returns_its_doc_file_with_the_tools_own_schema() -> None:
    delivery, _ = serve()
    data = await read(delivery, f"{URI}?tools=add_comment")
    assert list(data) == ["add_comment"]
    doc = data["add_comment"]
    assert list(doc) == [  # keyed by the tool's name: the name is not repeated inside
        "description",
        "inputSchema",
        "examples",
        "usage_guidance",
        "error_guidance",
    ]
    assert doc["description"].startswith("Add a comment to an issue. The comment is posted as")
    assert doc["inputSchema"] == dict(COMMENT_SCHEMA)
    assert doc["examples"][0]["input"] == {"issue_id": 7, "body": "Reproduced on main."}
    assert doc["error_guidance"]["common_errors"][0]["error"] == "Unknown issue N"


async def test_reading_two_tools_keeps_the_requested_order_and_derives_undocumented_ones() -> None:
    delivery, _ = serve()
    data = await read(delivery, f"{URI}?tools=whoami,search_issues")
    assert list(data) == ["whoami", "search_issues"]
    assert data["whoami"] == {
        "description": "Tell who the current user is. Returns the login and display name.",
        "inputSchema": {"type": "object", "properties": {}},
        "examples": [{"description": "No arguments", "input": {}}],
        "usage_guidance": {"important_notes": ["The login never changes within a session."]},
    }
    # what a model reads: the output schema and annotations stay with tools/list
    assert set(data["search_issues"]) == {"description", "inputSchema"}


@pytest.mark.parametrize("uri", [URI, f"{URI}?tools=", f"{URI}?tools=,"])
async def test_reading_without_tools_returns_missing_tool_selection(uri: str) -> None:
    delivery, _ = serve()
    assert await read(delivery, uri) == {
        "error": {
            "code": "MISSING_TOOL_SELECTION",
            "message": "You must specify one or more tool names in the 'tools' parameter. "
            "Pick the tools you need from your tool list first; their short descriptions "
            "are enough to choose.",
            "examples": [f"{URI}?tools=add_comment", f"{URI}?tools=add_comment,search_issues"],
            "describe_call": {
                "name": "describe_tools",
                "arguments": {"tools": ["add_comment", "search_issues"]},
            },
            "available_tools": VISIBLE,
        }
    }


async def test_an_unknown_name_gets_a_per_tool_error_and_the_others_are_described() -> None:
    delivery, _ = serve()
    data = await read(delivery, f"{URI}?tools=nope,whoami")
    assert data["nope"] == {
        "error": "Unknown tool: nope",
        "code": "unknown_tool",
        "available_tools": VISIBLE,
    }
    assert data["whoami"]["description"].startswith("Tell who the current user is.")


async def test_an_access_hidden_tool_looks_exactly_like_an_unknown_one() -> None:
    delivery, _ = serve()
    data = await read(delivery, f"{URI}?tools=delete_repo")
    assert data == {
        "delete_repo": {
            "error": "Unknown tool: delete_repo",
            "code": "unknown_tool",
            "available_tools": VISIBLE,
        }
    }


async def test_a_verified_principal_may_describe_the_tool_others_cannot_see() -> None:
    delivery, _ = serve()
    boss = Principal(id="boss", trust="verified")
    data = await read(delivery, f"{URI}?tools=delete_repo", principal=boss)
    assert data["delete_repo"]["description"] == "Delete the repository."


async def test_a_tool_of_an_inactive_group_gets_the_hint_to_enable_its_group() -> None:
    delivery, _ = serve()
    data = await read(delivery, f"{URI}?tools=close_issue")
    assert data["close_issue"] == {
        "error": "Tool 'close_issue' is not enabled. Enable group 'admin' first, then call "
        "it again.",
        "code": "tool_hidden",
        "available_tools": VISIBLE,
    }


async def test_a_foreign_uri_is_not_served_by_the_add_on() -> None:
    delivery, _ = serve()
    _, request = req(delivery)
    assert await delivery.read_resource(request, "resource:///other?tools=whoami") is None
    assert await delivery.read_resource(request, "file:///tool_descriptions") is None


async def test_too_many_tools_in_one_request_are_refused() -> None:
    delivery, _ = serve()
    names = ",".join(f"t{i}" for i in range(65))
    data = await read(delivery, f"{URI}?tools={names}")
    assert data["error"]["code"] == "TOO_MANY_TOOLS"


# -- describe_tools -----------------------------------------------------------------------


async def test_describe_tools_returns_exactly_the_resources_json() -> None:
    delivery, _ = serve()
    strategy, request = req(delivery, "s1")
    reply = await delivery.call_tool(
        strategy, request, "describe_tools", {"tools": ["add_comment", "nope"]}
    )
    _, other = req(delivery, "s2")
    text = await delivery.read_resource(other, f"{URI}?tools=add_comment,nope")
    assert reply.result.content == ({"type": "text", "text": text},)
    assert reply.result.structured == json.loads(str(text))
    assert reply.result.is_error is False


async def test_describe_tools_with_no_tools_returns_missing_tool_selection_as_an_error() -> None:
    delivery, _ = serve()
    reply = await call(delivery, "describe_tools", {"tools": []})
    assert reply.result.is_error is True
    assert reply.result.structured["error"]["code"] == "MISSING_TOOL_SELECTION"


async def test_describe_tools_with_only_unknown_names_is_an_error_result() -> None:
    delivery, _ = serve()
    reply = await call(delivery, "describe_tools", {"tools": ["nope"]})
    assert reply.result.is_error is True
    assert reply.result.structured == {
        "nope": {"error": "Unknown tool: nope", "code": "unknown_tool", "available_tools": VISIBLE}
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"tools": "whoami"}, "'tools' must be a list of tool names, like [\"a\"], not string"),
        ({"tools": [1]}, "'tools' must contain tool-name strings, not integer"),
        ({"tools": ["whoami"], "x": 1}, "Unexpected argument(s): 'x'; expected 'tools'"),
    ],
)
async def test_describe_tools_rejects_bad_arguments_clearly(
    args: dict[str, Any], message: str
) -> None:
    delivery, _ = serve()
    reply = await call(delivery, "describe_tools", args)
    assert reply.result.is_error is True
    assert reply.result.structured == {"error": message}


# -- the describe-before-call gate --------------------------------------------------------


async def test_calling_before_describing_says_exactly_where_the_description_is() -> None:
    delivery, _ = serve()
    with pytest.raises(DescriptionRequired) as info:
        await call(delivery, "add_comment", {"issue_id": 7, "body": "hi"})
    assert info.value.to_dict() == {
        "code": "TOOL_DESCRIPTION_REQUIRED",
        "message": "Tool 'add_comment' requires fetching its description before use. Read the "
        f"resource {URI}?tools=add_comment (or call describe_tools with "
        '{"tools": ["add_comment"]}), then call the tool again.',
        "tool": "add_comment",
        "resource_uri": f"{URI}?tools=add_comment",
        "describe_call": {"name": "describe_tools", "arguments": {"tools": ["add_comment"]}},
        "instructions": [
            f'1. Fetch: read_resource(resource_uri="{URI}?tools=add_comment")',
            "2. Review the parameters and examples",
            "3. Then call the tool",
        ],
    }


async def test_reading_the_description_authorizes_the_tool_for_the_session() -> None:
    delivery, _ = serve()
    await read(delivery, f"{URI}?tools=add_comment")
    reply = await call(delivery, "add_comment", {"issue_id": 7, "body": "hi"})
    assert reply.result.text_content == "commented on #7"


async def test_describe_tools_authorizes_the_tool_too() -> None:
    delivery, _ = serve()
    await call(delivery, "describe_tools", {"tools": ["search_issues"]})
    reply = await call(delivery, "search_issues", {"query": "crash"})
    assert reply.result.structured == {"issues": [7, 9]}


async def test_describing_one_tool_does_not_authorize_another() -> None:
    delivery, _ = serve()
    await read(delivery, f"{URI}?tools=whoami")
    with pytest.raises(DescriptionRequired):
        await call(delivery, "add_comment", {"issue_id": 7, "body": "hi"})


async def test_the_gate_comes_before_argument_validation() -> None:
    delivery, _ = serve("minimal")
    with pytest.raises(DescriptionRequired):
        await call(delivery, "add_comment", {"issue": "seven"})


async def test_a_refused_call_spends_no_rate_limit_slot() -> None:
    from dataclasses import replace

    delivery, _ = serve()
    ts = delivery.toolset
    limited = ts.catalog.tools["whoami"]
    ts.remove_tool("whoami")
    ts.add_tool(replace(limited, policy=replace(limited.policy, rate_limit=RateLimit(1, 60))))
    with pytest.raises(DescriptionRequired):
        await call(delivery, "whoami", {})
    await read(delivery, f"{URI}?tools=whoami")
    reply = await call(delivery, "whoami", {})
    assert reply.result.text_content == "ada"


async def test_authorization_is_isolated_between_sessions() -> None:
    delivery, _ = serve()
    await read(delivery, f"{URI}?tools=add_comment", key="alice")
    assert (await call(delivery, "add_comment", {"issue_id": 1, "body": "a"}, "alice")).result
    with pytest.raises(DescriptionRequired):
        await call(delivery, "add_comment", {"issue_id": 1, "body": "b"}, "bob")


async def test_authorization_expires_with_the_stores_idle_ttl() -> None:
    clock = Clock()
    delivery, _ = serve(store=MemoryStore(idle_ttl=60, clock=clock), clock=clock)
    await read(delivery, f"{URI}?tools=whoami")
    clock.now += 59
    assert (await call(delivery, "whoami", {})).result.text_content == "ada"
    clock.now += 61
    with pytest.raises(DescriptionRequired):
        await call(delivery, "whoami", {})


async def test_the_call_tool_dispatcher_reports_the_same_error_as_a_result() -> None:
    delivery, _ = serve(config=DeliveryConfig(strategy="catalog"))
    reply = await call(delivery, "call_tool", {"name": "whoami", "arguments": {}})
    assert reply.result.is_error is True
    assert reply.result.structured is not None
    assert reply.result.structured["code"] == "TOOL_DESCRIPTION_REQUIRED"
    assert reply.result.structured["resource_uri"] == f"{URI}?tools=whoami"


async def test_configured_meta_tool_names_reach_the_error_and_the_workflow() -> None:
    config = DeliveryConfig(names=MetaNames(describe_tools="explain_tools"))
    delivery, _ = serve(config=config)
    with pytest.raises(DescriptionRequired) as info:
        await call(delivery, "whoami", {})
    assert info.value.details["describe_call"]["name"] == "explain_tools"
    _, request = req(delivery)
    [resource] = await delivery.list_resources(request)
    assert resource["description"] == workflow_text(URI, "explain_tools")
    reply = await call(delivery, "explain_tools", {"tools": ["whoami"]})
    assert list(reply.result.structured or {}) == ["whoami"]


# -- protocol 2026-07-28 ------------------------------------------------------------------


async def test_without_an_authenticated_principal_the_stateless_protocol_has_no_gate() -> None:
    delivery, _ = serve()
    strategy, request = req(delivery, None, STATELESS)
    reply = await delivery.call_tool(strategy, request, "whoami", {})
    assert reply.result.text_content == "ada"


async def test_an_authenticated_principal_keys_authorization_across_stateless_requests() -> None:
    delivery, _ = serve()
    alice = Principal(id="alice", authenticated=True)
    strategy, request = req(delivery, None, STATELESS, alice)
    with pytest.raises(DescriptionRequired):
        await delivery.call_tool(strategy, request, "whoami", {})
    await read(delivery, f"{URI}?tools=whoami", key=None, protocol=STATELESS, principal=alice)
    strategy, request = req(delivery, None, STATELESS, alice)
    assert (await delivery.call_tool(strategy, request, "whoami", {})).result.text_content == "ada"
    bob = Principal(id="bob", authenticated=True)
    strategy, request = req(delivery, None, STATELESS, bob)
    with pytest.raises(DescriptionRequired):
        await delivery.call_tool(strategy, request, "whoami", {})


def test_startup_warns_that_the_gate_is_off_for_anonymous_stateless_requests() -> None:
    _, lazy = serve()
    assert lazy.startup_warnings() == [
        "Lazy tool descriptions: requests on protocol 2026-07-28 without an authenticated "
        "principal have no session, so describe-before-call is not enforced for them "
        "(their tools are callable without describing first). Configure authentication "
        "to enforce it on that protocol."
    ]
    _, quiet = serve(principal=Principal(id="svc", authenticated=True))
    assert quiet.startup_warnings() == []


# -- agent-side guidance ------------------------------------------------------------------

PROMPT_HEAD = (
    "You are a helpful assistant with access to these tools:\n\n"
    "  - whoami: Who am I?\n"
    "  - describe_tools: Get the full descriptions.\n\n"
    "Use tools when needed to answer questions."
)
PROMPT_TOOLS = [
    {"name": "whoami", "description": "Who am I?"},
    {"name": "describe_tools", "description": "Get the full\n descriptions."},
]


def test_system_prompt_is_plain_without_lazy_descriptions() -> None:
    tools = [{"name": "whoami", "description": "Who am I?"}, {"name": "ping"}]
    assert system_prompt(tools, [{"uri": "file:///readme"}]) == (
        "You are a helpful assistant with access to these tools:\n\n"
        "  - whoami: Who am I?\n"
        "  - ping: No description\n\n"
        "Use tools when needed to answer questions."
    )


def test_system_prompt_explains_the_resource_workflow_when_the_resource_is_listed() -> None:
    resources = [{"uri": f"{URI}?tools=x"}]
    assert system_prompt(PROMPT_TOOLS, resources) == PROMPT_HEAD + (
        "\n\nIMPORTANT - Tool Usage Workflow:\n"
        "This server uses progressive disclosure for tools. Follow this exact workflow:\n\n"
        "1. PICK the right tool based on the descriptions above (they tell you WHAT each "
        "tool does)\n"
        "2. FETCH the full tool description using read_resource with the specific tool name\n"
        f'   Example: read_resource(resource_uri="{URI}?tools=TOOL_NAME")\n'
        '   (or call describe_tools(tools=["TOOL_NAME"]))\n'
        "3. CALL the tool using the parameters you just learned\n\n"
        "DO NOT try to fetch tool_descriptions without specifying which tool you want "
        "(?tools=TOOL_NAME).\n"
        "The tool descriptions above are sufficient for choosing which tool you need.\n"
        "You fetch the full description to learn the parameters and authorize the tool."
    )


def test_system_prompt_uses_describe_tools_for_clients_without_resources() -> None:
    prompt = system_prompt(PROMPT_TOOLS)
    assert prompt.startswith(PROMPT_HEAD + "\n\nIMPORTANT - Tool Usage Workflow:\n")
    assert (
        "2. FETCH the full tool description by calling describe_tools with the specific tool "
        'names\n   Example: describe_tools(tools=["TOOL_NAME"])\n'
    ) in prompt
    assert "DO NOT call describe_tools without naming the tools you picked.\n" in prompt
    assert "read_resource" not in prompt
