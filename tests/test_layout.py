"""The source tree keeps the shape docs/architecture.md describes.

No import circle anywhere in ``toolgate`` (imports named only for the type checker
count: a circle hidden behind ``TYPE_CHECKING`` is still a circle), and no source module
over 500 lines outside the built-in demo. import-linter holds the layers; this holds
what a layers contract cannot see.
"""

from __future__ import annotations

from pathlib import Path

import grimp

from _fixtures.paths import PROJECT_ROOT

SRC = PROJECT_ROOT / "src" / "toolgate"
MAX_LINES = 500


def import_cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """Every strongly connected set of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in sorted(graph.find_modules_directly_imported_by(module) & modules):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            part = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                part.append(top)
                if top == module:
                    break
            if len(part) > 1:
                cycles.append(sorted(part))

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return sorted(cycles)


def test_no_import_circle_anywhere_type_checking_imports_included() -> None:
    graph = grimp.build_graph("toolgate", exclude_type_checking_imports=False)
    assert import_cycles(graph, set(graph.modules)) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    graph = grimp.ImportGraph()
    for name in ("a", "a.one", "a.two", "a.three"):
        graph.add_module(name)
    graph.add_import(importer="a.one", imported="a.two")
    graph.add_import(importer="a.two", imported="a.one")
    graph.add_import(importer="a.three", imported="a.one")
    assert import_cycles(graph, set(graph.modules)) == [["a.one", "a.two"]]


def long_modules(root: Path) -> list[str]:
    return sorted(
        f"{path.relative_to(root)}: {count} lines"
        for path in root.rglob("*.py")
        if "demo" not in path.relative_to(root).parts
        and (count := len(path.read_text().splitlines())) > MAX_LINES
    )


def test_no_source_module_over_500_lines_outside_the_demo() -> None:
    assert long_modules(SRC) == []


def test_the_length_check_sees_a_long_module(tmp_path: Path) -> None:
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "long.py").write_text("x = 1\n" * 600)
    (tmp_path / "long.py").write_text("x = 1\n" * 501)
    (tmp_path / "short.py").write_text("x = 1\n" * 500)
    assert long_modules(tmp_path) == ["long.py: 501 lines"]
