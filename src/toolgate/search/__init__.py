"""Tool search over a catalog: BM25F, optionally fused with embeddings, and RE2 regex.

``analysis`` turns text into terms; ``lexical`` keeps the BM25F index, ``semantic`` the
tool vectors, ``regex`` the RE2 matcher; ``index`` (``SearchIndex``) follows the catalog
and ranks with them; ``allowed(name)`` filters every result. Core: no MCP imports.
"""

from toolgate.search.analysis import (
    STOP_WORDS,
    argument_values,
    char_ngrams,
    name_parts,
    schema_text,
    words,
)
from toolgate.search.index import (
    HYBRID_WEIGHT,
    MAX_LIMIT,
    Explanation,
    SearchHit,
    SearchIndex,
    SearchMode,
    SearchSettings,
)
from toolgate.search.semantic import embedding_texts

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
