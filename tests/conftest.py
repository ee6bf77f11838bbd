"""Shared test set-up: loads every fixture module in tests/_fixtures as a plugin.

The tests start toolgate, its demo backends and test servers as subprocesses a few
hundred times per run; with ``PYTHONDONTWRITEBYTECODE`` set each of them would compile
``src/toolgate`` again, so it is unset here and they share ``__pycache__`` (gitignored).
"""

import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# mcp_servers first: other fixture modules import it, and a plugin must be registered
# before anything imports it for pytest to rewrite its asserts
pytest_plugins = sorted(
    (
        f"_fixtures.{p.stem}"
        for p in (Path(__file__).parent / "_fixtures").glob("*.py")
        if not p.name.startswith("__")
    ),
    key=lambda name: (name != "_fixtures.mcp_servers", name),
)


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """The root logger's handlers and level as they were before the test.

    A test that runs the ``toolgate`` command in process (``cli.main``) points the root
    logger at that test's captured stderr, which is closed after it; left in place, a
    later test's log line fails to write, and logging prints the error with a traceback.
    On CPython 3.11.7 that print, reached from a finalizer while ``ast.parse`` runs,
    parses source again and breaks the outer parse ("AST constructor recursion depth
    mismatch", python/cpython#106905): a test failing for another test's handler.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
