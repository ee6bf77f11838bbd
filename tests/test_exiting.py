"""A toolgate process ends without collecting the heap it is about to drop
(``toolgate.exiting``): the ``toolgate`` command and the demo's backends freeze what is
alive before the interpreter's last collection. How long that saves is measured in
``benchmarks/bench_exit.py``, never asserted here.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import toolgate
from _fixtures.gateway import gateway_env

#: run ``main`` under an ``atexit`` hook that reports whether objects were frozen
FROZEN_AT_EXIT = (
    "import atexit, gc, sys\n"
    "atexit.register(lambda: print('frozen at exit:', gc.get_freeze_count() > 0))\n"
)


def run(code: str, *, stdin: int | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", FROZEN_AT_EXIT + code],
        capture_output=True,
        text=True,
        timeout=60,
        env=gateway_env(),
        stdin=stdin,
    )


def test_the_toolgate_command_is_run_which_ends_through_quick_exit() -> None:
    (command,) = entry_points(group="console_scripts", name="toolgate")
    assert command.value == "toolgate.cli:run"
    done = run("sys.argv = ['toolgate', '--version']\nfrom toolgate.cli import run\nrun()")
    assert (done.returncode, done.stdout) == (
        0,
        f"toolgate {toolgate.__version__}\nfrozen at exit: True\n",
    ), done.stderr


def test_main_called_in_a_program_freezes_nothing() -> None:
    done = run("from toolgate.cli import main\nsys.exit(main(['--version']))")
    assert done.stdout.splitlines()[-1] == "frozen at exit: False", done.stderr


@pytest.mark.parametrize("backend", ["tracker", "shop"])
def test_a_demo_backend_ends_through_quick_exit_when_its_stdin_closes(
    backend: str, tmp_path: Path
) -> None:
    db = tmp_path / "demo.db"
    done = run(
        f"from toolgate.demo.{backend} import main\nmain(['--db', {str(db)!r}])",
        stdin=subprocess.DEVNULL,  # the host closed it: the server returns at once
    )
    assert (done.returncode, done.stdout) == (0, "frozen at exit: True\n"), done.stderr
