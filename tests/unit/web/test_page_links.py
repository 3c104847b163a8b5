"""The search page's links: each is the current search with exactly one change."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from searchsvc.core.model import SearchRequest, SearchResult
from searchsvc.web.page_links import SearchLinks, last_page, page_numbers, range_label


def links(**wanted: object) -> SearchLinks:
    request = SearchRequest(**wanted)  # type: ignore[arg-type]
    return SearchLinks(request, base="/", export_base="/api/export", feed_base="/feed.atom", default_per_page=10)


def query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


def test_defaults_stay_out_of_the_url() -> None:
    assert links().to(SearchRequest()) == "/"
    assert links().to(SearchRequest(q="graphs", per_page=10, page=1, sort="relevance")) == "/?q=graphs"
    assert query(links().to(SearchRequest(sort="newest", per_page=20, page=3))) == {
        "sort": ["newest"],
        "per_page": ["20"],
        "page": ["3"],
    }


def test_toggling_a_value_adds_or_removes_only_it_and_goes_back_to_page_one() -> None:
    current = links(q="x", subject=("cs.LG",), author=("Ada",), page=4, sort="oldest")
    assert query(current.toggle("subject", "cs.IR")) == {
        "q": ["x"],
        "subject": ["cs.LG", "cs.IR"],
        "author": ["Ada"],
        "sort": ["oldest"],
    }
    assert query(current.toggle("subject", "cs.LG")) == {"q": ["x"], "author": ["Ada"], "sort": ["oldest"]}
    assert query(current.toggle("author", "Ada")) == {"q": ["x"], "subject": ["cs.LG"], "sort": ["oldest"]}


@pytest.mark.parametrize(
    ("year_from", "year_to", "clicked", "expected"),
    [
        (None, None, 2020, (2020, 2020)),  # starts a range
        (2020, 2020, 2023, (2020, 2023)),  # extends it upwards
        (2020, 2023, 2017, (2017, 2023)),  # and downwards
        (2020, 2020, 2020, (None, None)),  # the only year: cleared
        (2018, 2023, 2020, (2020, 2020)),  # inside a wider range: narrowed to it
        (2019, None, 2015, (2015, None)),  # open-ended ranges stay open
        (None, 2019, 2022, (None, 2022)),
    ],
)
def test_year_clicks(
    year_from: int | None, year_to: int | None, clicked: int, expected: tuple[int | None, int | None]
) -> None:
    found = query(links(year_from=year_from, year_to=year_to, page=2).toggle_year(clicked))
    got = (found.get("year_from"), found.get("year_to"))
    assert got == tuple(None if year is None else [str(year)] for year in expected)
    assert "page" not in found


def test_paging_keeps_everything_else() -> None:
    current = links(q="x", subject=("cs.LG",), year_from=2019, sort="newest", per_page=5)
    assert query(current.page(3)) == {
        "q": ["x"],
        "subject": ["cs.LG"],
        "year_from": ["2019"],
        "sort": ["newest"],
        "per_page": ["5"],
        "page": ["3"],
    }


def test_a_suggestion_and_clear_all_keep_the_rest() -> None:
    current = links(q="compostional", subject=("cs.LG",), year_to=2020, sort="newest", page=2)
    assert query(current.search_for("compositional")) == {
        "q": ["compositional"],
        "subject": ["cs.LG"],
        "year_to": ["2020"],
        "sort": ["newest"],
    }
    assert query(current.clear_filters()) == {"q": ["compostional"], "sort": ["newest"]}


def test_chips_each_remove_one_filter() -> None:
    chips = links(q="x", subject=("cs.LG", "cs.IR"), author=("Ada",), year_from=2019, year_to=2021).chips()
    assert [(chip.facet, chip.label) for chip in chips] == [
        ("year", "2019–2021"),
        ("subject", "cs.LG"),
        ("subject", "cs.IR"),
        ("author", "Ada"),
    ]
    assert query(chips[0].remove) == {"q": ["x"], "subject": ["cs.LG", "cs.IR"], "author": ["Ada"]}
    assert query(chips[2].remove)["subject"] == ["cs.LG"]


def test_range_labels() -> None:
    assert range_label(2020, 2020) == "2020"
    assert range_label(2019, None) == "from 2019"
    assert range_label(None, 2019) == "until 2019"


def test_hidden_fields_carry_what_the_form_does_not_show() -> None:
    current = links(q="x", subject=("cs.LG",), sort="newest", per_page=20, page=3)
    assert current.hidden_fields("q", "sort") == [("subject", "cs.LG"), ("per_page", "20")]  # never the page


def test_export_is_the_whole_search_without_paging() -> None:
    current = links(q="x", author=("Ada",), page=3, per_page=20)
    url = current.export("csv")
    assert url.startswith("/api/export?")
    assert query(url) == {"format": ["csv"], "q": ["x"], "author": ["Ada"]}


def result(total: int, per_page: int) -> SearchResult:
    return SearchResult(request=SearchRequest(per_page=per_page), total=total, hits=[])


def test_last_page_never_empty_and_never_past_the_result_window() -> None:
    assert last_page(result(28, 7), max_result_window=10_000) == 4
    assert last_page(result(29, 7), max_result_window=10_000) == 5
    assert last_page(result(0, 10), max_result_window=10_000) == 0
    assert last_page(result(50_000, 100), max_result_window=10_000) == 100


@pytest.mark.parametrize(
    ("current", "last", "expected"),
    [
        (1, 0, []),
        (1, 1, [1]),
        (1, 3, [1, 2, 3]),
        (1, 10, [1, 2, 3, None, 10]),
        (6, 10, [1, None, 4, 5, 6, 7, 8, None, 10]),
        (10, 10, [1, None, 8, 9, 10]),
        (4, 7, [1, 2, 3, 4, 5, 6, 7]),
    ],
)
def test_page_numbers(current: int, last: int, expected: list[int | None]) -> None:
    assert page_numbers(current, last) == expected
