"""Shared test set-up: loads every fixture module in tests/_fixtures as a plugin.

The tests start toolgate, its demo backends and test servers as subprocesses a few
hundred times per run; with ``PYTHONDONTWRITEBYTECODE`` set each of them would compile
``src/toolgate`` again, so it is unset here and they share ``__pycache__`` (gitignored).
"""

import os
import sys
from pathlib import Path

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
