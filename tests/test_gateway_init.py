"""``toolgate init --from PATH``: a host's MCP config becomes a gateway config.

Each case writes a real host config (Claude Desktop, VS Code, Codex) naming real stdio
servers from ``tests/servers``; init connects to each with the MCP SDK's client. The
written ``toolgate.json`` must pass ``toolgate check`` and its own JSON Schema, and the
snippet printed for the host must parse in that host's format.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from _fixtures.command import command_in_process
from _fixtures.gateway import SERVERS, toolgate_argv
from test_suggest_write import served, wires
from toolgate.errors import ConfigError
from toolgate.gateway.commands.init import build_init, group_name

ENV_SERVER = {"command": sys.executable, "args": [str(SERVERS / "gw_env.py")]}
MATH_SERVER = {"command": sys.executable, "args": [str(SERVERS / "gw_math.py")]}


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``toolgate ARGS`` in ``cwd``, by the command's code in this process (the servers
    it reads run as processes; the first test also runs the ``toolgate`` process)."""
    return command_in_process(*args, cwd=cwd)


def test_init_from_claude_desktop_writes_a_config_that_checks_and_a_host_snippet(
    tmp_path: Path,
) -> None:
    host = tmp_path / "claude_desktop_config.json"
    host.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "env": {**ENV_SERVER, "env": {"MODE": "test"}},
                    "math": {**MATH_SERVER, "autoApprove": ["add"], "disabledTools": []},
                    "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
                    "off": {**MATH_SERVER, "disabled": True},
                },
                "globalShortcut": "Ctrl+Space",
            }
        )
    )
    done = run("init", "--from", str(host), "-o", "gw/toolgate.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = tmp_path / "gw" / "toolgate.json"
    config = json.loads(written.read_text())

    assert config["$schema"] == "./toolgate.schema.json"
    assert config["mcpServers"] == {
        "env": {**ENV_SERVER, "env": {"MODE": "test"}},
        "math": MATH_SERVER,
    }
    assert config["toolgate"] == {
        "strategy": "auto",
        "groups": {
            "env": {
                "description": "Reads the process environment.",
                "tools": ["env:*"],
                "instructions": "Reads the process environment.\n\nFor tests only.",
            },
            "math": {
                "description": "Tools of the math MCP server: add, echo, multiply",
                "tools": ["math:*"],
            },
        },
    }
    schema = json.loads((tmp_path / "gw" / "toolgate.schema.json").read_text())
    jsonschema.validate(config, schema)

    report = done.stderr.splitlines()
    assert "env: 1 tools; description from its instructions" in report
    assert "math: 3 tools; description from its tools" in report
    assert any(x.startswith("legacy: left in the host config: SSE transport") for x in report)
    assert "off: left in the host config: disabled in the host config" in report

    snippet = json.loads(done.stdout)
    entry = snippet["mcpServers"]["toolgate"]
    assert entry["args"][-2:] == ["serve", str(written.resolve())]
    assert Path(entry["command"]).is_absolute()

    # the toolgate command itself, as the host snippet would run it
    checked = subprocess.run(
        [*toolgate_argv(), "check", str(written)], capture_output=True, text=True, timeout=120
    )
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.endswith("ok: 4 tools from 2 backend(s), 2 groups\n")


def test_init_refuses_to_overwrite_an_existing_config_without_force(tmp_path: Path) -> None:
    host = tmp_path / "mcp.json"
    host.write_text(json.dumps({"mcpServers": {"math": MATH_SERVER}}))
    (tmp_path / "toolgate.json").write_text("{}")
    refused = run("init", "--from", str(host), cwd=tmp_path)
    assert refused.returncode == 1
    assert "toolgate.json exists; pass --force to overwrite it" in refused.stderr
    assert (tmp_path / "toolgate.json").read_text() == "{}"
    forced = run("init", "--from", str(host), "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert "math" in json.loads((tmp_path / "toolgate.json").read_text())["mcpServers"]


def test_init_names_a_file_without_mcp_servers(tmp_path: Path) -> None:
    host = tmp_path / "settings.json"
    host.write_text(json.dumps({"editor.fontSize": 14}))
    done = run("init", "--from", str(host), cwd=tmp_path)
    assert done.returncode == 1
    assert "no MCP servers found: expected 'mcpServers'" in done.stderr
    assert not (tmp_path / "toolgate.json").exists()


async def test_a_server_that_cannot_start_gets_a_fallback_description(tmp_path: Path) -> None:
    host = tmp_path / "mcp.json"
    host.write_text(
        json.dumps({"mcpServers": {"Ghost Server": {"command": str(tmp_path / "missing")}}})
    )
    result = await build_init(host, tmp_path / "toolgate.json")
    (ghost,) = result.servers
    assert ghost.error is not None and "No such file" in ghost.error
    assert result.config["toolgate"]["groups"] == {
        "ghost-server": {
            "description": "Tools of the Ghost Server MCP server",
            "tools": ["Ghost Server:*"],
        }
    }


async def test_init_reads_vscode_jsonc_and_maps_its_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "project"
    (workspace / ".vscode").mkdir(parents=True)
    shutil.copy(SERVERS / "gw_env.py", workspace / "gw_env.py")
    host = workspace / ".vscode" / "mcp.json"
    host.write_text(
        """{
  // the servers this workspace uses
  "inputs": [{"type": "promptString", "id": "api-token", "password": true}],
  "servers": {
    "env": {
      "type": "stdio",
      "command": "PYTHON",
      "args": ["${workspaceFolder}/gw_env.py"],  /* copied in */
      "env": {"TOKEN": "${input:api-token}", "URL": "http://x//y"},
    },
  },
}""".replace("PYTHON", sys.executable)
    )
    monkeypatch.setenv("API_TOKEN", "from-the-environment")
    result = await build_init(host, workspace / "toolgate.json")
    assert result.host == "vscode"
    (env,) = result.servers
    assert env.error is None and env.tools == ["getenv"]
    assert env.spec == {
        "command": sys.executable,
        "args": [f"{workspace.resolve()}/gw_env.py"],
        "env": {"TOKEN": "${API_TOKEN}", "URL": "http://x//y"},
    }
    assert any("becomes the environment variable API_TOKEN" in n for n in env.notes)
    snippet = json.loads(result.snippet)
    assert snippet["servers"]["toolgate"]["type"] == "stdio"
    assert snippet["servers"]["toolgate"]["args"][-1] == str(
        (workspace / "toolgate.json").resolve()
    )


async def test_init_reads_codex_toml_and_writes_a_toml_snippet(tmp_path: Path) -> None:
    host = tmp_path / "config.toml"
    host.write_text(
        f"""model = "o4"

[mcp_servers.math]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVERS / "gw_math.py"))}]
env_vars = ["TG_PASSED"]
startup_timeout_sec = 20
"""
    )
    result = await build_init(host, tmp_path / "toolgate.json")
    assert result.host == "codex"
    (math,) = result.servers
    assert math.spec == {**MATH_SERVER, "env_passthrough": ["TG_PASSED"]}
    assert sorted(math.tools) == ["add", "echo", "multiply"]
    entry = tomllib.loads(result.snippet)["mcp_servers"]["toolgate"]
    assert entry["args"][-2:] == ["serve", str((tmp_path / "toolgate.json").resolve())]


def test_servers_sharing_tool_names_get_distinct_prefixes_and_the_config_checks(
    tmp_path: Path,
) -> None:
    names = ["Math 2", "Math.2", "数学"]  # the first two read alike as prefixes
    host = tmp_path / "mcp.json"
    host.write_text(json.dumps({"mcpServers": dict.fromkeys(names, MATH_SERVER)}))
    done = run("init", "--from", str(host), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    config: dict[str, Any] = json.loads((tmp_path / "toolgate.json").read_text())
    prefixes = [config["mcpServers"][name]["prefix"] for name in names]
    assert prefixes == ["Math_2", "Math_2_2", "server"]
    assert set(config["toolgate"]["groups"]) == {"math-2", "math-2-2", "server"}
    checked = run("check", "toolgate.json", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout == "toolgate.json: ok: 9 tools from 3 backend(s), 3 groups\n"


@pytest.mark.parametrize(
    ("server", "group"),
    [("GitHub Tools", "github-tools"), ("my_server", "my-server"), ("--", "server")],
)
def test_group_names_are_valid_whatever_the_server_is_called(server: str, group: str) -> None:
    assert group_name(server) == group


def test_host_config_that_is_not_json_is_a_config_error(tmp_path: Path) -> None:
    from toolgate.gateway.commands.init import read_host_config

    bad = tmp_path / "mcp.json"
    bad.write_text("{nope")
    with pytest.raises(ConfigError, match=r"mcp\.json: not valid JSON: Expecting property name"):
        read_host_config(bad)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b'{"mcpServers": {"notes \xe9": {"command": "x"}}}', "not valid UTF-8 at byte 23"),
        (b'{"mcpServers": {"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}", "nested more than"),
        (b'{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}', "mcpServers.a: key"),
    ],
    ids=["not-utf8", "nested-100000-deep", "a-server-twice"],
)
def test_a_host_config_read_as_toolgate_reads_its_own_is_refused_and_nothing_is_written(
    tmp_path: Path, raw: bytes, problem: str
) -> None:
    host = tmp_path / "mcp.json"
    host.write_bytes(raw)
    done = run("init", "--from", str(host), "-o", "gw/toolgate.json", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith(f"toolgate: {host}: {problem}")
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "gw").exists()  # not even the folder


def test_a_server_the_gateway_would_refuse_stays_in_the_host_config_and_the_rest_checks(
    tmp_path: Path,
) -> None:
    ghost = {"command": str(tmp_path / "missing")}  # fails to start: written all the same
    host = tmp_path / "config.toml"
    host.write_text(
        f"""[mcp_servers.ghost]
command = "{ghost["command"]}"

[mcp_servers."a:b"]
command = "x"

[mcp_servers.typed]
command = "x"
args = "--not-a-list"
env = {{ PORT = 8080 }}

[mcp_servers.headers]
url = "https://example.invalid/mcp"
env_http_headers = ["X-Key"]
"""
    )
    done = run("init", "--from", str(host), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert "a:b: left in the host config: mcpServers.a:b: a server name cannot contain ':'" in lines
    assert (
        "typed: left in the host config: mcpServers.typed.args: Input should be a valid list; "
        "mcpServers.typed.env.PORT: Input should be a valid string"
    ) in lines
    assert (
        "headers: left in the host config: "
        "'env_http_headers' must be a table of header = variable name"
    ) in lines
    written = json.loads((tmp_path / "toolgate.json").read_text())
    assert written["mcpServers"] == {"ghost": ghost}
    checked = run("check", "--offline", "toolgate.json", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr


@pytest.mark.parametrize(
    "servers",
    [{}, {"legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"}, "list": [1]}],
    ids=["none", "none-toolgate-can-front"],
)
def test_a_host_config_with_no_server_to_front_writes_nothing(
    tmp_path: Path, servers: dict[str, Any]
) -> None:
    host = tmp_path / "claude_desktop_config.json"
    host.write_text(json.dumps({"mcpServers": servers}))
    done = run("init", "--from", str(host), cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    lines = done.stderr.splitlines()
    assert lines[0] == f"toolgate: {host}: no server toolgate can front; nothing written"
    assert lines[1:] == [f"toolgate: {name}: {why}" for name, why in (
        [("legacy", "SSE transport: toolgate fronts servers of type stdio, http, "
          "streamable-http, streamableHttp only"), ("list", "not an object")] if servers else []
    )]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == [host.name]


def test_an_output_that_cannot_be_written_or_read_back_is_named_without_a_traceback(
    tmp_path: Path,
) -> None:
    host = tmp_path / "mcp.json"
    host.write_text(json.dumps({"mcpServers": {"ghost": {"command": str(tmp_path / "no")}}}))
    (tmp_path / "file").write_text("not a folder")
    done = run("init", "--from", str(host), "-o", "file/toolgate.json", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith("toolgate: cannot write file")
    assert "Traceback" not in done.stderr
    (tmp_path / "folder").mkdir()
    forced = run("init", "--from", str(host), "-o", "folder", "--force", cwd=tmp_path)
    assert forced.returncode == 1
    assert forced.stderr.splitlines()[-1] == "toolgate: cannot write folder: Is a directory"
    toml = run("init", "--from", str(host), "-o", "toolgate.toml", cwd=tmp_path)
    assert (toml.returncode, toml.stderr) == (
        1,
        "toolgate: --output toolgate.toml: init writes JSON; name it .json\n",
    )
    assert not (tmp_path / "toolgate.toml").exists()
    host_text = host.read_text()
    itself = run("init", "--from", str(host), "-o", str(host), "--force", cwd=tmp_path)
    assert (itself.returncode, host.read_text()) == (1, host_text)
    assert itself.stderr == f"toolgate: --output {host} is the file init reads; write elsewhere\n"


def test_init_starts_each_server_from_the_configs_folder_as_the_gateway_will(
    tmp_path: Path,
) -> None:
    """A relative path means, while init lists the tools, what it will mean when the
    gateway starts the server from the config's folder: here a script beside the host
    config, not beside the new config, so init says it cannot start (as serve would)."""
    shutil.copy(SERVERS / "gw_math.py", tmp_path / "gw_math.py")
    host = tmp_path / "mcp.json"
    host.write_text(
        json.dumps({"mcpServers": {"rel": {"command": sys.executable, "args": ["gw_math.py"]}}})
    )
    done = run("init", "--from", str(host), "-o", "gw/toolgate.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("rel: could not start"), done.stderr
    beside = run("init", "--from", str(host), "-o", "toolgate.json", cwd=tmp_path)
    assert beside.returncode == 0, beside.stderr
    assert "could not start" not in beside.stderr


def test_jsonc_comments_and_trailing_commas_go_but_text_inside_strings_stays(
    tmp_path: Path,
) -> None:
    from toolgate.gateway.commands.init import read_host_config

    args = ["--only=[a,]", "{b, }", "c // not a comment", "/* nor this */"]
    host = tmp_path / "mcp.json"
    host.write_text(
        '{\n  // a comment\n  "servers": {\n    "s": {"command": "x", "args": '
        + json.dumps(args)[:-1]
        + ", /* last */ ]},\n  },\n}\n"
    )
    assert read_host_config(host)[1] == {"s": {"command": "x", "args": args}}


def test_a_big_server_whose_tools_make_one_group_gets_the_group_init_writes_for_one(
    tmp_path: Path,
) -> None:
    # 24 tools, all about issues, in groups of up to 30: a proposal would be one group
    # listing each tool, without the server's instructions; the server's own group is
    # better, and what init says it wrote is what it wrote
    tools = wires([f"{v}_issue_{x}" for v in ["get", "list", "update"] for x in "abcdefgh"])
    instructions = "Issue tracker for ACME.\n\nPass numeric ids."
    host = tmp_path / "mcp.json"
    host.write_text(json.dumps({"mcpServers": {"acme": served(tmp_path, tools, instructions)}}))
    done = run("init", "--from", str(host), "--group-size", "30", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "acme: 24 tools; description from its instructions" in done.stderr.splitlines()
    assert json.loads((tmp_path / "toolgate.json").read_text())["toolgate"]["groups"] == {
        "acme": {
            "description": "Issue tracker for ACME.",
            "tools": ["acme:*"],
            "instructions": instructions,
        }
    }


def test_init_writes_text_as_it_is_not_as_ascii_escapes(tmp_path: Path) -> None:
    # as ``inspect --suggest-groups --write`` does: a person edits this file
    host = tmp_path / "mcp.json"
    server = served(tmp_path, wires(["brew"]), "Café tools — résumé")
    host.write_text(json.dumps({"mcpServers": {"café": server}}))
    done = run("init", "--from", str(host), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "toolgate.json").read_text(encoding="utf-8")
    assert '"description": "Café tools — résumé"' in text
    assert '"café": {' in text
    assert "\\u" not in text
