"""Venue, date, citations and ORCID iDs, as each format's real sample gives them, shown alike by
both backends: in the API, on the paper page's Highwire tags and beside each result (issue #31)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import feedparser
import pytest
from flask.testing import FlaskClient

from tests.helpers.apps import error_of
from tests.helpers.backends import BackendFactory, Build
from tests.helpers.paths import SOURCE_SAMPLES

STATE_OF_OA = "The state of OA: a large-scale analysis of the prevalence and impact of Open Access articles"
SAMPLES = sorted(path for path in SOURCE_SAMPLES.iterdir() if path.is_file() and path.suffix != ".md")


@pytest.fixture(scope="module")
def samples(factory: BackendFactory) -> FlaskClient:
    return factory.publish(SAMPLES).test_client()


class _Meta(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "meta" and (found.get("name") or "").startswith("citation_"):
            self.tags.append((found["name"] or "", found.get("content") or ""))


def _paper(client: FlaskClient, title: str) -> dict:
    (hit,) = [hit for hit in client.get(f'/api/search?q="{title}"').json["results"] if hit["title"] == title]
    return hit


def test_the_api_gives_each_papers_venue_date_citations_and_orcids(samples: FlaskClient) -> None:
    hit = _paper(samples, STATE_OF_OA)
    expected = {
        "year": 2018,
        "date": "2018-02-13",
        "venue": "PeerJ",
        "citations": {"count": 394, "source": "OpenAlex"},
        "orcids": {"Heather A. Piwowar": "0000-0003-1613-5981", "Jason Priem": "0000-0001-6187-6610"},
    }
    assert {key: hit[key] for key in expected} == expected
    paper = samples.get(f"/api/papers/{hit['id']}").json
    assert {key: paper[key] for key in expected} == expected
    # A record of several formats (BibTeX, RIS, Atom, OAI, CSV): the journal's venue, the first
    # version's full date, no count and no iDs, which none of them gives.
    lemire = _paper(samples, "Number Parsing at a Gigabyte per Second")
    assert (lemire["venue"], lemire["date"], lemire["citations"], lemire["orcids"]) == (
        "Software: Practice and Experience",
        "2021-01-11",
        None,
        {},
    )


def test_the_paper_page_carries_highwire_tags_and_shows_venue_date_citations_and_orcid_links(
    samples: FlaskClient,
) -> None:
    hit = _paper(samples, STATE_OF_OA)
    html = samples.get(f"/papers/{hit['id']}").get_data(as_text=True)
    meta = _Meta()
    meta.feed(html)
    tags = dict(meta.tags)
    assert tags["citation_title"] == STATE_OF_OA
    assert tags["citation_publication_date"] == "2018/02/13"
    assert tags["citation_journal_title"] == "PeerJ"
    assert "citation_conference_title" not in tags
    authors = [value for name, value in meta.tags if name == "citation_author"]
    assert authors[:2] == ["Heather A. Piwowar", "Jason Priem"]
    assert '<span class="venue">PeerJ</span>' in html
    assert '<time class="year" datetime="2018-02-13">2018-02-13</time>' in html
    assert re.search(r'<span class="citations" title="Counted by OpenAlex">394 citations</span>', html)
    assert 'href="https://orcid.org/0000-0003-1613-5981"' in html


VENUES = {
    "J. Chem. Phys.": 1,
    "JETP Lett.": 1,
    "PeerJ": 1,
    "Physical Review D": 1,  # RIS's and the spreadsheet's name, fuller than the OAI record's "Phys.Rev.D"
    "Software: Practice and Experience": 1,
}


def _facet(document: dict, name: str) -> dict:
    return {v["value"]: (v["count"], v["selected"]) for v in document["facets"][name]}


def test_the_venue_facet_counts_filters_and_finds_venues_exactly(samples: FlaskClient) -> None:
    everything = samples.get("/api/search?per_page=50").json
    assert everything["total"] == 5
    assert {value: count for value, (count, _) in _facet(everything, "venue").items()} == VENUES
    # Multi-select, case- and accent-insensitive, counted under every filter but its own.
    chosen = samples.get("/api/search?venue=peerj&venue=JETP+LETT.").json
    assert {hit["venue"] for hit in chosen["results"]} == {"PeerJ", "JETP Lett."}
    assert _facet(chosen, "venue")["PeerJ"] == (1, True) and _facet(chosen, "venue")["J. Chem. Phys."] == (1, False)
    assert {value for value, (_, selected) in _facet(chosen, "year").items()} == {2018, 2007}
    under_year = samples.get("/api/search?venue=peerj&year_from=2019").json
    assert under_year["total"] == 0 and _facet(under_year, "venue")["PeerJ"] == (0, True)
    unknown = samples.get("/api/search?venue=Nature").json
    assert unknown["total"] == 0 and _facet(unknown, "venue")["Nature"] == (0, True)
    found = samples.get("/api/facets/venue?prefix=phys").json
    assert [(v["value"], v["count"]) for v in found["values"]] == [("J. Chem. Phys.", 1), ("Physical Review D", 1)]
    page = samples.get("/?find_venue=lett").get_data(as_text=True)
    assert 'data-facet="venue" data-value="JETP Lett."' in page and "Venues with a word starting “lett”" in page


def test_a_venue_filter_narrows_an_export(samples: FlaskClient) -> None:
    exported = samples.get("/api/export?format=jsonl&venue=PeerJ").get_data(as_text=True).splitlines()
    assert [json.loads(line)["venue"] for line in exported] == ["PeerJ"]
    assert samples.get("/api/export?format=jsonl&venue=PeerJ&id=x").status_code == 400  # by id or by search


def test_date_ranges_keep_the_papers_a_day_of_their_date_may_fall_in(samples: FlaskClient) -> None:
    def dates(params: str) -> list[str]:
        found = samples.get(f"/api/search?sort=oldest&{params}").json
        return [hit["date"] for hit in found["results"]]

    assert dates("date_from=2007-04-02&date_to=2007-10-10") == ["2007-04-02", "2007-10-10"]
    assert dates("date_from=2007-04-03") == ["2007-10-10", "2018-02-13", "2021-01-11"]
    assert dates("date_to=2007-04") == ["2001-02-28", "2007-04-02"]  # a month stands for its last day here
    assert dates("date_from=2018&date_to=2018") == ["2018-02-13"]
    assert dates("date_from=2007-04-02&year_to=2007&q=production") == ["2007-04-02"]  # with the rest of a search


RECORDS = [
    {"id": "a", "title": "Alpha lattice", "year": 2020, "citations": 5, "citations_source": "OpenAlex"},
    {"id": "b", "title": "Beta lattice", "date": "2020-06-15", "citations": 12},
    {"id": "c", "title": "Gamma lattice", "date": "2020-03"},
    {"id": "d", "title": "Delta lattice", "date": "2019-12-31", "citations": 5},
    {"id": "e", "title": "Epsilon lattice", "citations": 0},
]


def test_dates_known_to_the_year_or_month_and_the_most_cited_first(build: Build) -> None:
    client = build(RECORDS).test_client()

    def ids(params: str) -> list[str]:
        return [hit["id"] for hit in client.get(f"/api/search?{params}").json["results"]]

    assert sorted(ids("date_from=2020-06-01")) == ["a", "b"]  # "2020" may be June; "2020-03" may not
    assert sorted(ids("date_to=2020-03-15")) == ["a", "c", "d"]
    assert ids("date_from=2021") == []
    # Most cited first; equal counts newest first; a known 0 before an unknown count.
    assert ids("sort=cited") == ["b", "a", "d", "e", "c"]
    assert ids("sort=cited&q=lattice") == ["b", "a", "d", "e", "c"]
    counted = client.get("/api/search?date_from=2020-06-01").json["facets"]["year"]
    assert [(v["value"], v["count"]) for v in counted] == [(2020, 2)]


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ("date_from=2021-13", "date_from", "Must be an ISO 8601 date: 2021-06-29, 2021-06 or 2021."),
        ("date_to=yesterday", "date_to", "Must be an ISO 8601 date: 2021-06-29, 2021-06 or 2021."),
        ("date_from=2021-06-02&date_to=2021-06-01", "date_to", "Must not be before date_from (2021-06-02)."),
        ("sort=popular", "sort", "Must be one of: relevance, newest, oldest, cited, added."),
    ],
)
def test_a_bad_date_or_sort_is_a_400_naming_it(samples: FlaskClient, params: str, field: str, message: str) -> None:
    assert error_of(samples, f"/api/search?{params}", 400)["details"] == {field: [message]}


def test_a_venue_clause_matches_words_of_the_venue_name_and_narrows_like_a_filter(samples: FlaskClient) -> None:
    def venues(q: str) -> list[str]:
        return sorted(hit["venue"] for hit in samples.get("/api/search", query_string={"q": q}).json["results"])

    assert venues("venue:peerj") == ["PeerJ"]
    assert venues('venue:"physical review"') == ["Physical Review D"]
    assert venues("venue:phys*") == ["J. Chem. Phys.", "Physical Review D"]
    assert venues("venue:review OR venue:lett") == ["JETP Lett.", "Physical Review D"]
    assert venues("access venue:peerj") == ["PeerJ"]  # words beside it describe, the clause narrows
    assert venues("access -venue:peerj") == []
    assert venues("venue:nature") == []


def test_a_feed_entry_is_published_on_its_papers_date(samples: FlaskClient) -> None:
    feed = feedparser.parse(samples.get("/feed.atom?venue=PeerJ").data)
    assert not feed.bozo and [entry.published for entry in feed.entries] == ["2018-02-13T00:00:00Z"]
    month = feedparser.parse(samples.get("/feed.atom?date_from=2007-10&date_to=2007-10").data)
    assert [entry.published for entry in month.entries] == ["2007-10-10T00:00:00Z"]
