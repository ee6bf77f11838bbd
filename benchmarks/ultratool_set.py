"""The whole-task set of ``search_eval.py`` in two languages: UltraTool's requests
(Huang et al., 2024), each a user's task of one to seven tool calls told in one to
several sentences, in Chinese and in its English translation, over the tools its plans
call (436 per language, each described in the request's language). Served alone, one
catalog per language: its judgements name only its own tools.

Read at a pinned commit, each file checked by sha256 (``benchmarks/data/README.md``).
A benchmark helper: imports only the standard library.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ULTRATOOL_REPO = "JoeYing1019/UltraTool"
ULTRATOOL_COMMIT = "9f3793c3f9396b840631833ef76fe4f20c057c39"
# language -> (the file in the repository, its sha256); line i of one file is line i of
# the other translated (the same plan, the same tools)
ULTRATOOL_FILES = {
    "zh": (
        "data/Chinese-dataset/test.json",
        "d0e20a6e40d0d61381f9ad99617e8a85f3d3bad1ef23c954be201075f688142f",
    ),
    "en": (
        "data/English-dataset/test.json",
        "659a445f952d6f783a426b976208e9e77cfd374d70503d4ca5d7892da600b6c7",
    ),
}
LANGUAGES = {"zh": "Chinese", "en": "English"}
Read = Callable[[str], bytes]  # a path of ULTRATOOL_FILES -> the file's bytes, sha256 checked

# a plan step's ``tool``: "file_write(file_path='…', content='…')", or "null" / "不需要工具"
# (no tool) for the steps that only think
_CALL = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(")


@dataclass(frozen=True)
class Function:
    """One tool as a server would list it, in one language."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class Request:
    """One request in one language: its text, the pair it belongs to (the line both
    files share) and the tools its plan calls, in order, each once."""

    text: str
    pair: int
    names: tuple[str, ...]


def _schema(spec: dict[str, Any]) -> dict[str, Any]:
    """UltraTool's ``arguments`` (a JSON schema of an object) as an input schema."""
    found = spec.get("arguments")
    schema = dict(found) if isinstance(found, dict) else {}
    schema.setdefault("type", "object")
    return schema


def load(read: Read) -> dict[str, tuple[list[Function], list[Request]]]:
    """Per language, the tools (each name once, as the requests that offer it describe
    it) and the requests. A tool its plan calls that the request does not define, or a
    name two requests describe differently, is an error: the judgements would be
    unsound."""
    out: dict[str, tuple[list[Function], list[Request]]] = {}
    lengths = set()
    for lang, (path, _) in ULTRATOOL_FILES.items():
        lines = [line for line in read(path).decode("utf-8").splitlines() if line.strip()]
        lengths.add(len(lines))
        tools: dict[str, Function] = {}
        requests: list[Request] = []
        for pair, line in enumerate(lines):
            row = json.loads(line)
            offered = {}
            for spec in row["tools"]:
                name = str(spec["name"])
                tool = Function(name, str(spec.get("description") or "").strip(), _schema(spec))
                if name in tools and tools[name] != tool:
                    raise ValueError(f"UltraTool {lang}: {name!r} is described two ways")
                tools[name] = offered[name] = tool
            names: list[str] = []
            for step in row["plan"]:
                found = _CALL.match(str(step.get("tool") or ""))
                if found is None:
                    continue
                if found[1] not in offered:
                    raise ValueError(f"UltraTool {lang} line {pair}: {found[1]!r} is not offered")
                if found[1] not in names:
                    names.append(found[1])
            if names:
                requests.append(Request(str(row["question"]).strip(), pair, tuple(names)))
        out[lang] = (sorted(tools.values(), key=lambda t: t.name), requests)
    if len(lengths) != 1:
        raise ValueError(f"UltraTool: the two languages' files differ in length: {lengths}")
    return out
