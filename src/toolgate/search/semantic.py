"""The semantic side of hybrid search: the texts a tool's vector is made of, each slot's
vector (from a ``toolgate.embedding`` embedder and its cache) and what a query's
embedding reads. Imports ``analysis`` of ``toolgate.search``, never ``lexical``,
``regex`` or ``index``. numpy, of the ``search`` extra, is imported where it runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolgate.catalog import Tool
from toolgate.embedding import Embedder, VectorCache
from toolgate.errors import ConfigError
from toolgate.search.analysis import (
    argument_values,
    name_parts,
    script_share,
    tool_fields,
    words,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# What each part of a tool's text weighs in its vector (hybrid mode): the parts are
# embedded apart and their unit vectors summed with these weights, so a long
# description does not drown the name, and a server's name, shared by all its tools,
# does not make them all alike. Compared on the development halves of the evaluation
# sets by hand (one text against parts, a few weightings); --tune does not sweep them.
EMBEDDING_PARTS: Mapping[str, float] = {
    "name": 1.0,
    "description": 2.0,
    "server": 0.5,
    "arguments": 0.5,
}
# The ``tool_fields`` each embedded part is made of (group text is not embedded: it is
# shared by every member, like the server, and says what the group is, not the tool).
_PART_FIELDS: Mapping[str, tuple[str, ...]] = {
    "name": ("name", "title"),
    "description": ("description",),
    "server": ("server",),
    "arguments": ("arguments",),
}


def embedding_texts(tool: Tool, server_title: str = "", max_chars: int = 2000) -> dict[str, str]:
    """The texts a tool's vector is made of, by part (``EMBEDDING_PARTS``), from the
    same ``tool_fields`` lexical search indexes: identifiers as words, empty parts
    left out.

    >>> embedding_texts(Tool("send_email", "Send an email."))
    {'name': 'send email', 'description': 'Send an email.'}
    """
    fields = tool_fields(tool, (), server_title)
    out = {}
    for part, names in _PART_FIELDS.items():
        pieces = [
            " ".join(name_parts(text)) if is_name else text.strip()
            for field_name in names
            for text, is_name in fields[field_name]
        ]
        text = " ".join(p for p in pieces if p)[:max_chars]
        if text:
            out[part] = text
    return out


def trust(told: str, embedder: Embedder) -> float:
    """How far hybrid search takes the embedder's word on a query: the share of what it
    is given to read of it (``told``, the query's ``meaning``: less its argument values)
    written in the scripts it reads (``Embedder.scripts``). A Chinese request naming a
    file ``notes.txt`` gives it Chinese words only: it is trusted with none of them."""
    return script_share(told, embedder.scripts)


def meaning(query: str, argument_weight: float) -> str:
    """What the query embedding reads: the query less its argument values (all of it
    when that leaves no words, or when ``argument_weight`` is 1: values are words)."""
    if argument_weight == 1.0:
        return query
    rest, values = argument_values(query)
    return rest if values and words(rest) else query


def closest(similarities: NDArray[np.float32]) -> tuple[NDArray[np.float32], NDArray[Any]]:
    """Each tool's similarity to a request read several ways: ``similarities`` holds a
    row per tool and a column per reading (``latest.readings``, the whole request first).
    Returns each tool's cosine to the reading it matches best and the score it is ranked
    by: with one reading, the cosine; with several, each reading's cosines as z-scores
    over the tools (a short tail's cosines spread wider than the whole request's), the
    best of them per tool."""
    import numpy as np

    if similarities.shape[1] == 1:
        cosine = similarities[:, 0]
        return cosine, cosine
    mean = similarities.mean(axis=0)
    spread = similarities.std(axis=0)
    z = (similarities - mean) / np.where(spread > 0, spread, 1.0)
    best = z.argmax(axis=1)
    rows = np.arange(similarities.shape[0])
    return similarities[rows, best], z[rows, best]


class Vectors:
    """Each slot's unit vector: the sum of its parts' unit vectors, each at its weight
    (``EMBEDDING_PARTS``) times the share of it in scripts the embedder reads, a part's
    vector from the cache, else from the embedder; and how much of the tool's text is
    in those scripts (``known``)."""

    def __init__(self, embedder: Embedder, cache: VectorCache | None = None) -> None:
        self.embedder = embedder
        self._cache = cache
        self.matrix: NDArray[np.float32] | None = None  # slot -> unit vector
        # slot -> the parts' script_share, weighted like the parts (1: all of it)
        self.known: NDArray[np.float64] | None = None

    def update(
        self, changed: Sequence[tuple[int, Tool]], servers: Mapping[str, str], capacity: int
    ) -> int:
        """Vectors for the changed tools' slots, the matrix grown to ``capacity`` slots;
        returns how many texts the embedder ran on (cache misses). Call with the
        index's lock held."""
        import numpy as np

        model = self.embedder.model_id
        parts = {slot: embedding_texts(t, servers.get(t.source or "", "")) for slot, t in changed}
        texts = list(dict.fromkeys(text for p in parts.values() for text in p.values()))
        keys = {text: VectorCache.key(model, text) for text in texts}
        cached = self._cache.get(list(keys.values())) if self._cache else {}
        found: dict[str, NDArray[np.float32]] = {
            t: np.frombuffer(cached[k], dtype=np.float32) for t, k in keys.items() if k in cached
        }
        missing = [t for t in texts if t not in found]
        if missing:
            rows = unit(np.asarray(self.embedder.embed(missing), dtype=np.float32))
            if rows.shape[0] != len(missing):
                raise ConfigError(
                    f"embedder {model!r} returned {rows.shape[0]} vectors for {len(missing)} texts"
                )
            fresh = dict(zip(missing, rows, strict=True))
            if self._cache is not None:
                self._cache.put([(keys[t], v.tobytes()) for t, v in fresh.items()])
            found.update(fresh)
        vectors: dict[int, NDArray[np.float32] | None] = {}
        scripts = self.embedder.scripts
        known = self.known if self.known is not None else np.ones(0)
        if len(known) < capacity:
            known = np.concatenate([known, np.ones(capacity - len(known))])
        for slot, by_part in parts.items():
            weights = {p: EMBEDDING_PARTS.get(p, 1.0) for p in by_part}
            read = {p: script_share(text, scripts) for p, text in by_part.items()}
            known[slot] = (
                sum(w * read[p] for p, w in weights.items()) / sum(weights.values())
                if by_part
                else 1.0
            )
            if not by_part:  # a tool with no text at all: the zero vector matches nothing
                vectors[slot] = None
                continue
            # a part counts by the share of it the embedder reads: a Chinese description
            # is noise to an English model, the tool's English name is not
            if not any(read.values()):
                read = dict.fromkeys(read, 1.0)  # none of it read: ``known`` 0 drops it
            total = sum(weights[part] * read[part] * found[text] for part, text in by_part.items())
            vectors[slot] = unit(np.asarray([total], dtype=np.float32))[0]
        matrix = self.matrix
        dims = [v.shape[0] for v in vectors.values() if v is not None]
        if dims and (matrix is None or matrix.shape[1] != dims[0]):
            matrix = np.zeros((capacity, dims[0]), dtype=np.float32)
        if matrix is not None and matrix.shape[0] < capacity:
            grown = np.zeros((capacity, matrix.shape[1]), dtype=np.float32)
            grown[: matrix.shape[0]] = matrix
            matrix = grown
        if matrix is not None:
            for slot, vector in vectors.items():
                matrix[slot] = 0.0 if vector is None else vector
        self.matrix, self.known = matrix, known
        return len(missing)


def unit(rows: NDArray[np.float32]) -> NDArray[np.float32]:
    """Rows scaled to unit length (zero rows stay zero)."""
    import numpy as np

    if rows.ndim != 2:
        raise ConfigError(f"an embedder must return a 2-D array, got shape {rows.shape}")
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    divisor: NDArray[np.float32] = np.where(norms > 0, norms, 1.0)  # rows' dtype (NEP 50)
    return rows / divisor


def standard(x: NDArray[np.floating[Any]], live: NDArray[np.bool_]) -> NDArray[np.floating[Any]]:
    """``x`` as z-scores over the live slots (all zero when ``x`` is constant there).
    Summed over the live slots alone: a sum that ran over the others too, as zeros,
    rounded differently with where they lay, so the tools a caller may not see moved
    the last digit of the scores it sees."""
    import numpy as np

    shown = x[live[: len(x)]]
    n = len(shown)
    mean = float(shown.sum()) / n
    std = float(np.sqrt(((shown - mean) ** 2).sum() / n))
    return (x - mean) / std if std > 0 else np.zeros(len(x))
