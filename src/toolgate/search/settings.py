"""What a ``SearchIndex`` is configured with: lexical or hybrid ranking, the embedder and
its vector cache, the fusion weight. Imports ``toolgate.errors`` and
``toolgate.embedding``'s ``Embedder`` type only; no MCP imports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from toolgate.embedding import Embedder
from toolgate.errors import ConfigError

SearchMode = Literal["lexical", "hybrid"]

# Hybrid score = q * (HYBRID_WEIGHT * L + (1 - HYBRID_WEIGHT) * (t * z(S) + (1 - t) * F))
# + (1 - q) * F, L = z(BM25 * coverage ** COVERAGE_POWER) (a long request's L is z(that
# z-score + the z-score of the tail its BM25 stands best in), ``latest.fuse``), F =
# z(lexical search's score, feedback included), S the cosine to the request (to the
# reading of a long one a tool matches best, ``semantic.closest``), q the share of what
# the embedder is given of the query (the query less its argument values,
# ``semantic.trust``) and t the share of the tool written in scripts the embedder reads
# (``Embedder.scripts``): what it cannot read, lexical search ranks. Where it cannot read
# a tool's text, lexical search's score stands in for the similarity (noise there), and
# the query's unread share ranks as lexical search does (a Chinese request with a Latin
# word moves by its share). Coverage is the share of the query's idf a tool's words
# reach (``Holders.coverage``), so the lexical signal favours the tools that cover the
# request over one that shares a single rare word with it. Both chosen on the
# development halves of the evaluation sets (benchmarks/search_eval.py --tune), among the
# settings that beat lexical search and the setting before on every set
# (docs/decisions.md, "Coverage in hybrid search").
HYBRID_WEIGHT = 0.2
COVERAGE_POWER = 2.0


@dataclass(frozen=True)
class SearchSettings:
    """How ``search_tools`` ranks: ``lexical`` (BM25) or ``hybrid`` (BM25 + embeddings).

    ``embedder`` is an ``Embedder`` or a spec for ``load_embedder`` (default: the
    WordLlama model the ``semantic`` extra ships); ``cache`` a file for tool vectors
    (none: vectors live in memory only); ``servers`` maps a backend's key to its title.

    >>> ToolSet(search=SearchSettings("hybrid", cache="~/.cache/toolgate/vectors.sqlite"))
    """

    mode: SearchMode = "lexical"
    embedder: Embedder | str | None = None
    cache: str | Path | None = None
    weight: float = HYBRID_WEIGHT
    servers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mode not in ("lexical", "hybrid"):
            raise ConfigError(
                f"search mode must be 'lexical' or 'hybrid', got {self.mode!r}", key="search.mode"
            )
        if isinstance(self.weight, bool) or not isinstance(self.weight, int | float):
            raise ConfigError(f"search weight must be a number, got {self.weight!r}")
        if not 0.0 <= self.weight <= 1.0:
            raise ConfigError(f"search weight must be from 0 to 1, got {self.weight!r}")
