"""Search on catalogs nobody tuned for: a request of several needs finds each need's
tool, a one-need request ranks as before, descriptions in Chinese are found in Chinese
and (with the multilingual embedder) in English, and an embedder that cannot read a
script never drags a ranking below lexical search's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from toolgate.catalog import Catalog, Tool
from toolgate.embedding import Embedder, MultilingualEmbedder, WordLlamaEmbedder, load_embedder
from toolgate.search import SearchIndex, SearchSettings
from toolgate.search.analysis import script_share
from toolgate.search.lexical import ARGUMENT_WEIGHT
from toolgate.search.semantic import meaning

TRAVEL = [
    Tool("flights.search_flights", "Search flights for next week, cheapest first."),
    Tool("flights.cheapest_flights", "Find the cheapest flights next week."),
    Tool("flights.flight_deals", "Find flight deals this week: the cheapest fares."),
    Tool("flights.book_flight", "Book the cheapest flight next week."),
    Tool("flights.flight_alerts", "Alert me when a flight gets cheaper next week."),
    Tool("flights.tokyo_flights", "Find flights to Tokyo."),
    Tool("calendar.create_event", "Add an event to the calendar."),
    Tool("calendar.list_calendars", "List the calendars of the user."),
    Tool("calendar.share_calendar", "Share a calendar with someone."),
    Tool("calendar.delete_event", "Delete an event from a calendar."),
    Tool("mail.send_email", "Send an email message to a recipient."),
    Tool("mail.add_contact", "Add a contact to the address book."),
]
TASK = "find the cheapest flight to Tokyo next week and add it to my calendar"
CHINESE = [
    Tool("amap.weather", "查询指定城市的天气预报和实时天气。"),
    Tool("amap.route_planning", "规划从起点到终点的驾车路线。"),
    Tool("fs.read_file", "Read a file from the disk."),
    Tool("mail.send_email", "Send an email message to a recipient."),
]

# names in pinyin, as many Chinese servers name their tools: only the text says what they do
PINYIN = [
    Tool("gaode.tianqi_yubao", "查询指定城市的天气预报和实时天气。"),
    Tool("gaode.luxian_guihua", "规划从起点到终点的驾车路线。"),
    Tool("fs.read_file", "Read a file from the disk."),
    Tool("mail.send_email", "Send an email message to a recipient."),
]


def catalog(tools: Sequence[Tool]) -> Catalog:
    c = Catalog()
    c.add_tools(tools)
    return c


def names(index: SearchIndex, query: str, limit: int = 5) -> list[str]:
    return [h.name for h in index.search(query, limit=limit)]


class Backwards(Embedder):
    """A real embedder's vectors for every text but the query, whose vector is turned
    around: the model's most similar tool becomes its least. What an embedder reading
    a script it never learned amounts to: a similarity that points anywhere."""

    def __init__(self, inner: Embedder, scripts: frozenset[str] | None) -> None:
        self.inner, self.scripts = inner, scripts
        self.model_id = f"backwards:{inner.model_id}"
        self.queries: set[str] = set()

    def embed(self, texts: Sequence[str]) -> Any:
        vectors = np.asarray(self.inner.embed(texts), dtype=np.float32)
        flip = np.asarray([-1.0 if t in self.queries else 1.0 for t in texts])
        return vectors * flip[:, None].astype(np.float32)


@pytest.fixture(scope="module")
def wordllama() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


@pytest.fixture(scope="module")
def multilingual() -> MultilingualEmbedder:
    return MultilingualEmbedder()


def test_a_request_of_two_needs_finds_the_tool_of_each() -> None:
    c = catalog(TRAVEL)
    plain = names(SearchIndex(c, cover_weight=0.0), TASK)
    assert not [n for n in plain if n.startswith("calendar.")]  # BM25 alone: flights only
    found = names(SearchIndex(c), TASK)
    assert found[0] == plain[0] == "flights.tokyo_flights"
    assert "calendar.create_event" in found


def test_a_request_its_best_tool_mostly_covers_ranks_as_without_the_re_rank() -> None:
    c = catalog(TRAVEL)
    query = "book the cheapest flight next week and email me"
    assert names(SearchIndex(c), query, 8) == names(SearchIndex(c, cover_weight=0.0), query, 8)


def test_a_chinese_description_is_found_by_a_chinese_request() -> None:
    assert names(SearchIndex(catalog(CHINESE)), "明天北京的天气怎么样", 1) == ["amap.weather"]


def test_a_chinese_description_is_found_by_an_english_request_with_the_multilingual_embedder(
    multilingual: MultilingualEmbedder,
) -> None:
    c = catalog(PINYIN)
    query = "will it rain tomorrow in Beijing"
    assert names(SearchIndex(c), query) == []  # no word in common
    index = SearchIndex(c, SearchSettings("hybrid", embedder=multilingual))
    assert names(index, query, 1) == ["gaode.tianqi_yubao"]


def test_an_embedder_that_cannot_read_a_chinese_request_leaves_its_ranking_to_lexical_search(
    wordllama: WordLlamaEmbedder,
) -> None:
    query = "明天北京的天气怎么样"
    backwards = Backwards(wordllama, frozenset({"Latin"}))
    backwards.queries.add(query)
    c = catalog(CHINESE)
    hybrid = SearchIndex(c, SearchSettings("hybrid", embedder=backwards))
    assert names(hybrid, query, 4) == names(SearchIndex(c), query, 4)


class Misreading(Embedder):
    """A real English model that misreads Chinese: a text with a key of ``readings``
    in it is embedded as that key's English meaning, here the other tool's."""

    scripts = frozenset({"Latin"})

    def __init__(self, inner: Embedder, readings: dict[str, str]) -> None:
        self.inner, self.readings = inner, readings
        self.model_id = f"misreading:{inner.model_id}"

    def embed(self, texts: Sequence[str]) -> Any:
        read = [next((v for k, v in self.readings.items() if k in t), t) for t in texts]
        return self.inner.embed(read)


def test_an_embedder_that_cannot_read_chinese_tools_does_not_rank_them_by_its_similarity(
    wordllama: WordLlamaEmbedder,
) -> None:
    # the route planner's description read as a weather forecast, and the other way round
    swapped = Misreading(wordllama, {"规划": "weather forecast", "天气": "driving route"})
    hybrid = SearchIndex(catalog(CHINESE), SearchSettings("hybrid", embedder=swapped))
    assert names(hybrid, "amap weather forecast", 1) == ["amap.weather"]


class Alike(Embedder):
    """An embedder that finds every text alike: its similarity tells no tool from
    another, so it adds nothing to what the lexical signals rank."""

    scripts = frozenset({"Latin"})
    model_id = "alike"

    def embed(self, texts: Sequence[str]) -> Any:
        return np.ones((len(texts), 8), dtype=np.float32)


def arguments(*names: str) -> dict[str, Any]:
    return {"type": "object", "properties": {n: {"type": "string"} for n in names}}


# English names and arguments over Chinese descriptions, as many Chinese servers write
# their tools: an English model reads a third of each
TRAVEL_NAMED = [
    Tool("flight_search", "搜索航班。", input_schema=arguments("departure_city", "date")),
    Tool("book_flight", "预订机票。", input_schema=arguments("flight_number", "passenger_name")),
    Tool("flight_status_query", "查询航班状态。", input_schema=arguments("flight_number")),
    Tool("hotel_search", "按城市和日期搜索酒店。", input_schema=arguments("city", "date")),
    Tool("weather_query", "查询城市天气。", input_schema=arguments("city", "date")),
    Tool("travel_insurance", "购买旅行保险。", input_schema=arguments("passenger_name", "dates")),
]


def test_what_an_embedder_cannot_read_of_a_tool_ranks_as_lexical_search_ranks_it() -> None:
    # The similarity stands for the part of a tool the model reads; for the rest,
    # lexical search's own score does. Hybrid's BM25 (times the square of a tool's
    # coverage of the request) put the insurance tool, which shares one argument word
    # with the request, above a flight tool that lexical search ranks third.
    c = catalog(TRAVEL_NAMED)
    query = "book a flight for a passenger"
    assert all(script_share(t.description or "", {"Latin"}) == 0 for t in TRAVEL_NAMED)
    lexical = names(SearchIndex(c), query, 3)
    assert lexical == ["book_flight", "flight_status_query", "flight_search"]
    assert names(SearchIndex(c, SearchSettings("hybrid", embedder=Alike())), query, 3) == lexical


def test_script_share_counts_words_and_unspaced_characters() -> None:
    assert script_share("搜索 web pages", {"Latin"}) == 0.5
    assert script_share("天气预报", {"Latin"}) == 0.0
    assert script_share("天气预报", {"Latin", "Han"}) == 1.0
    assert script_share("Météo à Paris", {"Latin"}) == 1.0
    assert script_share("погода", {"Latin"}) == 0.0
    assert script_share("2024-07-15", {"Han"}) == 1.0  # no letters: nothing unknown
    assert script_share("天气", None) == 1.0


def test_the_multilingual_embedder_is_named_in_config_and_reads_sixteen_languages(
    multilingual: MultilingualEmbedder,
) -> None:
    assert isinstance(load_embedder("multilingual"), MultilingualEmbedder)
    assert multilingual.model_id == "use-multilingual:3"
    assert multilingual.scripts is not None and {"Han", "Latin", "Cyrillic"} <= multilingual.scripts
    vectors = np.asarray(
        multilingual.embed(["查询天气预报", "get the weather forecast", "发送邮件"])
    )
    assert vectors.shape == (3, 512)
    assert float(vectors[0] @ vectors[1]) > float(vectors[1] @ vectors[2])


def test_a_request_the_embedder_reads_in_part_ranks_as_lexical_search_for_the_rest(
    wordllama: WordLlamaEmbedder,
) -> None:
    # a Chinese request naming its server in Latin letters: the model reads a word of it
    query = "amap server: 规划从北京到上海的驾车路线"
    backwards = Backwards(wordllama, frozenset({"Latin"}))
    backwards.queries.add(query)
    c = catalog(CHINESE)
    lexical = names(SearchIndex(c), query, 4)
    hybrid = SearchIndex(c, SearchSettings("hybrid", embedder=backwards))
    assert 0 < script_share(query, backwards.scripts) < 0.5
    assert names(hybrid, query, len(lexical)) == lexical


def test_in_hybrid_search_the_re_rank_keeps_tools_of_the_meaning_above_a_stray_word(
    wordllama: WordLlamaEmbedder,
) -> None:
    # "running" reaches the route planner by its spelling: a word of the request no
    # flight tool holds, which the lexical re-rank's novelty rewards
    c = catalog([*TRAVEL, Tool("maps.route", "Plan a driving route between two places.")])
    query = "get me a plane ticket to Tokyo and buy new running shoes"
    assert "maps.route" in names(SearchIndex(c), query, 3)
    hybrid = SearchIndex(c, SearchSettings("hybrid", embedder=wordllama))
    assert all(n.startswith("flights.") for n in names(hybrid, query, 3))


TRAVEL_ZH = [
    Tool("jipiao.search", "搜索下周的航班 最便宜的排在前面。"),
    Tool("jipiao.cheapest", "查找下周最便宜的航班。"),
    Tool("jipiao.deals", "查找本周的特价航班 最便宜的票价。"),
    Tool("jipiao.book", "预订下周最便宜的航班。"),
    Tool("jipiao.alerts", "下周航班变便宜时提醒我。"),
    Tool("jipiao.tokyo", "查找去东京的航班。"),
    Tool("rili.create_event", "在日历中添加一个日程。"),
    Tool("rili.list_calendars", "列出用户的日历。"),
    Tool("rili.share_calendar", "与他人共享一个日历。"),
    Tool("rili.delete_event", "从日历中删除一个日程。"),
    Tool("mail.send_email", "给收件人发送一封邮件。"),
    Tool("mail.add_contact", "在通讯录中添加一个联系人。"),
]


def test_a_whole_task_the_embedder_reads_in_part_is_re_ranked_as_lexical_search_for_the_rest(
    wordllama: WordLlamaEmbedder,
) -> None:
    # a Chinese request of two needs with one Latin word: hybrid mode's own re-rank
    # weight (here none at all) applies to the share the model reads, lexical search's
    # to the rest, so the calendar tool comes up as lexical search brings it up
    query = "ctrip 预订下周去东京最便宜的航班然后在日历里添加日程"
    c = catalog(TRAVEL_ZH)
    assert names(SearchIndex(c), query, 2) == ["jipiao.book", "rili.create_event"]
    assert "rili.create_event" not in names(SearchIndex(c, cover_weight=0.0), query, 2)
    hybrid = SearchIndex(c, SearchSettings("hybrid", embedder=wordllama), hybrid_cover_weight=0.0)
    assert 0 < script_share(query, wordllama.scripts) < 0.1
    assert names(hybrid, query, 2) == ["jipiao.book", "rili.create_event"]


def test_a_request_whose_only_latin_words_are_a_value_ranks_as_lexical_search(
    wordllama: WordLlamaEmbedder,
) -> None:
    # the file name is an argument value, which the embedder is not given to read: what
    # it reads is Chinese only, so none of its words is taken, however many Latin letters
    # the value holds
    query = "删除 weather_report.txt 文件"
    tools = [
        *CHINESE,
        Tool("fs.write_file", "把内容写入磁盘上的文件。"),
        Tool("fs.delete_file", "删除磁盘上的一个文件。"),
        Tool("weather.save_forecast", "Save a forecast report to disk."),
    ]
    backwards = Backwards(wordllama, frozenset({"Latin"}))
    backwards.queries.update({query, meaning(query, ARGUMENT_WEIGHT)})
    c = catalog(tools)
    lexical = names(SearchIndex(c), query, 7)
    assert script_share(query, backwards.scripts) > 0.4
    assert script_share(meaning(query, ARGUMENT_WEIGHT), backwards.scripts) == 0.0
    assert names(SearchIndex(c, SearchSettings("hybrid", embedder=backwards)), query, 7) == lexical


def test_a_tool_is_embedded_from_the_parts_its_embedder_reads(
    wordllama: WordLlamaEmbedder,
) -> None:
    # an English name over a Chinese description, which this model misreads as the
    # other tool's: the tool's vector is made of its name alone, as if it had no
    # description, and a part in English counts in full
    swapped = Misreading(wordllama, {"规划": "weather forecast", "天气": "driving route"})
    bare = [
        Tool(t.name, "" if script_share(t.description, {"Latin"}) < 1 else t.description)
        for t in CHINESE
    ]

    def cosines(tools: Sequence[Tool], embedder: Embedder) -> dict[str, float | None]:
        index = SearchIndex(catalog(tools), SearchSettings("hybrid", embedder=embedder))
        return {e.name: e.semantic for e in index.explain("weather forecast", len(tools))}

    assert cosines(CHINESE, swapped) == cosines(bare, wordllama)
