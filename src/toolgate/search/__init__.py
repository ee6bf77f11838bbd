"""Tool search over a catalog: BM25F, optionally fused with embeddings, and RE2 regex.

The package's public names; the code is in its modules. Core: no MCP imports.
"""

from toolgate.search.lexical import (
    HYBRID_WEIGHT,
    MAX_LIMIT,
    STOP_WORDS,
    Explanation,
    SearchHit,
    SearchIndex,
    SearchMode,
    SearchSettings,
    argument_values,
    char_ngrams,
    embedding_texts,
    name_parts,
    schema_text,
    words,
)

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
