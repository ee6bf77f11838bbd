"""Shared test set-up: loads every fixture module in tests/_fixtures as a plugin."""

from pathlib import Path

pytest_plugins = sorted(
    f"_fixtures.{p.stem}"
    for p in (Path(__file__).parent / "_fixtures").glob("*.py")
    if not p.name.startswith("__")
)
