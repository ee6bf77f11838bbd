"""Tool search over a catalog: BM25F, optionally fused with embeddings, and RE2 regex.

``analysis`` turns text into terms; ``lexical`` keeps the BM25F index, ``semantic`` the
tool vectors, ``regex`` the RE2 matcher, ``settings`` what an index is configured with,
``cover`` re-ranks whole tasks and ``latest`` reads long requests by their tails;
``index`` (``SearchIndex``) follows the catalog and ranks with them; ``allowed(name)``
filters every result. Core: no MCP imports.
"""

from toolgate.search.analysis import (
    STOP_WORDS,
    argument_values,
    char_ngrams,
    name_parts,
    schema_text,
    words,
)
from toolgate.search.index import MAX_LIMIT, Explanation, SearchHit, SearchIndex
from toolgate.search.semantic import embedding_texts
from toolgate.search.settings import HYBRID_WEIGHT, SearchMode, SearchSettings

__all__ = [
    "HYBRID_WEIGHT",
    "MAX_LIMIT",
    "STOP_WORDS",
    "Explanation",
    "SearchHit",
    "SearchIndex",
    "SearchMode",
    "SearchSettings",
    "argument_values",
    "char_ngrams",
    "embedding_texts",
    "name_parts",
    "schema_text",
    "words",
]
