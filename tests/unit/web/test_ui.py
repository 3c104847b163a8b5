"""The pages through Flask's test client: what they answer to every kind of request, and the HTML errors.

The browser tests (tests/system/test_ui_browser.py) show the pages working for a person; these cover the
many request shapes quickly, and pin what must never reach the HTML unescaped.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.helpers.apps import app_for
from tests.helpers.indexes import MakeIndex


def page(client: FlaskClient, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, response.data[:500]
    assert response.mimetype == "text/html"
    return response.get_data(as_text=True)


def test_search_page_lists_results_facets_and_exports(client: FlaskClient) -> None:
    html = page(client, "/?q=compositional+embeddings")
    assert "<mark>Compositional</mark> <mark>Embeddings</mark> Using Complementary Partitions" in html
    assert 'href="/api/export?format=bibtex&amp;q=compositional+embeddings"' in html
    assert html.count('class="facet-value') >= 3


@pytest.mark.reliability
def test_the_query_is_echoed_escaped_everywhere(client: FlaskClient) -> None:
    html = page(client, "/?" + urlencode({"q": "<script>alert(1)</script>"}))
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ([("q", "embedding AND")], "&#39;AND&#39; needs a search term after it (column 11)"),
        ([("q", "(embedding OR")], "is never closed (column 1)"),
        ([("q", "embedding NOT")], "&#39;NOT&#39; needs a search term after it"),
        ([("q", "x"), ("per_page", "1000")], "per_page: Must be between 1 and 100."),
        ([("q", "x"), ("year_from", "2020"), ("year_to", "2019")], "year_to: Must not be before year_from (2020)."),
        ([("q", "x"), ("year_from", "soon")], "year_from: Not a valid integer."),
        ([("q", "x"), ("page", "2000")], "page: page * per_page must be at most 10000"),
        ([("q", "x"), ("sort", "random")], "sort: Must be one of: relevance, newest, oldest, cited, added."),
        ([("q", "x"), ("colour", "blue")], "colour: Unknown field."),
        ([("q", "x"), ("q", "y")], "q: Given more than once."),
        ([("q", "x" * 501)], "q: Longer than the maximum of 500 characters."),
    ],
)
def test_a_search_that_cannot_run_is_a_400_page_with_the_form_filled_in(
    client: FlaskClient, params: list[tuple[str, str]], message: str
) -> None:
    html = page(client, "/?" + urlencode(params), 400)
    assert 'role="alert"' in html and message in html
    assert "Traceback" not in html
    typed = re.search(r'<input id="q" name="q" type="search" value="([^"]*)"', html)
    assert typed is not None and unescape(typed.group(1)) == params[0][1]


def test_a_syntax_error_points_at_its_column(client: FlaskClient) -> None:
    html = page(client, "/?q=embedding+AND", 400)
    assert '<pre class="query-pointer" aria-hidden="true">embedding AND\n          ^</pre>' in html
    assert 'aria-invalid="true"' in html


def test_empty_form_boxes_mean_not_set(client: FlaskClient) -> None:
    html = page(client, "/?q=&year_from=&year_to=&sort=relevance")
    assert "28 papers" in html


def test_a_page_past_the_end_links_back_to_the_last(client: FlaskClient) -> None:
    html = page(client, "/?per_page=10&page=7")
    assert "past the end" in html and 'href="/?page=3"' in html


def test_paper_page_has_the_record_bibtex_and_related(client: FlaskClient) -> None:
    found = client.get("/api/search?q=checkpointing&per_page=1").get_json()["results"][0]
    html = page(client, f"/papers/{found['id']}")
    assert f'<h1 class="paper-title">{found["title"]}</h1>' in html
    assert '<pre class="bibtex" id="bibtex"' in html and "@" in html
    assert html.count('class="hit"') == 5  # related_papers


def test_the_page_says_when_a_paper_was_added_and_searches_by_it(client: FlaskClient) -> None:
    found = client.get("/api/search?q=checkpointing&per_page=1").get_json()["results"][0]
    html = page(client, f"/papers/{found['id']}")
    day = found["added"][:10]
    assert f'Added to this index on <time datetime="{found["added"]}">{day}</time>.' in html
    listed = page(client, f"/?sort=added&added_since={day}")
    assert '<option value="added" selected>Recently added</option>' in listed
    assert f"added since {day}T00:00:00Z" in listed and listed.count('class="hit"') == 10
    assert page(client, "/?added_since=2999-01-01").count('class="hit"') == 0


def test_html_errors_outside_the_api_and_json_inside(client: FlaskClient) -> None:
    assert "<h1>Not found</h1>" in page(client, "/papers/no-such-paper", 404)
    assert "<h1>Not found</h1>" in page(client, "/no-such-page", 404)
    for url in ("/api/papers/no-such-paper", "/api/no-such-route"):
        response = client.get(url)
        assert response.status_code == 404 and response.get_json()["error"]["code"] == "not_found"
    response = client.post("/")
    assert response.status_code == 405 and response.mimetype == "text/html"


def test_without_an_index_the_page_says_so_with_a_503(tmp_path: Path) -> None:
    client = app_for(tmp_path / "empty").test_client()
    response = client.get("/")
    assert response.status_code == 503 and response.headers["Retry-After"] == "30"
    assert "Search is not available right now" in response.get_data(as_text=True)


@pytest.mark.reliability
def test_an_unexpected_failure_is_a_500_page_without_internals(
    seed_app_with: Callable[..., Flask], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = seed_app_with()  # an app of its own: its backend is patched

    def broken(*_: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(app.extensions["searchsvc"].backend, "answer", broken)
    monkeypatch.setattr(app.logger, "disabled", True)  # the logger is shared by every app: restore it
    response = app.test_client().get("/?q=x")
    html = response.get_data(as_text=True)
    assert response.status_code == 500 and "Something went wrong" in html and "secret" not in html


@pytest.mark.reliability
def test_pages_carry_the_security_headers_and_load_only_same_origin_assets(client: FlaskClient) -> None:
    response = client.get("/")
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "unsafe" not in policy
    html = response.get_data(as_text=True)
    assert re.search(r"<script(?![^>]*\ssrc=)", html) is None  # no inline script
    assert re.search(r"<[^>]*\s(on\w+|style)=", html) is None  # no event handler or style attribute
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', html)
    assert assets  # the page's own stylesheet and script, so the loop below checks something
    for asset in assets:
        with client.get(asset) as loaded:  # a streamed file: closed here
            assert loaded.status_code == 200


@pytest.mark.reliability
def test_injected_markup_in_records_is_escaped(make_index: MakeIndex) -> None:
    title = "Robust <img src=x onerror=alert(1)> titles"
    backend = make_index(
        [
            {
                "id": "x-1",
                "title": title,
                "abstract": "<script>alert(2)</script> text",
                "year": 2020,
                "categories": ["cs.CR"],
                "authors": ["Eve <b>Bold</b>"],
            }
        ]
    )
    client = app_for(backend.settings.index_dir).test_client()
    for html in (page(client, "/?q=titles"), page(client, "/papers/x-1"), page(client, "/?author=Eve+<b>Bold</b>")):
        assert "<img" not in html and "<script>alert" not in html and "<b>Bold" not in html
        assert "&lt;img src=x onerror=alert(1)&gt;" in html or "&lt;b&gt;Bold" in html


def test_find_an_author_lists_matching_names_counted_under_the_search(client: FlaskClient) -> None:
    html = page(client, "/?q=embedding&find_author=nau")
    authors = re.findall(r'data-facet="author" data-value="([^"]*)"', html)
    assert authors == ["Maxim Naumov"]
    assert "Names with a word starting “nau”" in html and 'href="/?q=embedding">Show the top authors' in html
    assert 'href="/?q=embedding&amp;author=Maxim+Naumov"' in html  # choosing one ends the lookup

    html = page(client, "/?find_author=zzz")
    assert re.findall(r'data-facet="author"', html) == []
    assert "No author in these results has a name with a word starting “zzz”" in html

    html = page(client, "/?find_author=" + "n" * 101, 400)
    assert "find_author: Longer than the maximum of 100 characters." in html


def test_more_like_the_chosen_papers_searches_similar_to_them(client: FlaskClient) -> None:
    """The results page's form sends the chosen papers' ids: a search for papers like them, with the
    page's filters kept; none chosen is the form again, saying so."""
    response = client.get("/similar?id=2104.05158&id=1909.02107&year_from=2020&q=")
    assert response.status_code == 303
    location = response.headers["Location"]
    assert parse_qs(urlsplit(location).query) == {
        "q": ['similar:"2104.05158" similar:"1909.02107"'],
        "year_from": ["2020"],
    }
    none_chosen = client.get("/similar?year_from=2020")
    assert none_chosen.status_code == 400 and "Choose at least one paper." in none_chosen.get_data(as_text=True)
    html = client.get("/?q=embedding").get_data(as_text=True)
    assert 'action="/similar"' in html and 'name="id" value="' in html and "More like this" in html


def test_chosen_papers_download_as_an_export_of_exactly_them(client: FlaskClient) -> None:
    response = client.get("/chosen/download?id=2104.05158&id=1909.02107&format=ris")
    assert response.status_code == 303
    assert parse_qs(urlsplit(response.headers["Location"]).query) == {
        "format": ["ris"],
        "id": ["2104.05158", "1909.02107"],
    }
    none_chosen = client.get("/chosen/download?format=ris")
    assert none_chosen.status_code == 400 and "Choose at least one paper." in none_chosen.get_data(as_text=True)
    html = client.get("/?q=embedding").get_data(as_text=True)
    assert 'formaction="/chosen/download" name="format" value="bibtex"' in html
