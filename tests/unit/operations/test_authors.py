"""Author pages and `GET /api/authors/<name>`: counts, co-authors, name matching, unusual names, 404s, escaping.

The seeds give the issue's numbers (Maxim Naumov: 18 papers, Dheevatsa Mudigere with him on 8);
a small index of its own gives names with accents, a slash, Chinese letters and markup.
"""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from urllib.parse import quote

import pytest
from flask.testing import FlaskClient

from tests.helpers.apps import app_for, error_of
from tests.helpers.indexes import build_index

MARKUP = "<script>alert(1)</script> Smith"
PAPERS = [  # (title, year, subject, authors)
    ("Lattices one", 2019, "cs.LG", ["Jürgen Müller", "Ada Lovelace", "AC/DC Collective"]),
    ("Lattices two", 2020, "cs.AI", ["Jürgen Müller", "Ada Lovelace"]),
    ("Lattices three", 2020, "cs.LG", ["Jürgen Müller", "李明"]),
    ("Lattices four", 2021, "cs.CL", ["Jürgen Müller", "Zed Zimmer"]),
    ("Escaping names", 2018, "cs.CR", [MARKUP, "Ada Lovelace"]),
    ("A crowded paper", 2022, "cs.DL", ["Hub Author", *(f"Coauthor {number:02d}" for number in range(1, 13))]),
]
RECORDS = [
    {"id": f"r-{n}", "title": title, "year": year, "categories": [subject], "authors": authors}
    for n, (title, year, subject, authors) in enumerate(PAPERS)
]


@pytest.fixture(scope="module")
def names(tmp_path_factory: pytest.TempPathFactory) -> FlaskClient:
    """An app over RECORDS only."""
    backend = build_index(tmp_path_factory.mktemp("authors") / "index", RECORDS)
    return app_for(backend.settings.index_dir).test_client()


def page(client: FlaskClient, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, response.get_data(as_text=True)[:500]
    assert response.mimetype == "text/html"
    return response.get_data(as_text=True)


def coauthors_shown(html: str) -> list[tuple[str, str, int]]:
    """(href, name, count) of each co-author link on an author's page."""
    found = re.findall(
        r'<a class="facet-value coauthor" href="([^"]*)">\s*<span class="label">([^<]*)</span>\s*'
        r'<span class="count"[^>]*>([\d,]+)</span>',
        html,
    )
    return [(unescape(href), unescape(name), int(count.replace(",", ""))) for href, name, count in found]


def heading(html: str) -> tuple[str, str]:
    match = re.search(r'<span class="author-name">([^<]*)</span>\s*<span class="for-query">([^<]*)</span>', html)
    assert match is not None
    return unescape(match.group(1)), match.group(2)


# --- The example, on the seeds ----------------------------------------------------


def test_the_api_lists_maxim_naumovs_papers_and_co_authors(client: FlaskClient) -> None:
    author = client.get("/api/authors/Maxim%20Naumov?per_page=100").json
    assert author["name"] == "Maxim Naumov" and author["total"] == 18 and len(author["results"]) == 18
    assert all("Maxim Naumov" in hit["authors"] for hit in author["results"])
    assert author["coauthors"] == [{"name": "Dheevatsa Mudigere", "count": 8}]
    assert author["coauthors_complete"] is True
    assert sum(year["count"] for year in author["years"]) == 18
    assert {s["value"]: s["count"] for s in author["subjects"]} == {"cs.LG": 9, "cs.DC": 5, "cs.IR": 3, "cs.AR": 1}


def test_papers_are_paged_and_sorted_like_a_search(client: FlaskClient) -> None:
    first = client.get("/api/authors/Maxim%20Naumov?sort=oldest").json
    second = client.get("/api/authors/Maxim%20Naumov?sort=oldest&page=2").json
    assert (first["pages"], len(first["results"]), len(second["results"])) == (2, 10, 8)
    years = [hit["year"] for hit in first["results"] + second["results"]]
    assert years == sorted(years)
    search = client.get("/api/search?author=Maxim+Naumov&sort=oldest&page=2").json
    assert [hit["id"] for hit in second["results"]] == [hit["id"] for hit in search["results"]]


def test_the_page_and_the_api_agree(client: FlaskClient) -> None:
    html = page(client, "/authors/Maxim%20Naumov")
    author = client.get("/api/authors/Maxim%20Naumov").json
    assert heading(html) == ("Maxim Naumov", "18 papers")
    assert coauthors_shown(html) == [("/authors/Dheevatsa%20Mudigere", "Dheevatsa Mudigere", 8)]
    subjects = re.findall(r'data-facet="subject" data-value="([^"]*)">.*?<span class="count">(\d+)</span>', html, re.S)
    assert [(value, int(count)) for value, count in subjects] == [(s["value"], s["count"]) for s in author["subjects"]]
    bars = {int(year): int(count) for year, count in re.findall(r'aria-label="(\d{4}): (\d+) papers?"', html)}
    assert bars == {year["value"]: year["count"] for year in author["years"]}
    ids = re.findall(r'<h2 class="hit-title"><a href="/papers/([^"]*)"', html)
    assert ids == [hit["id"] for hit in author["results"]]


def test_the_page_keeps_its_sort_filters_and_pages_on_itself(client: FlaskClient) -> None:
    html = page(client, "/authors/Maxim%20Naumov?sort=newest")
    assert '<form class="sort-form" method="get" action="/authors/Maxim%20Naumov">' in html
    assert '<option value="newest" selected>' in html
    assert 'href="/authors/Maxim%20Naumov?sort=newest&amp;page=2" rel="next"' in html
    assert 'href="/authors/Maxim%20Naumov?subject=cs.AR&amp;sort=newest"' in html
    assert 'href="/api/export?format=csv&amp;author=Maxim+Naumov&amp;sort=newest"' in html
    assert 'href="/?author=Maxim+Naumov">Search within these papers' in html  # filtering stays a search

    narrowed = page(client, "/authors/Maxim%20Naumov?subject=cs.AR")
    assert heading(narrowed) == ("Maxim Naumov", "1 paper")
    assert 'class="chip" href="/authors/Maxim%20Naumov"' in narrowed
    assert [count for _, _, count in coauthors_shown(narrowed)] in ([], [1])  # counted among these papers only


def test_filters_leaving_none_of_the_papers_are_an_empty_page_not_a_404(client: FlaskClient) -> None:
    html = page(client, "/authors/Maxim%20Naumov?year_from=1990&year_to=1991")
    assert heading(html) == ("Maxim Naumov", "0 papers") and "None of these papers match the filters" in html
    assert client.get("/api/authors/Maxim%20Naumov?year_to=1991").json["total"] == 0


def test_every_author_name_links_to_the_authors_page(client: FlaskClient) -> None:
    search = page(client, "/?q=checkpointing")
    assert 'class="author" href="/authors/Dheevatsa%20Mudigere">Dheevatsa Mudigere</a>' in search
    assert 'href="/?q=checkpointing&amp;author=Dheevatsa+Mudigere" data-facet="author"' in search  # the facet filters
    paper_id = client.get("/api/search?q=checkpointing&per_page=1").json["results"][0]["id"]
    paper = page(client, f"/papers/{paper_id}")
    related = paper[paper.index("Related papers") :]
    assert 'class="author" href="/authors/' in paper[: paper.index("Related papers")]
    assert 'class="author" href="/authors/' in related
    assert 'class="author" href="/?' not in search + paper


# --- Names: case and accents, slashes, other scripts, markup ------------------------------


def test_case_and_accents_are_ignored_and_the_stored_spelling_shown(names: FlaskClient) -> None:
    for typed in ("Jürgen Müller", "jurgen muller", "JÜRGEN MULLER"):
        author = names.get(f"/api/authors/{quote(typed)}").json
        assert author["name"] == "Jürgen Müller" and author["total"] == 4, typed
    html = page(names, "/authors/jurgen%20MULLER")
    assert heading(html) == ("Jürgen Müller", "4 papers")
    assert f'action="/authors/{quote("Jürgen Müller")}"' in html  # the page's links use the stored name


def test_whitespace_in_a_name_is_folded_as_the_readers_fold_it(names: FlaskClient) -> None:
    """Issue #36: `Dan  Klein` (two spaces) was a 404 author, and no search filter found him."""
    for typed in ("Jürgen  Müller", " jurgen\tmuller "):
        author = names.get(f"/api/authors/{quote(typed)}").json
        assert author["name"] == "Jürgen Müller" and author["total"] == 4, typed
        found = names.get("/api/search", query_string={"author": typed}).json
        assert found["total"] == 4, typed
        assert [v["value"] for v in found["facets"]["author"] if v["selected"]] == ["Jürgen Müller"], typed


def test_co_authors_are_counted_and_ordered_by_count_then_name(names: FlaskClient) -> None:
    coauthors = names.get("/api/authors/J%C3%BCrgen%20M%C3%BCller").json["coauthors"]
    assert coauthors == [
        {"name": "Ada Lovelace", "count": 2},
        {"name": "AC/DC Collective", "count": 1},
        {"name": "Zed Zimmer", "count": 1},
        {"name": "李明", "count": 1},
    ]
    html = page(names, "/authors/J%C3%BCrgen%20M%C3%BCller")
    assert [(name, count) for _, name, count in coauthors_shown(html)] == [(c["name"], c["count"]) for c in coauthors]


def test_every_co_author_is_listed_beyond_the_facet_limit(names: FlaskClient) -> None:
    coauthors = names.get("/api/authors/Hub%20Author").json["coauthors"]
    assert [c["name"] for c in coauthors] == [f"Coauthor {number:02d}" for number in range(1, 13)]
    assert len(coauthors_shown(page(names, "/authors/Hub%20Author"))) == 12


def test_a_name_with_a_slash(names: FlaskClient) -> None:
    html = page(names, "/authors/J%C3%BCrgen%20M%C3%BCller")
    assert ("/authors/AC/DC%20Collective", "AC/DC Collective", 1) in coauthors_shown(html)
    assert heading(page(names, "/authors/AC/DC%20Collective")) == ("AC/DC Collective", "1 paper")
    author = names.get("/api/authors/ac/dc%20collective").json
    assert author["name"] == "AC/DC Collective" and author["coauthors"][0] == {"name": "Ada Lovelace", "count": 1}


def test_a_name_in_chinese_letters(names: FlaskClient) -> None:
    html = page(names, "/?q=lattices+three")
    assert f'class="author" href="/authors/{quote("李明")}">李明</a>' in html
    assert heading(page(names, f"/authors/{quote('李明')}")) == ("李明", "1 paper")
    assert names.get(f"/api/authors/{quote('李明')}").json["coauthors"] == [{"name": "Jürgen Müller", "count": 1}]


@pytest.mark.reliability
def test_markup_in_a_name_is_escaped_and_survives_the_url(names: FlaskClient) -> None:
    assert names.get(f"/api/authors/{quote(MARKUP)}").json["name"] == MARKUP  # data stays data
    for html in (page(names, f"/authors/{quote(MARKUP)}"), page(names, "/authors/Ada%20Lovelace")):
        assert "<script>alert" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt; Smith" in html
    ada = page(names, "/authors/Ada%20Lovelace")
    [(href, count)] = [(href, count) for href, name, count in coauthors_shown(ada) if name == MARKUP]
    assert count == 1 and "<" not in href and " " not in href
    assert heading(page(names, href)) == (MARKUP, "1 paper")


# --- Unknown names and bad parameters ---------------------------------------------------


def test_an_unknown_author_is_a_json_404_with_the_closest_names(names: FlaskClient, client: FlaskClient) -> None:
    error = error_of(names, "/api/authors/Jurgen%20Mueller", 404)
    assert error["code"] == "not_found" and error["details"] == {"suggestions": ["Jürgen Müller"]}
    assert error_of(client, "/api/authors/Maxim%20Naumof", 404)["details"] == {"suggestions": ["Maxim Naumov"]}
    assert error_of(client, "/api/authors/Nobody%20Atall", 404)["details"] == {"suggestions": []}


def test_an_unknown_author_is_a_404_page_linking_the_closest_names(names: FlaskClient) -> None:
    html = page(names, "/authors/Ada%20Lovelase", 404)
    assert "<h1>Author not found</h1>" in html
    assert '<li><a href="/authors/Ada%20Lovelace">Ada Lovelace</a></li>' in html
    html = page(names, f"/authors/{quote('<script>x</script>')}", 404)
    assert "<script>x" not in html and "&lt;script&gt;x&lt;/script&gt;" in html


def test_bad_parameters_are_a_400(client: FlaskClient) -> None:
    assert error_of(client, "/api/authors/Maxim%20Naumov?q=x", 400)["details"] == {"q": ["Unknown field."]}
    assert error_of(client, "/api/authors/Maxim%20Naumov?author=x", 400)["details"] == {"author": ["Unknown field."]}
    assert "per_page" in page(client, "/authors/Maxim%20Naumov?per_page=1000", 400)


def test_without_an_index_the_author_page_is_a_503(tmp_path: Path) -> None:
    client = app_for(tmp_path / "empty").test_client()
    assert client.get("/authors/Maxim%20Naumov").status_code == 503
    assert client.get("/api/authors/Maxim%20Naumov").status_code == 503
