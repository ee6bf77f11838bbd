"""Groups made for you: ``toolgate.grouping`` on real catalogs, and through the commands.

The proposal is checked on GitHub's MCP catalog (117 tools) and the GitLab MCP server's
(262 tools, ``benchmarks/data/``): every tool in one group, each group small, named,
described, nested under a group that exists, the same for any input order. ``toolgate
init`` writes it for a big stdio backend (``benchmarks/github_backend.py``), ``toolgate
check`` accepts the file, and ``toolgate serve`` (HTTP) opens a proposed group for real
clients of both protocol eras; ``toolgate inspect --suggest-groups --write`` prints it and
puts it into a config, every other key as it was.
"""

from __future__ import annotations

import io
import json
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastmcp
import mcp_types as mt
import pytest
from fastmcp.client.transports import StreamableHttpTransport
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from _fixtures.gateway import SERVERS, HttpGateway, gateway_env, toolgate_argv
from toolgate.catalog import Tool
from toolgate.errors import ConfigError
from toolgate.gateway.commands.check import run_check
from toolgate.gateway.commands.suggest import (
    Listing,
    as_config,
    check_writable,
    propose_for_servers,
    rewrite_groups,
)
from toolgate.grouping import GroupingSettings, ProposedGroup, propose_groups

ROOT = Path(__file__).resolve().parents[1]
GITHUB = ROOT.parent / "shared" / "data" / "catalogs" / "github-mcp-server.json"
GITLAB = ROOT / "benchmarks" / "data" / "gitlab-mcp-server.json"
GITHUB_SERVER = {
    "command": sys.executable,
    "args": [str(ROOT / "benchmarks" / "github_backend.py")],
}
NOTES_SERVER = {"command": sys.executable, "args": [str(SERVERS / "gw_notes.py")]}
GROUP_NAME = re.compile(r"^[a-z0-9]+([_-][a-z0-9]+)*$")


def catalog(path: Path) -> list[Tool]:
    return [
        Tool(t["name"], t.get("description") or "", annotations=t.get("annotations"))
        for t in json.loads(path.read_text(encoding="utf-8"))
    ]


@pytest.fixture(scope="module", params=["github", "gitlab"])
def proposal(request: pytest.FixtureRequest) -> tuple[list[Tool], tuple[ProposedGroup, ...]]:
    tools = catalog(GITHUB if request.param == "github" else GITLAB)
    return tools, propose_groups(tools, server=request.param)


def test_every_tool_of_a_big_server_is_in_exactly_one_group_of_at_most_15(
    proposal: tuple[list[Tool], tuple[ProposedGroup, ...]],
) -> None:
    tools, groups = proposal
    placed = [t for g in groups for t in g.tools]
    assert sorted(placed) == sorted(t.name for t in tools)
    assert all(len(g.tools) <= 15 for g in groups)
    # small enough to open cheaply, and not split into crumbs
    assert len(groups) <= len(tools) / 3


def test_proposed_groups_have_valid_unique_names_descriptions_and_existing_parents(
    proposal: tuple[list[Tool], tuple[ProposedGroup, ...]],
) -> None:
    _, groups = proposal
    names = [g.name for g in groups]
    assert len(set(names)) == len(names)
    assert all(GROUP_NAME.fullmatch(n) and len(n) <= 64 and n != "default" for n in names)
    assert all(len(g.description.split()) >= 3 for g in groups)
    seen: set[str] = set()
    for g in groups:  # parents come first, so no group nests under one that is missing
        assert g.parent is None or g.parent in seen
        assert g.tools or g.parent is None
        seen.add(g.name)


def test_the_proposal_is_the_same_whatever_order_the_tools_come_in(
    proposal: tuple[list[Tool], tuple[ProposedGroup, ...]],
) -> None:
    tools, groups = proposal
    shuffled = list(tools)
    random.Random(7).shuffle(shuffled)
    server = "github" if len(tools) == 117 else "gitlab"
    assert propose_groups(shuffled, server=server) == groups


def test_names_nest_where_the_server_names_nest() -> None:
    groups = {g.name: g for g in propose_groups(catalog(GITHUB), server="github")}
    review = groups["pull-request-review"]
    assert review.parent == "pull-request"
    assert all("review" in t for t in review.tools)
    # named by "review" alone, nested because most "review" names are pull requests'
    assert "resolve_review_thread" in review.tools
    assert "create_pull_request" in groups["pull-request"].tools
    assert "update_issue_labels" in groups["issue-update"].tools
    assert groups["issue-update"].parent == "issue"


@pytest.mark.parametrize("case", ["snake", "camel", "Pascal"])
def test_a_verb_word_ending_a_name_after_its_action_is_part_of_the_object(case: str) -> None:
    # "request" is a verb (request a review); after "create" it ends "pull request"
    objects = ["issue", "pull_request", "repo", "branch", "commit", "release", "label", "tag"]
    verbs = ["get", "list", "create", "update", "delete"]

    def spelt(words: list[str]) -> str:
        if case == "snake":
            return "_".join(words)
        joined = "".join(w.capitalize() for w in words)
        return joined if case == "Pascal" else joined[0].lower() + joined[1:]

    tools = [
        Tool(spelt([v, *o.split("_")]), f"{v.capitalize()} a {o.replace('_', ' ')}.")
        for o in objects
        for v in verbs
    ]
    groups = {g.name: g for g in propose_groups(tools, server="forge")}
    assert "pull-request" in groups
    assert groups["pull-request"].description == "forge: create, delete, get, list, update"
    assert len(groups["pull-request"].tools) == 5


ATLASSIAN = """
jira_get_issue jira_create_issue jira_update_issue jira_delete_issue jira_transition_issue
jira_link_issues jira_search jira_get_sprint jira_list_sprints jira_create_sprint
jira_get_board jira_list_boards jira_add_comment jira_get_transitions jira_get_worklog
jira_add_worklog confluence_get_page confluence_create_page confluence_update_page
confluence_delete_page confluence_search confluence_get_comments confluence_add_label
confluence_get_labels confluence_get_space confluence_list_spaces
""".split()  # noqa: SIM905 -- a name list reads better as words


def test_names_under_a_namespace_word_group_under_it_and_keep_their_verbs() -> None:
    tools = [Tool(n, n.replace("_", " ").capitalize() + ".") for n in ATLASSIAN]
    groups = {g.name: g for g in propose_groups(tools, server="atlassian")}
    assert set(groups) == {"confluence", "jira", "jira-issue"}
    assert all(t.startswith("confluence_") for t in groups["confluence"].tools)
    assert groups["jira-issue"].parent == "jira"
    assert all(t.endswith(("_issue", "_issues")) for t in groups["jira-issue"].tools)
    # "get" after the namespace is the action, not an object
    assert groups["jira-issue"].description.startswith("atlassian: ")
    assert "get" in groups["jira-issue"].description.split(": ")[1].split(";")[0]


def test_a_proposed_description_leaves_to_the_group_name_what_the_name_already_says() -> None:
    tools = [Tool(n, n.replace("_", " ").capitalize() + ".") for n in ATLASSIAN]
    plain = {g.name: g.description for g in propose_groups(tools, server="atlassian")}
    # the name sits beside the description wherever a model reads it: no "Jira issue
    # tools", the verbs first; the server only where the name does not carry it
    assert plain["jira-issue"].startswith("atlassian: ")
    assert not any("tools" in d.lower() or "jira" in d.lower() for d in plain.values())
    named = propose_groups(tools, server="atlassian", prefix="atlassian")
    assert {g.name for g in named} == {f"atlassian-{n}" for n in plain}
    assert not any("atlassian" in g.description for g in named)
    assert {g.name.removeprefix("atlassian-"): g.description for g in named} == {
        n: d.removeprefix("atlassian: ") for n, d in plain.items()
    }


def test_a_server_of_20_tools_or_fewer_stays_one_group() -> None:
    tools = [Tool(f"get_thing_{i}", "Get a thing.") for i in range(20)]
    assert propose_groups(tools) == ()
    assert len(propose_groups([*tools, Tool("get_thing_20", "Get a thing.")])) >= 2


RECORD_READS = "count describe export fetch find get inspect list preview query search view"
RECORD_WRITES = "archive copy create delete lock merge move publish rename restore unlock update"


def test_a_noun_too_big_for_one_group_splits_its_changing_tools_from_the_read_only_ones() -> None:
    reads = [
        Tool(f"{v}_record", f"{v.title()} records.", annotations={"readOnlyHint": True})
        for v in RECORD_READS.split()
    ]
    writes = [
        Tool(
            f"{v}_record",
            f"{v.title()} a record.",
            annotations={"readOnlyHint": False, "destructiveHint": v == "delete"},
        )
        for v in RECORD_WRITES.split()
    ]
    # a tool whose name reads as a read but whose annotation says it writes goes by the
    # annotation
    writes.append(Tool("get_record_lease", "Take a lease.", annotations={"readOnlyHint": False}))
    groups = {g.name: g for g in propose_groups([*reads, *writes], server="db")}
    assert set(groups) == {"record", "record-write"}
    assert sorted(groups["record"].tools) == sorted(t.name for t in reads)
    assert sorted(groups["record-write"].tools) == sorted(t.name for t in writes)
    assert groups["record-write"].parent == "record"
    assert groups["record"].description.endswith("(read-only)")
    assert groups["record-write"].description.endswith("(some destructive)")


def test_a_tool_that_says_it_is_destructive_is_never_read_only_whatever_its_verb() -> None:
    # MCP: readOnlyHint defaults to false, and destructiveHint true says the tool
    # changes something; its verb ("view") does not make it a read
    reads = [Tool(f"{v}_record", f"{v.title()} records.") for v in RECORD_READS.split()[:-1]]
    writes = [Tool(f"{v}_record", f"{v.title()} a record.") for v in RECORD_WRITES.split()]
    purge = Tool("view_record", "Views a record, purging its history.", annotations=DESTRUCTIVE)
    groups = {g.name: g for g in propose_groups([*reads, *writes, purge], server="db")}
    assert "view_record" in groups["record-write"].tools
    assert groups["record"].description.endswith("(read-only)")
    assert groups["record-write"].description.endswith("(some destructive)")


def test_a_group_with_a_destructive_tool_is_never_called_read_only() -> None:
    marked = {"count_issue": DESTRUCTIVE, "count_board": {**DESTRUCTIVE, "readOnlyHint": True}}
    tools = [
        Tool(f"{v}_{o}", f"{v.title()} a {o}.", annotations=marked.get(f"{v}_{o}"))
        for v in RECORD_READS.split()[:5]
        for o in ITEMS[:5]
    ]
    described = {g.name: g.description for g in propose_groups(tools, server="db")}
    assert described["issue"].endswith("(some destructive)")
    assert described["board"].endswith("(some destructive)")
    assert described["project"].endswith("(read-only)")


DESTRUCTIVE = {"destructiveHint": True}
ITEMS = ["issue", "project", "board", "sprint", "user", "comment", "label", "milestone"]
CRUD = ["get", "list", "create", "delete", "update"]


def test_a_namespace_word_nearly_every_name_starts_with_is_no_group() -> None:
    # "acme" of acme_get_issue tells no tool from another: the objects make the groups
    plain = [Tool(f"{v}_{o}", f"{v.capitalize()} a {o}.") for v in CRUD for o in ITEMS]
    spaced = [Tool(f"acme_{t.name}", t.description) for t in plain]

    def shape(tools: list[Tool]) -> list[tuple[str, str, str | None, int]]:
        return [
            (g.name, g.description, g.parent, len(g.tools))
            for g in propose_groups(tools, server="acme")
        ]

    assert shape(spaced) == shape(plain)
    assert {n for n, *_ in shape(plain)} == set(ITEMS)
    # nearly every name is enough
    nearly = [*spaced, Tool("get_issue_history", "Get an issue's history.")]
    assert {n for n, *_ in shape(nearly)} == set(ITEMS)


def test_a_long_server_name_is_cut_so_each_prefixed_name_keeps_its_own_noun() -> None:
    server = "acme-internal-project-tracking-and-issue-management-server-prod"
    tools = [Tool(f"{v}_{o}", f"{v.capitalize()} a {o}.") for v in CRUD for o in ITEMS]
    names = {g.name for g in propose_groups(tools, server=server, prefix=server)}
    # the prefix is cut at a word within 24 characters
    assert names == {f"acme-internal-project-{o}" for o in ITEMS}


def test_a_name_equal_on_the_groups_extension_wire_to_a_taken_one_is_not_proposed() -> None:
    # "pull_request" and "pull-request" are one name to a groups-extension client
    tools = [
        Tool(f"{v}_pull_request{s}", f"{v.capitalize()} a pull request.")
        for v in CRUD
        for s in ["", "_review", "_comment", "_file", "_commit"]
    ]
    names = {g.name for g in propose_groups(tools, taken={"pull_request"})}
    assert "pull-request" not in names and "pull-request-2" in names
    listed = {"alpha": [{"name": t.name, "description": t.description} for t in tools]}
    proposed = propose_for_servers(listed, GroupingSettings(), reserved={"pull_request"})
    assert set(proposed["alpha"]) >= {"alpha-pull-request", "alpha-pull-request-comment"}


def test_a_server_whose_tools_make_one_group_anyway_gets_no_proposal() -> None:
    # one group listing every tool says less than the server's own group ("server:*",
    # its instructions), which init writes for it instead
    tools = [
        Tool(f"{v}_issue_{x}", f"{v} issue {x}")
        for v in ["get", "list", "update"]
        for x in "abcdefgh"
    ]
    assert propose_groups(tools, settings=GroupingSettings(max_size=30)) == ()
    assert len(propose_groups(tools)) > 1


def test_a_group_size_below_three_is_refused_with_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="group size 2: a proposed group holds at least 3"):
        GroupingSettings(max_size=2)


def test_a_smaller_group_size_gives_smaller_groups() -> None:
    groups = propose_groups(catalog(GITHUB), settings=GroupingSettings(max_size=8))
    assert max(len(g.tools) for g in groups) <= 8
    assert sum(len(g.tools) for g in groups) == 117


# -- through the commands --------------------------------------------------------------------


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*toolgate_argv(), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env=gateway_env(),
    )


async def check(path: Path) -> str:
    """``toolgate check`` in process: its one line, or the problems it printed."""
    out, err = io.StringIO(), io.StringIO()
    code = await run_check(path, out=out, err=err)
    assert code == 0, err.getvalue()
    return out.getvalue()


@pytest.fixture(scope="module")
def initialised(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """``toolgate init`` on a host config naming the GitHub backend and a small one."""
    tmp = tmp_path_factory.mktemp("autogroups")
    host = tmp / "claude_desktop_config.json"
    host.write_text(json.dumps({"mcpServers": {"github": GITHUB_SERVER, "notes": NOTES_SERVER}}))
    done = run("init", "--from", str(host), "-o", "toolgate.json", cwd=tmp)
    assert done.returncode == 0, done.stderr
    assert "github: 117 tools in 18 proposed groups" in done.stderr
    yield tmp / "toolgate.json", json.loads((tmp / "toolgate.json").read_text())


async def test_init_writes_proposed_groups_for_a_big_server_and_one_group_for_a_small_one(
    initialised: tuple[Path, dict[str, Any]],
) -> None:
    path, config = initialised
    groups = config["toolgate"]["groups"]
    assert groups["notes"]["tools"] == ["notes:*"]
    github = {n: g for n, g in groups.items() if n != "notes"}
    proposed = propose_groups(catalog(GITHUB), server="github")
    assert list(github) == [g.name for g in proposed]
    for g in proposed:
        assert github[g.name]["tools"] == [f"github:{t}" for t in g.tools]
        assert github[g.name].get("parent") == g.parent
    assert "122 tools from 2 backend(s), 19 groups" in await check(path)


@pytest.fixture(scope="module")
def served(initialised: tuple[Path, dict[str, Any]]) -> Iterator[HttpGateway]:
    path, _ = initialised
    gateway = HttpGateway([*toolgate_argv(), "serve", str(path)], path.parent / "serve.log")
    gateway.start()
    try:
        yield gateway
    finally:
        gateway.stop()


async def test_a_legacy_client_opens_a_proposed_group_and_calls_its_tool(
    served: HttpGateway,
) -> None:
    async with (
        streamable_http_client(served.url) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        before = {t.name for t in (await session.list_tools()).tools}
        assert "update_issue_labels" not in before
        opened = await session.call_tool("enable_tools", {"groups": ["issue", "issue-update"]})
        assert not opened.is_error, opened.content
        after = {t.name for t in (await session.list_tools()).tools}
        assert {"issue_read", "update_issue_labels"} <= after
        called = await session.call_tool(
            "update_issue_labels",
            {"owner": "o", "repo": "r", "issue_number": 1, "labels": ["bug"]},
        )
        assert isinstance(called.content[0], mt.TextContent)
        assert called.content[0].text.startswith("update_issue_labels ")


async def test_a_2026_client_reads_a_nested_proposed_group_from_get_group(
    served: HttpGateway,
) -> None:
    async with fastmcp.Client(StreamableHttpTransport(served.url)) as client:
        got = await client.call_tool("get_group", {"name": "pull-request-review"})
        assert "pull_request_review_write" in json.dumps(got.structured_content)


def test_inspect_suggest_groups_prints_the_proposal_and_write_puts_it_in_the_file(
    initialised: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    _, config = initialised
    # the config ``init --one-group-per-server`` writes, with a key a person added
    before = {**config, "toolgate": {"strategy": "auto", "max_tools": 40}}
    before["toolgate"]["groups"] = {
        "github": {"description": "GitHub", "tools": ["github:*"]},
        "notes": {"description": "Notes", "tools": ["notes:*"]},
    }
    path = tmp_path / "toolgate.json"
    path.write_text(json.dumps(before, indent=2))

    done = run("inspect", str(path), "--suggest-groups", "--write", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["servers"] == {"github": 117}
    proposed = propose_groups(catalog(GITHUB), server="github")
    assert printed["groups"] == as_config("github", proposed)
    assert "notes: 5 tools; one group is small enough" in done.stderr
    assert "github: 18 groups written in place of github" in done.stderr
    after = json.loads(path.read_text())
    assert after == {
        **before,
        "toolgate": {
            "strategy": "auto",
            "max_tools": 40,
            "groups": {"notes": before["toolgate"]["groups"]["notes"], **printed["groups"]},
        },
    }


async def test_check_warns_of_a_group_too_big_for_a_re_listing_client_and_not_of_proposed_ones(
    initialised: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    path, config = initialised
    err = io.StringIO()
    assert await run_check(path, out=io.StringIO(), err=err) == 0
    assert "warning" not in err.getvalue()  # every proposed group holds at most 15
    one = {**config, "toolgate": {"groups": {"github": {"tools": ["github:*"]}}}}
    coarse = tmp_path / "one-group.json"
    coarse.write_text(json.dumps(one))
    err = io.StringIO()
    assert await run_check(coarse, out=io.StringIO(), err=err) == 0  # a warning, not a problem
    assert err.getvalue().splitlines() == [
        f"{coarse}: warning: toolgate.groups.github: 117 tools in one group; a client that "
        "re-lists after opening it reads all 117 (`toolgate inspect --suggest-groups` "
        "proposes groups of at most 15)"
    ]


GITHUB_LISTING = Listing({"github": json.loads(GITHUB.read_text(encoding="utf-8"))})


def test_write_leaves_a_server_alone_when_other_groups_name_its_tools() -> None:
    proposal = {"github": as_config("github", propose_groups(catalog(GITHUB), server="github"))}
    groups = {
        "github": {"description": "GitHub", "tools": ["github:*"]},
        "triage": {"description": "Triage", "tools": ["github:issue_read"]},
    }
    data: dict[str, Any] = {
        "mcpServers": {"github": GITHUB_SERVER},
        "toolgate": {"groups": groups},
    }
    done = rewrite_groups(data, proposal, GITHUB_LISTING)
    assert done.skipped == {"github": "groups triage already name its tools"}
    assert data["toolgate"]["groups"] == groups
    nested = {**groups, "triage": {"description": "Triage", "parent": "github"}}
    data["toolgate"]["groups"] = nested
    assert rewrite_groups(data, proposal, GITHUB_LISTING).skipped == {
        "github": "groups triage nest under its group"
    }
    assert data["toolgate"]["groups"] == nested


def test_write_refuses_a_toml_config_and_a_result_that_does_not_validate(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--write rewrites JSON configs only"):
        check_writable(tmp_path / "toolgate.toml")
    groups = {"github": {"description": "GitHub", "tools": ["github:*"]}}
    data: dict[str, Any] = {"mcpServers": {"github": GITHUB_SERVER}, "toolgate": {"groups": groups}}
    broken = {"github": {"issue-write": {"description": "x", "parent": "issue", "tools": []}}}
    with pytest.raises(ConfigError, match="issue"):
        rewrite_groups(data, broken, GITHUB_LISTING)
    assert data["toolgate"]["groups"] == groups
