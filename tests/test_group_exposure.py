"""Prompts and resources in groups follow their groups' tools: a gateway config's
``prompts:`` / ``resources:`` patterns place them, and ``GroupExposure`` lists and admits
them exactly when the tools of their groups are visible to the same request.

The catalog is built from a real gateway config (``build_toolset``); each group holds
one tool and one prompt, so "the prompt is listed" can be compared with "the group's
tool is visible" through the strategies themselves, for any scope (hypothesis).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from toolgate.catalog import CallContext, Handler, ToolResult
from toolgate.errors import GroupNotFound, PromptNotFound, ResourceNotFound, UnknownToolsets
from toolgate.gateway.config.build import BackendTool, build_toolset, delivery_config
from toolgate.gateway.config.model import GatewayConfig, parse_config
from toolgate.gateway.relay.access import Relayed
from toolgate.gateway.relay.exposure import (
    GroupExposure,
    Pattern,
    Placement,
    unmatched_warnings,
)
from toolgate.policy import Principal
from toolgate.request import RequestFacts
from toolgate.strategies import Delivery
from toolgate.strategies.base import GROUPS_EXTENSION, LEGACY, STATELESS
from toolgate.strategies.groups import GroupsStrategy

PARENTS: dict[str, str | None] = {"a": None, "a1": "a", "a2": "a", "b": None, "b1": "b"}
GROUPS = list(PARENTS)


def handler_for(tool: BackendTool) -> Handler:
    def run(arguments: Mapping[str, Any], ctx: CallContext) -> ToolResult:
        return ToolResult.text(tool.name)

    return run


def config(strategy: str = "auto") -> GatewayConfig:
    groups = {
        g: {
            "description": f"group {g}",
            **({"parent": p} if p else {}),
            "tools": [f"tool_{g}"],
            "prompts": [f"srv:prompt_{g}"],
            "resources": [f"mem://{g}/*"],
        }
        for g, p in PARENTS.items()
    }
    return parse_config(
        {
            "mcpServers": {"srv": {"command": "unused"}},
            "toolgate": {"strategy": strategy, "groups": groups},
        },
        environ={},
    )


def build(strategy: str = "auto") -> tuple[Delivery, GroupExposure]:
    cfg = config(strategy)
    tools = [{"name": f"tool_{g}", "inputSchema": {"type": "object"}} for g in GROUPS]
    tools.append({"name": "tool_root", "inputSchema": {"type": "object"}})
    toolset, report = build_toolset(cfg, {"srv": tools}, handler_for)
    assert not report.errors, report.errors
    delivery = Delivery(toolset, delivery_config(cfg))
    return delivery, GroupExposure(cfg, delivery)


def prompt(name: str, backend: str = "srv") -> Relayed:
    return Relayed("prompt", backend, name, name, {"name": name})


def resource(uri: str, kind: Any = "resource") -> Relayed:
    key = "uri" if kind == "resource" else "uriTemplate"
    return Relayed(kind, "srv", uri, uri, {key: uri, "name": uri})


PROMPTS = [prompt(f"prompt_{g}") for g in GROUPS] + [prompt("prompt_root")]
DELIVERY, EXPOSURE = build()


def facts(
    scope: tuple[str, ...],
    *,
    protocol: str = LEGACY,
    extensions: frozenset[str] = frozenset(),
    toolsets: tuple[str, ...] | None = None,
) -> RequestFacts:
    principal = Principal(id="p", scope=scope)
    return RequestFacts(None, principal, protocol, extensions, toolsets=toolsets)


def names(items: list[Relayed]) -> set[str]:
    return {i.name for i in items}


def tools_visible(request_facts: RequestFacts) -> set[str]:
    """What the strategy serving these facts lets the principal see of the tools:
    ``tools/list`` for a per-request view, else every tool its session's view shows
    (``catalog`` lists fewer but runs them all: discovery gating is not access control)."""
    strategy, request = request_facts.request(DELIVERY)

    async def run() -> set[str]:
        if request_facts.toolsets:
            return {str(w["name"]) for w in await strategy.list_tools(request)}
        return {t.name for t in (await request.session.view()).visible}

    return asyncio.run(run())


def partner(name: str) -> str:
    return name.replace("prompt_", "tool_")


scopes = st.lists(st.sampled_from([*GROUPS, "default", "*", "zz"]), max_size=4).map(tuple)


# -- the property -------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(scope=scopes, protocol=st.sampled_from([LEGACY, STATELESS]))
def test_a_prompt_is_listed_and_usable_iff_its_groups_tools_are_visible(
    scope: tuple[str, ...], protocol: str
) -> None:
    f = facts(scope, protocol=protocol)
    tools = tools_visible(
        facts(scope, protocol=STATELESS)
    )  # catalog: every group open, as for prompts
    listed = names(EXPOSURE.visible(f, PROMPTS))
    for p in PROMPTS:
        expected = partner(p.name) in tools
        assert (p.name in listed) is expected, (p.name, scope)
        if expected:
            EXPOSURE.check(f, p)
        else:
            with pytest.raises(PromptNotFound, match=f"Unknown prompt: {p.name}"):
                EXPOSURE.check(f, p)


@settings(max_examples=100, deadline=None)
@given(
    scope=scopes,
    named=st.lists(st.sampled_from(GROUPS), min_size=1, max_size=3, unique=True).map(tuple),
)
def test_a_per_request_view_lists_a_prompt_iff_it_lists_its_groups_tool(
    scope: tuple[str, ...], named: tuple[str, ...]
) -> None:
    f = facts(scope, protocol=STATELESS, toolsets=named)
    try:
        tools = tools_visible(f)
    except UnknownToolsets:
        with pytest.raises(UnknownToolsets):
            EXPOSURE.visible(f, PROMPTS)
        with pytest.raises(UnknownToolsets):
            EXPOSURE.check(f, PROMPTS[0])
        return
    listed = names(EXPOSURE.visible(f, PROMPTS))
    assert listed == {p.name for p in PROMPTS if partner(p.name) in tools}


@settings(max_examples=100, deadline=None)
@given(scope=scopes, group=st.sampled_from(GROUPS))
def test_groups_get_holds_a_prompt_iff_it_holds_the_groups_tool(
    scope: tuple[str, ...], group: str
) -> None:
    f = facts(scope, protocol=STATELESS, extensions=frozenset({GROUPS_EXTENSION}))
    strategy, request = f.request(DELIVERY)
    assert isinstance(strategy, GroupsStrategy)
    try:
        got = asyncio.run(strategy.groups_get(request, group.replace("_", "-")))
        tools = {str(t["name"]) for t in got["contents"]["tools"]}
    except GroupNotFound:  # unknown or out of scope
        tools = set()
    held = names(EXPOSURE.in_group(f, group, PROMPTS))
    assert held == {p.name for p in PROMPTS if partner(p.name) in tools}


# -- the groups extension's placement -------------------------------------------------------------
def test_an_extension_client_lists_only_top_level_prompts_but_may_use_grouped_ones() -> None:
    f = facts(("*",), protocol=STATELESS, extensions=frozenset({GROUPS_EXTENSION}))
    assert names(EXPOSURE.visible(f, PROMPTS)) == {"prompt_root"}
    EXPOSURE.check(f, prompt("prompt_a1"))  # scoped prompts are used without groups/get


def test_a_client_without_the_extension_lists_every_prompt_it_may_use() -> None:
    for protocol in (LEGACY, STATELESS):
        listed = names(EXPOSURE.visible(facts(("a",), protocol=protocol), PROMPTS))
        assert listed == {"prompt_a", "prompt_a1", "prompt_a2"}


def test_activation_does_not_change_what_a_legacy_session_lists() -> None:
    delivery, exposure = build("list_changed")
    f = RequestFacts("s1", Principal(id="p"), LEGACY, frozenset())
    before = names(exposure.visible(f, PROMPTS))
    strategy, request = f.request(delivery)
    listed = [w["name"] for w in asyncio.run(strategy.list_tools(request))]
    asyncio.run(request.session.activate(["b"]))
    relisted = [w["name"] for w in asyncio.run(strategy.list_tools(request))]
    assert "tool_b" in relisted and "tool_b" not in listed  # the session's tools changed
    assert names(exposure.visible(f, PROMPTS)) == before == {p.name for p in PROMPTS}


def test_groups_get_holds_only_the_groups_own_prompts_not_its_childrens() -> None:
    f = facts(("*",))
    assert names(EXPOSURE.in_group(f, "a", PROMPTS)) == {"prompt_a"}
    assert EXPOSURE.in_group(facts(("b",)), "a", PROMPTS) == []


# -- resources and templates ----------------------------------------------------------------------
def test_resources_and_templates_are_placed_by_uri_globs_and_refused_as_not_found() -> None:
    items = [
        resource("mem://a/notes"),
        resource("mem://b1/{id}", "template"),
        resource("mem://elsewhere/x"),
    ]
    listed = names(EXPOSURE.visible(facts(("a", "default")), items))
    assert listed == {"mem://a/notes", "mem://elsewhere/x"}
    with pytest.raises(ResourceNotFound) as raised:
        EXPOSURE.check(facts(("a",)), items[1])
    assert raised.value.message == "Resource not found: mem://b1/{id}"
    with pytest.raises(ResourceNotFound):
        EXPOSURE.check(facts(("a",)), items[2])  # top-level needs "default" in the scope


def test_an_empty_scope_sees_no_prompt_and_no_resource() -> None:
    items = [*PROMPTS, resource("mem://a/x"), resource("mem://top")]
    assert EXPOSURE.visible(facts(()), items) == []


# -- patterns -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "server", "glob"),
    [
        ("srv:review_*", "srv", "review_*"),
        ("review_*", None, "review_*"),
        ("file:///docs/*", None, "file:///docs/*"),  # a URI scheme, even beside a backend "file"
        ("srv:file:///docs/*", "srv", "file:///docs/*"),
        ("other:thing", None, "other:thing"),  # no backend "other": a glob with a colon
    ],
)
def test_a_pattern_names_a_backend_only_when_its_prefix_is_one(
    text: str, server: str | None, glob: str
) -> None:
    p = Pattern.parse(text, {"srv", "file"})
    assert (p.server, p.glob) == (server, glob)


def test_a_server_pattern_matches_the_backends_own_name_and_a_plain_one_the_exposed_name() -> None:
    item = Relayed("prompt", "srv", "gh.review", "review", {})
    assert Pattern.parse("srv:review", {"srv"}).matches(item)
    assert not Pattern.parse("review", {"srv"}).matches(item)
    assert Pattern.parse("gh.*", {"srv"}).matches(item)
    assert not Pattern.parse("other:review", {"srv", "other"}).matches(item)


def test_a_primitive_may_sit_in_several_groups_and_is_usable_through_any() -> None:
    cfg = config()
    cfg.toolgate.groups["b"].prompts.append("prompt_a")
    placement = Placement.from_config(cfg)
    assert placement.groups_of(prompt("prompt_a")) == ("a", "b")
    assert placement.groups_of(prompt("prompt_root")) == ()


def test_unmatched_patterns_are_warnings_naming_the_key() -> None:
    placement = Placement.from_config(config())
    items = [prompt(f"prompt_{g}") for g in GROUPS if g != "b1"]
    warnings = unmatched_warnings(placement, items, {"srv"}, ["srv"])
    assert "toolgate.groups.b1.prompts[0]: 'srv:prompt_b1' matches no prompt" in warnings
    assert "toolgate.groups.a.resources[0]: 'mem://a/*' matches no resource" in warnings
    assert not any("prompts" in w and ".a." in w for w in warnings)
    down = unmatched_warnings(placement, [], set(), ["srv"])
    assert "toolgate.groups.a.prompts[0]: 'srv:prompt_a' matches nothing while 'srv' is down" in (
        down
    )
