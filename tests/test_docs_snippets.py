"""Every code block in README.md and docs/*.md runs, parses or is checked, so the docs
cannot drift from the code.

Conventions (also in docs/contributing-docs.md):

- ```` ```python ```` blocks run in a fresh namespace; top-level ``await`` is allowed.
  ``<!-- continue -->`` on the line before a block runs it in the previous block's
  namespace (and event loop). ``<!-- compile-only -->`` marks code for a library
  toolgate replaces (migration "before" code): it must parse, and is not run.
- ```` ```json ```` and ```` ```toml ```` blocks must parse; one whose keys are only
  ``mcpServers`` / ``toolgate`` is a gateway config and goes through ``parse_config``
  (a missing ``mcpServers`` counts as ``{}``).
- Shell blocks (``bash``, ``sh``, ``console``) are never run; each ``toolgate ...``
  command line in them must parse with the CLI's own argument parser.
"""

from __future__ import annotations

import ast
import asyncio
import json
import logging
import re
import shlex
import textwrap
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from toolgate.cli import _parser
from toolgate.gateway.config.model import parse_config

ROOT = Path(__file__).resolve().parents[1]
#: pages other engineers own and document their own way (linked from the nav, not scanned)
OTHERS = {"webmcp.md", "conformance.md"}
PAGES = [
    ROOT / "README.md",
    *sorted(p for p in (ROOT / "docs").glob("**/*.md") if p.name not in OTHERS),
]
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})(?P<info>[^`\n]*)$")
MARK = re.compile(r"^\s*<!--\s*(?P<mark>[a-z-]+)\s*-->\s*$")
SHELLS = {"bash", "sh", "shell", "console"}


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    mark: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


@dataclass
class Chain:
    """A python block and the blocks that continue it."""

    blocks: list[Block] = field(default_factory=list)

    @property
    def where(self) -> str:
        return self.blocks[0].where


def blocks_of(page: Path) -> Iterator[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        indent, ticks = m["indent"], m["ticks"]
        lang = m["info"].strip().split(" ", 1)[0].lower() if m["info"].strip() else ""
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        mark = MARK.match(lines[j]) if j >= 0 else None
        body = []
        k = i + 1
        while k < len(lines) and lines[k].strip() != ticks:
            body.append(lines[k][len(indent) :] if lines[k].startswith(indent) else lines[k])
            k += 1
        yield Block(page, i + 1, lang, textwrap.dedent("\n".join(body)), mark and mark["mark"])
        i = k + 1


def all_blocks() -> list[Block]:
    return [b for page in PAGES for b in blocks_of(page)]


def python_chains() -> list[Chain]:
    chains: list[Chain] = []
    for b in all_blocks():
        if b.lang not in ("python", "py") or b.mark == "compile-only":
            continue
        if b.mark == "continue":
            assert chains and chains[-1].blocks[0].page == b.page, f"{b.where}: nothing to continue"
            chains[-1].blocks.append(b)
        else:
            chains.append(Chain([b]))
    return chains


def run_chain(chain: Chain) -> None:
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    with asyncio.Runner() as runner:
        for block in chain.blocks:
            code = compile(block.code, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            result = eval(code, namespace)  # exec-mode code: None, or a coroutine
            if asyncio.iscoroutine(result):
                runner.run(result)


def by_lang(*langs: str) -> list[Block]:
    return [b for b in all_blocks() if b.lang in langs]


def config_of(data: Any) -> dict[str, Any] | None:
    """The gateway config a JSON/TOML block holds, or None when it holds something else."""
    if isinstance(data, dict) and data and set(data) <= {"mcpServers", "toolgate"}:
        return {"mcpServers": {}, **data}
    return None


def toolgate_lines(code: str) -> list[list[str]]:
    out = []
    for raw in code.splitlines():
        line = raw.strip().removeprefix("$ ").strip()
        if line.startswith((".venv/bin/toolgate ", "toolgate ")):
            argv = shlex.split(line, comments=True)
            out.append(argv[1:])
    return out


# -- the documents have what the tests need ----------------------------------------------


def test_every_page_in_the_docs_folder_and_the_readme_is_scanned() -> None:
    assert ROOT / "README.md" in PAGES
    assert len(PAGES) >= 8


def test_the_docs_hold_python_config_and_command_snippets() -> None:
    assert len(python_chains()) >= 20
    assert len([b for b in by_lang("json", "toml") if config_of(_load(b))]) >= 4
    assert len([c for b in by_lang(*SHELLS) for c in toolgate_lines(b.code)]) >= 5


# -- python --------------------------------------------------------------------------------


@pytest.mark.parametrize("chain", python_chains(), ids=lambda c: c.where)
def test_python_snippet_runs(chain: Chain, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)  # adapters warn about missing auth in examples
    logging.getLogger("client").setLevel(logging.ERROR)
    run_chain(chain)


@pytest.mark.parametrize(
    "block",
    [b for b in by_lang("python", "py") if b.mark == "compile-only"],
    ids=lambda b: b.where,
)
def test_compile_only_python_snippet_parses(block: Block) -> None:
    ast.parse(block.code, block.where)


# -- json and toml -------------------------------------------------------------------------


def _load(block: Block) -> Any:
    return json.loads(block.code) if block.lang == "json" else tomllib.loads(block.code)


@pytest.mark.parametrize("block", by_lang("json", "toml"), ids=lambda b: b.where)
def test_json_and_toml_snippet_parses_and_configs_validate(block: Block) -> None:
    data = _load(block)
    config = config_of(data)
    if config is not None:
        parse_config(config)


# -- shell ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [argv for b in by_lang(*SHELLS) for argv in toolgate_lines(b.code)],
    ids=lambda argv: " ".join(argv),
)
def test_toolgate_command_line_in_a_shell_snippet_parses(argv: list[str]) -> None:
    assert "--help" not in argv and "-h" not in argv
    _parser().parse_args(argv)
