"""toolgate installs outside the repository, and declares exactly what it imports.

The wheel is built with ``uv build``, installed with ``uv tool install`` into a fresh
tool environment (uv's cache reused; only the package registry is reached), and its
``toolgate`` command runs from a folder outside the repository: ``--version``, and
``demo`` driven over stdio by the MCP SDK's client. The import check reads every module
under ``src/`` and compares its third-party imports with ``pyproject.toml``.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

import toolgate

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "toolgate"
EXAMPLES = ROOT / "examples"


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return _normalize(match.group(0))


def declared() -> dict[str, set[str]]:
    """Distribution names by where they are declared: core and each runtime extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    out = {"core": {_requirement_name(r) for r in project["dependencies"]}}
    for extra, reqs in project["optional-dependencies"].items():
        if extra not in ("dev", "all"):
            out[extra] = {_requirement_name(r) for r in reqs}
    return out


def parsed(path: Path) -> ast.Module:
    """``path``'s syntax tree, parsed on a fresh thread: CPython 3.11.7 once failed an
    ``ast.parse`` here with "AST constructor recursion depth mismatch" on a test worker's
    thread that earlier tests had used; a new thread starts its recursion count afresh."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(ast.parse, path.read_text(), str(path)).result()


def imported_modules(root: Path = SRC) -> dict[str, set[str]]:
    """Top-level third-party module → the files under ``root`` that import it."""
    found: dict[str, set[str]] = {}
    stdlib = set(sys.stdlib_module_names)
    for path in sorted(root.rglob("*.py")):
        tree = parsed(path)
        names: list[str] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.append(node.module)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                names.append(node.args[0].value)
        for name in names:
            top = name.split(".")[0]
            if top not in stdlib and top != "toolgate" and top != "__future__":
                found.setdefault(top, set()).add(str(path.relative_to(root)))
    return found


@functools.cache
def _ships(dist: str) -> frozenset[str]:
    """A distribution, or for a meta-package that holds no module of its own (``fastmcp``
    is ``fastmcp-slim[client,server]``) the distributions it always installs."""
    files = importlib.metadata.files(dist) or []
    if any(f.suffix == ".py" for f in files):
        return frozenset({dist})
    requires = importlib.metadata.requires(dist) or []
    return frozenset({dist} | {_requirement_name(r) for r in requires if "extra ==" not in r})


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _providers(module: str) -> set[str]:
    return {_normalize(d) for d in _distributions().get(module, [module])}


def test_every_third_party_import_is_a_declared_dependency() -> None:
    shipped = {d for names in declared().values() for name in names for d in _ships(name)}
    missing = {
        module: sorted(files)
        for module, files in imported_modules().items()
        if not _providers(module) & shipped
    }
    assert missing == {}, f"imported but not declared in pyproject.toml: {missing}"


def test_every_third_party_import_of_an_example_is_a_declared_runtime_dependency() -> None:
    # an example runs where `pip install 'toolgate[all]'` ran, without the dev tools
    shipped = {d for names in declared().values() for name in names for d in _ships(name)}
    siblings = {path.stem for path in EXAMPLES.rglob("*.py")}
    missing = {
        module: sorted(files)
        for module, files in imported_modules(EXAMPLES).items()
        if module not in siblings and not _providers(module) & shipped
    }
    assert missing == {}, f"examples import what toolgate[all] does not install: {missing}"


def imported_through() -> set[str]:
    """Top-level modules that the third-party modules imported under src/ import in turn
    (one level): a dependency can be needed by a library's module without being one of
    that library's own (``httptools``, optional for uvicorn, is what the edge's protocol,
    built on ``uvicorn.protocols.http.httptools_impl``, parses with)."""
    stdlib = set(sys.stdlib_module_names)
    modules: set[str] = set()
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module)
            elif isinstance(node, ast.Import):
                modules.update(alias.name for alias in node.names)
    found: set[str] = set()
    for name in modules:
        top = name.split(".")[0]
        if top in stdlib or top in ("toolgate", "__future__"):
            continue
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:  # an optional extra's, not installed here
            continue
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue
        tree = ast.parse(Path(spec.origin).read_text(), filename=spec.origin)
        for node in tree.body:  # what it needs to import at all
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - stdlib


def test_every_declared_runtime_dependency_is_imported() -> None:
    provided = {
        d for module in {*imported_modules(), *imported_through()} for d in _providers(module)
    }
    unused = {
        group: sorted(n for n in names if not _ships(n) & provided)
        for group, names in declared().items()
        if any(not _ships(n) & provided for n in names)
    }
    assert unused == {}, f"declared in pyproject.toml but imported nowhere under src/: {unused}"


def test_the_version_has_one_source() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["hatch"]["version"]["path"] == "src/toolgate/__init__.py"
    done = subprocess.run(
        [sys.executable, "-m", "toolgate.cli", "--version"], capture_output=True, text=True
    )
    assert (done.returncode, done.stdout) == (0, f"toolgate {toolgate.__version__}\n")


def test_importing_one_module_does_not_import_the_core() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, toolgate.exiting; print(sorted(m for m in sys.modules if 'toolg' in m))",
        ],
        capture_output=True,
        text=True,
    )
    assert (done.returncode, done.stdout) == (0, "['toolgate', 'toolgate.exiting']\n"), done.stderr


def test_every_name_the_root_exports_is_the_one_its_module_defines() -> None:
    namespace: dict[str, object] = {}
    exec("from toolgate import *", namespace)
    assert sorted(set(namespace) - {"__builtins__"}) == sorted(toolgate.__all__)
    for name in toolgate.__all__:
        assert getattr(toolgate, name) is namespace[name]
        if name != "__version__":
            module = sys.modules[toolgate._EXPORTS[name]]
            assert getattr(module, name) is namespace[name], name
    assert set(toolgate.__all__) <= set(dir(toolgate))
    with pytest.raises(AttributeError, match="module 'toolgate' has no attribute 'Toolset'"):
        _ = toolgate.Toolset


# -- the built wheel, installed as a tool ---------------------------------------------------------


def _uv_env(tmp: Path) -> dict[str, str]:
    """The caller's environment minus anything that points into this checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(
        UV_TOOL_DIR=str(tmp / "tools"),
        UV_TOOL_BIN_DIR=str(tmp / "bin"),
        UV_PYTHON_DOWNLOADS="never",
        UV_NO_PROGRESS="1",
    )
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """``(the installed toolgate command, a folder outside the repo)``."""
    tmp = tmp_path_factory.mktemp("install")
    env = _uv_env(tmp)
    uv = [sys.executable, "-m", "uv"]
    build = subprocess.run(
        [*uv, "build", "--wheel", "--out-dir", str(tmp / "dist"), str(ROOT)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = (tmp / "dist").glob("toolgate-*.whl")
    install = subprocess.run(
        [*uv, "tool", "install", "--python", sys.executable, str(wheel)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    yield tmp / "bin" / "toolgate", elsewhere


def _outside_env(folder: Path) -> dict[str, str]:
    """A bare environment: no PYTHONPATH, no virtualenv, HOME in a temporary folder."""
    return {"PATH": "/usr/bin:/bin", "HOME": str(folder), "LANG": "C.UTF-8"}


def test_the_installed_tool_runs_from_its_own_environment(installed: tuple[Path, Path]) -> None:
    command, elsewhere = installed
    python = command.resolve().parent / "python"
    done = subprocess.run(
        [str(python), "-c", "import toolgate; print(toolgate.__file__)"],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=_outside_env(elsewhere),
    )
    where = Path(done.stdout.strip())
    assert done.returncode == 0, done.stderr
    assert ROOT not in where.parents and where.is_relative_to(command.resolve().parents[1])


def test_the_installed_tool_prints_its_version(installed: tuple[Path, Path]) -> None:
    command, elsewhere = installed
    done = subprocess.run(
        [str(command), "--version"],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=_outside_env(elsewhere),
    )
    assert (done.returncode, done.stdout) == (0, f"toolgate {toolgate.__version__}\n")


async def test_the_installed_demo_serves_mcp_over_stdio(installed: tuple[Path, Path]) -> None:
    command, elsewhere = installed
    params = StdioServerParameters(
        command=str(command),
        args=["demo", "--db", str(elsewhere / "demo.sqlite3")],
        env=_outside_env(elsewhere),
        cwd=elsewhere,
    )
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            listed = await session.list_tools()
    names = {tool.name for tool in listed.tools}
    assert init.server_info.name
    assert {"enable_tools", "list_groups", "call_tool"} <= names
    assert (elsewhere / "demo.sqlite3").exists()
