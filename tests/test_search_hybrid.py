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
from toolgate.search.latest import MAX_READINGS, readings, tail_scores
from toolgate.search.semantic import closest
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


def test_hybrid_search_over_no_tools_finds_nothing(wordllama: WordLlamaEmbedder) -> None:
    # an empty catalog, and one whose only tool was removed: no tool, read or unread
    c = Catalog()
    index = hybrid(c, wordllama)
    assert index.search("send an email") == [] and index.explain("send an email") == []
    c.add_tool(Tool("weather_cn", "查询指定城市的天气预报。"))
    assert [h.name for h in index.search("天气预报 for Beijing")] == ["weather_cn"]
    c.remove_tool("weather_cn")
    assert index.search("天气预报 for Beijing") == []


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


CONVERSATION_TOOLS = [
    Tool("list_files", "List the files and folders in the current directory."),
    Tool("move_file", "Move a file or folder to another directory."),
    Tool("copy_file", "Copy a file to another directory."),
    Tool("make_directory", "Create a new directory."),
    Tool("remove_file", "Delete a file."),
    Tool("read_file", "Show the contents of a file."),
    Tool("grep", "Find the lines of a file that match a pattern."),
    Tool("sort_lines", "Sort the lines of a file."),
    Tool("diff", "Compare two files line by line."),
    Tool("post_tweet", "Publish a short public message to your followers on the social network."),
    Tool("follow_user", "Follow another user on the social network."),
    Tool("add", "Add two numbers."),
    Tool("get_stock_price", "The current price of a stock."),
    Tool("book_flight", "Book a flight between two airports."),
]
# a conversation so far: five sentences about files, then what is needed now
CONVERSATION = (
    "Move the quarterly report from my documents directory into the archive directory, "
    "and create the archive directory first if it does not exist yet. "
    "Then look through the report for every line that mentions the budget and sort those "
    "lines. After that compare the report with last year's report and show me what "
    "changed between the two files. Copy the older report into the archive directory as "
    "well so both files sit together. Finally announce to my followers that the reports "
    "are archived."
)


# the same conversation, its last need told in words its tool's description shares
TOLD = CONVERSATION.replace(
    "Finally announce to my followers that the reports are archived.",
    "Now tell my followers in a short message that the reports are archived.",
)


def test_a_long_request_is_read_by_its_latest_part_too(wordllama: WordLlamaEmbedder) -> None:
    c = Catalog()
    c.add_tools(CONVERSATION_TOOLS)
    shipped = SearchIndex(c, SearchSettings("hybrid", embedder=wordllama))
    found = [h.name for h in shipped.search(CONVERSATION, limit=3)]
    assert "post_tweet" in found
    # read as one mean vector (and by lexical search) the last sentence's need is lost
    whole = SearchIndex(c, SearchSettings("hybrid", embedder=wordllama), long_request=0)
    assert "post_tweet" not in [h.name for h in whole.search(CONVERSATION, limit=6)]
    assert "post_tweet" not in [h.name for h in SearchIndex(c).search(CONVERSATION, limit=6)]
    # explain gives the cosine to the reading the tool matched best (its tail), which
    # is closer than the cosine to the whole request
    best = next(e for e in shipped.explain(CONVERSATION, limit=14) if e.name == "post_tweet")
    first = next(e for e in whole.explain(CONVERSATION, limit=14) if e.name == "post_tweet")
    assert best.semantic is not None and first.semantic is not None
    assert best.semantic > first.semantic + 0.1


def test_only_a_long_request_is_read_more_than_once(wordllama: WordLlamaEmbedder) -> None:
    counting = Counting(wordllama)
    c = Catalog()
    c.add_tools(CONVERSATION_TOOLS)
    index = SearchIndex(c, SearchSettings("hybrid", embedder=counting))
    index.refresh()
    counting.texts.clear()
    index.search("Move the report. Then sort it. Then tell my followers.", limit=3)
    assert counting.texts == ["Move the report. Then sort it. Then tell my followers."]
    counting.texts.clear()
    index.search(CONVERSATION, limit=3)
    assert counting.texts[0] == CONVERSATION
    assert counting.texts[-1] == ("Finally announce to my followers that the reports are archived.")
    assert len(counting.texts) == 5  # the whole, then its tail from each later sentence


class Indifferent(Embedder):
    """An embedder that finds every text alike: hybrid search is left its lexical part."""

    model_id = "indifferent"

    def embed(self, texts: Sequence[str]) -> Any:
        return np.ones((len(texts), 8), dtype=np.float32)


def test_hybrid_searchs_lexical_part_reads_a_long_request_by_its_tails_too() -> None:
    """Besides the embedder, the BM25 hybrid search fuses reads a long request's tails
    (``latest.fuse``): with no help from the embedder the tool of the last sentence
    comes first, and not with the rule off."""
    c = Catalog()
    c.add_tools(CONVERSATION_TOOLS)
    settings = SearchSettings("hybrid", embedder=Indifferent())
    found = [h.name for h in SearchIndex(c, settings).search(TOLD, limit=3)]
    assert found[0] == "post_tweet"
    off = [h.name for h in SearchIndex(c, settings, long_request=0).search(TOLD, limit=3)]
    assert off[0] == "move_file"  # the first sentence's need, by the whole request's words


def test_a_long_requests_tails_rank_within_the_callers_view() -> None:
    """The tails' standing is taken over the tools the caller may see: a hidden tool
    moves no visible tool's rank or score."""
    hidden = {"follow_user", "sort_lines", "grep"}
    settings = SearchSettings("hybrid", embedder=Indifferent())
    c, alone = Catalog(), Catalog()
    c.add_tools(CONVERSATION_TOOLS)
    alone.add_tools(t for t in CONVERSATION_TOOLS if t.name not in hidden)
    seen = SearchIndex(c, settings).search(TOLD, limit=14, allowed=lambda n: n not in hidden)
    assert seen == SearchIndex(alone, settings).search(TOLD, limit=14)
    assert hidden.isdisjoint(h.name for h in seen)


def test_lexical_search_reads_a_long_request_whole() -> None:
    """Lexical search scores a conversation as one request, however long: reading its
    tails too cost whole tasks told in several sentences a need (docs/decisions.md,
    "BM25 reads a long request's tails where the embedder reads them"), so only hybrid
    search's BM25 reads them."""
    c = Catalog()
    c.add_tools(CONVERSATION_TOOLS)
    ranked = SearchIndex(c).explain(TOLD, limit=14)
    assert ranked == SearchIndex(c, long_request=0).explain(TOLD, limit=14)
    for e in ranked:
        assert e.latest is None and e.score == pytest.approx(e.bm25 + (e.gain or 0.0))


def test_tails_score_as_each_tail_read_alone() -> None:
    """Each tail weighs the words of its sentences as reading that tail alone would: a
    word said early that a later term reaches only as a prefix counts at the prefix
    weight there, and a word said plainly early but quoted late at the argument weight;
    the longest reading is the whole request's BM25."""
    c = Catalog()
    c.add_tools(
        [
            *CONVERSATION_TOOLS,
            Tool("rename_files", "Rename filenames in a folder."),
            Tool("send_report", "Send the report by mail."),
        ]
    )
    index = SearchIndex(c)
    index.refresh()
    scope = index.scope(None)
    matching, analyzer, postings = index._matching, index.analyzer, index._postings
    walk = " ".join(["The weather was nice and we walked along the river for a while."] * 5)
    requests = (
        TOLD,
        f"Fix the filenames. {walk} Now open the file.",  # "filenam" begins with "file"
        f"Write the report. {walk} Now print 'report' on a page.",  # quoted late
        # a quoted value of two sentences is one value: no tail starts inside it
        f"Write the report. {walk} Now print 'Notes: today's report. It is done.' on it.",
        f'Write the report. {walk} Now print "Notes. The report is done." on a page.',
    )
    for request in requests:
        matched = matching.weighted_terms(request, analyzer, postings)
        whole, tails = tail_scores(request, analyzer, matching, postings, scope, matched)
        assert tails is not None and len(tails) == len(readings(request)) - 1
        assert whole == pytest.approx(postings.scores(matched[0], scope, matched[1]))
        for tail, text in zip(tails, readings(request)[1:], strict=True):
            own = matching.weighted_terms(text, analyzer, postings)
            assert tail == pytest.approx(postings.scores(own[0], scope, own[1])), text
    short = matching.weighted_terms("move a file", analyzer, postings)
    alone, none = tail_scores("move a file", analyzer, matching, postings, scope, short)
    assert none is None and alone == pytest.approx(postings.scores(short[0], scope, short[1]))


def test_readings_take_the_tails_of_the_last_sentences_only() -> None:
    many = " ".join(f"Step {i} of the plan moves file number {i} elsewhere." for i in range(20))
    read = readings(many)
    assert read[0] == many
    assert len(read) == 1 + MAX_READINGS
    assert read[-1] == "Step 19 of the plan moves file number 19 elsewhere."
    assert read[1].startswith(f"Step {20 - MAX_READINGS} of the plan")
    assert readings(many, long_request=0) == [many]
    assert readings("One long sentence " * 40) == ["One long sentence " * 40]  # no sentence end
    # Chinese counts a character as half a word, and ends sentences at its full stops
    chinese = "请把报告移到归档目录。" * 14 + "然后发一条推文告诉大家\uff01"
    assert readings(chinese)[-1] == "然后发一条推文告诉大家\uff01"
    # a sentence end inside a quoted value ends no sentence: no reading starts mid-value
    quoted = many + " Then post 'Done. Moved it all.' on the board."
    assert readings(quoted)[-1] == "Then post 'Done. Moved it all.' on the board."
    told = chinese + "再发一条“报告已归档。明天见。”的消息。"
    assert readings(told)[-1] == "再发一条“报告已归档。明天见。”的消息。"


def test_closest_ranks_by_the_reading_each_tool_matches_best() -> None:
    # three tools against the whole request (column 0) and its last sentence (column 1)
    similarities = np.array([[0.9, 0.1], [0.5, 0.2], [0.1, 0.8]], dtype=np.float32)
    cosine, score = closest(similarities)
    assert cosine.tolist() == pytest.approx([0.9, 0.5, 0.8])  # each tool's best reading
    assert int(np.argmax(score)) in (0, 2) and score[1] < score[0] and score[1] < score[2]
    one = np.array([[0.3], [0.7]], dtype=np.float32)
    assert [c.tolist() for c in closest(one)] == [pytest.approx([0.3, 0.7])] * 2
