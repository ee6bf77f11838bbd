"""Shared test set-up: loads every fixture module in tests/_fixtures as a plugin."""

from pathlib import Path

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
