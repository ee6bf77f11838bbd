"""Tool search: name-part analysis, BM25 ranking over all searchable fields, deterministic
ties, access filtering, following catalog changes, the regex variant and bad input."""

from __future__ import annotations

import itertools

import pytest

from toolgate.catalog import Catalog, Group, Tool
from toolgate.errors import ConfigError, InvalidArguments, ToolgateError
from toolgate.search import (
    SearchHit,
    SearchIndex,
    SearchSettings,
    argument_values,
    char_ngrams,
    name_parts,
    schema_text,
    words,
)


def schema(**props: dict[str, object]) -> dict[str, object]:
    return {"type": "object", "properties": props}


def small_catalog() -> Catalog:
    catalog = Catalog()
    catalog.add_groups(
        [
            Group("code", "Source code: files, branches and commits"),
            Group("issues", "Bug reports and feature requests", title="Issue tracker"),
            Group("billing", "Invoices and payments"),
        ]
    )
    catalog.add_tools(
        [
            Tool(
                "get_file_contents",
                "Read a file from a repository.",
                groups=("code",),
                input_schema=schema(path={"type": "string", "description": "Path in the repo"}),
            ),
            Tool("create_branch", "Create a new branch from a commit.", groups=("code",)),
            Tool(
                "create_issue",
                "Open a new issue.",
                groups=("issues",),
                input_schema=schema(labels={"type": "array", "description": "Labels to apply"}),
            ),
            Tool("listIssueComments", "Comments on an issue, oldest first.", groups=("issues",)),
            Tool("send_invoice", "Email an invoice to a customer.", groups=("billing",)),
            Tool("refund", "Give money back.", title="Refund a payment", groups=("billing",)),
            Tool("ping", "Check that the server answers."),
        ]
    )
    return catalog


@pytest.fixture
def catalog() -> Catalog:
    return small_catalog()


@pytest.fixture
def index(catalog: Catalog) -> SearchIndex:
    return SearchIndex(catalog)


def names(hits: list[SearchHit]) -> list[str]:
    return [h.name for h in hits]


# -- analysis ----------------------------------------------------------------------------


def test_name_parts_split_snake_kebab_camel_dots_and_digits() -> None:
    assert name_parts("get_file_contents") == ["get", "file", "contents"]
    assert name_parts("list-pull-requests") == ["list", "pull", "requests"]
    assert name_parts("listIssueComments") == ["list", "issue", "comments"]
    assert name_parts("github.repos.get") == ["github", "repos", "get"]
    assert name_parts("getHTTPResponse2xx") == ["get", "http", "response", "2", "xx"]
    assert name_parts("PDF&URLTool") == ["pdf", "url", "tool"]
    assert name_parts("AI2sql") == ["ai", "2", "sql"]


def test_free_text_words_keep_mixed_case_words_whole_and_split() -> None:
    assert words("Search GitHub for pull_request items.") == [
        "search",
        "github",
        "git",
        "hub",
        "for",
        "pull",
        "request",
        "items",
    ]


def test_non_ascii_words_are_kept_whole_and_lowercased() -> None:
    assert name_parts("Überweisung_prüfen") == ["überweisung", "prüfen"]


def test_analyzer_drops_stop_words_and_stems(index: SearchIndex) -> None:
    assert index.analyzer.query_terms("How can I list the open issues?") == ["list", "open", "issu"]


def test_schema_text_reads_argument_names_and_descriptions_one_level_deep() -> None:
    s = schema(
        owner={"type": "string", "description": "Repository owner"},
        filter={
            "type": "object",
            "properties": {"state": {"type": "string", "description": "open or closed"}},
        },
        items={"type": "array", "items": {"type": "object", "properties": {"sha": {}}}},
    )
    assert schema_text(s) == (
        ["owner", "filter", "state", "items", "sha"],
        ["Repository owner", "open or closed"],
    )


# -- ranking ------------------------------------------------------------------------------


def test_name_parts_rank_a_tool_first(index: SearchIndex) -> None:
    assert names(index.search("create branch"))[0] == "create_branch"


def test_camel_case_names_are_found_by_their_words(index: SearchIndex) -> None:
    assert names(index.search("issue comments", limit=1)) == ["listIssueComments"]


def test_stemming_matches_other_word_forms(index: SearchIndex) -> None:
    assert names(index.search("refunding payments", limit=1)) == ["refund"]


def test_argument_descriptions_are_searchable(index: SearchIndex) -> None:
    assert names(index.search("apply labels", limit=1)) == ["create_issue"]


def test_group_text_is_searchable(index: SearchIndex) -> None:
    hits = index.search("feature requests bug reports")
    assert sorted(names(hits)) == ["create_issue", "listIssueComments"]


def test_title_is_searchable(index: SearchIndex) -> None:
    assert names(index.search("tracker")) == ["create_issue", "listIssueComments"]


def test_scores_are_positive_and_descending(index: SearchIndex) -> None:
    hits = index.search("create a new issue", limit=50)
    assert names(hits)[:2] == ["create_issue", "create_branch"]
    assert all(h.score > 0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_query_matching_nothing_returns_no_hits(index: SearchIndex) -> None:
    assert index.search("quantum chromodynamics") == []


def test_a_query_of_only_stop_words_returns_no_hits(index: SearchIndex) -> None:
    assert index.search("how can I do this") == []


def test_limit_caps_the_number_of_hits(index: SearchIndex) -> None:
    assert len(index.search("issue", limit=1)) == 1
    assert len(index.search("issue code invoice server", limit=50)) == 7


def test_equal_scores_are_ordered_by_name() -> None:
    catalog = Catalog()
    catalog.add_tools(Tool(n, "Export the report.") for n in ["zeta", "alpha", "mid", "beta"])
    hits = SearchIndex(catalog).search("export report", limit=10)
    assert names(hits) == ["alpha", "beta", "mid", "zeta"]
    assert len({h.score for h in hits}) == 1


def test_ties_stay_name_ordered_after_tools_come_and_go() -> None:
    catalog = Catalog()
    catalog.add_tools(Tool(n, "Export the report.") for n in ["zeta", "alpha", "mid"])
    index = SearchIndex(catalog)
    assert names(index.search("export")) == ["alpha", "mid", "zeta"]
    catalog.remove_tool("alpha")  # frees a slot the next tool reuses
    catalog.add_tools([Tool("omega", "Export the report."), Tool("beta", "Export the report.")])
    assert names(index.search("export")) == ["beta", "mid", "omega", "zeta"]
    assert index.reanalysed == 2


def test_results_are_the_same_on_every_run() -> None:
    first = SearchIndex(small_catalog()).search("create issue branch file", limit=50)
    again = SearchIndex(small_catalog()).search("create issue branch file", limit=50)
    assert first == again


# -- access ---------------------------------------------------------------------------------


def test_search_returns_only_tools_the_caller_allows(index: SearchIndex) -> None:
    hits = index.search("create issue", limit=50, allowed=lambda n: n != "create_issue")
    assert "create_issue" not in names(hits)
    assert names(hits)[0] == "listIssueComments"


def test_disallowed_tools_do_not_take_places_in_the_limit(index: SearchIndex) -> None:
    allowed = {"ping", "send_invoice"}
    hits = index.search("issue invoice server", limit=2, allowed=allowed.__contains__)
    assert sorted(names(hits)) == ["ping", "send_invoice"]


def test_allowing_nothing_returns_nothing(index: SearchIndex) -> None:
    assert index.search("issue", allowed=lambda n: False) == []
    assert index.search_regex("issue", allowed=lambda n: False) == []


# -- following the catalog ---------------------------------------------------------------------


def test_added_tool_is_found_and_only_it_is_reanalysed(
    catalog: Catalog, index: SearchIndex
) -> None:
    assert index.search("deploy") == []
    catalog.add_tool(Tool("deploy_site", "Deploy the static site."))
    assert names(index.search("deploy")) == ["deploy_site"]
    assert index.reanalysed == 1
    assert len(index) == 8


def test_removed_tool_is_no_longer_found(catalog: Catalog, index: SearchIndex) -> None:
    assert names(index.search("invoice", limit=1)) == ["send_invoice"]
    catalog.remove_tool("send_invoice")
    assert "send_invoice" not in names(index.search("invoice email customer", limit=50))
    assert index.reanalysed == 0
    assert len(index) == 6


def test_updated_tool_is_reanalysed(catalog: Catalog, index: SearchIndex) -> None:
    index.refresh()
    catalog.update_tool("ping", description="Measure latency to the server.")
    assert names(index.search("latency")) == ["ping"]
    assert index.reanalysed == 1


def test_unchanged_catalog_is_not_reanalysed(catalog: Catalog, index: SearchIndex) -> None:
    index.refresh()
    assert index.reanalysed == 7
    catalog.touch()
    index.refresh()
    assert index.reanalysed == 0


def test_empty_catalog_finds_nothing() -> None:
    assert SearchIndex(Catalog()).search("anything") == []


# -- regex ------------------------------------------------------------------------------------


def test_regex_matches_names_titles_and_descriptions_case_insensitively(
    index: SearchIndex,
) -> None:
    assert index.search_regex("INVOICE") == [
        SearchHit("send_invoice", 4.0)  # name (3) + description (1)
    ]
    assert index.search_regex("payment") == [SearchHit("refund", 2.0)]  # title only


def test_regex_ranks_name_matches_first_then_by_name(index: SearchIndex) -> None:
    assert index.search_regex("issue|branch", limit=10) == [
        SearchHit("create_branch", 4.0),
        SearchHit("create_issue", 4.0),
        SearchHit("listIssueComments", 4.0),
    ]
    assert names(index.search_regex("^create_")) == ["create_branch", "create_issue"]


def test_regex_respects_limit_and_allowed(index: SearchIndex) -> None:
    hits = index.search_regex(".", limit=3, allowed=lambda n: n != "create_branch")
    # refund also matches in its title (6); the rest tie at 4 and go by name
    assert names(hits) == ["refund", "create_issue", "get_file_contents"]


def test_bad_regex_is_invalid_arguments_with_a_clear_message(index: SearchIndex) -> None:
    with pytest.raises(InvalidArguments, match=r"Invalid regular expression '\(unclosed'") as exc:
        index.search_regex("(unclosed")
    assert isinstance(exc.value, ToolgateError)
    assert exc.value.code == "invalid_arguments"


def test_a_long_bad_regex_is_quoted_cut_not_echoed_whole(index: SearchIndex) -> None:
    pattern = "(" + "a" * 498  # under the length limit, and unclosed
    with pytest.raises(InvalidArguments) as exc:
        index.search_regex(pattern)
    message = exc.value.message
    assert message.startswith("Invalid regular expression '(aaaa")
    assert "… (499 characters)" in message
    assert pattern not in message and len(message) < 300


def test_overlong_regex_is_refused(index: SearchIndex) -> None:
    with pytest.raises(InvalidArguments, match="501 characters; the limit is 500"):
        index.search_regex("a" * 501)


# -- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_empty_query_is_invalid_arguments(index: SearchIndex, query: str) -> None:
    with pytest.raises(InvalidArguments, match="Search query must be a non-empty string"):
        index.search(query)
    with pytest.raises(InvalidArguments, match="Search pattern must be a non-empty string"):
        index.search_regex(query)


@pytest.mark.parametrize("limit", [0, -1, 51, True, 2.5])
def test_limit_outside_one_to_fifty_is_invalid_arguments(index: SearchIndex, limit: int) -> None:
    with pytest.raises(InvalidArguments, match="limit must be an integer from 1 to 50"):
        index.search("issue", limit=limit)
    with pytest.raises(InvalidArguments, match="limit must be an integer from 1 to 50"):
        index.search_regex("issue", limit=limit)


def test_limits_one_and_fifty_are_accepted(index: SearchIndex) -> None:
    assert len(index.search("issue", limit=1)) == 1
    assert len(index.search("issue", limit=50)) == 2


# -- query hygiene, servers, scripts without spaces ----------------------------------


def test_a_repeated_query_word_counts_once(index: SearchIndex) -> None:
    once = index.search("create issue", limit=10)
    repeated = index.search("create create create issue issue", limit=10)
    assert repeated == once


def test_task_boilerplate_and_one_letter_tokens_leave_the_query(index: SearchIndex) -> None:
    assert index.analyzer.query_terms("Could you help me provide a detailed x issue?") == ["issu"]
    plain = index.search("refund", limit=10)
    assert index.search("Can you help me with a specific refund, like x?", limit=10) == plain


def test_a_query_of_only_task_words_returns_no_hits(index: SearchIndex) -> None:
    assert index.search("help, I'm looking for specific details like these") == []


def test_the_backend_server_key_and_title_are_searchable() -> None:
    catalog = Catalog()
    catalog.add_tools(
        [
            Tool("list_items", "List the items.", source="acme_crm"),
            Tool("list_rows", "List the rows.", source="sheets"),
        ]
    )
    settings = SearchSettings(servers={"acme_crm": "Customer relationships", "sheets": ""})
    index = SearchIndex(catalog, settings)
    assert names(index.search("crm")) == ["list_items"]
    assert names(index.search("customer relationships")) == ["list_items"]
    assert names(index.search("sheets")) == ["list_rows"]
    [why] = index.explain("acme items")
    assert why.name == "list_items"
    assert set(why.fields) == {"name", "description", "server"}
    assert sum(why.fields.values()) == pytest.approx(why.bm25, rel=1e-4)


def test_unspaced_scripts_are_split_into_character_ngrams() -> None:
    assert char_ngrams("天气预报") == ["天", "气", "预", "报", "天气", "气预", "预报"]
    assert words("查询天气API") == ["查", "询", "天", "气", "查询", "询天", "天气", "api"]


def test_a_chinese_catalog_is_searchable() -> None:
    catalog = Catalog()
    catalog.add_tools(
        [
            Tool("weather", "查询城市的天气预报"),
            Tool("route", "规划两地之间的驾车路线"),
            Tool("translate", "翻訳: 日本語のテキストを英語に翻訳します"),
        ]
    )
    index = SearchIndex(catalog)
    assert names(index.search("北京明天的天气"))[0] == "weather"
    assert names(index.search("驾车路线规划"))[0] == "route"
    assert names(index.search("テキストを翻訳"))[0] == "translate"


def test_bad_search_settings_are_refused() -> None:
    with pytest.raises(ConfigError, match="lexical"):
        SearchSettings(mode="semantic")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="from 0 to 1"):
        SearchSettings(weight=1.5)


def test_the_best_allowed_tools_are_found_far_down_the_ranking() -> None:
    catalog = Catalog()
    catalog.add_tools(
        Tool(f"report_{i:03d}", "Export a report." + " Export." * (i % 7)) for i in range(300)
    )
    index = SearchIndex(catalog)
    everything = index.search("export report", limit=50)
    allowed = {h.name for h in everything[40:]} | {"report_299"}
    # searching what a caller may see ranks exactly as a catalog of only those tools
    alone = Catalog()
    alone.add_tools(t for n, t in catalog.tools.items() if n in allowed)
    expected = SearchIndex(alone).search("export report", limit=5)
    found = index.search("export report", limit=5, allowed=allowed.__contains__)
    assert found == expected
    ties = index.search("export report", limit=3, allowed=lambda n: n >= "report_290")
    assert [h.score for h in ties] == sorted((h.score for h in ties), reverse=True)
    for a, b in itertools.pairwise(ties):
        assert a.score > b.score or a.name < b.name


# -- BM25F and prefix matching -------------------------------------------------------------


FILLER = "An optional setting that changes how the listing is paged and sorted."


def test_a_name_match_is_not_diluted_by_long_argument_text() -> None:
    """BM25F normalises each field by its own length: a tool named for the query keeps
    its name match however long its argument documentation is."""
    options: dict[str, dict[str, object]] = {
        f"option_{i}": {"description": FILLER} for i in range(12)
    }
    catalog = Catalog()
    catalog.add_tools(
        [
            Tool(
                "issue_read",
                "Get details.",
                input_schema=schema(**options),
            ),
            Tool("add_note", "Attach a note to an issue after you read it."),
        ]
    )
    index = SearchIndex(catalog)
    assert names(index.search("read an issue", limit=2)) == ["issue_read", "add_note"]


def test_a_query_word_reaches_the_longer_index_words_it_begins() -> None:
    catalog = Catalog()
    catalog.add_tools(
        [
            Tool("coin_prices", "Prices of cryptocurrencies."),
            Tool("cry_detector", "Detect a baby crying."),
            Tool("weather", "The forecast."),
        ]
    )
    index = SearchIndex(catalog)
    assert names(index.search("crypto", limit=3)) == ["coin_prices"]
    # a full match outranks a prefix match; words under four letters extend nothing
    assert names(index.search("cry", limit=3)) == ["cry_detector"]
    # (without spelling matches, which would also reach "cryptocurrencies")
    assert SearchIndex(catalog, prefix_weight=0.0, fuzzy_weight=0.0).search("crypto") == []


def test_a_query_word_reaches_the_shorter_index_words_that_begin_it() -> None:
    """The other way round from prefixes: "cryptocurrencies" finds a tool that only
    says "crypto", at ``ROOT_WEIGHT`` of a full match, and a root under four letters
    ("cry") is not one."""
    catalog = Catalog()
    catalog.add_tools(
        [
            Tool("crypto_wallet", "Hold crypto."),
            Tool("cry_detector", "Detect a baby's cry."),
            Tool("coin_prices", "Prices of cryptocurrencies."),
            Tool("weather", "The forecast."),
        ]
    )
    index = SearchIndex(catalog)
    hits = index.search("cryptocurrencies", limit=4)
    # a full match outranks a root match
    assert names(hits) == ["coin_prices", "crypto_wallet"]
    assert hits[1].score < hits[0].score
    off = SearchIndex(catalog, root_weight=0.0)
    assert names(off.search("cryptocurrencies", limit=4)) == ["coin_prices"]
    [_, explained] = index.explain("cryptocurrencies", limit=2)
    assert explained.name == "crypto_wallet"
    assert sum(explained.fields.values()) == pytest.approx(explained.bm25, rel=1e-5)
    catalog.remove_tool("crypto_wallet")  # a root held by no tool any more reaches nothing
    assert names(index.search("cryptocurrencies", limit=4)) == ["coin_prices"]


def test_words_of_argument_values_count_for_less_than_the_request() -> None:
    """In "edit 'test_report.md' in ./tests", the quoted name and the path are what
    the tool is called with; "edit" says which tool. Their words count at
    ``ARGUMENT_WEIGHT`` (and fully where the request itself says them too)."""
    catalog = Catalog()
    catalog.add_tools(
        [
            Tool("edit_file", "Edit a text file."),
            Tool("run_tests", "Run the test suite and report test results."),
        ]
    )
    index = SearchIndex(catalog)
    query = "edit 'test_report.md' in ./tests/unit"
    assert names(index.search(query, limit=2)) == ["edit_file", "run_tests"]
    flat = SearchIndex(catalog, argument_weight=1.0)
    assert names(flat.search(query, limit=2)) == ["run_tests", "edit_file"]
    [edit, tests] = index.explain(query, limit=2)
    assert edit.fields["name"] > tests.fields.get("name", 0.0)
    assert sum(tests.fields.values()) == pytest.approx(tests.bm25, rel=1e-5)
    # a word the request says as well counts in full
    said = index.search("run tests on ./tests/unit", limit=1)[0]
    assert said.name == "run_tests"
    assert said.score == pytest.approx(flat.search("run tests on ./tests/unit", limit=1)[0].score)
    assert argument_values("open https://example.com and 'x y'") == (
        "open   and  ",
        "https://example.com 'x y'",
    )
    # apostrophes inside words quote nothing
    assert argument_values("I'd like it's fine") == ("I'd like it's fine", "")


@pytest.mark.parametrize(
    ("query", "value"),
    [
        # a value's own apostrophes stay in it: the whole note is the value
        (
            "write 'Notes: today's plan and Bob's part.' then save",
            "'Notes: today's plan and Bob's part.'",
        ),
        ("open “Q3 report” now", "“Q3 report”"),  # typographic quotes, as phones type them
        ("rename \u2018Today\u2019s notes\u2019 please", "\u2018Today\u2019s notes\u2019"),
        # CJK text quotes a value with no space before it, in either kind of mark
        ("创建一个叫“工作任务”的文件", "“工作任务”"),
        ('写入"明日会议准备"的内容', '"明日会议准备"'),
        ("打开「设置」页面", "「设置」"),
        ("查找《三体》的作者", "《三体》"),
        ("ouvrir «rapport final» maintenant", "«rapport final»"),
    ],
)
def test_quoted_argument_values_in_every_kind_of_quote(query: str, value: str) -> None:
    """A request's quoted value is found whatever marks quote it, with its own
    apostrophes inside; the rest of the request is what the tool is found by."""
    rest, values = argument_values(query)
    assert values == value
    assert value not in rest


def test_marks_that_are_no_quotes_quote_nothing() -> None:
    """An inch mark, a plural's apostrophe and an unclosed quote are not values, and a
    long unclosed quote full of apostrophes finds no value."""
    for query in ["a 5'10\" shelf", "the users' files and the admins' keys", "it's 'open"]:
        assert argument_values(query) == (query, "")
    said = "'" + "it's " * 20_000
    assert argument_values(said) == (said, "")


def test_values_are_found_alike_whichever_pattern_a_text_takes() -> None:
    """A text without a slash or without a dot before a letter is read with a pattern
    that leaves out the URL, path or file-name alternatives (``analysis._values``): on
    any text it finds exactly what the whole pattern finds, values and sentences."""
    import random

    from toolgate.search import analysis

    whole = analysis._ARGUMENTS[True, True]
    rng = random.Random(7)
    marks = list("abXY z  ..//\\:'\"`“”\u2018\u2019「」«»叫报。!?\n-_7")
    texts = ["see x.md", "open a/b", "it's 'a/b' now", "“x.y”", "C:\\dir", "v1.2", "a. b"]
    texts += ["".join(rng.choice(marks) for _ in range(rng.randint(0, 30))) for _ in range(5000)]
    for text in texts:
        spans = [m.span() for m in whole.finditer(text)]
        assert [m.span() for m in analysis._values(text)] == spans, text
        assert argument_values(text) == (
            whole.sub(" ", text),
            " ".join(m.group(0) for m in whole.finditer(text)),
        ), text
    # the choice matters: the pattern without them finds no value in such a text
    assert analysis._ARGUMENTS[False, False].findall("open a/b and x.md") == []


def test_a_word_that_reaches_no_tool_matches_words_spelled_like_it() -> None:
    """British and American spellings, which the stemmer keeps apart ("analys",
    "analyz"), meet through shared character trigrams; a word that matches a tool
    as it is does not spread to its look-alikes."""
    catalog = Catalog()
    catalog.add_tools(
        [
            Tool("log_analyzer", "Analyze server logs."),
            Tool("color_picker", "Pick a color from the screen."),
            Tool("weather", "The forecast."),
        ]
    )
    index = SearchIndex(catalog)
    hits = index.search("analyse logs", limit=3)
    assert names(hits) == ["log_analyzer"]
    assert names(index.search("analyse", limit=3)) == ["log_analyzer"]
    assert names(index.search("colour", limit=3)) == ["color_picker"]
    assert SearchIndex(catalog, fuzzy_weight=0.0).search("analyse", limit=3) == []
    # a spelling match counts FUZZY_WEIGHT of a full one
    exact = SearchIndex(catalog).search("analyze", limit=1)[0]
    assert 0 < index.search("analyse", limit=1)[0].score < exact.score
    [explained] = index.explain("analyse", limit=1)
    assert explained.fields and sum(explained.fields.values()) == pytest.approx(explained.bm25)

    catalog.add_tools([Tool("colour_mixer", "Mix paint.")])
    # "colour" now matches a tool as it is: no look-alikes
    assert names(index.search("colour", limit=3)) == ["colour_mixer"]
    catalog.remove_tool("colour_mixer")
    catalog.remove_tool("color_picker")
    assert index.search("colour", limit=3) == []  # removed tools are found no more
    # the spelling matches found then are not kept once the index's words change
    catalog.add_tools([Tool("palette", "Choose a color.")])
    assert names(index.search("colour", limit=3)) == ["palette"]


def test_spelling_matches_depend_only_on_the_callers_tools() -> None:
    """A word held only by tools the caller cannot see does not count as found: the
    caller's search falls back to look-alikes exactly as on a catalog of its tools."""
    tools = [
        Tool("colour_mixer", "Mix paint colour."),
        Tool("color_picker", "Pick a color from the screen."),
        Tool("weather", "The forecast."),
    ]
    catalog = Catalog()
    catalog.add_tools(tools)
    visible = {"color_picker", "weather"}
    hits = SearchIndex(catalog).search("colour", limit=3, allowed=visible.__contains__)
    alone = Catalog()
    alone.add_tools([t for t in tools if t.name in visible])
    assert hits == SearchIndex(alone).search("colour", limit=3)
    assert names(hits) == ["color_picker"]


def test_field_scores_add_up_to_the_bm25_score_with_prefix_matches() -> None:
    catalog = Catalog()
    catalog.add_tools(
        [
            Tool("coin_prices", "Prices of cryptocurrencies, in dollars.", title="Coin prices"),
            Tool("stock_prices", "Share prices."),
        ]
    )
    [first, second] = SearchIndex(catalog).explain("crypto prices", limit=2)
    assert first.name == "coin_prices"
    assert set(first.fields) == {"name", "title", "description"}
    assert sum(first.fields.values()) == pytest.approx(first.bm25, rel=1e-5)
    assert sum(second.fields.values()) == pytest.approx(second.bm25, rel=1e-5)


FEEDBACK_TOOLS = [
    Tool("count_calories", "Count the calories in a meal and keep a diet diary."),
    Tool("diet_diary", "A diary of what you eat each day: meals, portions and nutrition."),
    Tool("get_weather", "Current weather for a city."),
    Tool("send_email", "Send an email to a contact."),
    Tool("convert_currency", "Convert an amount between currencies."),
    Tool("list_files", "List the files in a folder."),
]
# Of this request only "calories" is in the catalog: the best match covers little of it.
TOLD_OTHERWISE = "help me lose weight by checking calories before the summer vacation"


def feedback_catalog(*without: str) -> Catalog:
    catalog = Catalog()
    catalog.add_tools(t for t in FEEDBACK_TOOLS if t.name not in without)
    return catalog


def test_feedback_finds_the_tool_the_best_match_is_like() -> None:
    """The best match holds one of the request's words; the words it is told by
    (diet, diary, meal) join the query and find the tool that shares no word with the
    request itself. Without feedback lexical search never returns that tool."""
    catalog = feedback_catalog()
    ranked = SearchIndex(catalog).explain(TOLD_OTHERWISE, limit=5)
    assert [e.name for e in ranked] == ["count_calories", "diet_diary"]
    assert {"diet", "diari", "meal"} <= set(ranked[0].feedback)
    for e in ranked:  # BM25 by field is the request's; the score adds feedback's gain
        assert sum(e.fields.values()) == pytest.approx(e.bm25, rel=1e-4)
        assert e.gain is not None and e.score == pytest.approx(e.bm25 + e.gain, rel=1e-4)
    assert ranked[1].bm25 == 0 < (ranked[1].gain or 0.0)
    plain = SearchIndex(catalog, feedback_weight=0.0).explain(TOLD_OTHERWISE, limit=5)
    assert [e.name for e in plain] == ["count_calories"]
    assert plain[0].feedback == ()


def test_feedback_leaves_a_well_covered_query_alone() -> None:
    catalog = feedback_catalog()
    query = "count the calories in my meal"
    ranked = SearchIndex(catalog).explain(query, limit=5)
    assert ranked[0].feedback == ()
    plain = SearchIndex(catalog, feedback_weight=0.0).search(query, limit=5)
    assert [(e.name, e.score) for e in ranked] == [(h.name, h.score) for h in plain]
    # the same request, below the threshold only once it is told otherwise
    low = SearchIndex(catalog, feedback_coverage=1.01).explain(query, limit=5)
    assert low[0].feedback != ()


def test_feedback_reads_only_the_tools_the_caller_may_see() -> None:
    """Hidden, the best match adds no words and leaves no trace: every visible tool's
    rank and score are what they are in a catalog without it."""
    hidden = "count_calories"
    index = SearchIndex(feedback_catalog())
    alone = SearchIndex(feedback_catalog(hidden))
    queries = (
        TOLD_OTHERWISE,
        "diary of meals",
        "keep a diary of the summer vacation trip abroad",  # feedback from diet_diary
    )
    for query in queries:
        seen = index.explain(query, limit=5, allowed=lambda n: n != hidden)
        assert [(e.name, e.score, e.gain, e.feedback) for e in seen] == [
            (e.name, e.score, e.gain, e.feedback) for e in alone.explain(query, limit=5)
        ]
    assert seen[0].name == "diet_diary" and seen[0].feedback
    assert index.search(TOLD_OTHERWISE, allowed=lambda n: n != hidden) == []
    # another view of the same index counts the frequencies of its own tools: all of
    # them, as a search with no access check does
    for query in queries:
        assert [(e.name, e.score) for e in index.explain(query, allowed=lambda n: True)] == [
            (e.name, e.score) for e in index.explain(query)
        ]


def test_feedback_keeps_the_best_matches_in_their_order() -> None:
    """Feedback's words come from the best matches, and the long one holds far more of
    them; it still ranks after the one the request itself puts first. Both are
    credited with the most any tool gained."""
    catalog = Catalog()
    catalog.add_tools(
        [
            Tool("zip_zip", "Zip."),
            Tool(
                "digest",
                "Every Monday this collects what happened across the company, the numbers "
                "that moved, the people who joined, and mails a short newsletter to all.",
            ),
            Tool("weekly_numbers", "The numbers that moved this week, for everyone."),
            Tool("get_weather", "Current weather for a city."),
        ]
    )
    query = "zip the newsletter for the company"
    plain = SearchIndex(catalog, feedback_weight=0.0).search(query, limit=5)
    assert [h.name for h in plain] == ["zip_zip", "digest"]
    ranked = SearchIndex(catalog).explain(query, limit=5)
    assert ranked[0].feedback  # the best match covers a third of the request
    assert [e.name for e in ranked] == ["zip_zip", "digest", "weekly_numbers"]
    assert ranked[0].gain == ranked[1].gain == max(e.gain or 0.0 for e in ranked)
    assert ranked[2].bm25 == 0 < (ranked[2].gain or 0.0)


def test_spelling_matches_are_remembered_within_a_bound() -> None:
    """``Postings.similar`` remembers its answers for a conversation's words sent again,
    and never more than ``SIMILAR_MEMO`` of them."""
    from toolgate.search.postings import SIMILAR_MEMO, Postings

    postings = Postings()
    postings.add({"name": ["colour", "analyz"]})
    assert postings.similar("color", 0.4) == ["colour"]
    for i in range(SIMILAR_MEMO + 10):
        postings.similar(f"word{i:05d}", 0.4)
        assert len(postings._similar) <= SIMILAR_MEMO
    assert postings.similar("color", 0.4) == ["colour"]


def test_the_rerank_picks_only_the_places_asked_for_and_keeps_the_rest_in_order() -> None:
    """``Cover.rerank`` with ``places`` picks those first places exactly as the whole
    re-rank does, and the rest of the pool follows in its ranked order."""
    import numpy as np

    from toolgate.search.cover import Cover
    from toolgate.search.postings import Holders

    rng = np.random.default_rng(3)
    cover = Cover(below=0.9, weight=0.5)
    reordered = 0
    for _ in range(300):
        slots, groups = 40, int(rng.integers(2, 8))
        held = rng.random((groups, slots)) < 0.3
        holders = Holders(held, [int(x) for x in held.sum(axis=1)], slots)
        relevance = rng.random(slots)
        ranked = [int(x) for x in np.argsort(-relevance)]
        whole = cover.rerank(ranked, relevance, holders)
        reordered += whole != ranked
        for places in (1, 3, 5):
            part = cover.rerank(ranked, relevance, holders, places)
            assert part[:places] == whole[:places]
            pool = ranked[: cover.pool]
            rest = [s for s in pool if s not in part[:places]]
            assert part[places:] == rest + ranked[cover.pool :]
    assert reordered > 100  # the re-rank did run on most of them
