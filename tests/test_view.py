"""The view: one pure pipeline decides what is visible and why; listings are sorted and
paginated with real cursors; views are cached per (catalog version, principal, state).
Core only."""

from __future__ import annotations

import pytest

from _fixtures.core import T, visible_names
from toolgate import (
    Always,
    Flow,
    Group,
    InvalidCursor,
    Policy,
    Principal,
    Stage,
    StateSnapshot,
    ToolNotFound,
    ToolSet,
    When,
)
from toolgate.errors import ToolHidden
from toolgate.paging import decode_cursor, encode_cursor, paginate
from toolgate.state.base import SessionState
from toolgate.view import (
    DEFAULT_RULES,
    GroupSurfacing,
    Reason,
    ReasonKind,
    Rule,
    compute_view,
)

# -- When visibility ------------------------------------------------------------------------


async def test_when_predicate_reading_an_external_flag_is_seen_after_touch() -> None:
    flag = {"on": False}
    ts = ToolSet()
    ts.add_tool(T("conditional_tool", visibility=When(lambda snap: flag["on"])))
    s = ts.session("s")
    assert await visible_names(s) == []
    flag["on"] = True
    ts.catalog.touch()  # predicates are pure in the snapshot: outside state is announced
    assert await visible_names(s) == ["conditional_tool"]
    assert (await s.call("conditional_tool")).result.text_content == "ok"
    flag["on"] = False
    ts.catalog.touch()
    assert await visible_names(s) == []
    with pytest.raises(ToolHidden) as err:
        await s.call("conditional_tool")
    assert err.value.message == "Tool 'conditional_tool' is not available in the current state."


async def test_a_when_predicate_that_raises_hides_its_tool_and_the_list_still_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(snap: StateSnapshot) -> bool:
        raise KeyError("feature_flags")

    ts = ToolSet()
    ts.add_tools([T("beta_export", visibility=When(broken)), T("export")])
    s = ts.session("s")
    with caplog.at_level("WARNING", logger="toolgate.view"):
        assert await visible_names(s) == ["export"]
    assert "tool 'beta_export': its When predicate raised KeyError" in caplog.text
    assert [(x.name, str(x.reason)) for x in await s.explain()] == [
        ("beta_export", "predicate-false"),
        ("export", "visible"),
    ]
    with pytest.raises(ToolHidden) as err:
        await s.call("beta_export")
    assert err.value.message == "Tool 'beta_export' is not available in the current state."


async def test_when_predicate_reads_groups_stage_and_principal_from_the_snapshot() -> None:
    seen: list[StateSnapshot] = []

    def needs_both(snap: StateSnapshot) -> bool:
        seen.append(snap)
        return snap.is_group_active("a") and snap.is_group_active("b")

    flow = Flow(initial="browse", stages=(Stage("checkout"),))
    ts = ToolSet(flow=flow)
    ts.add_groups([Group("a"), Group("b")])
    ts.add_tool(T("combo", visibility=When(needs_both)))
    ts.add_tool(T("pay", visibility=When(lambda snap: snap.stage == "checkout")))
    ts.add_tool(T("mine", visibility=When(lambda snap: snap.principal.id == "alice")))
    alice = ts.session("s", Principal(id="alice"))
    assert await visible_names(alice) == ["mine"]
    await alice.activate(["a"])
    assert await visible_names(alice) == ["mine"]
    await alice.activate(["b"])
    assert await visible_names(alice) == ["combo", "mine"]
    assert seen[-1].active_groups == frozenset({"a", "b"})
    await alice.set_stage("checkout")
    assert await visible_names(alice) == ["combo", "mine", "pay"]
    bob = ts.session("t", Principal(id="bob"))
    assert await visible_names(bob) == []


async def test_always_tools_of_an_inactive_group_stay_visible() -> None:
    ts = ToolSet()
    ts.add_group(Group("files"))
    ts.add_tools([T("help", "files", visibility=Always()), T("read", "files")])
    assert await visible_names(ts.session("s")) == ["help"]


# -- the pipeline ---------------------------------------------------------------------------


def pipeline_toolset() -> ToolSet:
    flow = Flow(initial="browse", stages=(Stage("checkout"),))
    ts = ToolSet(flow=flow)
    ts.add_groups([Group("shop"), Group("admin"), Group("vip", parent="shop")])
    ts.add_tools(
        [
            T("root_tool"),
            T("scoped_out", "admin"),
            T("needs_linked", "shop", policy=Policy(min_trust="linked")),
            T("webmcp_only", "shop", policy=Policy(allowed_classes=("webmcp",))),
            T("denied", "shop", policy=Policy(decision="deny")),
            T("at_checkout", "shop", stages=["checkout"], visibility=Always()),
            T("in_vip", "vip"),
            T("never", visibility=When(lambda s: False)),
            # fails trust, class, authz, stage and group: trust is reported
            T(
                "fails_all",
                "vip",
                policy=Policy(min_trust="linked", allowed_classes=("x",), decision="deny"),
                stages=["checkout"],
            ),
            # fails class and stage: class is reported
            T(
                "class_then_stage",
                "shop",
                policy=Policy(allowed_classes=("x",)),
                stages=["checkout"],
            ),
            # fails stage and group: stage is reported
            T("stage_then_group", "vip", stages=["checkout"]),
        ]
    )
    return ts


async def test_explain_gives_every_tool_the_first_failing_reason_in_design_order() -> None:
    ts = pipeline_toolset()
    s = ts.session("s", Principal(id="p", trust="declared", scope=("shop", "default")))
    await s.activate(["shop"])
    assert [(x.name, str(x.reason)) for x in await s.explain()] == [
        ("at_checkout", "stage-locked:checkout"),
        ("class_then_stage", "class-not-allowed:none"),
        ("denied", "authz-deny"),
        ("fails_all", "trust-too-low:declared<linked"),
        ("in_vip", "group-inactive:vip"),
        ("needs_linked", "trust-too-low:declared<linked"),
        ("never", "predicate-false"),
        ("root_tool", "visible"),
        ("scoped_out", "out-of-scope"),
        ("stage_then_group", "stage-locked:checkout"),
        ("webmcp_only", "class-not-allowed:none"),
    ]
    assert await visible_names(s) == ["root_tool"]


async def test_access_rules_are_marked_as_access_and_the_rest_as_discovery() -> None:
    ts = pipeline_toolset()
    s = ts.session("s", Principal(trust="declared", agent_class="cli", scope=("shop", "default")))
    by_name = {x.name: x for x in await s.explain()}
    access = sorted(n for n, x in by_name.items() if x.access_denied)
    assert access == [
        "class_then_stage",
        "denied",
        "fails_all",
        "needs_linked",
        "scoped_out",
        "webmcp_only",
    ]
    assert str(by_name["webmcp_only"].reason) == "class-not-allowed:cli"
    view = await s.view()
    assert str(view.surfacing("missing").reason) == "unknown"
    assert view.surfacing("missing").is_unknown_to_principal is True
    assert [t.name for t in view.accessible()] == [
        "at_checkout",
        "in_vip",
        "never",
        "root_tool",
        "stage_then_group",
    ]
    assert view.is_accessible("denied") is False
    assert view.is_accessible("in_vip") is True
    assert view.is_accessible("missing") is False


async def test_view_is_the_same_for_listing_and_dispatch() -> None:
    ts = pipeline_toolset()
    s = ts.session("s", Principal(trust="linked", agent_class="webmcp"))
    await s.activate(["shop", "vip"])
    await s.set_stage("checkout")
    visible = await visible_names(s)
    assert visible == [
        "at_checkout",
        "in_vip",
        "needs_linked",
        "root_tool",
        "stage_then_group",
        "webmcp_only",
    ]
    for x in await s.explain():
        if x.visible:
            assert (await s.call(x.name)).result.text_content == "ok"
        else:
            with pytest.raises((ToolNotFound, ToolHidden)):
                await s.call(x.name)


def test_compute_view_is_a_pure_function_of_its_inputs() -> None:
    ts = pipeline_toolset()
    p = Principal(trust="linked", agent_class="webmcp")
    state = SessionState(active=frozenset({"shop"}), stage="checkout")
    one = compute_view(ts.catalog, p, state)
    two = compute_view(ts.catalog, p, state)
    assert one is not two
    assert one.visible == two.visible
    assert [t.name for t in one.visible] == [
        "at_checkout",
        "needs_linked",
        "root_tool",
        "webmcp_only",
    ]
    # a child active without its parent is not effectively active
    orphan = compute_view(ts.catalog, p, SessionState(active=frozenset({"vip"})))
    assert orphan.ctx.effective == frozenset()


# -- grouped() -----------------------------------------------------------------------------


async def test_grouped_buckets_visible_tools_by_group_sorted() -> None:
    ts = ToolSet()
    ts.add_groups([Group("reviews"), Group("cart"), Group("catalog")])
    ts.add_tools(
        [
            T("ping"),
            T("search", "catalog"),
            T("read", "catalog", "reviews"),
            T("add", "cart"),
            T("write_review", "reviews"),
        ]
    )
    s = ts.session("s")
    await s.activate(["reviews", "catalog"])
    assert (await s.view()).grouped() == {
        "catalog": ["read", "search"],
        "default": ["ping"],
        "reviews": ["read", "write_review"],
    }
    assert list((await s.view()).grouped()) == ["catalog", "default", "reviews"]


# -- pagination ----------------------------------------------------------------------------


@pytest.mark.parametrize("page_size", [1, 2, 3, 7, 100])
def test_pages_concatenate_to_the_full_sorted_list(page_size: int) -> None:
    items = sorted(f"tool_{i:02d}" for i in range(20))
    got: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = paginate(items, str, cursor, page_size)
        got.extend(page.items)
        pages += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert got == items
    assert pages == max(1, -(-20 // page_size))


def test_a_cursor_names_the_last_item_seen_so_a_changing_list_skips_nothing() -> None:
    first = paginate(["a", "b", "c", "d"], str, None, 2)
    assert first.items == ("a", "b")
    assert decode_cursor(first.next_cursor or "") == "b"
    # "b" was removed and "bb" added between pages: the survivors after "b" follow
    second = paginate(["a", "bb", "c", "d"], str, first.next_cursor, 2)
    assert second.items == ("bb", "c")


def test_empty_list_is_one_empty_page() -> None:
    page = paginate([], str, None, 10)
    assert (page.items, page.next_cursor) == ((), None)


@pytest.mark.parametrize(
    "cursor",
    ["not base64!", "", "Zm9v", encode_cursor("x")[:-1] + "$", "x" * 2000, "//8"],
)
def test_a_bad_cursor_is_invalid_cursor(cursor: str) -> None:
    with pytest.raises(InvalidCursor) as err:
        paginate(["a", "b"], str, cursor, 1)
    assert err.value.code == "invalid_cursor"
    assert err.value.message.startswith("Invalid cursor: ")


async def test_toolset_listing_pages_with_its_page_size() -> None:
    ts = ToolSet(page_size=3)
    ts.add_tools([T(f"t{i}") for i in range(8)])
    visible = await ts.session("s").list_tools()
    cursor = None
    got: list[str] = []
    while True:
        page = paginate(visible, lambda t: t.name, cursor, ts.page_size)
        assert len(page.items) <= 3
        got.extend(t.name for t in page.items)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert got == [f"t{i}" for i in range(8)]


# -- caching -------------------------------------------------------------------------------


async def test_views_are_cached_until_catalog_state_or_principal_change() -> None:
    ts = ToolSet()
    ts.add_group(Group("g"))
    ts.add_tools([T("a", "g"), T("b")])
    s = ts.session("s")
    v1 = await s.view()
    assert await s.view() is v1
    await s.activate(["g"])
    v2 = await s.view()
    assert v2 is not v1
    assert [t.name for t in v2.visible] == ["a", "b"]
    other = ts.session("s", Principal(id="other"))
    assert await other.view() is not v2
    ts.add_tool(T("c"))
    v3 = await s.view()
    assert v3 is not v2
    assert [t.name for t in v3.visible] == ["a", "b", "c"]
    # a second session in the same state shares the cached view
    twin = ts.session("twin")
    await twin.activate(["g"])
    assert await twin.view() is v3


def test_view_cache_is_a_bounded_lru() -> None:
    ts = ToolSet()
    ts.views.maxsize = 2
    p = Principal()
    for stage in (None, "x", "y"):
        ts.view(p, SessionState(stage=stage))
    assert len(ts.views._entries) == 2
    assert ts.views.misses == 3
    ts.view(p, SessionState(stage="y"))
    assert ts.views.hits == 1


def test_hidden_reasons_are_typed_values_whose_text_is_the_design_string() -> None:
    ts = pipeline_toolset()
    p = Principal(trust="declared", scope=("shop", "default"))
    view = compute_view(ts.catalog, p, SessionState(active=frozenset({"shop"})))
    expected = {
        "needs_linked": Reason(ReasonKind.TRUST_TOO_LOW, have="declared", need="linked"),
        "webmcp_only": Reason(ReasonKind.CLASS_NOT_ALLOWED, have="none"),
        "at_checkout": Reason(ReasonKind.STAGE_LOCKED, stages=("checkout",)),
        "in_vip": Reason(ReasonKind.GROUP_INACTIVE, group="vip"),
        "scoped_out": Reason(ReasonKind.OUT_OF_SCOPE),
        "denied": Reason(ReasonKind.AUTHZ_DENY),
        "never": Reason(ReasonKind.PREDICATE_FALSE),
        "root_tool": Reason(ReasonKind.VISIBLE),
        "missing": Reason(ReasonKind.UNKNOWN),
    }
    assert {n: view.surfacing(n).reason for n in expected} == expected
    assert str(expected["needs_linked"]) == "trust-too-low:declared<linked"


async def test_a_custom_rule_may_still_return_its_reason_as_text() -> None:
    quiet = Rule("quiet", False, lambda tool, ctx: "quiet-hours" if tool.name == "loud" else None)
    ts = ToolSet(rules=(*DEFAULT_RULES, quiet))
    ts.add_tools([T("loud"), T("calm")])
    s = ts.session("s")
    assert [(x.name, str(x.reason)) for x in await s.explain()] == [
        ("calm", "visible"),
        ("loud", "quiet-hours"),
    ]
    assert (await s.view()).surfacing("loud").reason == Reason(
        ReasonKind.CUSTOM, text="quiet-hours"
    )


async def test_an_access_rule_given_after_the_group_rule_still_makes_its_tool_unknown() -> None:
    # appended after DEFAULT_RULES, as an adapter or a user adds one: the closed group
    # must not decide first and turn the refusal into a hint that the tool exists
    vault = Rule("vault", True, lambda tool, ctx: "sealed" if tool.name == "open_vault" else None)
    ts = ToolSet(rules=(*DEFAULT_RULES, vault))
    ts.add_group(Group("safe", "The safe."))
    ts.add_tools([T("open_vault", "safe"), T("count_coins", "safe")])
    s = ts.session("s")
    assert (await s.view()).surfacing("open_vault").is_unknown_to_principal
    with pytest.raises(ToolNotFound) as refused:
        await s.call("open_vault")
    assert refused.value.to_dict() == {
        "code": "unknown_tool",
        "message": "Unknown tool: open_vault",
    }
    with pytest.raises(ToolHidden):  # a tool it may use, in the closed group: the hint
        await s.call("count_coins")


# -- groups in the view ---------------------------------------------------------------------


def group_tree() -> ToolSet:
    ts = ToolSet()
    ts.add_groups([Group("a"), Group("a1", parent="a"), Group("a1x", parent="a1"), Group("secret")])
    return ts


def verdicts(ts: ToolSet, scope: tuple[str, ...], *active: str) -> dict[str, str]:
    view = compute_view(ts.catalog, Principal(scope=scope), SessionState(active=frozenset(active)))
    return {n: str(view.group(n).reason) for n in ["a", "a1", "a1x", "secret", "nope"]}


def test_a_group_verdict_runs_unknown_scope_active_parent_activatable_in_order() -> None:
    ts = group_tree()
    scope = ("a", "default")
    assert verdicts(ts, scope) == {
        "a": "activatable",
        "a1": "parent-inactive:a",
        "a1x": "parent-inactive:a1",
        "secret": "out-of-scope",
        "nope": "unknown",
    }
    # out-of-scope wins over active; active over everything after it
    assert verdicts(ts, scope, "a", "secret") == {
        "a": "active",
        "a1": "activatable",
        "a1x": "parent-inactive:a1",
        "secret": "out-of-scope",
        "nope": "unknown",
    }
    # an enabled child whose grandparent is off is not effectively active
    assert verdicts(ts, scope, "a1", "a1x") == {
        "a": "activatable",
        "a1": "parent-inactive:a",
        "a1x": "parent-inactive:a1",
        "secret": "out-of-scope",
        "nope": "unknown",
    }
    # a scope naming a child puts its descendants in scope, not its parent
    assert verdicts(ts, ("a1",), "a", "a1")["a"] == "out-of-scope"
    assert verdicts(ts, ("a1",), "a", "a1")["a1x"] == "activatable"


def test_a_group_verdict_carries_its_group_and_whether_the_session_enabled_it() -> None:
    ts = group_tree()
    view = compute_view(ts.catalog, Principal(), SessionState(active=frozenset({"a1"})))
    orphan = view.group("a1")
    assert orphan == GroupSurfacing(
        "a1", ts.catalog.groups["a1"], Reason(ReasonKind.PARENT_INACTIVE, group="a"), True
    )
    assert (orphan.visible, orphan.active, orphan.activatable) == (True, False, False)
    top = view.group("a")
    assert (top.visible, top.active, top.activatable, top.enabled) == (True, False, True, False)
    assert view.group("nope") == GroupSurfacing("nope", None, Reason(ReasonKind.UNKNOWN))
    assert [g.name for g in view.groups] == ["a", "a1", "a1x", "secret"]
