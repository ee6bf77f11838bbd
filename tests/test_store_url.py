"""A ``toolgate.store`` URL is judged by its form before anything connects.

``check_store_url`` accepts every form a store opens and names the problem of every
other (never echoing a password), ``open_store`` refuses with the same words, and a
config holding a bad one is refused by ``toolgate check`` (with or without ``--offline``)
and ``toolgate serve`` with one ``file: toolgate.store: message`` line, while a good
Redis URL checks ok. No Redis runs:
nothing here connects, and a Redis URL is judged without one.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from _fixtures.gateway import gateway_env, toolgate_argv
from toolgate.errors import ConfigError
from toolgate.gateway.commands.check import run_check
from toolgate.gateway.config.model import parse_config
from toolgate.state.open import check_store_url, open_store

Run = subprocess.CompletedProcess[str]

GOOD = [
    "memory://",
    "memory",
    "sessions.db",  # a bare path: a SQLite file, relative to the config
    "sqlite:///var/lib/toolgate/sessions.db",
    "sqlite://state/sessions.db",
    "redis://localhost:6379/0",
    "redis://cache",
    "rediss://:s3cret@h:6380/1?socket_timeout=2&ssl_cert_reqs=none",
    "unix:///tmp/redis.sock",
    "unix:///tmp/redis.sock?db=2",
    "redis+sentinel://a:26379,b:26379/mymaster/0",
    "rediss+sentinel://u:s3cret@a,[::1]:26380/mymaster?wait_replicas=0&sentinel_password=x",
]

# (url, the problem its message must name); "s3cret" must never be echoed back
BAD = [
    ("redis:/localhost:6379/0", "'redis' must be followed by '://'"),
    ("sqlite:", "it names no database file"),
    ("sqlite://", "it names no database file"),
    ("sqlite:///var/lib/toolgate/", "so it names a folder"),
    ("redis+sentinel://h1:26379", "name the service Sentinel monitors"),
    ("redis://:s3cret@host:notaport/0", "Port could not be cast to integer value as 'notaport'"),
    ("redis://host:70000/0", "Port out of range"),
    ("redis://host:6379/zero", "the database must be a number, got 'zero'"),
    ("redis:///0", "it names no host"),
    ("unix://", "unix:// names no socket path"),
    ("redis://host/0?socket_timout=1", "unknown option 'socket_timout'"),
    ("redis://host/0?db=one", "Invalid value for 'db'"),
    ("postgres://toolgate:s3cret@db/toolgate", "Unknown store URL scheme 'postgres'"),
    ("localhost:6379", "Unknown store URL scheme 'localhost'"),
    ("rediss+sentinel://:s3cret@a,b/svc?wait_replica=2", "unknown option 'wait_replica'"),
    ("memory://sessions", "memory:// takes nothing after it"),
]


def refusal(url: str) -> ConfigError:
    with pytest.raises(ConfigError) as raised:
        check_store_url(url)
    return raised.value


@pytest.mark.parametrize("url", GOOD)
def test_every_store_form_is_accepted_by_the_check_and_the_config_without_a_file_appearing(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    check_store_url(url)
    assert parse_config({"mcpServers": {}, "toolgate": {"store": url}}).toolgate.store == url
    assert list(tmp_path.iterdir()) == []  # judged by its form: no SQLite file created


@pytest.mark.parametrize(("url", "problem"), BAD)
def test_a_bad_store_url_is_a_config_error_naming_the_problem_and_the_accepted_forms(
    url: str, problem: str
) -> None:
    error = refusal(url)
    assert problem in error.message
    assert "; use " in error.message  # followed by the forms that would do
    assert error.details == {"key": "store"}
    assert "s3cret" not in error.message


@pytest.mark.parametrize(("url", "problem"), BAD)
def test_open_store_refuses_a_bad_url_in_the_check_s_own_words(url: str, problem: str) -> None:
    with pytest.raises(ConfigError) as raised:
        open_store(url)
    assert raised.value.message == refusal(url).message


def test_a_config_with_a_bad_store_names_the_key_and_the_problem() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"mcpServers": {}, "toolgate": {"store": "sqlite:"}}, source=Path("t.json"))
    assert raised.value.message == f"t.json: toolgate.store: {refusal('sqlite:').message}"


def test_memory_and_sqlite_urls_are_judged_without_redis_and_a_redis_url_says_it_is_missing() -> (
    None
):
    script = """
import sys
sys.modules["redis"] = None  # any import of redis now fails, as when it is not installed
from toolgate.errors import ConfigError
from toolgate.state.open import check_store_url
for url in ("memory://", "sessions.db", "sqlite:///var/lib/s.db"):
    check_store_url(url)
for url in ("redis://h:6379/0", "redis+sentinel://h/svc"):
    try:
        check_store_url(url)
    except ConfigError as exc:
        print(exc.message)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("Bad Redis store URL: the redis package is not installed")
    assert lines[1].startswith("Bad Redis Sentinel store URL: the redis package is not installed")


BAD_REDIS, BAD_SENTINEL, GOOD_REDIS = (
    "redis://cache:notaport/0",
    "redis+sentinel://h1:26379",
    (
        "redis://127.0.0.1:1/0"  # nothing listens there: the check does not connect
    ),
)


NOT_A_DATABASE, NOTES = "notes.txt", "important notes\n"  # a bare path, beside the config


@pytest.fixture(scope="module")
def commands(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Run]]:
    """``check`` (online and ``--offline``) and ``serve`` on a bad store: the real
    command, all at once, each on its own config file."""
    cases = {
        "check": ("check", BAD_REDIS),
        "check --offline": ("check --offline", BAD_REDIS),
        "serve": ("serve", BAD_SENTINEL),
        "serve on no database": ("serve", NOT_A_DATABASE),
    }
    configs = {}
    for name, (_, store) in cases.items():
        path = tmp_path_factory.mktemp("store") / "toolgate.json"
        path.write_text(json.dumps({"mcpServers": {}, "toolgate": {"store": store}}))
        (path.parent / NOT_A_DATABASE).write_text(NOTES)
        configs[name] = path.resolve()

    def run(name: str) -> Run:
        argv = [*toolgate_argv(), *cases[name][0].split(), str(configs[name])]
        return subprocess.run(argv, capture_output=True, text=True, env=gateway_env(), timeout=60)

    with ThreadPoolExecutor(len(cases)) as pool:
        done = dict(zip(cases, pool.map(run, cases), strict=True))
    return {name: (configs[name], done[name]) for name in cases}


@pytest.mark.parametrize("command", ["check", "check --offline"])
def test_toolgate_check_reports_a_bad_store_url_and_exits_1(
    commands: dict[str, tuple[Path, Run]], command: str
) -> None:
    config, done = commands[command]
    assert done.returncode == 1
    line = f"{config}: toolgate.store: {refusal(BAD_REDIS).message}"
    assert done.stderr.splitlines() == [line]


def test_toolgate_serve_refuses_to_start_with_the_same_line(
    commands: dict[str, tuple[Path, Run]],
) -> None:
    config, done = commands["serve"]
    assert done.returncode == 1
    line = f"{config}: toolgate.store: {refusal(BAD_SENTINEL).message}"
    assert done.stderr.splitlines()[-1] == f"toolgate: {line}"


def test_toolgate_serve_refuses_a_sqlite_file_that_is_no_database_and_leaves_it_as_it_was(
    commands: dict[str, tuple[Path, Run]],
) -> None:
    config, done = commands["serve on no database"]
    notes = config.parent / NOT_A_DATABASE
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        f"toolgate: toolgate.store: {notes} is not a SQLite database"
    )
    assert "Traceback" not in done.stderr
    assert notes.read_text() == NOTES


@pytest.mark.parametrize("kind", ["file", "folder"])
async def test_check_refuses_a_sqlite_store_that_is_no_database_and_leaves_it_as_it_was(
    tmp_path: Path, kind: str
) -> None:
    store = tmp_path / "state"
    if kind == "file":
        store.write_text(NOTES)
    else:
        store.mkdir()
    config = tmp_path / "toolgate.json"
    config.write_text(
        json.dumps({"mcpServers": {}, "toolgate": {"store": "sqlite://" + str(store)}})
    )
    out, err = io.StringIO(), io.StringIO()
    assert await run_check(config, offline=True, out=out, err=err) == 1
    problem = "is not a SQLite database" if kind == "file" else "is a folder, not a SQLite database"
    assert err.getvalue().splitlines()[0] == f"{config}: toolgate.store: {store} {problem}"
    assert out.getvalue() == ""
    assert (store.read_text() == NOTES) if kind == "file" else list(store.iterdir()) == []


async def test_a_config_with_a_good_redis_url_still_checks_ok_with_no_redis_running(
    tmp_path: Path,
) -> None:
    config = tmp_path / "toolgate.json"
    config.write_text(json.dumps({"mcpServers": {}, "toolgate": {"store": GOOD_REDIS}}))
    out, err = io.StringIO(), io.StringIO()
    assert await run_check(config, out=out, err=err) == 0, err.getvalue()
    assert "ok: 0 tools from 0 backend(s)" in out.getvalue()


@pytest.mark.parametrize("url", [None, 6379])
def test_a_store_url_that_is_not_text_is_a_config_error(url: object) -> None:
    with pytest.raises(ConfigError) as raised:
        open_store(url)  # type: ignore[arg-type]
    assert raised.value.message == f"A store URL is a string, got {type(url).__name__}"


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"idle_ttl": 0}, "store idle_ttl must be a finite number of seconds > 0, got 0"),
        ({"idle_ttl": -1}, "store idle_ttl must be a finite number of seconds > 0, got -1"),
        (
            {"idle_ttl": float("nan")},
            "store idle_ttl must be a finite number of seconds > 0, got nan",
        ),
        ({"timeout": 0}, "store timeout must be a finite number of seconds > 0, got 0"),
    ],
)
def test_a_store_that_would_forget_every_session_at_once_is_refused(
    options: dict[str, float], problem: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        open_store("memory://", **options)
    assert raised.value.message == problem
