"""Who may see and call what (DESIGN §4): principals, trust, classes, decisions, scope,
rate limits and confirmation. Access-hidden tools are indistinguishable from unknown
ones; every refusal is a ``tool.executed`` event. Core only."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from _fixtures.core import T
from toolgate import (
    CallContext,
    ConfigError,
    ConfirmationRefused,
    ConfirmRequest,
    Event,
    Group,
    MemoryStore,
    Policy,
    Principal,
    RateLimit,
    RateLimited,
    Tool,
    ToolNotFound,
    ToolSet,
    TrustLadder,
)
from toolgate.policy import policy_from_mapping


class Recorder:
    """Collects a toolset's events; ``of(type)`` gives them without their timestamps."""

    def __init__(self, ts: ToolSet) -> None:
        self.events: list[Event] = []
        ts.events.subscribe(self.events.append)

    def of(self, type_: str = "tool.executed") -> list[dict[str, Any]]:
        return [
            {k: v for k, v in e.to_dict().items() if k not in ("time", "type")}
            for e in self.events
            if e.type == type_
        ]


# -- the tool-management seed's worked example --------------------------------------------------

DETECTED = Principal(id="visitor", trust="detected", agent_class="browser")
LINKED = Principal(id="member", trust="linked", agent_class="browser")


def retail() -> ToolSet:
    """A retail site with 14 tools in 6 groups (all enabled from the start, so groups are
    presentational as in the seed): 4 read-only tools anyone may use, 8 that need a
    signed-in visitor, one denied outright and one only for WebMCP agents."""
    groups = ["catalog", "reviews", "shipping", "cart", "orders", "account"]
    ts = ToolSet(initial_groups=groups)
    ts.add_groups([Group(g, f"{g.title()} tools") for g in groups])
    declared = Policy(min_trust="declared")
    verified = Policy(min_trust="verified")
    ts.add_tools(
        [
            T("catalog_search", "catalog", annotations={"readOnlyHint": True}),
            T("catalog_read", "catalog", annotations={"readOnlyHint": True}),
            T("reviews_read", "reviews", annotations={"readOnlyHint": True}),
            T("shipping_estimate", "shipping", annotations={"readOnlyHint": True}),
            T("reviews_write", "reviews", policy=declared),
            T("cart_view", "cart", policy=declared),
            T("cart_add", "cart", policy=declared),
            T("cart_remove", "cart", policy=declared),
            T("checkout", "cart", policy=verified),
            T("orders_list", "orders", policy=verified),
            T("orders_cancel", "orders", policy=verified),
            T("account_read", "account", policy=Policy(min_trust="linked")),
            T("refund_issue", "orders", policy=Policy(min_trust="verified", decision="deny")),
            T(
                "webmcp_autofill",
                "account",
                policy=Policy(min_trust="declared", allowed_classes=("webmcp",)),
            ),
        ]
    )
    return ts


async def test_a_detected_visitor_sees_exactly_the_four_read_only_tools() -> None:
    ts = retail()
    assert len(ts.catalog.tools) == 14
    s = ts.session("v", DETECTED)
    assert [t.name for t in await s.list_tools()] == [
        "catalog_read",
        "catalog_search",
        "reviews_read",
        "shipping_estimate",
    ]


async def test_a_linked_member_sees_twelve_of_fourteen() -> None:
    s = retail().session("m", LINKED)
    visible = [t.name for t in await s.list_tools()]
    assert len(visible) == 12
    assert sorted(set(retail().catalog.tools) - set(visible)) == ["refund_issue", "webmcp_autofill"]


async def test_explain_gives_the_reason_for_each_hidden_tool() -> None:
    ts = retail()
    detected = {x.name: str(x.reason) for x in await ts.session("v", DETECTED).explain()}
    assert {n: r for n, r in detected.items() if r != "visible"} == {
        "account_read": "trust-too-low:detected<linked",
        "cart_add": "trust-too-low:detected<declared",
        "cart_remove": "trust-too-low:detected<declared",
        "cart_view": "trust-too-low:detected<declared",
        "checkout": "trust-too-low:detected<verified",
        "orders_cancel": "trust-too-low:detected<verified",
        "orders_list": "trust-too-low:detected<verified",
        "refund_issue": "trust-too-low:detected<verified",
        "reviews_write": "trust-too-low:detected<declared",
        "webmcp_autofill": "trust-too-low:detected<declared",
    }
    linked = {x.name: str(x.reason) for x in await ts.session("m", LINKED).explain()}
    assert {n: r for n, r in linked.items() if r != "visible"} == {
        "refund_issue": "authz-deny",
        "webmcp_autofill": "class-not-allowed:browser",
    }


async def test_a_webmcp_agent_may_use_the_class_restricted_tool() -> None:
    s = retail().session("w", Principal(id="agent", trust="declared", agent_class="webmcp"))
    assert "webmcp_autofill" in [t.name for t in await s.list_tools()]
    assert (await s.call("webmcp_autofill")).result.text_content == "ok"


async def test_grouped_view_buckets_the_detected_visitors_tools() -> None:
    s = retail().session("v", DETECTED)
    assert (await s.view()).grouped() == {
        "catalog": ["catalog_read", "catalog_search"],
        "reviews": ["reviews_read"],
        "shipping": ["shipping_estimate"],
    }


# -- access-refused is indistinguishable from unknown ------------------------------------------


@pytest.mark.parametrize(
    ("tool", "principal"),
    [
        ("account_read", DETECTED),  # trust
        ("webmcp_autofill", LINKED),  # class
        ("refund_issue", LINKED),  # authz-deny
        ("catalog_read", Principal(id="x", trust="linked", scope=("orders",))),  # scope
    ],
)
async def test_an_access_refused_call_looks_exactly_like_a_nonexistent_tool(
    tool: str, principal: Principal
) -> None:
    ts = retail()
    s = ts.session("s", principal)
    with pytest.raises(ToolNotFound) as refused:
        await s.call(tool)
    with pytest.raises(ToolNotFound) as missing:
        await s.call("no_such_tool")
    assert type(refused.value) is type(missing.value)
    assert refused.value.to_dict() == {"code": "unknown_tool", "message": f"Unknown tool: {tool}"}
    assert str(refused.value).replace(tool, "<name>") == str(missing.value).replace(
        "no_such_tool", "<name>"
    )
    assert refused.value.to_dict()["message"].replace(tool, "?") == missing.value.to_dict()[
        "message"
    ].replace("no_such_tool", "?")
    # opaque or hint: access is never hinted at
    ts.hidden_tool_errors = "opaque"
    with pytest.raises(ToolNotFound):
        await s.call(tool)


# -- scope -------------------------------------------------------------------------------------


def scoped() -> ToolSet:
    ts = ToolSet()
    ts.add_groups([Group("db"), Group("write", parent="db"), Group("net"), Group("files")])
    ts.add_tools(
        [
            T("ping"),
            T("query", "db"),
            T("insert", "write"),
            T("get", "net"),
            T("read", "files"),
            T("sync", "net", "files"),
        ]
    )
    return ts


async def visible_after_enabling_all(ts: ToolSet, scope: tuple[str, ...]) -> list[str]:
    s = ts.session("s", Principal(scope=scope))
    await s.activate(["db", "write", "net", "files"])
    return [t.name for t in await s.list_tools()]


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        (("*",), ["get", "insert", "ping", "query", "read", "sync"]),
        ((), []),
        (("default",), ["ping"]),
        (("net",), ["get", "sync"]),
        (("files", "default"), ["ping", "read", "sync"]),
        (("write",), ["insert"]),  # its parent, out of scope, is transparent to it
        (("db",), ["insert", "query"]),  # the child is in scope through its ancestor
        (("NET",), []),  # names are case-sensitive
    ],
)
async def test_scope_decides_which_tools_a_principal_can_reach(
    scope: tuple[str, ...], expected: list[str]
) -> None:
    assert await visible_after_enabling_all(scoped(), scope) == expected


async def test_a_child_in_scope_is_usable_when_its_parent_is_active() -> None:
    ts = scoped()
    ts.initial_groups = ("db",)
    s = ts.session("s", Principal(scope=("write",)))
    assert [g.name for g in await s.list_groups()] == ["write"]
    result = await s.activate(["write"])
    assert result.changed == ("write",)
    assert [t.name for t in await s.list_tools()] == ["insert"]


async def test_empty_scope_means_no_tools_and_no_groups() -> None:
    s = scoped().session("s", Principal(scope=()))
    assert await s.list_tools() == ()
    assert await s.list_groups() == []
    assert [str(x.reason) for x in await s.explain()] == ["out-of-scope"] * 6


async def test_out_of_scope_groups_are_invisible_and_activate_like_unknown_ones() -> None:
    s = scoped().session("s", Principal(scope=("net", "default")))
    assert [g.name for g in await s.list_groups()] == ["net"]
    result = await s.activate(["db", "nope"])
    assert [e.to_dict() for e in result.errors] == [
        {"group": "db", "code": "group_not_found", "message": "Unknown group: db"},
        {"group": "nope", "code": "group_not_found", "message": "Unknown group: nope"},
    ]
    result = await s.deactivate(["db"])
    assert [e.to_dict() for e in result.errors] == [
        {"group": "db", "code": "group_not_found", "message": "Unknown group: db"}
    ]


def test_scope_must_be_a_list_not_a_string() -> None:
    with pytest.raises(ConfigError) as err:
        Principal(scope="net")  # type: ignore[arg-type]
    assert err.value.message == "scope must be a list of group names, got the string 'net'"


# -- trust levels -----------------------------------------------------------------------------


def test_an_unknown_trust_level_on_a_session_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as err:
        ToolSet().session("s", Principal(trust="superuser"))
    assert err.value.message == (
        "Unknown trust level 'superuser'; known levels: detected, declared, verified, linked"
    )


def test_an_unknown_trust_level_in_a_policy_is_a_config_error() -> None:
    ladder = TrustLadder()
    with pytest.raises(ConfigError) as err:
        policy_from_mapping({"tools": ["delete_*"], "min_trust": "superuser"}, ladder)
    assert err.value.message == (
        "Unknown trust level 'superuser'; known levels: detected, declared, verified, linked"
    )
    ts = ToolSet()
    with pytest.raises(ConfigError) as err:
        ts.add_tool(T("nuke", policy=Policy(min_trust="superuser")))
    assert err.value.message == (
        "Tool 'nuke': policy min_trust: Unknown trust level 'superuser'; "
        "known levels: detected, declared, verified, linked"
    )
    assert ts.catalog.tools == {}


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: TrustLadder(("low", "")), "trust_levels[1] is '': level names must not be blank"),
        (
            lambda: Principal(scope=("issues", " ")),
            "scope[1] is ' ': group names must not be blank",
        ),
    ],
    ids=["trust level", "scope"],
)
def test_a_blank_name_in_a_list_of_names_is_refused_by_its_place(
    build: Callable[[], object], message: str
) -> None:
    with pytest.raises(ConfigError) as err:
        build()
    assert err.value.message == message


def test_an_unknown_default_principal_trust_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        ToolSet(default_principal=Principal(trust="root"))


async def test_a_custom_trust_ladder_orders_levels() -> None:
    ts = ToolSet(
        trust_levels=("guest", "staff", "admin"), default_principal=Principal(trust="guest")
    )
    ts.add_tools([T("open"), T("staff_only", policy=Policy(min_trust="staff"))])
    assert [t.name for t in await ts.session("g").list_tools()] == ["open"]
    staff = ts.session("s", Principal(trust="admin"))
    assert [t.name for t in await staff.list_tools()] == ["open", "staff_only"]
    with pytest.raises(ConfigError):
        ts.session("x", Principal(trust="linked"))


def test_policy_config_is_validated() -> None:
    ladder = TrustLadder()
    assert policy_from_mapping(
        {"min_trust": "verified", "rate_limit": {"max": 3, "window_s": 60}, "decision": "confirm"},
        ladder,
    ) == Policy(min_trust="verified", decision="confirm", rate_limit=RateLimit(3, 60))
    with pytest.raises(ConfigError) as err:
        policy_from_mapping({"min_trus": "verified"}, ladder)
    assert err.value.message == "Unknown policy key(s): min_trus"
    with pytest.raises(ConfigError) as err:
        policy_from_mapping({"rate_limit": {"window_s": 5}}, ladder)
    assert err.value.message == "rate_limit must be {max: int, window_s: number}"
    with pytest.raises(ConfigError) as err:
        Policy(decision="maybe")  # type: ignore[arg-type]
    assert err.value.message == "policy decision must be allow, deny or confirm, got 'maybe'"
    with pytest.raises(ConfigError) as err:
        RateLimit(0, 60)
    assert err.value.message == "rate_limit.max must be an integer >= 1, got 0"
    with pytest.raises(ConfigError) as err:
        RateLimit(1, 0)
    assert err.value.message == "rate_limit.window_s must be a finite number of seconds > 0, got 0"
    with pytest.raises(ConfigError):
        TrustLadder(("a", "a"))
    with pytest.raises(ConfigError):
        TrustLadder(())


# -- rate limits ------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_rate_limit_allows_exactly_max_per_window_then_again_after_it() -> None:
    clock = Clock()
    ts = ToolSet(clock=clock)
    ts.add_tools([T("delete", policy=Policy(rate_limit=RateLimit(max=3, window_s=60)))])
    log = Recorder(ts)
    s = ts.session("s", Principal(id="alice"))
    for offset in (0, 10, 20):
        clock.now = 1000.0 + offset
        assert (await s.call("delete")).result.text_content == "ok"
    clock.now = 1030.0
    with pytest.raises(RateLimited) as err:
        await s.call("delete")
    assert err.value.retry_after == pytest.approx(30.0)
    assert err.value.message == "Rate limit reached for tool 'delete'; retry after 30.0 s."
    assert err.value.details == {"tool": "delete", "retry_after": 30.0}
    clock.now = 1059.9
    with pytest.raises(RateLimited) as err:
        await s.call("delete")
    assert err.value.retry_after == pytest.approx(0.1)
    clock.now = 1060.0  # the first call leaves the window
    assert (await s.call("delete")).result.text_content == "ok"
    clock.now = 1061.0
    with pytest.raises(RateLimited) as err:
        await s.call("delete")
    assert err.value.retry_after == pytest.approx(9.0)
    outcomes = [(e["outcome"], e.get("reason")) for e in log.of()]
    assert outcomes == [
        ("success", None),
        ("success", None),
        ("success", None),
        ("blocked", "rate-limited"),
        ("blocked", "rate-limited"),
        ("success", None),
        ("blocked", "rate-limited"),
    ]


async def test_rate_limits_are_per_principal_and_per_tool() -> None:
    clock = Clock()
    ts = ToolSet(store=MemoryStore(clock=clock))
    limit = Policy(rate_limit=RateLimit(max=1, window_s=10))
    ts.add_tools([T("a", policy=limit), T("b", policy=limit)])
    alice = ts.session("s1", Principal(id="alice"))
    bob = ts.session("s2", Principal(id="bob"))
    await alice.call("a")
    await alice.call("b")
    await bob.call("a")
    with pytest.raises(RateLimited):
        await alice.call("a")
    # another session of the same principal shares the principal's budget
    with pytest.raises(RateLimited):
        await ts.session("s3", Principal(id="alice")).call("a")
    clock.now += 10
    assert (await alice.call("a")).result.text_content == "ok"


async def test_a_call_with_bad_arguments_does_not_spend_the_rate_limit() -> None:
    ts = ToolSet(clock=Clock())
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    ts.add_tool(T("once", input_schema=schema, policy=Policy(rate_limit=RateLimit(1, 60))))
    s = ts.session("s")
    assert (await s.call("once", {})).result.is_error is True
    assert (await s.call("once", {"n": 1})).result.is_error is False


# -- confirmation -----------------------------------------------------------------------------


class Human:
    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[ConfirmRequest] = []

    async def confirm(self, request: ConfirmRequest) -> bool:
        self.asked.append(request)
        return self.answer


def confirming() -> tuple[ToolSet, list[Mapping[str, Any]]]:
    ran: list[Mapping[str, Any]] = []
    ts = ToolSet()

    def send(arguments: Mapping[str, Any], ctx: CallContext) -> str:
        ran.append(arguments)
        return "sent"

    ts.add_tool(
        Tool(
            "wire_money",
            "Send money.",
            handler=send,
            policy=Policy(decision="confirm"),
        )
    )
    return ts, ran


async def test_confirm_without_a_confirmer_is_refused_clearly() -> None:
    ts, ran = confirming()
    log = Recorder(ts)
    with pytest.raises(ConfirmationRefused) as err:
        await ts.session("s").call("wire_money", {"amount": 5})
    assert err.value.message == (
        "Tool 'wire_money' needs a human's confirmation, and this client cannot ask for it "
        "(no elicitation support). Nothing was run."
    )
    assert ran == []
    assert log.of() == [
        {
            "session": "s",
            "principal": "local",
            "tool": "wire_money",
            "outcome": "blocked",
            "reason": "no-confirmer",
        }
    ]


async def test_confirm_declined_is_refused_and_accepted_runs() -> None:
    ts, ran = confirming()
    log = Recorder(ts)
    no = Human(False)
    with pytest.raises(ConfirmationRefused) as err:
        await ts.session("s").call("wire_money", {"amount": 5}, confirmer=no)
    assert err.value.message == "The user declined to run 'wire_money'. Nothing was run."
    assert ran == []
    assert no.asked == [
        ConfirmRequest(
            tool="wire_money",
            arguments={"amount": 5},
            principal=Principal(),
            message="Allow 'local' to run 'wire_money' with {'amount': 5}?",
        )
    ]
    yes = Human(True)
    out = await ts.session("s").call("wire_money", {"amount": 5}, confirmer=yes)
    assert out.result.text_content == "sent"
    assert ran == [{"amount": 5}]
    assert [(e["outcome"], e.get("reason")) for e in log.of()] == [
        ("blocked", "declined"),
        ("success", None),
    ]


# -- every refusal is an event ----------------------------------------------------------------


async def test_every_access_refusal_is_a_blocked_event_with_its_reason() -> None:
    ts = retail()
    log = Recorder(ts)
    visitor = ts.session("v", DETECTED)
    member = ts.session("m", LINKED)
    for s, name in [
        (visitor, "account_read"),
        (member, "refund_issue"),
        (member, "webmcp_autofill"),
        (visitor, "nothing"),
        (ts.session("o", Principal(id="o", scope=("cart",))), "catalog_read"),
    ]:
        with pytest.raises(ToolNotFound):
            await s.call(name)
    assert [(e["principal"], e["tool"], e["outcome"], e["reason"]) for e in log.of()] == [
        ("visitor", "account_read", "blocked", "trust-too-low:detected<linked"),
        ("member", "refund_issue", "blocked", "authz-deny"),
        ("member", "webmcp_autofill", "blocked", "class-not-allowed:browser"),
        ("visitor", "nothing", "blocked", "unknown"),
        ("o", "catalog_read", "blocked", "out-of-scope"),
    ]


def test_a_rate_limit_message_says_the_wait_its_data_says() -> None:
    """59.9496 s is 59.950 in the data; the message rounds that same number (60.0), not
    the unrounded one (59.9)."""
    from toolgate.errors import RateLimited

    refused = RateLimited("add", 59.9496)
    assert refused.details["retry_after"] == 59.95
    assert refused.message == "Rate limit reached for tool 'add'; retry after 60.0 s."


# -- policy values of the wrong kind ---------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (
            lambda: RateLimit(5, float("nan")),
            "rate_limit.window_s must be a finite number of seconds > 0, got nan",
        ),
        (
            lambda: RateLimit(5, float("inf")),
            "rate_limit.window_s must be a finite number of seconds > 0, got inf",
        ),
        (
            lambda: RateLimit(5, True),
            "rate_limit.window_s must be a finite number of seconds > 0, got True",
        ),
        (
            lambda: Policy(rate_limit={"max": 5}),  # type: ignore[arg-type]
            "policy rate_limit must be a RateLimit(max, window_s) or None, got dict {'max': 5}",
        ),
        (
            lambda: Policy(allowed_classes=None),  # type: ignore[arg-type]
            "allowed_classes must be a list of class names, got None",
        ),
        (lambda: Principal(scope=None), "scope must be a list of group names, got None"),  # type: ignore[arg-type]
        (
            lambda: Principal(scope=["notes", 5]),  # type: ignore[arg-type]
            "scope must be a list of group names, got ['notes', 5]",
        ),
        (
            lambda: TrustLadder("low"),
            "trust_levels must be a list of level names, got the string 'low'",
        ),
        (
            lambda: Principal(attributes="team=ops"),  # type: ignore[arg-type]
            "attributes must be a dict, got str 'team=ops'",
        ),
    ],
)
def test_a_policy_value_of_the_wrong_kind_is_a_config_error_naming_it(
    make: Any, problem: str
) -> None:
    with pytest.raises(ConfigError) as err:
        make()
    assert err.value.message == problem


def test_lists_given_for_classes_and_levels_are_kept_as_tuples() -> None:
    policy = Policy(allowed_classes=["webmcp"])  # type: ignore[arg-type]
    ladder = TrustLadder(["low", "high"])
    assert policy.allowed_classes == ("webmcp",)
    assert ladder.levels == ("low", "high")
    assert hash(policy) == hash(Policy(allowed_classes=("webmcp",)))
    assert hash(ladder) == hash(TrustLadder(("low", "high")))
