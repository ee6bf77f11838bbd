"""Hybrid tool search with the real WordLlama embedder: meaning beyond shared words,
access filtering, vectors cached on disk by text, incremental re-embedding, config."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from toolgate.catalog import Catalog, Tool
from toolgate.embedding import Embedder, VectorCache, WordLlamaEmbedder, load_embedder
from toolgate.errors import ConfigError
from toolgate.search import SearchIndex, SearchSettings, embedding_texts
from toolgate.toolset import ToolSet

TOOLS = [
    Tool("get_weather", "Current weather and the forecast for a city."),
    Tool("send_email", "Send an email message to a recipient."),
    Tool("create_invoice", "Create an invoice for a customer."),
    Tool("list_files", "List the files in a folder."),
]


class Counting(Embedder):
    """The real WordLlama model, counting the texts it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts += list(texts)
        return self.inner.embed(texts)


@pytest.fixture(scope="module")
def wordllama() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


def catalog() -> Catalog:
    c = Catalog()
    c.add_tools(TOOLS)
    return c


def hybrid(c: Catalog, embedder: Embedder, cache: Path | None = None) -> SearchIndex:
    return SearchIndex(c, SearchSettings("hybrid", embedder=embedder, cache=cache))


def test_the_shipped_model_embeds_texts_as_unit_vectors(wordllama: WordLlamaEmbedder) -> None:
    vectors = wordllama.embed(["open a pull request", "天气预报"])
    assert vectors.shape == (2, 256)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0], abs=1e-4)
    assert wordllama.model_id == "wordllama:l2_supercat:256"


def test_hybrid_finds_a_tool_that_shares_no_word_with_the_query(
    wordllama: WordLlamaEmbedder,
) -> None:
    c = catalog()
    lexical = SearchIndex(c)
    assert lexical.search("is it going to rain tomorrow") == []
    found = hybrid(c, wordllama).search("is it going to rain tomorrow", limit=2)
    assert found[0].name == "get_weather"


def test_hybrid_keeps_lexical_matches_on_top(wordllama: WordLlamaEmbedder) -> None:
    found = hybrid(catalog(), wordllama).search("create invoice", limit=4)
    assert found[0].name == "create_invoice"
    assert [h.score for h in found] == sorted((h.score for h in found), reverse=True)


def test_hybrid_never_returns_what_the_caller_may_not_access(
    wordllama: WordLlamaEmbedder,
) -> None:
    index = hybrid(catalog(), wordllama)
    found = index.search("weather forecast", limit=4, allowed=lambda n: n != "get_weather")
    assert found and "get_weather" not in [h.name for h in found]
    assert index.search("weather", limit=4, allowed=lambda n: False) == []
    assert index.explain("weather", limit=4, allowed=lambda n: False) == []


def test_explain_gives_each_signal(wordllama: WordLlamaEmbedder) -> None:
    [first, *_] = hybrid(catalog(), wordllama).explain("send an email", limit=3)
    assert first.name == "send_email"
    assert first.semantic is not None and 0 < first.semantic <= 1
    assert first.bm25 > 0 and sum(first.fields.values()) == pytest.approx(first.bm25, rel=1e-4)
    assert first.coverage == pytest.approx(1.0)  # its words reach both "send" and "email"
    [lexical, *_] = SearchIndex(catalog()).explain("send an email", limit=3)
    assert lexical.coverage is None


class Flat(Embedder):
    """One vector for every text: the cosine says nothing, so the lexical signal ranks."""

    model_id = "test:flat"

    def embed(self, texts: Sequence[str]) -> Any:
        return np.full((len(texts), 4), 0.5, dtype=np.float32)


COVERING = [
    Tool("zip_zip", "Zip."),
    Tool(
        "digest",
        "Every Monday morning this collects what happened across the company, the numbers "
        "that moved, the people who joined, and sends a short newsletter to everyone.",
    ),
    Tool("get_weather", "Current weather for a city."),
    Tool("list_files", "List the files in a folder."),
]
COVERING_QUERY = "zip the newsletter for the company"


def test_hybrid_favours_the_tool_that_covers_more_of_the_request() -> None:
    """BM25 alone puts first the tool that repeats one of the query's words (``zip``);
    weighed by the share of the query's idf a tool's words reach, the tool that holds
    two of its three words comes first. Lexical mode ranks by BM25 alone (feedback
    off: it has its own test). Hybrid mode takes no feedback."""
    c = Catalog()
    c.add_tools(COVERING)
    settings = SearchSettings("hybrid", embedder=Flat())
    covered = SearchIndex(c, settings).explain(COVERING_QUERY, limit=2)
    assert [e.name for e in covered] == ["digest", "zip_zip"]
    assert [e.coverage for e in covered] == pytest.approx([2 / 3, 1 / 3])
    assert covered[0].bm25 < covered[1].bm25
    assert all(e.feedback == () for e in covered)
    plain = SearchIndex(c, settings, coverage_power=0.0).search(COVERING_QUERY, limit=2)
    assert [h.name for h in plain] == ["zip_zip", "digest"]
    lexical = SearchIndex(c, feedback_weight=0.0).search(COVERING_QUERY, limit=2)
    assert [h.name for h in lexical] == [
        "zip_zip",
        "digest",
    ]


def test_coverage_counts_only_the_tools_the_caller_may_see() -> None:
    """A tool the caller may not see holds a query word: the word's idf, and so every
    visible tool's coverage and score, are what they are without that tool."""
    hidden = Tool("newsletter_newsletter", "Newsletter newsletter.")
    with_hidden, without = Catalog(), Catalog()
    with_hidden.add_tools([*COVERING, hidden])
    without.add_tools(COVERING)
    settings = SearchSettings("hybrid", embedder=Flat())
    seen = SearchIndex(with_hidden, settings).explain(
        COVERING_QUERY, limit=4, allowed=lambda name: name != hidden.name
    )
    alone = SearchIndex(without, settings).explain(COVERING_QUERY, limit=4)
    assert [(e.name, e.coverage, e.score) for e in seen] == [
        (e.name, e.coverage, e.score) for e in alone
    ]


def test_the_query_embedding_leaves_out_argument_values(wordllama: WordLlamaEmbedder) -> None:
    """Quoted text, paths and URLs are what a tool is called with: the query's vector is
    made of the rest (and of the whole query when nothing else is left)."""
    counting = Counting(wordllama)
    index = hybrid(catalog(), counting)
    index.refresh()
    counting.texts.clear()
    index.search("send 'quarterly invoice.pdf' to https://example.com/inbox", limit=2)
    index.search("'invoice'", limit=2)
    index.search("send an email", limit=2)
    assert counting.texts == ["send   to  ", "'invoice'", "send an email"]
    off = SearchIndex(catalog(), SearchSettings("hybrid", embedder=counting), argument_weight=1.0)
    off.refresh()
    counting.texts.clear()
    off.search("send 'quarterly invoice.pdf'", limit=2)
    assert counting.texts == ["send 'quarterly invoice.pdf'"]


def test_the_index_reembeds_only_tools_that_changed(wordllama: WordLlamaEmbedder) -> None:
    c = catalog()
    counting = Counting(wordllama)
    index = hybrid(c, counting)
    index.refresh()
    assert len(counting.texts) == 8  # each tool's name and description
    c.add_tool(Tool("delete_file", "Delete a file for good."))
    c.remove_tool("send_email")
    assert index.search("remove a document", limit=1)[0].name == "delete_file"
    assert index.embedded == 2
    assert counting.texts[8:10] == ["delete file", "Delete a file for good."]
    assert "send_email" not in [h.name for h in index.search("email message", limit=4)]


def test_vectors_cached_on_disk_survive_a_restart(
    wordllama: WordLlamaEmbedder, tmp_path: Path
) -> None:
    path = tmp_path / "vectors.sqlite"
    first = Counting(wordllama)
    hybrid(catalog(), first, path).refresh()
    assert len(first.texts) == 8 and len(VectorCache(path)) == 8
    again = Counting(wordllama)
    c = catalog()
    c.add_tool(Tool("rename_file", "Rename a file."))
    index = hybrid(c, again, path)
    before = index.search("weather forecast", limit=1)
    assert before[0].name == "get_weather"
    assert again.texts == ["rename file", "Rename a file.", "weather forecast"]  # + the query
    assert index.embedded == 2


def test_a_tool_is_embedded_by_parts_and_a_part_tools_share_is_embedded_once(
    wordllama: WordLlamaEmbedder,
) -> None:
    c = Catalog()
    schema = {"type": "object", "properties": {"city": {"description": "A city name."}}}
    c.add_tools(
        [
            Tool("forecast", "Weather for the week.", input_schema=schema, source="weather"),
            Tool("now", "Weather right now.", input_schema=schema, source="weather"),
        ]
    )
    counting = Counting(wordllama)
    index = SearchIndex(
        c,
        SearchSettings("hybrid", embedder=counting, servers={"weather": "Met Office"}),
    )
    index.refresh()
    # name, description, server and arguments of each tool; the server's and the
    # arguments' texts are the same for both tools, so they are embedded once
    assert sorted(counting.texts) == sorted(
        [
            "forecast",
            "Weather for the week.",
            "now",
            "Weather right now.",
            "weather Met Office",
            "city A city name.",
        ]
    )
    assert index.embedded == 6
    assert embedding_texts(c.tools["forecast"], "Met Office") == {
        "name": "forecast",
        "description": "Weather for the week.",
        "server": "weather Met Office",
        "arguments": "city A city name.",
    }


def test_cached_vectors_are_keyed_by_model(wordllama: WordLlamaEmbedder, tmp_path: Path) -> None:
    path = tmp_path / "vectors.sqlite"
    hybrid(catalog(), wordllama, path).refresh()
    other = Counting(wordllama)
    other.model_id = "another-model"
    hybrid(catalog(), other, path).refresh()
    assert len(other.texts) == 8


def test_toolset_search_settings_make_the_index_hybrid(wordllama: WordLlamaEmbedder) -> None:
    ts = ToolSet(search=SearchSettings("hybrid", embedder=wordllama))
    ts.add_tools(TOOLS)
    assert ts.search_index.mode == "hybrid"
    assert ts.search_index.search("rain tomorrow", limit=1)[0].name == "get_weather"


def test_embedder_specs(wordllama: WordLlamaEmbedder) -> None:
    assert load_embedder(wordllama) is wordllama
    assert load_embedder("wordllama").model_id == "wordllama:l2_supercat:256"
    for bad, problem in (
        ("sentencepiece", "unknown embedder"),
        ("wordllama:big", "not a number"),
        ("no_such_module.sub:make", "cannot import"),
        ("toolgate.search:SearchSettings", "not an Embedder"),
    ):
        with pytest.raises(ConfigError, match=problem):
            load_embedder(bad)


def test_an_embedder_returning_the_wrong_count_is_an_error() -> None:
    class Broken(Embedder):
        model_id = "broken"

        def embed(self, texts: Sequence[str]) -> Any:
            return np.ones((1, 8), dtype=np.float32)

    with pytest.raises(ConfigError, match="returned 1 vectors for 8 texts"):
        hybrid(catalog(), Broken()).refresh()


def test_a_cache_that_cannot_be_opened_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="vector cache"):
        VectorCache(tmp_path / "file" / "vectors.sqlite")
