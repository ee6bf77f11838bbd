"""A gateway config people can write: its JSON Schema, every problem at once with "did you
mean", ``${VAR}`` from the environment, and what a backend inherits and says on stderr.

The schema comes from the real ``toolgate schema`` command and is checked with
``jsonschema`` against configs the gateway accepts and ones it refuses. Backends are
real stdio MCP servers (``tests/servers/gw_env.py``) behind ``toolgate serve``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from _fixtures.gateway import SERVERS, gateway_env, toolgate_argv
from toolgate.errors import ConfigError
from toolgate.gateway.config.env import expand_string
from toolgate.gateway.config.model import (
    GatewayConfig,
    ToolgateConfig,
    json_schema,
    load_config,
    parse_config,
)

ROOT = Path(__file__).resolve().parents[1]
ACCEPTED = [
    ROOT / "examples" / "gateway" / "toolgate.json",
    ROOT / "tests" / "configs" / "valid.json",
]


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    done = subprocess.run([*toolgate_argv(), "schema"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded: dict[str, Any] = json.loads(done.stdout)
    return loaded


def problems_of(data: dict[str, Any], environ: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        parse_config(data, environ=environ or {})
    return [f"{p['key']}: {p['message']}" for p in raised.value.details["problems"]]


# -- the schema ------------------------------------------------------------------------------------


def test_schema_command_prints_a_valid_draft_2020_12_schema(schema: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert set(schema["required"]) == {"mcpServers"}
    assert "source" not in schema["properties"]  # internal, never written in a file


def test_schema_names_every_key_of_the_toolgate_block(schema: dict[str, Any]) -> None:
    block = schema["$defs"]["ToolgateConfig"]["properties"]
    assert set(block) == {info.alias or n for n, info in ToolgateConfig.model_fields.items()}
    assert block["strategy"]["enum"] == [
        "auto",
        "list_changed",
        "catalog",
        "groups",
        "search",
        "flat",
    ]
    stdio = schema["$defs"]["StdioServer"]["properties"]
    assert {"command", "args", "env", "env_passthrough", "cwd"} <= set(stdio)


@pytest.mark.parametrize("path", ACCEPTED, ids=lambda p: p.name)
def test_schema_accepts_configs_the_gateway_accepts(schema: dict[str, Any], path: Path) -> None:
    data = json.loads(path.read_text())
    jsonschema.validate(data, schema)
    load_config(path)  # and the gateway agrees


def test_schema_accepts_the_dollar_schema_key_and_so_does_the_gateway(
    schema: dict[str, Any], tmp_path: Path
) -> None:
    data = {
        "$schema": "./toolgate.schema.json",
        "mcpServers": {"notes": {"command": "python", "args": ["notes.py"]}},
        "toolgate": {"groups": {"notes": {"description": "Take notes", "tools": ["notes:*"]}}},
    }
    jsonschema.validate(data, schema)
    path = tmp_path / "toolgate.json"
    path.write_text(json.dumps(data))
    done = subprocess.run(
        [*toolgate_argv(), "check", "--offline", str(path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({"mcpServers": {}, "toolgate": {"stratgy": "auto"}}, "stratgy"),
        ({"mcpServers": {"a": {}}}, "a"),
        ({"mcpServers": {"a": {"command": "x", "url": "http://h/mcp"}}}, "a"),
        ({"mcpServers": {}, "toolgate": {"page_size": 0}}, "page_size"),
        ({"mcpServers": {}, "toolgate": {"strategy": "sometimes"}}, "sometimes"),
        ({"mcpServers": {}, "toolgate": {"groups": {"g": {"prompts": [""]}}}}, "prompts[0]"),
        ({"mcpServers": {}, "toolgate": {"groups": {"g": {"resources": ["a", " b"]}}}}, "[1]"),
        ({"mcpServers": {}, "toolgate": {"groups": {"g": {"prompts": "review_*"}}}}, "prompts"),
    ],
)
def test_schema_rejects_what_the_gateway_rejects(
    schema: dict[str, Any], data: dict[str, Any], where: str
) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema)
    assert any(where in p for p in problems_of(data))


def test_group_prompt_and_resource_patterns_are_checked_naming_the_key() -> None:
    group = {"description": "d", "prompts": ["ok_*", ""], "resources": ["file:///x/* "]}
    found = problems_of({"mcpServers": {}, "toolgate": {"groups": {"g": group}}})
    assert sorted(found) == [
        "toolgate.groups.g.prompts[1]: the pattern is empty; write a glob such as "
        "'review_*' or 'file:///docs/*'",
        "toolgate.groups.g.resources[0]: 'file:///x/* ' has spaces around it; prompt names "
        "and URIs have none",
    ]


def test_schema_describes_group_prompt_and_resource_patterns(schema: dict[str, Any]) -> None:
    group = schema["$defs"]["GroupConfig"]["properties"]
    for key in ("prompts", "resources"):
        assert group[key]["type"] == "array"
        assert group[key]["items"]["type"] == "string"
    valid = {
        "mcpServers": {"gh": {"command": "gh-mcp"}},
        "toolgate": {
            "groups": {
                "code": {"prompts": ["gh:review_*"], "resources": ["repo://{owner}/*"]},
            }
        },
    }
    jsonschema.validate(valid, schema)
    parse_config(valid, environ={})


def test_schema_output_option_writes_the_same_schema(
    schema: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "toolgate.schema.json"
    done = subprocess.run([*toolgate_argv(), "schema", "-o", str(out)], capture_output=True)
    assert done.returncode == 0
    assert json.loads(out.read_text()) == schema == json_schema()


# -- every problem at once, "did you mean" -----------------------------------------------------


def test_every_problem_is_reported_at_once_each_naming_its_key() -> None:
    found = problems_of(
        {
            "mcpServers": {
                "web": {"url": "http://127.0.0.1:9/mcp", "hedaers": {}},
                "gone": {"args": []},
                "notes": {"command": "python", "args": ["${NOTES_HOME}/notes.py"]},
            },
            "toolgate": {
                "max_tool": 5,
                "policies": [{"tools": ["x"], "min_trsut": "verified"}],
                "identity": {"default": {"id": "me", "scpoe": ["*"]}},
                "separator": "/",
            },
        }
    )
    assert sorted(found) == sorted(
        [
            "mcpServers.notes.args[0]: environment variable NOTES_HOME is not set "
            "(referenced as ${NOTES_HOME})",
            "mcpServers.gone: needs a 'command' (stdio) or a 'url' (HTTP)",
            "mcpServers.web.hedaers: unknown key; did you mean 'headers'?",
            "toolgate.max_tool: unknown key; did you mean 'max_tools'?",
            "toolgate.policies[0].min_trsut: unknown key; did you mean 'min_trust'?",
            "toolgate.identity.default.scpoe: unknown key; did you mean 'scope'?",
            "toolgate.separator: Input should be '.', '_' or '-', got '/'",
        ]
    )


def test_a_key_named_like_a_server_kind_stays_in_the_key_path() -> None:
    """``http`` is a key of the toolgate block and may name a server; pydantic's tags of
    the server kinds, left out of the path, are not: a problem under it names it."""
    found = problems_of(
        {
            "mcpServers": {"http": {"url": "ftp://x"}, "stdio": {"command": "x", "cwdd": "."}},
            "toolgate": {"http": {"max_body_bytes": 5, "fast_pat": True}},
        }
    )
    assert sorted(found) == sorted(
        [
            "mcpServers.http.url: must start with http:// or https://",
            "mcpServers.stdio.cwdd: unknown key; did you mean 'cwd'?",
            "toolgate.http.max_body_bytes: Input should be greater than or equal to 1024",
            "toolgate.http.fast_pat: unknown key; did you mean 'fast_path'?",
        ]
    )


def test_an_unknown_key_far_from_any_known_one_gets_no_suggestion() -> None:
    (problem,) = problems_of({"mcpServers": {}, "toolgate": {"zzzz": 1}})
    assert problem == "toolgate.zzzz: unknown key"


def test_the_error_message_has_one_line_per_problem_and_the_first_key() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"mcpServers": {}, "toolgate": {"stratgy": "x", "idle_tl": 3}})
    assert raised.value.message.splitlines() == [
        "config: toolgate.stratgy: unknown key; did you mean 'strategy'?",
        "config: toolgate.idle_tl: unknown key; did you mean 'idle_ttl'?",
    ]
    assert raised.value.details["key"] == "toolgate.stratgy"


# -- ${VAR} ----------------------------------------------------------------------------------------


def test_variables_expand_in_every_server_value_hosts_expand() -> None:
    env = {"PY": "/usr/bin/python3", "HOME": "/home/ada", "TOKEN": "s3cret", "PORT": "9000"}
    cfg = parse_config(
        {
            "mcpServers": {
                "local": {
                    "command": "${PY}",
                    "args": ["${HOME}/server.py", "--mode=${MODE:-fast}", "${env:TOKEN}"],
                    "env": {"API_TOKEN": "${TOKEN}", "LITERAL": "$${NOT_EXPANDED}"},
                    "cwd": "${HOME}/work",
                },
                "remote": {
                    "url": "http://127.0.0.1:${PORT}/mcp",
                    "headers": {"Authorization": "Bearer ${TOKEN}"},
                },
            },
            "toolgate": {"groups": {"g": {"description": "costs ${DOLLARS}"}}},
        },
        environ=env,
    )
    local = cfg.mcp_servers["local"].model_dump()
    assert local["command"] == "/usr/bin/python3"
    assert local["args"] == ["/home/ada/server.py", "--mode=fast", "s3cret"]
    assert local["env"] == {"API_TOKEN": "s3cret", "LITERAL": "${NOT_EXPANDED}"}
    assert local["cwd"] == "/home/ada/work"
    remote = cfg.mcp_servers["remote"].model_dump()
    assert remote["url"] == "http://127.0.0.1:9000/mcp"
    assert remote["headers"] == {"Authorization": "Bearer s3cret"}
    # only mcpServers is expanded: the toolgate block is the gateway's own text
    assert cfg.toolgate.groups["g"].description == "costs ${DOLLARS}"


def test_a_default_applies_to_an_unset_or_empty_variable() -> None:
    assert expand_string("${A:-x}-${B:-y}-${C:-z}", {"A": "", "B": "b"}) == ("x-b-z", [])
    assert expand_string("${A}|", {"A": ""}) == ("|", [])


def test_unset_and_malformed_references_are_errors_naming_the_key() -> None:
    found = problems_of(
        {
            "mcpServers": {
                "a": {"command": "run", "env": {"KEY": "${API_KEY}"}},
                "b": {"url": "http://${HOST}/mcp"},
                "c": {"command": "run", "args": ["${input:token}"]},
            }
        }
    )
    assert sorted(found) == sorted(
        [
            "mcpServers.a.env.KEY: environment variable API_KEY is not set "
            "(referenced as ${API_KEY})",
            "mcpServers.b.url: environment variable HOST is not set (referenced as ${HOST})",
            "mcpServers.c.args[0]: ${input:token} is not an environment variable reference "
            "(write $${ for a literal ${)",
        ]
    )


def test_load_config_reads_variables_from_the_process_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "toolgate.toml"
    path.write_text('[mcpServers.a]\ncommand = "${TOOLGATE_TEST_CMD}"\n')
    monkeypatch.setenv("TOOLGATE_TEST_CMD", "/opt/server")
    cfg = load_config(path)
    assert tomllib.loads(path.read_text())["mcpServers"]["a"]["command"] == "${TOOLGATE_TEST_CMD}"
    assert cfg.mcp_servers["a"].model_dump()["command"] == "/opt/server"
    assert isinstance(cfg, GatewayConfig)


# -- what a stdio backend inherits, and what it says on stderr ---------------------------------


async def _serve_and_ask(
    config: dict[str, Any], tmp_path: Path, env: dict[str, str], names: list[str]
) -> tuple[dict[str, str], str]:
    """Run ``toolgate serve`` over stdio, ask the env backend for ``names``; return the
    answers and the gateway's stderr."""
    path = tmp_path / "toolgate.json"
    path.write_text(json.dumps(config))
    argv = toolgate_argv()
    log = tmp_path / "serve.log"
    params = StdioServerParameters(
        command=argv[0], args=[*argv[1:], "serve", str(path)], env=env, cwd=tmp_path
    )
    answers: dict[str, str] = {}
    with log.open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for name in names:
                result = await session.call_tool("getenv", {"name": name})
                block = result.content[0]
                answers[name] = block.text if hasattr(block, "text") else repr(block)
    return answers, log.read_text()


def _env_backend(**extra: Any) -> dict[str, Any]:
    server = {"command": sys.executable, "args": [str(SERVERS / "gw_env.py")], **extra}
    return {"mcpServers": {"env": server}}


async def test_a_backend_inherits_only_the_variables_its_passthrough_names(
    tmp_path: Path,
) -> None:
    config = _env_backend(
        env_passthrough=["TG_TEST_ONE", "TG_GLOB_*"], env={"TG_GLOB_B": "from-config"}
    )
    env = gateway_env(TG_TEST_ONE="one", TG_GLOB_A="a", TG_GLOB_B="b", TG_TEST_SECRET="do-not-leak")
    answers, _ = await _serve_and_ask(
        config, tmp_path, env, ["TG_TEST_ONE", "TG_GLOB_A", "TG_GLOB_B", "TG_TEST_SECRET"]
    )
    assert answers == {
        "TG_TEST_ONE": "one",
        "TG_GLOB_A": "a",
        "TG_GLOB_B": "from-config",  # env wins over passthrough
        "TG_TEST_SECRET": "<unset>",
    }


async def test_without_passthrough_a_backend_gets_no_gateway_secrets(tmp_path: Path) -> None:
    env = gateway_env(TG_TEST_ONE="one")
    answers, _ = await _serve_and_ask(_env_backend(), tmp_path, env, ["TG_TEST_ONE"])
    assert answers == {"TG_TEST_ONE": "<unset>"}


async def test_a_backends_stderr_shows_in_the_serve_log_line_by_line(tmp_path: Path) -> None:
    _, log = await _serve_and_ask(_env_backend(), tmp_path, gateway_env(), [])
    lines = [line for line in log.splitlines() if "toolgate.gateway.stderr" in line]
    assert any("backend env: gw-env: starting (pid " in line for line in lines), log
    assert all(" toolgate INFO toolgate.gateway.stderr: backend env: " in x for x in lines)


def test_check_shows_the_last_stderr_lines_of_a_backend_that_exits(tmp_path: Path) -> None:
    path = tmp_path / "toolgate.json"
    config = _env_backend()
    config["mcpServers"]["env"]["args"] += ["--fail", "no license key in LICENSE_KEY"]
    path.write_text(json.dumps(config))
    done = subprocess.run(
        [*toolgate_argv(), "check", str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    (line,) = [x for x in done.stderr.splitlines() if "mcpServers.env" in x]
    assert "could not start or list its tools" in line
    assert line.endswith("| no license key in LICENSE_KEY)"), line
