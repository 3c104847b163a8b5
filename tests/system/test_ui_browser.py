"""The query UI in a real browser (Debian's chromium), served by the Procfile's gunicorn.

The index holds the seeds plus records whose title, abstract and author carry markup that
would run script if it reached the page unescaped. Every test fails on any dialog, script
error or console error (a Content-Security-Policy violation is one), so each also checks
that the page's own stylesheet and script pass the policy. Every test also fails on any
accessibility violation axe-core finds in the pages it loads and in the state it ends in
(tests/helpers/accessibility.py), and one test audits every kind of page at both widths.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

from tests.helpers.accessibility import assert_accessible, audit_once
from tests.helpers.browser import DESKTOP, PHONE, TIMEOUT_MS, WatchedPage, launch, screenshot, watch
from tests.helpers.paths import SEEDS
from tests.helpers.records import jsonl
from tests.helpers.servers import get, get_text, procfile_web, rebuild_index

INJECTED_TITLE = "Robust parsing of <img src=x onerror=alert(1)> in scholarly titles"
INJECTED_AUTHOR = "Eve <svg onload=alert(4)> Mallory"
INJECTED_VENUE = "Proceedings of the <i onmouseover=alert(5)>Workshop</i> on Injection"
MATH_TITLE = r"Sorting in $O(n \log n)$ time with few comparisons"
MATHML = "http://www.w3.org/1998/Math/MathML"
INJECTED_RECORDS = [
    {
        "id": "injected-markup",
        "title": INJECTED_TITLE,
        "abstract": "Abstracts may hold <script>alert(2)</script> and <b onmouseover=alert(3)>tags</b> too.",
        "year": 2018,
        "categories": ["cs.CR"],
        "authors": [INJECTED_AUTHOR],
        "venue": INJECTED_VENUE,
        "date": "2018-06-29",
        "citations": 1234,
        "citations_source": "OpenAlex",
        "orcids": {INJECTED_AUTHOR: "0000-0002-1825-0097"},
    },
    {
        # TeX as arXiv writes it (issue #31): shown as MathML, and its commands are no markup either.
        "id": "math-sorting",
        "title": MATH_TITLE,
        "abstract": (
            r"The $\mathrm{softmax}$ of attention with an $\ell_1$ penalty, in $\text{<script>alert(6)</script>}$ "
            r"and $\href{javascript:alert(7)}{x}$ with \emph{few} comparisons <img src=x onerror=alert(8)>."
        ),
        "year": 2017,
        "categories": ["cs.DS"],
        "authors": ["Ada Sorter"],
    },
]
PAPERS = 28 + len(INJECTED_RECORDS)

expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The Procfile's web: line on an index of the seeds and the injected records."""
    folder = tmp_path_factory.mktemp("ui-server")
    injected = folder / "injected.jsonl"
    injected.write_text(jsonl(INJECTED_RECORDS), encoding="utf-8")
    rebuild_index(folder / "index", SEEDS, injected)
    with procfile_web(folder, folder / "index") as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = launch(playwright)
        yield browser
        browser.close()


@contextmanager
def watched_page(browser: Browser, **context_options: Any) -> Iterator[WatchedPage]:
    """A page in a fresh browser context; on leaving, the state it ends in has no accessibility
    violation, no dialog opened and no error occurred."""
    context = browser.new_context(**{"viewport": DESKTOP, **context_options})
    try:
        watched = watch(context)
        yield watched
        # axe-core runs as script: a page with script off cannot be audited (its markup is
        # the same, and audited with script on by every other test).
        if watched.page.url.startswith("http") and context_options.get("java_script_enabled", True):
            assert_accessible(watched.page, "the state the test ends in")
    finally:
        context.close()
    assert watched.dialogs == [], "a dialog opened: script from the data ran"
    assert watched.errors == []


@pytest.fixture
def watched(browser: Browser) -> Iterator[WatchedPage]:
    with watched_page(browser) as watched:
        yield watched


@pytest.fixture
def page(watched: WatchedPage) -> Page:
    return watched.page


def loaded(page: Page) -> Page:
    """The page once its current document has loaded.

    A click that navigates returns when the new document is committed, and a navigation the
    page's script starts only shows in the URL: reading elements before the load could see a
    half-parsed page.
    """
    page.wait_for_load_state("load")
    audit_once(page, "a page the test loaded")
    return page


def follow(target: Locator) -> None:
    """Click a link or button that loads another page; return once that page has loaded."""
    with target.page.expect_navigation():
        target.click()


def follow_key(page: Page, key: str) -> None:
    """Press a key that submits a form; return once the page it loads has loaded."""
    with page.expect_navigation():
        page.keyboard.press(key)


def typed_in_the_search_box(page: Page, url: str, text: str) -> Locator:
    """Open `url` and type `text` into its search box: the suggestions' list box."""
    page.goto(url)
    loaded(page).get_by_role("combobox", name="Search papers").focus()
    page.keyboard.type(text)
    return page.get_by_role("listbox", name="Suggestions")


def texts(page: Page, selector: str) -> list[str]:
    return loaded(page).locator(selector).all_inner_texts()


def params(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def total(page: Page) -> int:
    heading = loaded(page).locator("#results-heading").inner_text()
    found = re.match(r"([\d,]+) papers?|No papers", heading)
    assert found, heading
    return int(found.group(1).replace(",", "")) if found.group(1) else 0


def facet_counts(page: Page, facet: str) -> dict[str, int]:
    values = loaded(page).locator(f".facet-{facet} .facet-value")
    return {
        values.nth(i).locator(".label").inner_text(): int(values.nth(i).locator(".count").inner_text().replace(",", ""))
        for i in range(values.count())
    }


def api_total(base: str, **query: Any) -> int:
    from urllib.parse import urlencode

    status, body = get(f"{base}/api/search?{urlencode(query, doseq=True)}&per_page=1")
    assert status == 200, body
    return body["total"]


# Searching --------------------------------------------------------------------------


def test_type_a_query_and_submit(base: str, page: Page) -> None:
    page.goto(base)
    expect(page.locator("#results-heading")).to_contain_text(f"{PAPERS} papers")
    page.get_by_label("Search papers").fill("compositional embeddings")
    follow_key(page, "Enter")

    expect(page).to_have_url(re.compile(r"q=compositional\+embeddings"))
    first = page.locator(".hit").first
    expect(first.locator(".hit-title")).to_contain_text("Compositional Embeddings Using Complementary Partitions")
    expect(first.locator(".hit-title mark").first).to_have_text(re.compile("compositional", re.IGNORECASE))
    assert 0 < total(page) < PAPERS
    expect(page.get_by_label("Search papers")).to_have_value("compositional embeddings")
    screenshot(page, "search-results")


def test_two_subject_facets_change_counts_and_results(base: str, page: Page) -> None:
    page.goto(f"{base}/?q=training")
    before = facet_counts(page, "subject")
    years_before = facet_counts_of_years(page)
    assert {"cs.LG", "cs.DC"} <= set(before), before

    follow(page.locator(".facet-subject .facet-value", has_text="cs.LG"))
    expect(page.locator(".chip", has_text="cs.LG")).to_be_visible()
    assert params(page)["subject"] == ["cs.LG"]
    assert total(page) == before["cs.LG"]  # the count beside the value was the number of results
    assert facet_counts(page, "subject")["cs.DC"] == before["cs.DC"]  # multi-select: own facet not narrowed
    assert facet_counts_of_years(page) != years_before  # the other facets are

    follow(page.locator(".facet-subject .facet-value", has_text="cs.DC"))
    expect(page.locator(".chip", has_text="cs.DC")).to_be_visible()
    assert params(page)["subject"] == ["cs.LG", "cs.DC"]
    both = api_total(base, q="training", subject=["cs.LG", "cs.DC"])
    assert total(page) == both > before["cs.LG"]
    expect(page.locator(".facet-subject .facet-value.selected")).to_have_count(2)
    for subjects in texts(page, ".hit .meta"):
        assert "cs.LG" in subjects or "cs.DC" in subjects

    follow(page.locator(".chip", has_text="cs.LG"))  # removing one chip keeps the other
    assert params(page)["subject"] == ["cs.DC"]
    follow(page.get_by_role("link", name="Clear all filters"))
    assert "subject" not in params(page) and params(page)["q"] == ["training"]


def facet_counts_of_years(page: Page) -> list[str | None]:
    bars = loaded(page).locator(".histogram a")
    return [bars.nth(i).get_attribute("aria-label") for i in range(bars.count())]


def test_paging_forward_and_back_keeps_filters_and_sort(base: str, page: Page) -> None:
    page.goto(base)
    follow(page.locator(".facet-subject .facet-value", has_text="cs.LG"))
    with page.expect_navigation():  # the page's script searches again at once
        page.get_by_label("Sort").select_option("oldest")
    expect(page).to_have_url(re.compile("sort=oldest"))
    first_page = texts(page, ".hit-title")
    assert total(page) == 12 and len(first_page) == 10

    follow(page.get_by_role("link", name="Next →"))
    expect(page).to_have_url(re.compile("page=2"))
    assert params(page) == {"subject": ["cs.LG"], "sort": ["oldest"], "page": ["2"]}
    expect(page.locator(".hit")).to_have_count(2)
    expect(page.get_by_role("link", name="Next →")).to_have_count(0)  # never a link to an empty page
    expect(page.locator(".chip", has_text="cs.LG")).to_be_visible()
    expect(page.get_by_label("Sort")).to_have_value("oldest")
    expect(page.locator(".pagination [aria-current=page]")).to_have_text("2")

    follow(page.get_by_role("link", name="← Previous"))
    expect(page).to_have_url(re.compile(r"/\?subject=cs\.LG&sort=oldest$"))
    assert texts(page, ".hit-title") == first_page
    page.go_back()
    expect(page).to_have_url(re.compile("page=2"))
    page.go_forward()
    assert texts(page, ".hit-title") == first_page


def test_a_new_query_keeps_the_filters(base: str, page: Page) -> None:
    page.goto(f"{base}/?subject=cs.IR")
    page.get_by_label("Search papers").fill("embedding")
    follow(page.get_by_role("button", name="Search"))
    expect(page).to_have_url(re.compile("q=embedding"))
    assert params(page)["subject"] == ["cs.IR"]


def test_the_last_page_is_never_empty(base: str, page: Page) -> None:
    page.goto(f"{base}/?q=&per_page=7&page=4")  # 28 seed papers + 1: 5 pages of 7
    expect(page.locator(".pagination li a").last).to_have_text("Next →")
    page.goto(f"{base}/?subject=cs.LG&per_page=6")  # exactly 12: two full pages
    labels = texts(page, ".pagination a")
    assert labels == ["1", "2", "Next →"]
    page.goto(f"{base}/?subject=cs.LG&per_page=6&page=3")  # typed by hand: says so, links back
    expect(page.locator(".empty-state")).to_contain_text("past the end")
    follow(page.get_by_role("link", name="Go to the last page (page 2)"))
    expect(page.locator(".hit")).to_have_count(6)


def test_year_histogram_filters_by_year_and_range(base: str, page: Page) -> None:
    page.goto(base)
    follow(page.locator(".histogram a[aria-label^='2021:']"))
    expect(page.locator(".chip", has_text="2021")).to_be_visible()
    assert params(page)["year_from"] == ["2021"] and params(page)["year_to"] == ["2021"]
    assert {text.split()[0] for text in texts(page, ".hit .year")} == {"2021"}

    follow(page.locator(".histogram a[aria-label^='2023:']"))  # a second year extends the range
    expect(page.locator(".chip", has_text="2021–2023")).to_be_visible()
    assert total(page) == api_total(base, year_from=2021, year_to=2023)

    page.get_by_label("From year").fill("2019")
    page.get_by_label("to year", exact=True).fill("2020")
    follow(page.get_by_role("button", name="Apply the years"))
    expect(page.locator(".chip", has_text="2019–2020")).to_be_visible()
    assert {int(year) for year in texts(page, ".hit .year")} <= {2019, 2020}


def test_dates_and_the_most_cited_from_the_page(base: str, page: Page) -> None:
    """Issue #31: the date range form (behind "Between dates") and the `cited` sort."""
    page.goto(f"{base}/?q=parsing")
    page.get_by_text("Between dates").click()
    page.get_by_label("From date").fill("2018-06")
    page.get_by_label("to date", exact=True).fill("2018-06-30")
    follow(page.get_by_role("button", name="Apply the dates"))
    expect(page.locator(".chip", has_text="2018-06–2018-06-30")).to_be_visible()
    assert params(page)["date_from"] == ["2018-06"] and params(page)["date_to"] == ["2018-06-30"]
    assert texts(page, ".hit .year") == ["2018-06-29"]  # the injected paper, the one dated in June 2018
    page.goto(f"{base}/?q=parsing")
    page.get_by_label("Sort").select_option("cited")
    follow(page.get_by_role("button", name="Search", exact=True))
    assert params(page)["sort"] == ["cited"]
    expect(page.locator(".hit .citations").first).to_have_text("1,234 citations")


def test_author_link_opens_the_authors_page_which_filters_by_them(base: str, page: Page) -> None:
    page.goto(f"{base}/?q=checkpointing")
    author = page.locator(".hit .author").first
    name = author.inner_text()
    follow(author)
    expect(page.locator(".author-name")).to_have_text(name)
    for authors in texts(page, ".hit .authors"):
        assert name in authors
    coauthor = page.locator(".facet-coauthors .coauthor").first
    other = coauthor.locator(".label").inner_text()
    follow(coauthor)
    expect(page.locator(".author-name")).to_have_text(other)
    follow(page.get_by_role("link", name="Search within these papers"))  # filtering by an author stays a search
    expect(page.locator(".chip", has_text=other)).to_be_visible()
    assert params(page)["author"] == [other]


def expect_failed_load(watched: WatchedPage, status: int) -> None:
    """The browser logs a page answered with an error status as a console error: expected here."""
    assert [error for error in watched.errors if f"status of {status}" in error], watched.errors
    watched.errors[:] = [error for error in watched.errors if f"status of {status}" not in error]


def test_find_an_author_among_many(base: str, page: Page) -> None:
    page.goto(f"{base}/?q=embedding")
    page.get_by_label("Find an author").fill("mudi")
    follow(page.get_by_role("button", name="Find an author"))
    assert params(page) == {"q": ["embedding"], "find_author": ["mudi"]}
    expect(page.locator(".facet-author .facet-value")).to_have_count(1)
    follow(page.locator(".facet-author .facet-value", has_text="Dheevatsa Mudigere"))
    expect(page.locator(".chip", has_text="Dheevatsa Mudigere")).to_be_visible()
    assert params(page) == {"q": ["embedding"], "author": ["Dheevatsa Mudigere"]}


def test_syntax_error_is_a_friendly_message_with_the_form_still_filled(base: str, watched: WatchedPage) -> None:
    page = watched.page
    page.goto(base)
    page.get_by_label("Search papers").fill("embedding AND")
    response_status = []
    # The page's own loads only: typing also asks for suggestions (/api/suggest?q=...), answered 200.
    page.on(
        "response",
        lambda response: response_status.append(response.status) if response.request.is_navigation_request() else None,
    )
    follow_key(page, "Enter")
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("'AND' needs a search term after it (column 11)")
    expect(page.get_by_label("Search papers")).to_have_value("embedding AND")
    expect(page.get_by_label("Search papers")).to_have_attribute("aria-invalid", "true")
    assert response_status == [400]
    assert "Traceback" not in page.content()
    expect_failed_load(watched, 400)


def test_did_you_mean_and_the_empty_state(base: str, page: Page) -> None:
    page.goto(f"{base}/?q=moel&subject=cs.LG")  # four letters: too short for typo tolerance
    expect(page.locator("#results-heading")).to_contain_text("No papers found")
    empty = page.locator(".empty-state")
    expect(empty).to_contain_text("Use fewer or more general words")
    expect(empty.get_by_role("link", name="search without any filter")).to_be_visible()
    screenshot(page, "empty-state")

    follow(page.locator(".suggestion a"))
    expect(page).to_have_url(re.compile("q=model"))
    assert params(page)["subject"] == ["cs.LG"]  # the suggestion keeps the filters
    assert total(page) > 0


def test_a_misspelt_word_finds_papers_and_says_what_it_matched(base: str, page: Page) -> None:
    page.goto(f"{base}/?q=compostional&subject=cs.LG")
    assert total(page) > 0
    expect(page.locator(".typos")).to_contain_text("Also matched compostional as compositional")
    expect(page.locator(".suggestion")).to_contain_text("Did you mean compositional?")
    screenshot(page, "typos")
    follow(page.get_by_role("link", name="Search only the words as typed"))
    assert params(page)["exact"] == ["true"] and params(page)["subject"] == ["cs.LG"]
    expect(page.locator("#results-heading")).to_contain_text("No papers found")


# Pages ------------------------------------------------------------------------------


def test_paper_page_with_related_papers_and_copy_bibtex(browser: Browser, base: str) -> None:
    with watched_page(browser, permissions=["clipboard-read", "clipboard-write"]) as watched:
        page = watched.page
        page.goto(f"{base}/?q=compositional+embeddings")
        title = page.locator(".hit-title a").first.inner_text()
        follow(page.locator(".hit-title a").first)

        expect(page.get_by_role("heading", level=1)).to_have_text(title)
        expect(page.locator(".paper-abstract")).not_to_be_empty()
        expect(page.locator(".related .hit")).not_to_have_count(0)
        bibtex = page.locator("#bibtex").inner_text()
        assert bibtex.startswith("@") and "compositional" in bibtex.lower()
        page.get_by_role("button", name="Copy BibTeX").click()
        expect(page.locator(".copy-status")).to_have_text("Copied.")
        assert page.evaluate("navigator.clipboard.readText()") == bibtex
        screenshot(page, "paper")
        # Issue #31: what a reference manager reads from the page, and the citation as files.
        tags = page.locator('head meta[name^="citation_"]')
        assert tags.first.get_attribute("name") == "citation_title"
        assert tags.first.get_attribute("content") == title
        authors = page.locator('head meta[name="citation_author"]').evaluate_all("tags => tags.map(t => t.content)")
        assert authors and authors == page.locator("article.paper > .meta a.author").all_inner_texts()
        with page.expect_download() as download:
            page.get_by_role("link", name="RIS file").click()
        assert download.value.suggested_filename == "searchsvc-export.ris"
        ris = Path(download.value.path()).read_text(encoding="utf-8")
        assert ris.startswith("TY  - GEN\n") and f"TI  - {title}\n" in ris and ris.count("ER  - ") == 1
        with page.expect_download() as download:
            page.get_by_role("link", name="BibTeX file").click()
        assert Path(download.value.path()).read_text(encoding="utf-8") == bibtex.rstrip("\n") + "\n"

        follow(page.locator(".related .hit-title a").first)  # related papers lead on
        expect(page.get_by_role("heading", level=1)).not_to_have_text(title)


def test_unknown_paper_is_an_html_404_page(base: str, watched: WatchedPage) -> None:
    page = watched.page
    response = page.goto(f"{base}/papers/no-such-paper")
    assert response is not None and response.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
    expect(page.get_by_role("link", name="Back to search")).to_be_visible()
    expect_failed_load(watched, 404)


def test_export_links_download_the_current_results(base: str, page: Page) -> None:
    page.goto(f"{base}/?q=embedding&subject=cs.IR")
    shown = total(page)
    href = page.get_by_role("link", name="CSV").get_attribute("href")
    assert href is not None
    assert parse_qs(urlsplit(href).query) == {"format": ["csv"], "q": ["embedding"], "subject": ["cs.IR"]}
    with page.expect_download() as download:
        page.get_by_role("link", name="BibTeX").click()
    assert download.value.suggested_filename == "searchsvc-export.bib"
    assert Path(download.value.path()).read_text(encoding="utf-8").count("\n@") + 1 == shown


def test_chosen_papers_download_as_a_file_of_exactly_them(base: str, page: Page) -> None:
    page.goto(f"{base}/?q=embedding")
    hits = loaded(page).locator("li.hit")
    titles = [hit.locator("h2").inner_text() for hit in hits.all()[1:3]]
    for hit in hits.all()[1:3]:
        hit.get_by_role("checkbox", name=re.compile("^Choose")).check()
    with page.expect_download() as download:
        page.get_by_role("button", name="Download the chosen papers as RIS").click()
    assert download.value.suggested_filename == "searchsvc-export.ris"
    ris = Path(download.value.path()).read_text(encoding="utf-8")
    assert ris.count("ER  - ") == 2 and all(f"TI  - {title}\n" in ris for title in titles)


def test_follow_this_search_links_its_feed(base: str, page: Page) -> None:
    page.goto(f"{base}/?q=embedding&subject=cs.IR&sort=oldest&page=1")
    visible = page.get_by_role("link", name="Follow this search").get_attribute("href")
    announced = page.locator('head link[rel="alternate"][type="application/atom+xml"]').get_attribute("href")
    assert visible == announced and visible is not None
    assert urlsplit(visible).path == "/feed.atom"
    assert parse_qs(urlsplit(visible).query) == {"q": ["embedding"], "subject": ["cs.IR"]}  # newest first, always
    status, body = get_text(f"{base}{visible}")
    assert status == 200 and body.startswith("<?xml") and "<feed" in body


# Safety -----------------------------------------------------------------------------


@pytest.mark.reliability
def test_markup_in_records_renders_as_text_and_runs_nothing(browser: Browser, base: str) -> None:
    """With the Content-Security-Policy bypassed, so only the escaping stands between the data
    and a running script: a dialog would open if any of it reached the page as markup."""
    with watched_page(browser, bypass_csp=True) as watched:
        page = watched.page
        page.goto(f"{base}/?q=scholarly+titles")
        title = page.locator(".hit-title a").first
        expect(title).to_have_text(INJECTED_TITLE)
        expect(page.locator(".hit-title img, .hit img, .hit script, .hit svg, .hit b")).to_have_count(0)
        expect(page.locator(".hit .author").first).to_have_text(INJECTED_AUTHOR)
        expect(page.locator(".hit .venue").first).to_have_text(INJECTED_VENUE)
        expect(page.locator(".hit i")).to_have_count(0)
        page.locator(".hit summary").first.click()
        expect(page.locator(".hit .abstract p").first).to_contain_text("<script>alert(2)</script>")

        follow(page.locator(".hit .author").first)  # the markup travels through a URL to the author's page
        expect(page.locator(".author-name")).to_have_text(INJECTED_AUTHOR)
        follow(page.get_by_role("link", name="Search within these papers"))  # ... and through a chip
        expect(page.locator(".chip", has_text=INJECTED_AUTHOR)).to_be_visible()
        assert total(page) == 1  # the injected paper: its title is the first hit again

        follow(title)
        expect(page.get_by_role("heading", level=1)).to_have_text(INJECTED_TITLE)
        expect(page.locator("main img, main script, main svg, main b, main i")).to_have_count(0)
        page.wait_for_timeout(300)  # an onerror handler would fire as the broken image fails to load
        assert watched.dialogs == []


@pytest.mark.reliability
def test_tex_math_shows_as_math_and_runs_nothing(browser: Browser, base: str) -> None:
    """A title's `$O(n \\log n)$` is a rendered MathML element beside marked words, not dollars and
    backslashes, on the results page and the paper page; TeX that would be markup stays text, with
    the Content-Security-Policy bypassed (a dialog would open if any of it ran)."""
    with watched_page(browser, bypass_csp=True) as watched:
        page = watched.page
        page.goto(f"{base}/?q=sorting+comparisons")
        title = loaded(page).locator(".hit-title a").first
        math = title.locator("math")
        expect(math).to_have_count(1)
        assert math.evaluate("element => element.namespaceURI") == MATHML
        box = math.bounding_box()
        assert box is not None and box["width"] > 20 and box["height"] > 5  # laid out, not an unknown element
        text = title.inner_text()
        assert "$" not in text and "\\" not in text and "log" in text, text
        expect(title.locator("mark").first).to_have_text(re.compile("sorting", re.IGNORECASE))
        snippet = page.locator(".hit .snippet").first
        expect(snippet.locator("mark").first).to_have_text("comparisons")
        expect(page.locator(".hit script, .hit img, .hit [href^='javascript']")).to_have_count(0)
        screenshot(page, "math-results", full_page=False)

        follow(title)
        heading = page.get_by_role("heading", level=1)
        expect(heading.locator("math")).to_have_count(1)
        abstract = page.locator(".paper-abstract")
        # softmax, l1 and \href's x without its link; \text{<script>…} is shown as written
        expect(abstract.locator("math")).to_have_count(3)
        expect(abstract.locator("[href], script, img")).to_have_count(0)
        expect(abstract).to_contain_text(r"$\text{<script>alert(6)</script>}$")
        assert "mathrm" not in abstract.inner_text()
        assert page.title() == "Sorting in O(n log n) time with few comparisons – searchsvc"
        screenshot(page, "math-paper", full_page=False)
        page.wait_for_timeout(300)  # an onerror handler would fire as a broken image fails to load
        assert watched.dialogs == []


def test_a_paper_page_tells_a_reference_manager_what_it_is(base: str, page: Page) -> None:
    """Issue #31: the Highwire tags Zotero's connector reads, the venue, date, citation count and
    ORCID iD on the page, and the Cite block's downloads."""
    page.goto(f"{base}/papers/injected-markup")

    def meta(name: str) -> list[str | None]:
        return [tag.get_attribute("content") for tag in page.locator(f'meta[name="{name}"]').all()]

    assert meta("citation_title") == [INJECTED_TITLE]
    assert meta("citation_author") == [INJECTED_AUTHOR]
    assert meta("citation_publication_date") == ["2018/06/29"]
    assert meta("citation_conference_title") == [INJECTED_VENUE]  # proceedings, not a journal
    assert meta("citation_journal_title") == []
    meta_line = page.locator(".paper .meta").first
    expect(meta_line.locator("time")).to_have_attribute("datetime", "2018-06-29")
    expect(meta_line.locator(".venue")).to_have_text(INJECTED_VENUE)
    expect(meta_line.locator(".citations")).to_have_text("1,234 citations")
    orcid = meta_line.get_by_role("link", name=f"ORCID iD of {INJECTED_AUTHOR}: 0000-0002-1825-0097")
    expect(orcid).to_have_attribute("href", "https://orcid.org/0000-0002-1825-0097")
    files = (
        ("BibTeX file", "@inproceedings{"),
        ("RIS file", "TY  - CPAPER"),
        ("CSL-JSON file", '[\n{"id": "injected-markup"'),
    )
    for label, starts in files:
        with page.expect_download() as download:
            page.get_by_role("link", name=label).click()
        text = Path(download.value.path()).read_text(encoding="utf-8")
        assert text.startswith(starts) and "Injection" in text, text[:200]


@pytest.mark.reliability
def test_security_headers_on_pages(base: str, watched: WatchedPage) -> None:
    page = watched.page
    for path in ("/", "/papers/injected-markup", "/authors/Maxim%20Naumov", "/no-such-page"):
        response = page.goto(f"{base}{path}")
        assert response is not None
        headers = response.headers
        policy = headers["content-security-policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "no-referrer"
    expect_failed_load(watched, 404)


# Keyboard, no script, phone width -----------------------------------------------------


def test_keyboard_only(base: str, page: Page) -> None:
    page.goto(f"{base}/?q=embedding")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("/")
    expect(page.get_by_label("Search papers")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_label("Sort")).to_be_focused()

    # Every control has a label; the page has one h1 and its headings are in order.
    unlabelled = page.evaluate(
        "[...document.querySelectorAll('input:not([type=hidden]), select')]"
        ".filter(e => e.labels.length === 0).map(e => e.outerHTML)"
    )
    assert unlabelled == []
    levels = [int(tag[1]) for tag in page.evaluate("[...document.querySelectorAll('h1,h2,h3')].map(h => h.tagName)")]
    assert levels.count(1) == 1 and levels[0] == 1
    assert all(after - before <= 1 for before, after in zip(levels, levels[1:], strict=False))

    # A facet value is reached and chosen with the keyboard alone, and the focus ring is visible.
    facet = page.locator(".facet-subject .facet-value").first
    facet.focus()
    outline = facet.evaluate("e => getComputedStyle(e).outlineStyle")
    assert outline != "none"
    follow_key(page, "Enter")
    expect(page).to_have_url(re.compile("subject="))


def test_suggestions_as_you_type_by_keyboard_alone(base: str, page: Page) -> None:
    """The search box is an ARIA 1.2 combobox: typing lists suggestions, arrows move the active
    one, Enter searches it; the count is announced, and the audit passes with the list open."""
    page.goto(f"{base}/")
    loaded(page)
    page.keyboard.press("/")
    box = page.get_by_role("combobox", name="Search papers")
    expect(box).to_be_focused()
    page.keyboard.type("memory compo")
    listbox = page.get_by_role("listbox", name="Suggestions")
    expect(listbox).to_be_visible()
    expect(box).to_have_attribute("aria-expanded", "true")
    expect(box).to_have_attribute("aria-controls", listbox.get_attribute("id") or "")
    options = listbox.get_by_role("option")
    expect(listbox.get_by_role("option", name=re.compile("^compositional 1 paper"))).to_have_count(1)
    count = options.count()
    expect(page.locator(".search-form [role=status]")).to_have_text(f"{count} suggestion{'s' if count > 1 else ''}")
    assert_accessible(page, "the suggestions listed")

    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowUp")
    first = options.first
    expect(first).to_have_attribute("aria-selected", "true")
    expect(box).to_have_attribute("aria-activedescendant", first.get_attribute("id") or "")
    expect(listbox.locator("[aria-selected=true]")).to_have_count(1)
    assert_accessible(page, "a suggestion active")
    chosen = first.get_attribute("data-text")
    assert chosen is not None and chosen.startswith("memory compo")
    follow_key(page, "Enter")
    assert params(loaded(page))["q"] == [chosen]
    expect(page.get_by_role("combobox", name="Search papers")).to_have_value(chosen)


def test_suggestions_are_counted_under_the_page_filters(base: str, page: Page) -> None:
    """The page's filters narrow what is suggested, and picking a suggestion keeps them."""
    listbox = typed_in_the_search_box(page, f"{base}/?author=Maxim+Naumov&year_from=2024", "naum")
    expected = get(f"{base}/api/search?author=Maxim+Naumov&year_from=2024")[1]["total"]
    assert 1 < expected < get(f"{base}/api/search?author=Maxim+Naumov")[1]["total"]
    naumov = listbox.get_by_role("option", name=re.compile(f"^Maxim Naumov author, {expected} papers$"))
    expect(naumov).to_have_count(1)
    follow(naumov)
    chosen = params(loaded(page))
    assert (chosen["q"], chosen["author"], chosen["year_from"]) == (
        ['author:"Maxim Naumov"'],
        ["Maxim Naumov"],
        ["2024"],
    )


def test_more_like_this_and_more_like_the_chosen_papers(base: str, page: Page) -> None:
    """Each result links to the papers like it; papers chosen by their boxes to the papers like
    them all. The results page with those controls passes the audit, as does the answer."""
    page.goto(f"{base}/?q=embedding")
    first_two = [hit["id"] for hit in get(f"{base}/api/search?q=embedding")[1]["results"][:2]]
    assert_accessible(loaded(page), "results with their more-like-this controls")
    hits = page.locator("li.hit")
    follow(hits.first.get_by_role("link", name=re.compile("^More like this")))
    assert params(loaded(page))["q"] == [f'similar:"{first_two[0]}"']
    expected = [hit["id"] for hit in get(f"{base}/api/similar?id={first_two[0]}")[1]["results"]]
    shown = [link.get_attribute("href") for link in page.locator("li.hit h2 a").all()]
    assert shown == [f"/papers/{paper_id}" for paper_id in expected]
    assert first_two[0] not in expected
    assert_accessible(page, "papers like one")

    page.goto(f"{base}/?q=embedding")
    for hit in loaded(page).locator("li.hit").all()[:2]:
        hit.get_by_role("checkbox", name=re.compile("^Choose")).check()
    follow(page.get_by_role("button", name="More like the chosen papers"))
    assert params(loaded(page))["q"] == [" ".join(f'similar:"{paper_id}"' for paper_id in first_two)]
    assert page.locator("li.hit").count() > 0


def test_escape_closes_the_suggestions_and_enter_searches_what_was_typed(base: str, page: Page) -> None:
    listbox = typed_in_the_search_box(page, f"{base}/", "compo")
    box = page.get_by_role("combobox", name="Search papers")
    expect(listbox).to_be_visible()
    page.keyboard.press("Escape")
    expect(listbox).to_be_hidden()
    expect(box).to_have_attribute("aria-expanded", "false")
    expect(box).to_have_value("compo")
    follow_key(page, "Enter")
    assert params(loaded(page))["q"] == ["compo"]


def test_works_without_javascript(browser: Browser, base: str) -> None:
    with watched_page(browser, java_script_enabled=False) as watched:
        page = watched.page
        page.goto(base)
        page.get_by_label("Search papers").fill("embedding")
        page.get_by_label("Sort").select_option("newest")
        follow(page.get_by_role("button", name="Search"))
        assert params(page) == {"q": ["embedding"], "sort": ["newest"]}
        follow(page.locator(".facet-subject .facet-value").first)
        assert "subject" in params(page)

        hit = page.locator(".hit").first
        expect(hit.locator(".snippet")).to_be_visible()
        hit.get_by_text("Show full abstract").click()  # <details>: no script needed
        expect(hit.locator(".abstract p")).to_be_visible()
        expect(hit.locator(".snippet")).to_be_hidden()
        hit.get_by_text("Hide full abstract").click()
        expect(hit.locator(".snippet")).to_be_visible()

        follow(page.locator(".hit-title a").first)
        expect(page.get_by_role("button", name="Copy BibTeX")).to_be_hidden()  # needs script; text stays selectable
        expect(page.locator("#bibtex")).to_be_visible()


PAGE_STATES = {
    "no query": "/",
    "results": "/?q=embedding+tables",
    "filters and a chip": "/?q=training&subject=cs.LG&author=Maxim+Naumov&year_from=2019",
    "empty, with did-you-mean": "/?q=moel&subject=cs.LG",
    "results through a misspelt word": "/?q=compostional+embeddings",
    "results with an acronym's long form also searched": "/?q=DLRM",
    "a syntax error": "/?q=embedding+AND",
    "an author lookup": "/?q=embedding&find_author=na",
    "a venue lookup": "/?find_venue=work",
    "a later page": "/?q=embedding&per_page=5&page=2",
    "a paper": "/papers/injected-markup",
    "results with math": "/?q=sorting+comparisons",
    "a paper with math": "/papers/math-sorting",
    "not found": "/papers/no-such-paper",
    "an author": "/authors/Maxim%20Naumov?sort=newest",
    "an unknown author, with the closest names": "/authors/Maxim%20Naumof",
}


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_every_kind_of_page_passes_the_accessibility_audit(
    browser: Browser, base: str, viewport: dict[str, int]
) -> None:
    """axe-core's every rule, on each kind of page at both widths: at phone width the sort's
    label was hidden with display:none, which left the select without a name (critical)."""
    with watched_page(browser, viewport=viewport) as watched:
        for state, path in PAGE_STATES.items():
            watched.page.goto(f"{base}{path}")
            watched.page.wait_for_load_state("load")
            assert_accessible(watched.page, state)
        expect_failed_load(watched, 400)  # the syntax error
        expect_failed_load(watched, 404)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_why_this_result_opens_under_each_result_and_passes_the_audit(
    browser: Browser, base: str, viewport: dict[str, int]
) -> None:
    """Each result's "Why this result" is closed until opened, shows the API's explanation, and the page
    passes axe-core with every one open, at both widths, without growing wider than the screen."""
    q = "memory-efficient recommendation"
    status, body = get(f"{base}/api/search?q={q.replace(' ', '+')}&explain=true")
    assert status == 200, body
    with watched_page(browser, viewport=viewport) as watched:
        page = watched.page
        page.goto(f"{base}/?q={q.replace(' ', '+')}")
        whys = loaded(page).locator(".hit details.why")
        assert whys.count() == page.locator(".hit").count() == len(body["results"])
        first, explained = whys.first, body["results"][0]["explanation"]
        expect(first.locator("table")).to_be_hidden()
        first.locator("summary").click()
        expect(first.locator("table")).to_be_visible()
        expect(first).to_contain_text(f"score {explained['score']:.4f}")
        expect(first.locator("tfoot")).to_contain_text(f"{explained['lexical']:.4f}")
        expect(first.locator("tbody th").first).to_have_text(explained["words"][0]["word"])
        for i in range(1, whys.count()):
            whys.nth(i).locator("summary").click()
        expect(page.locator(".hit details.why[open]")).to_have_count(whys.count())
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        assert_accessible(page, "every result's Why this result open")


def test_phone_width(browser: Browser, base: str) -> None:
    with watched_page(browser, viewport=PHONE, is_mobile=True, has_touch=True) as watched:
        page = watched.page
        page.goto(f"{base}/?q=embedding+tables")
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        results = page.locator(".results").bounding_box()
        facets = page.locator(".facets").bounding_box()
        assert results and facets and facets["y"] > results["y"]  # stacked: results first
        expect(page.get_by_role("link", name="Refine by year, subject, author or venue")).to_be_visible()
        screenshot(page, "phone", full_page=False)
