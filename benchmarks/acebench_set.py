"""The agent-task set of ``search_eval.py``: ACEBench's requests, in Chinese and in
English, over a catalog of about 300 MCP servers plus ACEBench's own tools in both
languages. Queries are one-need requests and whole tasks (several tools in one
sentence); a held-out part (multi-turn dialogues) is never tuned on.

Read at a pinned commit, each file checked by sha256 (``benchmarks/data/README.md``).
A benchmark helper: imports only the standard library and ``search_eval``'s types.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

ACEBENCH_REPO = "ACEBench/ACEBench"
ACEBENCH_COMMIT = "e6db74b735ead22c24f27367606a9408573b848f"
# "<language>/<file>" (under data_all/data_<language>/, as data_normal_<file>.json) and
# "<language>/answer/<file>" (its possible_answer/) -> sha256
ACEBENCH_FILES = {
    "zh/single_turn_single_function": (
        "95e8a10c3fc98d706d69a2b47cc7ec1a18449eb24e1dcb616b232b0a8a83aff4"
    ),
    "zh/answer/single_turn_single_function": (
        "5e4a4f3268e46095392b6208bec3aefd015467404985d45853155ec6f036edf4"
    ),
    "zh/single_turn_parallel_function": (
        "8479e8739e25a58ae61f18b5d68f3843dc76f22c3ce155353d56036d4778f894"
    ),
    "zh/answer/single_turn_parallel_function": (
        "0786f04adcc1672ebd7d938fc8f602da674c3312b4c8b5f3d7d990523bc8891a"
    ),
    "zh/atom_bool": ("0b945e4a0d2018875b6e50a28e55359d94609681853c50a87d205a115be55bf8"),
    "zh/answer/atom_bool": ("c9e9bb15872a71284742de8f9db241ead8621682bb4b0ba1894550cec95be571"),
    "zh/atom_enum": ("806ece8b2753779816185a4060e68667053ab46144bb2b294c434bc3d9116f85"),
    "zh/answer/atom_enum": ("57a75036ca6901619d7f6ed37371d82063524e1e02dacc58ba1e68c73e3d0888"),
    "zh/atom_list": ("da4839021796e66eb149917ebfe839dd25589faf2310e5360e8d04d1c102db88"),
    "zh/answer/atom_list": ("586834aabc928c93df20af270656bdf2846ae7761a490daf4fbfd11b51e4f7bf"),
    "zh/atom_number": ("924456f46cada50acd4330c8b7f3790ce12837480991d1a6f3098fd73cb8ebb7"),
    "zh/answer/atom_number": ("093288870e5a7d6243d2e598c5ea2ccaa7a84e95a523af70b17a5b43bef11cd7"),
    "zh/atom_object_deep": ("7d59db54e4d486fb29e985bfccc752afac92fe67a739c0f3ea2303dfd89f87af"),
    "zh/answer/atom_object_deep": (
        "15bd565c36852d3d93e68f4dee5189b6b0a87dfd9947544dda82759d46b67eb9"
    ),
    "zh/atom_object_short": ("1c7107737f539243629cbbf118a83138428c05da5574658caf6c8ff8ed0a252d"),
    "zh/answer/atom_object_short": (
        "e4cd896db9292b7eb350d2551d8ce63a60d537b66dd28b13c64e2118afad3483"
    ),
    "zh/similar_api": ("ecf3324eabfd91a626f97c91a550213601cce84b4eb410e3c12a5e05eff9cb91"),
    "zh/answer/similar_api": ("aa3e5b569c31ac4ca4b728d9fcb105a992566ddea15964e9f55e29aa945ab384"),
    "zh/preference": ("cce33ef074d89bc5a5e87090fc36d22720f83af936501065dcef87723c27e761"),
    "zh/answer/preference": ("6ea2c90fb29a36964e5700f1a81a21b7284f8362d7aa809c30c4ea4d5a0d7aa5"),
    "zh/multi_turn_user_switch": (
        "18f5baf129f7fdfc72c9aaf43b1d9c51e846491f890fa616a66e007cfe676962"
    ),
    "zh/answer/multi_turn_user_switch": (
        "89257a02b15a6d5b52166f51fdd125ec322ba6728e5389f5bda7e8751dbeb8fd"
    ),
    "zh/multi_turn_user_adjust": (
        "15370d45110dbb2fae7b18b1a738b5f08db5f3c5b4faf8fd01ea716335754721"
    ),
    "zh/answer/multi_turn_user_adjust": (
        "15accc1f8dfb0f44aa04cde0a26a552d425ce104dbaa5c6dbc85b7d0115842e5"
    ),
    "en/single_turn_single_function": (
        "8505410b642c2ba70c2085e29e5bb4879b3ccd0c4a96be4a1fd3c806cbb501e7"
    ),
    "en/answer/single_turn_single_function": (
        "e541ad06ecaf49310105209222b9788711cc15d684174276f56224e584b8589d"
    ),
    "en/single_turn_parallel_function": (
        "7b9b9200cf5224e93f20bf14f076bead8e75d451a7dd6956d346fb1200412235"
    ),
    "en/answer/single_turn_parallel_function": (
        "fac555edad6f61927093504f10bdaef3cf54fbd587affcf3ce52b9f4ec0d3aa0"
    ),
    "en/atom_bool": ("59695e59c0d92cd22ec418bfd6f936d0d44a8d6e1fc16e6cb033b12213c57b0b"),
    "en/answer/atom_bool": ("16c5c8d009d37a0dd5e398838c62857ad2ebae1eb0c0ee1a52eed39a654df86e"),
    "en/atom_enum": ("a2e870f8ba23687ba182a2bb0bdba0a7e02c21b67f3ebc5cc07a71fc2007d31b"),
    "en/answer/atom_enum": ("bdfec87c5fd4bc3608cb88c53c1d7eacc4e76eb6f73e738451fbff4252292a92"),
    "en/atom_list": ("dd1388f66a25f6ff04a6c32abaa63a031ffa33a1aa15a55efe95b0d77ec78b52"),
    "en/answer/atom_list": ("d0c47a90f93ad48b505355290750e4a6c307cc59f535ab34d1947a3e60418eb9"),
    "en/atom_number": ("eba9d748fcd08f142abf053fe2eecc573c98232f218ff412eb9ea5350abca422"),
    "en/answer/atom_number": ("a95aca7f2e986280a361f0050d2f8ab02fa24ed5dc1cd2f8ddad5a5279459e8b"),
    "en/atom_object_deep": ("2df8cd21fcf7388ee4fa0d98f0587292ba4c14b7c8bde059b3dca18ad885d1ec"),
    "en/answer/atom_object_deep": (
        "bf681a1cd84fb286562f3ba57ce9d28946a7cdcf8661b2aad125d69d4beecab7"
    ),
    "en/atom_object_short": ("eef597c5400e17e1c23a7548505e48139a3648d6e5bd5feabbc9b12fcf7a1a76"),
    "en/answer/atom_object_short": (
        "27d5cb55dd364c493cc5e2452e208e7a0da8ee55bfbb12133b14250683cdd920"
    ),
    "en/similar_api": ("f3ae38a6b56ab27c47bd929f16468598636ff76ecc095ff60c41c8b5a9ee843f"),
    "en/answer/similar_api": ("0976f8fd3f11b9d5ba3783dc746158aeea3fdb1b34a46b07f3c4c731375a8543"),
    "en/preference": ("61413bbfb5f94b3ad74f348d9f33c8c10b531dfcf6e5429caa3f1a91fa64252d"),
    "en/answer/preference": ("ed9da0b58446812e8be562fb0594989bd759c249c1cdcd722a9dee5e89ee6644"),
    "en/multi_turn_user_switch": (
        "3ed94d09401c53a99c23edc8b60ebfda8d4ae486f9bea19f87b6000a66588cf0"
    ),
    "en/answer/multi_turn_user_switch": (
        "ca0c10778a899fecd3b9767dae7d188d9924a0dbb191e2e6bc0b5808b8baa37e"
    ),
    "en/multi_turn_user_adjust": (
        "b05dd0fe2afb02270ecbdfddfc7a8b1606339c234d5098749742e79bc51ea8cc"
    ),
    "en/answer/multi_turn_user_adjust": (
        "a570117cde521c5d1c16adc2d461b8845c969a3334192bd357dec13cf6657889"
    ),
}
# What each file gives: one-need requests, whole tasks (several tools in one request:
# each distinct tool of the ground truth is a need), or the held-out dialogues.
ONE_NEED = (
    "single_turn_single_function",
    "atom_bool",
    "atom_enum",
    "atom_list",
    "atom_number",
    "atom_object_deep",
    "atom_object_short",
    "similar_api",
    "preference",
)
WHOLE_TASK = ("single_turn_parallel_function",)
HELD_OUT = ("multi_turn_user_switch", "multi_turn_user_adjust")
LANGUAGES = {"zh": "Chinese", "en": "English"}

Read = Callable[[str], bytes]  # a key of ACEBENCH_FILES -> the file's bytes, sha256 checked


def repo_path(key: str) -> str:
    """Where an ``ACEBENCH_FILES`` key lives in the repository."""
    lang, _, rest = key.partition("/")
    answer, _, stem = rest.rpartition("/")
    folder = f"data_all/data_{lang}/" + ("possible_answer/" if answer else "")
    return f"{folder}data_normal_{stem}.json"


def request(question: str, *, last_only: bool) -> str:
    """The user's words of an ACEBench dialogue (``user:`` turns; the system's turns,
    which can name the tool called before, are left out)."""
    turns = [t for t in re.split(r"(?m)^(?=user:|system:)", question) if t.strip()]
    said = [t[len("user:") :].strip() for t in turns if t.startswith("user:")]
    if not said:
        return question.strip()
    return said[-1] if last_only else " ".join(said)


def gold_names(truth: Any, offered: set[str]) -> list[str]:
    """The distinct tools a ground truth calls (``name_1``, ``name_2``: one tool twice)."""
    calls: Iterable[str] = truth if isinstance(truth, dict) else ()
    if isinstance(truth, list):
        calls = [k for t in truth if isinstance(t, dict) for k in t]
    out: list[str] = []
    for call in calls:
        name = call if call in offered else re.sub(r"_\d+$", "", call)
        if name in offered and name not in out:
            out.append(name)
    return out


def load(read: Read) -> tuple[dict[str, dict[str, Any]], list[tuple[str, str, str, list[str]]]]:
    """ACEBench's tools by exposed name (``acebench-<lang>.<name>``, the first
    definition of a name in file order) and its requests as (query, language, kind,
    gold tool names), kind being ``one need``, ``whole task`` or ``held out``."""
    tools: dict[str, dict[str, Any]] = {}
    rows: list[tuple[str, str, str, list[str]]] = []
    for lang in LANGUAGES:
        for kind, stems in (
            ("one need", ONE_NEED),
            ("whole task", WHOLE_TASK),
            ("held out", HELD_OUT),
        ):
            for stem in stems:
                items = _lines(read(f"{lang}/{stem}"))
                answers = {
                    a["id"]: a["ground_truth"] for a in _lines(read(f"{lang}/answer/{stem}"))
                }
                for item in items:
                    offered = {f["name"]: f for f in item["function"]}
                    for name, spec in offered.items():
                        tools.setdefault(f"acebench-{lang}.{name}", spec)
                    names = gold_names(answers.get(item["id"]), set(offered))
                    if not names:
                        continue
                    if kind == "whole task" and len(names) < 2:
                        continue  # one tool called twice: a one-need request
                    query = request(item["question"], last_only=stem == "similar_api")
                    rows.append((query, lang, kind, names))
    return tools, rows


def _lines(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]


def schema(spec: dict[str, Any]) -> dict[str, Any]:
    """An ACEBench tool's arguments as a JSON schema (``parameters`` or ``arguments``;
    ACEBench writes ``"type": "dict"`` for objects)."""
    found = spec.get("parameters") or spec.get("arguments") or {}
    if not isinstance(found, dict):
        return {"type": "object", "properties": {}}
    return {**found, "type": "object"}
