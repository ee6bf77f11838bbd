"""Command-line mistakes end in one line naming them (``toolgate: ...``) and a non-zero
exit, never a traceback, and nothing starts; and an HTTP gateway says it serves only once
its port is bound.

The command's code runs in the test process (``command_in_process``); one test runs the
real ``toolgate`` process.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
import socket
import subprocess
import threading
from pathlib import Path

import httpx
import pytest

from _fixtures.command import command_in_process
from _fixtures.gateway import toolgate_argv
from toolgate.errors import ConfigError
from toolgate.gateway.config.model import parse_config
from toolgate.gateway.ingress.app import check_bind
from toolgate.gateway.process import serve_http
from toolgate.gateway.serve import Gateway


@pytest.fixture
def empty_config(tmp_path: Path) -> Path:
    config = tmp_path / "toolgate.json"
    config.write_text(json.dumps({"mcpServers": {}}))
    return config


def test_schema_into_a_missing_folder_names_the_path_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "schema.json"
    done = command_in_process("schema", "-o", str(target))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"toolgate: cannot write {target}: No such file or directory\n"
    assert not target.parent.exists()


@pytest.mark.parametrize("url", ["notaurl", "http://127.0.0.1:99999", "http://[::1"])
def test_reload_with_a_url_that_is_no_http_url_names_it(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLGATE_OPERATOR_TOKEN", "operator-token")
    done = command_in_process("reload", "--url", url)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"toolgate: --url must be an http:// or https:// URL, not {url!r}\n"


def test_reload_names_a_bad_toolgate_url_variable_as_its_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLGATE_OPERATOR_TOKEN", "operator-token")
    monkeypatch.setenv("TOOLGATE_URL", "ftp://127.0.0.1/")
    done = command_in_process("reload")
    assert done.stderr == (
        "toolgate: TOOLGATE_URL must be an http:// or https:// URL, not 'ftp://127.0.0.1/'\n"
    )
    assert done.returncode == 2


@pytest.mark.parametrize("command", ["serve", "demo"])
@pytest.mark.parametrize("port", ["99999", "-1"])
def test_a_port_out_of_range_is_refused_before_anything_starts(
    command: str, port: str, empty_config: Path, tmp_path: Path
) -> None:
    config = [str(empty_config)] if command == "serve" else ["--db", str(tmp_path / "d.db")]
    done = command_in_process(command, *config, "--transport", "http", "--port", port)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"toolgate: --port must be 0-65535, not {port}\n"
    assert not (tmp_path / "d.db").exists()  # the demo's backends never started


def test_the_toolgate_process_refuses_a_port_out_of_range_in_one_line(empty_config: Path) -> None:
    done = subprocess.run(
        [*toolgate_argv(), "serve", str(empty_config), "--transport", "http", "--port", "99999"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "toolgate: --port must be 0-65535, not 99999\n"


def test_output_whose_reader_has_left_ends_the_process_without_a_traceback() -> None:
    # ``toolgate schema | head -c 0``: the reader is gone before the first write
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([*toolgate_argv(), "schema"], stdout=write_end, stderr=subprocess.PIPE)
    os.close(write_end)
    os.close(read_end)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (1, b"")


def test_demo_with_a_folder_for_its_database_names_the_folder(tmp_path: Path) -> None:
    done = command_in_process("demo", "--tour", "--db", str(tmp_path))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"toolgate: --db: {tmp_path} is a directory, not a SQLite file\n"


def test_demo_with_a_database_in_a_missing_folder_names_the_folder(tmp_path: Path) -> None:
    db = tmp_path / "missing" / "demo.sqlite3"
    done = command_in_process("demo", "--tour", "--db", str(db))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"toolgate: --db: the folder {db.parent} does not exist\n"


async def test_a_busy_port_fails_naming_it_before_anything_starts_or_says_it_serves(
    caplog: pytest.LogCaptureFixture,
) -> None:
    gateway = Gateway(parse_config({"mcpServers": {}}))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        refused = pytest.raises(ConfigError, match=rf"^--port: cannot listen on 127.0.0.1:{port}: ")
        with caplog.at_level(logging.INFO, logger="toolgate"), refused:
            await serve_http(gateway, host="127.0.0.1", port=port)
    said = [r.getMessage() for r in caplog.records if r.name.startswith("toolgate")]
    assert said == []  # not "serving MCP", nor the backends' start


@pytest.mark.parametrize(
    "host", ["999.1.1.1", "192.0.2.1"], ids=["unknown-name", "address-of-another-machine"]
)
def test_an_address_this_machine_cannot_listen_on_is_a_config_error_naming_the_host(
    host: str,
) -> None:
    with pytest.raises(ConfigError, match=rf"^--host: cannot listen on {host}:8765: \w") as raised:
        check_bind(host, 8765)
    assert raised.value.details == {"key": "--host"}
    check_bind("127.0.0.1", 0)  # any free port of a local address: nothing to say


async def test_an_http_gateway_says_it_serves_once_bound_naming_the_port_it_got(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Port 0 asks for any free port; the log names the one bound, and the gateway
    answers there."""
    assert threading.current_thread() is threading.main_thread()  # where signals arrive
    # were the gateway's own handler missing, SIGTERM must not end the test run
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    gateway = Gateway(parse_config({"mcpServers": {}}))
    try:
        with caplog.at_level(logging.INFO, logger="toolgate"):
            serving = asyncio.create_task(serve_http(gateway, host="127.0.0.1", port=0))
            said: list[str] = []
            while not said:
                assert not serving.done()
                await asyncio.sleep(0.02)
                said = [r.getMessage() for r in caplog.records if "serving MCP" in r.getMessage()]
            url = said[0].rsplit(" ", 1)[1]
            async with httpx.AsyncClient() as http:
                ready = await http.get(url.removesuffix("/mcp") + "/healthz")
            signal.raise_signal(signal.SIGTERM)  # the gateway's stop, as `toolgate serve` has it
            await asyncio.wait_for(serving, 30)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert re.fullmatch(r"serving MCP over streamable HTTP at http://127\.0\.0\.1:\d+/mcp", said[0])
    assert not url.endswith(":0/mcp")
    assert ready.status_code == 200


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--transport", "http"], "--transport does"),
        (["--port", "9000", "--allow-host", "demo.local"], "--port, --allow-host do"),
    ],
)
def test_demo_tour_with_a_serving_option_names_it_and_runs_nothing(
    options: list[str], named: str, tmp_path: Path
) -> None:
    db = tmp_path / "d.db"
    done = command_in_process("demo", "--tour", "--db", str(db), *options)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"toolgate: --tour prints a scripted session and serves nothing, so {named} not "
        "apply; run `toolgate demo` without --tour to serve the demo\n"
    )
    assert not db.exists()  # the demo's backends never started


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["inspect", "{config}", "--group-size", "8"], "--group-size goes with --suggest-groups"),
        (
            ["init", "--from", "{config}", "--one-group-per-server", "--group-size", "8"],
            "--group-size proposes groups; --one-group-per-server proposes none",
        ),
    ],
    ids=["inspect without --suggest-groups", "init with one group per server"],
)
def test_a_group_size_where_no_groups_are_proposed_is_refused(
    empty_config: Path, tmp_path: Path, argv: list[str], message: str
) -> None:
    output = tmp_path / "out.json"
    filled = [a.replace("{config}", str(empty_config)) for a in argv]
    done = command_in_process(*filled, *(["-o", str(output)] if argv[0] == "init" else []))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"toolgate: {message}\n"
    assert not output.exists()
