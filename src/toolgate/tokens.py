"""Token counting for budgets and estimates.

``TokenCounter`` is the narrow extension point (one ``count`` method) and counts
``ceil(chars / 4)``; ``TiktokenCounter`` counts real BPE tokens from a vocabulary on disk
(never downloaded); ``best_counter`` picks between them, for every count that is not
given a counter. ``model_form`` is what a model reads of a tool (name, description,
input schema) and ``model_text`` its one serialization, compact JSON with sorted keys:
every count of a tool definition uses them, and ``result_texts`` those of a result that
carries tools. Core: no MCP imports.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import os
import statistics
import tempfile
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolgate.errors import ConfigError, check_kind, described

TOKENIZER_DIR_ENV = "TOOLGATE_TOKENIZER_DIR"
OUTLIER_FACTOR = 3


#: the fields of an MCP tool definition a host hands to a model: Anthropic's tool format
#: carries ``name``, ``description``, ``input_schema``; OpenAI's ``name``, ``description``,
#: ``parameters``. The rest (``icons``, ``_meta``, ``title``, ``annotations``,
#: ``outputSchema``) is for the host's UI and its own checks.
MODEL_FIELDS = ("name", "description", "inputSchema")


def model_form(wire: Mapping[str, Any]) -> dict[str, Any]:
    """What a model reads of a tool: its name, description and input schema.

    A tool without a description is shown by its ``title`` (or its annotations'
    title), as hosts do; otherwise no title is counted.

    >>> model_form({"name": "fork", "description": "Fork.", "icons": [{"src": "data:"}]})
    {'name': 'fork', 'description': 'Fork.', 'inputSchema': {}}
    """
    return {
        "name": wire.get("name", ""),
        "description": shown_description(wire),
        "inputSchema": wire.get("inputSchema") or {},
    }


def shown_description(wire: Mapping[str, Any]) -> str:
    """The text a host shows a model for a tool: its description, else its ``title``,
    else its annotations' title (``""`` when it has none of them). A summary starts
    from the same text (``Tool.summary_text``).

    >>> shown_description({"name": "pdf", "title": "Convert a PDF to text"})
    'Convert a PDF to text'
    """
    description = wire.get("description") or wire.get("title")
    if not description:
        annotations = wire.get("annotations")
        description = annotations.get("title") if isinstance(annotations, Mapping) else None
    return str(description or "")


def wire_text(data: Any) -> str:
    """The one serialization counts use: compact JSON, sorted keys, UTF-8."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def model_text(wire: Mapping[str, Any]) -> str:
    """The exact text a tool definition costs a model: :func:`wire_text` of its
    :func:`model_form`."""
    return wire_text(model_form(wire))


def split_tools(result: Mapping[str, Any]) -> tuple[dict[str, Any], list[Mapping[str, Any]]]:
    """``result`` without the tool definitions in it (``tools``, a ``groups/get``'s
    ``contents.tools``), and those definitions."""
    rest = dict(result)
    tools: list[Mapping[str, Any]] = []
    if isinstance(rest.get("tools"), list):
        tools += rest.pop("tools")
    contents = rest.get("contents")
    if isinstance(contents, Mapping) and isinstance(contents.get("tools"), list):
        tools += contents["tools"]
        rest["contents"] = {k: v for k, v in contents.items() if k != "tools"}
    return rest, tools


def result_texts(
    result: Mapping[str, Any], form: Callable[[Mapping[str, Any]], str] = model_text
) -> list[str]:
    """The texts a result that carries tools costs a model, each counted apart: every
    tool definition in it as a host hands it on (``form``, :func:`model_text`), and the
    rest, if any (a ``groups/get``'s instructions and child groups), as
    :func:`wire_text`. ``tool.selection`` and the benchmarks count a result so.

    >>> result_texts({"instructions": "Ask first.", "contents": {"tools": [], "groups": []}})
    ['{"contents":{"groups":[]},"instructions":"Ask first."}']
    """
    rest, tools = split_tools(result)
    texts = [form(t) for t in tools]
    if any(v not in ({}, [], None) for v in rest.values()):
        texts.append(wire_text(rest))
    return texts


class TokenCounter:
    """Counts tokens in text. Subclasses override :meth:`count` and ``name``."""

    name = "chars/4"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / 4)


def default_counter() -> TokenCounter:
    return TokenCounter()


# -- tiktoken vocabularies -------------------------------------------------------------


@dataclass(frozen=True)
class EncodingSpec:
    """What tiktoken's own constructor says about an encoding, minus the vocabulary."""

    name: str
    url: str  # where tiktoken would download the vocabulary from
    sha256: str  # the hash tiktoken checks the vocabulary against
    constructor_args: Mapping[str, Any]  # pat_str, special_tokens, explicit_n_vocab...

    @property
    def file_name(self) -> str:
        """``o200k_base.tiktoken``: the name of the vocabulary in a tokenizer folder."""
        return self.url.rsplit("/", 1)[-1]

    @property
    def cache_name(self) -> str:
        """The file name in tiktoken's cache: the SHA-1 of the download URL."""
        return hashlib.sha1(self.url.encode()).hexdigest()


@functools.lru_cache(maxsize=16)
def encoding_spec(encoding: str) -> EncodingSpec:
    """Read an encoding's pattern, special tokens and vocabulary URL from tiktoken itself.

    The constructors in ``tiktoken_ext.openai_public`` download their vocabulary as a
    side effect. We run a copy of the constructor whose ``load_tiktoken_bpe`` records
    the URL and hash instead, so nothing is hard-coded here and nothing is fetched.
    """
    try:
        from tiktoken_ext import openai_public
    except ImportError as exc:
        raise ConfigError(
            "Token counting with tiktoken needs the 'tiktoken' package: "
            "pip install 'toolgate[tokens]'"
        ) from exc
    constructors: Mapping[str, Callable[[], dict[str, Any]]] = openai_public.ENCODING_CONSTRUCTORS
    if encoding not in constructors:
        raise ConfigError(
            f"Unknown tiktoken encoding {encoding!r}; known: {', '.join(sorted(constructors))}",
            encoding=encoding,
        )
    seen: list[tuple[str, str]] = []

    def record(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        seen.append((url, expected_hash or ""))
        return {}

    def unsupported(*_args: Any, **_kwargs: Any) -> dict[bytes, int]:
        raise ConfigError(
            f"Encoding {encoding!r} is not stored as a single .tiktoken file; "
            "use o200k_base or cl100k_base",
            encoding=encoding,
        )

    sandbox: dict[str, Any] = dict(vars(openai_public))
    sandbox["load_tiktoken_bpe"] = record
    sandbox["data_gym_to_mergeable_bpe_ranks"] = unsupported
    for name, fn in constructors.items():  # o200k_harmony calls o200k_base by name
        sandbox[name] = types.FunctionType(fn.__code__, sandbox, fn.__name__)
    args = sandbox[encoding]()
    if not seen or not seen[0][1]:
        raise ConfigError(f"tiktoken gives no checked vocabulary for {encoding!r}")
    url, sha256 = seen[0]
    rest = {k: v for k, v in args.items() if k != "mergeable_ranks"}
    return EncodingSpec(name=encoding, url=url, sha256=sha256, constructor_args=rest)


def tiktoken_cache_dir() -> Path | None:
    """tiktoken's cache folder, resolved exactly as tiktoken does (``None``: disabled)."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            value = os.environ[var]
            return Path(value) if value else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def find_vocabulary(encoding: str, vocab_dir: str | Path | None = None) -> Path | None:
    """The vocabulary file for ``encoding``, or ``None`` when none is on disk.

    Looked up in order: ``vocab_dir``, ``$TOOLGATE_TOKENIZER_DIR`` (both holding
    ``<encoding>.tiktoken``), then tiktoken's cache (``<sha1 of the URL>``).
    """
    spec = encoding_spec(encoding)
    folders = [vocab_dir, os.environ.get(TOKENIZER_DIR_ENV) or None]
    for folder in folders:
        if folder is not None and (Path(folder) / spec.file_name).is_file():
            return Path(folder) / spec.file_name
    cache = tiktoken_cache_dir()
    if cache is not None and (cache / spec.cache_name).is_file():
        return cache / spec.cache_name
    return None


@functools.lru_cache(maxsize=4)
def _load_encoding(encoding: str, path: str, size: int, mtime_ns: int) -> Any:
    """Parse a vocabulary into a ``tiktoken.Encoding``; cached per file version (~0.5 s)."""
    import tiktoken

    spec = encoding_spec(encoding)
    data = Path(path).read_bytes()
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        raise ConfigError(
            f"Tokenizer vocabulary {path} is corrupt or not {encoding}: its SHA-256 is not "
            f"{spec.sha256}. Replace it with the file tiktoken downloads from {spec.url}.",
            path=path,
            encoding=encoding,
        )
    # Same format and parse as tiktoken.load.load_tiktoken_bpe, which we don't call: on a
    # local path it would copy the file into tiktoken's cache folder as a side effect.
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(mergeable_ranks=ranks, **spec.constructor_args)


class TiktokenCounter(TokenCounter):
    """Counts BPE tokens with tiktoken from a vocabulary on disk; never downloads.

    ``TiktokenCounter()`` finds ``o200k_base`` (see :func:`find_vocabulary`) and raises
    :class:`ConfigError` when it is missing or corrupt. Counts are cached (an LRU keyed
    by a hash of the text), so estimating the same catalog again is cheap.
    """

    def __init__(
        self,
        encoding: str = "o200k_base",
        vocab_dir: str | Path | None = None,
        *,
        cache_size: int = 4096,
    ) -> None:
        try:
            import tiktoken  # noqa: F401
        except ImportError as exc:
            raise ConfigError(
                "TiktokenCounter needs the 'tiktoken' package: pip install 'toolgate[tokens]'"
            ) from exc
        path = find_vocabulary(encoding, vocab_dir)
        if path is None:
            spec = encoding_spec(encoding)
            raise ConfigError(
                f"No {encoding} vocabulary found: put {spec.file_name} in vocab_dir or "
                f"${TOKENIZER_DIR_ENV}, or {spec.cache_name} in tiktoken's cache "
                f"({tiktoken_cache_dir()})",
                encoding=encoding,
            )
        stat = path.stat()
        self._encoding = _load_encoding(encoding, str(path), stat.st_size, stat.st_mtime_ns)
        self.name = f"tiktoken:{encoding}"
        self.path = path
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        # Special-token text in a description is just text here, never a control token.
        n = len(self._encoding.encode(text, disallowed_special=()))
        with self._lock:
            self._cache[key] = n
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return n

    @property
    def cache_info(self) -> tuple[int, int]:
        """(entries cached, maximum entries)."""
        return len(self._cache), self._cache_size


def best_counter(encoding: str = "o200k_base", vocab_dir: str | Path | None = None) -> TokenCounter:
    """The tiktoken counter when its vocabulary is on disk, else ``ceil(chars / 4)``.

    The one function that picks the tokenizer: a ``ToolSet`` without a
    ``token_counter`` (so the gateway, its budgets, dashboard and events),
    ``toolgate inspect`` and :func:`estimate_tokens` all count with what it returns.

    A missing vocabulary (or a missing ``tiktoken``) is not an error; a corrupt one is
    a :class:`ConfigError`, as is an unknown encoding.
    """
    try:
        import tiktoken  # noqa: F401
    except ImportError:
        return default_counter()
    if find_vocabulary(encoding, vocab_dir) is None:
        return default_counter()
    return TiktokenCounter(encoding, vocab_dir)


# -- estimates -------------------------------------------------------------------------


def estimate_tokens(
    wires: Iterable[Mapping[str, Any]],
    counter: TokenCounter | None = None,
    *,
    groups_of: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """What a list of tool definitions costs a model, per tool and per group.

    ``wires`` are MCP wire dicts (``tool.wire()``), each counted as :func:`model_text`
    (name, description, input schema; never icons, ``_meta`` or annotations).
    ``counter`` defaults to :func:`best_counter`. ``groups_of`` maps a tool name to the
    groups it is counted in (a tool in two groups counts in both; pass
    ``tool.scope_groups`` to count root tools as ``"default"``). ``outliers`` names the
    tools costing more than 3x the median.

    >>> estimate_tokens([{"name": "a", "description": "", "inputSchema": {}}],
    ...                 TokenCounter())["total"]
    12
    """
    check_kind(wires, Iterable, "estimate_tokens' tools", "a list of tool definitions")
    if isinstance(wires, str | bytes | Mapping):
        raise ConfigError(
            f"estimate_tokens' tools must be a list of tool definitions, got {described(wires)}"
        )
    counter = counter if counter is not None else best_counter()
    rows: list[tuple[str, int, int]] = []  # (name, characters, tokens)
    for i, wire in enumerate(wires):
        check_kind(wire, Mapping, f"estimate_tokens' tools[{i}]", "a tool definition (a dict)")
        if not isinstance(wire.get("name"), str) or not wire["name"]:
            raise ConfigError(
                f"estimate_tokens' tools[{i}] has no name: a tool definition needs a "
                f"non-empty string 'name', got {described(wire.get('name'))}"
            )
        text = model_text(wire)
        rows.append((str(wire["name"]), len(text), counter.count(text)))
    rows.sort()
    per_group: dict[str, dict[str, int]] = {}
    for name, _, tokens in rows:
        for group in (groups_of or {}).get(name, ()):
            entry = per_group.setdefault(group, {"tools": 0, "tokens": 0})
            entry["tools"] += 1
            entry["tokens"] += tokens
    median = statistics.median(tokens for _, _, tokens in rows) if rows else 0
    return {
        "total": sum(tokens for _, _, tokens in rows),
        "tokenizer": counter.name,
        "per_tool": [{"name": n, "characters": c, "tokens": t} for n, c, t in rows],
        "per_group": dict(sorted(per_group.items())),
        "outliers": [name for name, _, tokens in rows if tokens > OUTLIER_FACTOR * median],
    }
