"""The dialogue set of ``search_eval.py``: the Berkeley Function Calling Leaderboard's
multi-turn conversations (BFCL v4, ``multi_turn_base``; Apache-2.0), each user turn a
request in the words of the conversation so far, over the 128 functions of its eight
systems (file system, Twitter, messages, tickets, trading, travel, vehicle, maths), each
system a server. Tuned on like the others: the dialogue case ACEBench's held-out
conversations test, with a development half of its own.

Read at a pinned commit, each file checked by sha256 (``benchmarks/data/README.md``).
A benchmark helper: imports only the standard library.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

BFCL_REPO = "ShishirPatil/gorilla"
BFCL_COMMIT = "6ea57973c7a6097fd7c5915698c54c17c5b1b6c8"
_DATA = "berkeley-function-call-leaderboard/bfcl_eval/data/"
# the eight systems of multi_turn_base: their function file -> the server's title
SYSTEMS = {
    "gorilla_file_system": "Gorilla file system",
    "math_api": "Math API",
    "message_api": "Message API",
    "posting_api": "Twitter API",
    "ticket_api": "Ticket system",
    "trading_bot": "Trading bot",
    "travel_booking": "Travel booking",
    "vehicle_control": "Vehicle control",
}
BFCL_FILES = {  # path in the repository -> sha256
    f"{_DATA}BFCL_v4_multi_turn_base.json": (
        "1a21a995d06fd6f20ba55de7bced30ef953ec35e998f502ec2ecf4d66ef1c43a"
    ),
    f"{_DATA}possible_answer/BFCL_v4_multi_turn_base.json": (
        "1fee67823b317571649177dd89d63969feaae4e810cc7448ee55ba797fb7c8fc"
    ),
    f"{_DATA}multi_turn_func_doc/gorilla_file_system.json": (
        "c4c1b741c71e2a17c97a5dc9c4a91d89978c4eaece56494d14272d5df6c650e9"
    ),
    f"{_DATA}multi_turn_func_doc/math_api.json": (
        "83fa31708c89442bdcf12ac4dfbe3be8663ec9183a1b1524a9fda98164bc7e0b"
    ),
    f"{_DATA}multi_turn_func_doc/message_api.json": (
        "4d58ea933a5d2b280d7a52366617fb47fecd333d7b0e08e724db6fa12fb5f847"
    ),
    f"{_DATA}multi_turn_func_doc/posting_api.json": (
        "87f9fc404a06e4107d7c366f1399c596440e84c16cb119faf374b2f532d86e8b"
    ),
    f"{_DATA}multi_turn_func_doc/ticket_api.json": (
        "31324e0380782664fe82ba05bd23517808ad55692b45a5fe7c3d4d395fe4f0f8"
    ),
    f"{_DATA}multi_turn_func_doc/trading_bot.json": (
        "1a7933fd8f0cb8fbec38aeae05cb8c24132747cad4904fe1c13ac3d01fc22c2d"
    ),
    f"{_DATA}multi_turn_func_doc/travel_booking.json": (
        "f17b950c13adddf41d0848077df58788252e4c2e7cad5cfa71c8c4bf04f57b26"
    ),
    f"{_DATA}multi_turn_func_doc/vehicle_control.json": (
        "0c8a66292844874ef7b168f343bc394d8615d2d9e1f4387999a9ee23011eac78"
    ),
}
Read = Callable[[str], bytes]  # a path of BFCL_FILES -> the file's bytes, sha256 checked

# "This tool belongs to the Gorilla file system. It is … Tool description: Change the
# current directory …": the system's blurb opens every description of its functions;
# an MCP server says it once, so the function's own sentence is its description.
_OWN = re.compile(r"^This tool belongs to .*?Tool description:\s*", re.S)
_CALL = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(")


@dataclass(frozen=True)
class Function:
    """One function as an MCP server would serve it: its system is the server."""

    system: str  # the function file's stem ("gorilla_file_system"): the server's key
    name: str
    description: str
    input_schema: dict[str, Any]


def _schema(spec: dict[str, Any]) -> dict[str, Any]:
    """BFCL's ``parameters`` as a JSON schema (it writes ``"type": "dict"`` for objects)."""
    found = spec.get("parameters") or {}

    def fix(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: fix(v) for k, v in node.items()}
            if out.get("type") == "dict":
                out["type"] = "object"
            if out.get("type") == "float":
                out["type"] = "number"
            if out.get("type") == "tuple":
                out["type"] = "array"
            return out
        if isinstance(node, list):
            return [fix(v) for v in node]
        return node

    schema = fix(found) if isinstance(found, dict) else {}
    schema.setdefault("type", "object")
    return schema


def _lines(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]


def load(read: Read) -> tuple[list[Function], list[tuple[str, str, list[str]]]]:
    """The functions, and every user turn as (request, kind, the functions its ground
    truth calls, in order, each once). The request is the user's words of the whole
    conversation so far, turns joined by a space (what a client that searches with the
    conversation sends; ACEBench's held-out dialogues are read the same way); kind is
    ``first turn`` or ``later turn``. A turn whose ground truth calls nothing (the
    model is to ask) is left out."""
    functions: list[Function] = []
    owner: dict[str, str] = {}
    for system in SYSTEMS:
        for spec in _lines(read(f"{_DATA}multi_turn_func_doc/{system}.json")):
            name = str(spec["name"])
            if name in owner:
                raise ValueError(f"BFCL function {name!r} is defined by two systems")
            owner[name] = system
            functions.append(
                Function(
                    system=system,
                    name=name,
                    description=_OWN.sub("", str(spec.get("description") or "")).strip(),
                    input_schema=_schema(spec),
                )
            )
    answers = {
        a["id"]: a["ground_truth"]
        for a in _lines(read(f"{_DATA}possible_answer/BFCL_v4_multi_turn_base.json"))
    }
    rows: list[tuple[str, str, list[str]]] = []
    for item in _lines(read(f"{_DATA}BFCL_v4_multi_turn_base.json")):
        truth = answers[item["id"]]
        said: list[str] = []
        for turn, messages in enumerate(item["question"]):
            said.extend(str(m["content"]).strip() for m in messages if m.get("role") == "user")
            calls = truth[turn] if turn < len(truth) else []
            names: list[str] = []
            for call in calls:
                found = _CALL.match(call)
                if found is None or found[1] not in owner:
                    raise ValueError(f"BFCL {item['id']}: a call of no known function: {call!r}")
                if found[1] not in names:
                    names.append(found[1])
            if names:
                rows.append((" ".join(said), "first turn" if turn == 0 else "later turn", names))
    return functions, rows
