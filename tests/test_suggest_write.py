"""``toolgate inspect --suggest-groups --write``: what it replaces, what it leaves alone,
and that it never writes a config ``toolgate check`` would refuse.

Most cases call ``rewrite_groups`` on a config mapping and a listing written out here:
what a backend lists is the input, so no backend is started. The command itself runs
against a real stdio backend (``served``: a script serving tools from a JSON list, with
the SDK's ``MCPServer``) for what it prints, its exit status and the file it leaves.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from _fixtures.command import command_in_process
from _fixtures.gateway import sha256
from toolgate.errors import ConfigError
from toolgate.gateway.commands.suggest import Listing, propose_for_servers, rewrite_groups
from toolgate.grouping import GroupingSettings

OBJECTS = ["issue", "project", "board", "sprint", "user", "comment", "label", "milestone"]
VERBS = ["get", "list", "create", "delete", "update"]
INSTRUCTIONS = "Alpha tracks issues.\n\nPass project ids as numbers."

BACKEND = """
import json, sys
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

spec = json.loads(open(sys.argv[1], encoding="utf-8").read())
server = MCPServer("served", instructions=spec.get("instructions"))


def answer(name):
    def tool() -> str:
        return name

    return tool


for t in spec["tools"]:
    hints = ToolAnnotations(**t["annotations"]) if t.get("annotations") else None
    server.add_tool(
        answer(t["name"]), name=t["name"], description=t["description"], annotations=hints
    )
server.run("stdio")
"""


def wires(names: list[str]) -> list[dict[str, Any]]:
    """Tools as a backend lists them."""
    return [
        {"name": n, "description": n.replace("_", " ").capitalize() + ".", "inputSchema": {}}
        for n in names
    ]


TRACKER = wires([f"{v}_{o}" for v in VERBS for o in OBJECTS])  # 40 tools, 8 groups
# 30 tools, ``board.activate`` among them: the name group ``board``'s activator takes
DOTTED = wires([f"{o}.{v}" for v in [*VERBS[:4], "activate", "deactivate"] for o in OBJECTS[:5]])


def served(
    tmp: Path, tools: list[dict[str, Any]], instructions: str | None = None
) -> dict[str, Any]:
    """The ``mcpServers`` entry of a stdio backend serving ``tools`` (and
    ``instructions``), its script and tool list written to ``tmp``."""
    script = tmp / "served.py"
    script.write_text(BACKEND, encoding="utf-8")
    spec = tmp / "served.json"
    spec.write_text(json.dumps({"tools": tools, "instructions": instructions}), encoding="utf-8")
    return {"command": sys.executable, "args": [str(script), str(spec)]}


def config(groups: dict[str, Any], **toolgate: Any) -> dict[str, Any]:
    return {
        "mcpServers": {"alpha": {"command": "alpha-server"}},
        "toolgate": {**toolgate, "groups": groups},
    }


def wide(**extra: Any) -> dict[str, Any]:
    """The group ``init`` writes for server ``alpha``, with ``extra`` keys."""
    return {"alpha": {"description": "Alpha tracker", "tools": ["alpha:*"], **extra}}


def listing(tools: list[dict[str, Any]] = TRACKER) -> Listing:
    return Listing({"alpha": tools}, {"alpha": INSTRUCTIONS})


def proposal(of: Listing) -> dict[str, dict[str, dict[str, Any]]]:
    return propose_for_servers(of.tools, GroupingSettings())


def test_write_replaces_the_group_init_made_with_the_servers_instructions() -> None:
    # init keeps a server's instructions on its one group: they are the server's own,
    # which the gateway relays anyway, so the proposed groups may replace the group
    data = config(wide(instructions=INSTRUCTIONS.strip()), max_tools=40)
    done = rewrite_groups(data, proposal(listing()), listing())
    assert done.replaced == {"alpha": ["alpha"]} and done.skipped == {}
    assert sorted(data["toolgate"]["groups"]) == sorted(OBJECTS)
    assert data["toolgate"]["max_tools"] == 40


OAUTH = {"issuer": "https://issuer.example", "audience": ["toolgate"], "keys": "jwks.json"}


@pytest.mark.parametrize(
    ("toolgate", "named_by"),
    [
        ({"initial_groups": ["alpha"]}, "toolgate.initial_groups"),
        ({"exclusive": [["alpha", "other"]]}, "toolgate.exclusive[0]"),
        ({"identity": {"default": {"id": "local", "scope": ["alpha"]}}}, "default.scope"),
        (
            {"identity": {"tokens": {sha256("t"): {"id": "ci", "scope": ["alpha"]}}}},
            "the scope of token principal 'ci'",
        ),
        (
            {"identity": {"oauth": {**OAUTH, "scope_map": {"read": ["alpha"]}}}},
            "toolgate.identity.oauth.scope_map.read",
        ),
        ({"identity": {"oauth": OAUTH}}, "the scopes of OAuth tokens"),
    ],
)
def test_a_server_wide_group_named_elsewhere_in_the_config_is_kept(
    toolgate: dict[str, Any], named_by: str
) -> None:
    # replacing it would leave the name unknown there (check refuses the config), or
    # take a principal's tools away without a word
    groups = {**wide(), "other": {"description": "Other", "tools": []}}
    data = config(groups, **toolgate)
    before = json.loads(json.dumps(data))
    done = rewrite_groups(data, proposal(listing()), listing())
    assert done.replaced == {}
    assert done.skipped["alpha"].startswith("its group alpha is named by ")
    assert named_by in done.skipped["alpha"]
    assert data == before


DROPPED = "which the proposed groups would drop"


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ({"prompts": ["alpha:*"], "resources": ["alpha:*"]}, f"has prompts, resources, {DROPPED}"),
        ({"title": "Alpha"}, f"has title, {DROPPED}"),
        (
            {"instructions": "Never close an issue."},
            f"has instructions other than its server's, {DROPPED}",
        ),
    ],
)
def test_a_server_wide_group_with_more_than_init_wrote_is_kept(
    extra: dict[str, Any], why: str
) -> None:
    data = config(wide(**extra))
    before = json.loads(json.dumps(data))
    done = rewrite_groups(data, proposal(listing()), listing())
    assert done.replaced == {}
    assert done.skipped == {"alpha": f"its group alpha {why}"}
    assert data == before


@pytest.mark.parametrize("pattern", ["delete_*", "*", "get_issue", "a.delete_*"])
def test_groups_naming_the_servers_tools_in_any_pattern_form_leave_it_alone(pattern: str) -> None:
    # a pattern without "server:" names tools by the names the gateway exposes them
    # under (a prefix included); it is matched as the gateway matches it
    data = config({**wide(), "danger": {"description": "Deleting", "tools": [pattern]}})
    if pattern.startswith("a."):
        data["mcpServers"]["alpha"]["prefix"] = "a"
    before = json.loads(json.dumps(data))
    done = rewrite_groups(data, proposal(listing()), listing())
    assert done.skipped == {"alpha": "groups danger already name its tools"}
    assert data == before


def test_a_result_check_would_refuse_is_not_written() -> None:
    # the groups' own activators ("board.activate") would meet the server's tools
    data = config(wide(), strategy="list_changed", meta_tools="activators")
    before = json.loads(json.dumps(data))
    with pytest.raises(ConfigError) as refused:
        rewrite_groups(data, proposal(listing(DOTTED)), listing(DOTTED))
    lines = refused.value.message.splitlines()
    assert lines[0] == (
        "not written: with the proposed groups, `toolgate check` would refuse the config:"
    )
    assert any("Meta-tool name 'board.activate'" in line for line in lines[1:])
    assert data == before


def test_a_proposed_name_equal_on_the_wire_to_a_hand_written_one_gets_the_server_name() -> None:
    # "pull_request" and "pull-request" are one name to a groups-extension client
    prs = wires([f"{v}_pull_request{s}" for v in VERBS for s in ["", "_review", "_comment"]])
    prs += wires([f"{v}_{o}" for v in VERBS for o in ["issue", "branch"]])
    found = Listing({"alpha": prs})
    data = config({**wide(), "pull_request": {"description": "PRs", "tools": ["beta:*"]}})
    data["mcpServers"]["beta"] = {"command": "beta-server"}
    proposed = propose_for_servers(found.tools, GroupingSettings(), reserved={"pull_request"})
    assert "alpha-pull-request" in proposed["alpha"]
    assert not {"pull-request", "pull_request"} & set(proposed["alpha"])
    assert rewrite_groups(data, proposed, found).replaced == {"alpha": ["alpha"]}


# -- the command ---------------------------------------------------------------------------


def test_write_leaves_the_file_as_it_was_and_fails_when_check_would_refuse_the_result(
    tmp_path: Path,
) -> None:
    path = tmp_path / "toolgate.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {"alpha": served(tmp_path, DOTTED)},
                "toolgate": {
                    "strategy": "list_changed",
                    "meta_tools": "activators",
                    "groups": wide(),
                },
            },
            indent=2,
        )
    )
    before = path.read_bytes()
    done = command_in_process("inspect", str(path), "--suggest-groups", "--write")
    assert done.returncode == 1
    assert json.loads(done.stdout)["servers"] == {"alpha": 30}  # the proposal is printed
    assert (
        "toolgate: not written: with the proposed groups, `toolgate check` would refuse the "
        "config:\ntoolgate: toolgate.strategy: Meta-tool name 'board.activate' (delivery) "
        "collides with a registered tool"
    ) in done.stderr
    assert path.read_bytes() == before


def test_write_refuses_a_toml_config_before_starting_any_backend(tmp_path: Path) -> None:
    started = tmp_path / "started"
    path = tmp_path / "toolgate.toml"
    code = f"open({str(started)!r}, 'w')"  # a backend that says it was started
    path.write_text(
        f"[mcpServers.alpha]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = ['-c', {json.dumps(code)}]\n"
    )
    done = command_in_process("inspect", str(path), "--suggest-groups", "--write")
    assert done.returncode == 1
    assert done.stderr.startswith(f"toolgate: {path}: --write rewrites JSON configs only")
    assert done.stdout == ""
    assert not started.exists()
