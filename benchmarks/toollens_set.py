"""The whole-task set of ``search_eval.py`` users phrase in their own words: ToolLens
(COLT, CIKM 2024), short requests that each need several RapidAPI endpoints ("I'm
planning a meal using the ingredient beef and grocery." needs a recipe search, a
nutrition lookup and a grocery search), over 464 endpoints of 314 APIs.

Read at a pinned commit, each file checked by sha256 (``benchmarks/data/README.md``).
A benchmark helper: imports only the standard library.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

TOOLLENS_REPO = "quchangle1/COLT"
TOOLLENS_COMMIT = "bbec292c38cabe3fbae098f50cc31b2e9f7e8fca"
TOOLLENS_FILES = {  # path in the repository -> sha256
    "datasets/ToolLens/corpus.jsonl": (
        "6e3c28dedd464e6dce86a0643f88277083eca3cf76570fc5acbf76afd4f15c42"
    ),
    "datasets/ToolLens/queries.jsonl": (
        "4674a388d5e00f05814dce4c9f9cfb537b514b05e1bb1ec4ac1d1c7a02c22376"
    ),
    # the test split's judgements; the train split (16,893 requests) is not read
    "datasets/ToolLens/qrels/test.tsv": (
        "ec1a7fe340747480ca1e54740ed304802cb7f6901cfdde74e58f8d379c22756f"
    ),
}
Read = Callable[[str], bytes]  # a path of TOOLLENS_FILES -> the file's bytes, sha256 checked

# one corpus line: "category_name:…, tool_name:…, api_name:…, api_description:…,
# required_params: [...], optional_params: [...], return_schema: {...}"
_ENTRY = re.compile(
    r"category_name:(?P<category>.*?), tool_name:(?P<api>.*?), api_name:(?P<endpoint>.*?), "
    r"api_description:(?P<description>.*?), required_params: (?P<required>.*), "
    r"optional_params: (?P<optional>.*), return_schema: .*$",
    re.S,
)


@dataclass(frozen=True)
class Endpoint:
    """One RapidAPI endpoint as an MCP server would serve it: the API is the server."""

    api: str  # the API's title ("Worldwide Recipes"): the server
    name: str  # the endpoint's name ("Suggestions"): the tool
    description: str
    input_schema: dict[str, Any]


def _params(text: str) -> list[dict[str, Any]]:
    try:
        found = json.loads(text)
    except json.JSONDecodeError:
        return []
    if not isinstance(found, list):
        return []
    return [p for p in found if isinstance(p, dict) and p.get("name")]


def _schema(required: list[dict[str, Any]], optional: list[dict[str, Any]]) -> dict[str, Any]:
    """JSON Schema of an endpoint's parameters (RapidAPI writes ``STRING``, ``NUMBER``…)."""
    kinds = {"number": "number", "integer": "integer", "boolean": "boolean", "array": "array"}
    props = {
        str(p["name"]): {
            "type": kinds.get(str(p.get("type", "")).lower(), "string"),
            "description": str(p.get("description") or ""),
        }
        for p in required + optional
    }
    return {"type": "object", "properties": props, "required": [str(p["name"]) for p in required]}


def load(read: Read) -> tuple[dict[str, Endpoint], list[tuple[str, list[str]]]]:
    """The corpus (corpus id -> endpoint) and the test split's requests, each with the
    corpus ids of the endpoints it needs, in the file's order."""
    endpoints: dict[str, Endpoint] = {}
    for line in read("datasets/ToolLens/corpus.jsonl").decode("utf-8").splitlines():
        row = json.loads(line)
        entry = _ENTRY.match(row["text"])
        if entry is None:
            raise ValueError(f"ToolLens corpus entry {row['_id']} is not in the known form")
        endpoints[str(row["_id"])] = Endpoint(
            api=entry["api"].strip(),
            name=entry["endpoint"].strip(),
            description=entry["description"].strip(),
            input_schema=_schema(_params(entry["required"]), _params(entry["optional"])),
        )
    texts = {}
    for line in read("datasets/ToolLens/queries.jsonl").decode("utf-8").splitlines():
        row = json.loads(line)
        texts[str(row["_id"])] = str(row["text"]).strip()
    needs: dict[str, list[str]] = {}
    for line in read("datasets/ToolLens/qrels/test.tsv").decode("utf-8").splitlines()[1:]:
        query, corpus, _score = line.split("\t")
        wanted = needs.setdefault(query, [])
        if corpus not in wanted:
            wanted.append(corpus)
    return endpoints, [(texts[q], ids) for q, ids in needs.items()]
