"""``toolgate demo`` through the real command: the tour, stdio and HTTP.

``--tour`` prints every scripted step; plain ``demo`` serves the built-in demo
backends over stdio (``mcp.ClientSession``) and over HTTP (``fastmcp.Client``), telling
the user on stderr how to connect.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp import ClientSession, StdioServerParameters, stdio_client

from _fixtures.gateway import DEMO_FIRST_LIST, HttpGateway, gateway_env, toolgate_argv

SHARED_TOKENIZERS = Path(__file__).resolve().parents[2] / "shared" / "data" / "tokenizers"


@pytest.fixture(scope="module")
def first_tour(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One tour on new demo data (about seven CPU-seconds): what it printed, and the
    database it left, which the ``--fresh`` test copies and goes on from."""
    db = tmp_path_factory.mktemp("tour") / "demo.sqlite3"
    return run_tour(db), db


def test_demo_tour_prints_each_step_and_the_tokens_saved(
    first_tour: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, _ = first_tour
    assert done.returncode == 0, done.stderr
    out = done.stdout
    headings = [line for line in out.splitlines() if line.startswith("Step ")]
    assert headings == [
        "Step 1. Connect: the agent sees a small menu, not every tool",
        "Step 2. list_groups: what can be enabled",
        "Step 3. Calling a hidden tool gets a hint, not a dead end",
        "Step 4. enable_tools: the issue tools appear (and the client is told)",
        "Step 5. The new tool works",
        "Step 6. Access: delete_issue needs trust 'verified', so it does not exist for you",
        "Step 7. Stages: checkout opens only after something is in the cart",
        "Step 8. Tokens: what the agent carries in its context",
    ]
    assert "tools/list: 7 tools" in out
    assert "Enable group 'issues' first (and its parents ['tracker'])" in out
    assert "notifications: notifications/tools/list_changed" in out
    assert "  -> JSON-RPC error -32602: Unknown tool: delete_issue" in out
    assert "is only available in stage 'checkout'; this session is in stage 'browse'" in out
    assert "  + checkout_start" in out
    assert "flat (every tool, no toolgate)      49 tools" in out
    assert out.rstrip().splitlines()[-1].endswith("counted with tiktoken:o200k_base")


async def test_demo_over_stdio_serves_the_demo_tools_and_says_how_to_connect(
    tmp_path: Path,
) -> None:
    argv = toolgate_argv()
    env = {k: v for k, v in os.environ.items() if k.startswith(("PATH", "HOME"))}
    params = StdioServerParameters(
        command=argv[0],
        args=[*argv[1:], "demo", "--db", str(tmp_path / "demo.sqlite3")],
        env=env,
    )
    errlog = tmp_path / "stderr.log"
    with errlog.open("w") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = [t.name for t in (await session.list_tools()).tools]
            assert listed == DEMO_FIRST_LIST
            found = await session.call_tool("search_products", {"query": "gardener"})
            assert found.is_error is False
    text = errlog.read_text()
    assert '"toolgate-demo": {' in text
    assert '"args": [\n        "-m",\n        "toolgate.cli",\n        "demo"\n      ]' in text
    assert "toolgate demo --tour" in text


@pytest.fixture
def demo_http(tmp_path: Path) -> Any:
    gateway = HttpGateway(
        [*toolgate_argv(), "demo", "--db", str(tmp_path / "demo.sqlite3")], tmp_path / "demo.log"
    )
    gateway.start()
    try:
        yield gateway
    finally:
        gateway.stop()


async def test_demo_over_http_needs_no_token_and_prints_its_url(demo_http: HttpGateway) -> None:
    async with Client(demo_http.url, mode="legacy") as client:
        enabled = await client.call_tool("enable_tools", {"groups": ["shopper"]})
        assert enabled.structured_content is not None
        assert enabled.structured_content["enabled"] == ["shopper"]
        cart = await client.call_tool("cart_add", {"product_id": 1})
        assert cart.structured_content is not None
        assert cart.structured_content["item_count"] == 1
        names = [t.name for t in await client.list_tools()]
        assert "checkout_start" in names
    assert f"Streamable HTTP endpoint: {demo_http.url}" in demo_http.log.read_text()


def run_tour(db: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    env = gateway_env(TOOLGATE_TOKENIZER_DIR=str(SHARED_TOKENIZERS))
    argv = [*toolgate_argv(), "demo", "--tour", "--db", str(db), *flags]
    return subprocess.run(argv, capture_output=True, text=True, timeout=90, env=env)


def issue_titles(db: Path) -> list[str]:
    with closing(sqlite3.connect(db)) as conn:
        return [row[0] for row in conn.execute("SELECT title FROM tracker_issues ORDER BY id")]


def test_demo_fresh_puts_the_demo_data_back_as_shipped(
    first_tour: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path
) -> None:
    toured, after_one_tour = first_tour
    assert toured.returncode == 0, toured.stderr
    db = tmp_path / "demo.sqlite3"
    with closing(sqlite3.connect(after_one_tour)) as src, closing(sqlite3.connect(db)) as dst:
        src.backup(dst)
    shipped_and_one_run = issue_titles(db)
    assert shipped_and_one_run.count("Try toolgate") == 1  # the tour wrote to the demo data
    with closing(sqlite3.connect(db)) as conn, conn:  # the data changes again, as a second
        conn.execute(  # tour would change it (one tour fewer: the suite's time)
            "INSERT INTO tracker_issues (project_id, title, body, status, priority, reporter,"
            " created_at, updated_at) SELECT project_id, title, body, status, priority,"
            " reporter, created_at, updated_at FROM tracker_issues WHERE title = 'Try toolgate'"
        )
    assert issue_titles(db).count("Try toolgate") == 2
    fresh = run_tour(db, "--fresh")
    assert fresh.returncode == 0, fresh.stderr
    assert f"toolgate demo: demo data reset to the shipped data in {db}" in fresh.stderr
    assert issue_titles(db) == shipped_and_one_run  # reset, then one tour again


def test_demo_fresh_refuses_a_file_that_is_no_database_and_leaves_it(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my own notes, not a database\n" * 200)
    done = run_tour(notes, "--fresh")
    assert done.returncode != 0
    assert f"toolgate: --fresh: cannot reset the demo data in {notes}: " in done.stderr
    assert "file is not a database" in done.stderr
    assert notes.read_text() == "my own notes, not a database\n" * 200
