"""`GET /feed.atom`: any search's papers latest added as Atom 1.0, read by feedparser as a feed reader
would, on both engines; conditional requests answered 304 while its entries are unchanged
(test_arrivals.py follows them across rebuilds and changes)."""

from __future__ import annotations

import re
import time
from datetime import datetime
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import feedparser
import pytest
from flask.testing import FlaskClient

from searchsvc import create_app
from searchsvc.backends import open_backend
from searchsvc.operations.rebuild import rebuild
from searchsvc.settings import load_settings
from searchsvc.settings.write_tokens import entry_for, new_token
from searchsvc.web.schemas import FEED_ENTRIES
from tests.helpers.apps import error_of
from tests.helpers.backends import BackendFactory, Build
from tests.helpers.records import jsonl, made_up_papers, write_jsonl

ORIGIN = "http://searchsvc.example"  # where the reader fetched the feed from: relative links resolve against it
MARKUP_TITLE = "Tables & <script>alert(1)</script> in \x0bscholarly titles"


def read(client: FlaskClient, query: str) -> feedparser.FeedParserDict:
    response = client.get(f"/feed.atom?{query}")
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == "application/atom+xml"
    headers = {"content-type": response.headers["Content-Type"], "content-location": f"{ORIGIN}/feed.atom?{query}"}
    parsed = feedparser.parse(response.data, response_headers=headers)
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.version == "atom10"
    return parsed


def test_the_feed_of_a_search_lists_its_papers_latest_added_first(client: FlaskClient) -> None:
    """One rebuild added every seed paper at once: ties go newest first."""
    feed = read(client, "q=recommendation")
    searched = client.get("/api/search?q=recommendation&sort=newest&per_page=50").get_json()
    assert len(feed.entries) == searched["total"] == 18
    assert [entry.link for entry in feed.entries] == [f"{ORIGIN}/papers/{hit['id']}" for hit in searched["results"]]
    years = [hit["year"] for hit in searched["results"]]
    assert years == sorted(years, reverse=True)
    first, paper = feed.entries[0], searched["results"][0]
    assert first.title == paper["title"] and first.summary == paper["abstract"]
    assert [author.name for author in first.authors] == paper["authors"]
    assert [tag.term for tag in first.tags] == paper["subjects"]


def test_ids_are_absolute_and_stable_and_dates_are_the_papers(client: FlaskClient) -> None:
    feed = read(client, "q=recommendation&subject=cs.LG")
    again = read(client, "subject=cs.LG&q=recommendation&sort=relevance&page=1")  # a search page's URL, reordered
    assert feed.feed.id == again.feed.id and feed.feed.id.startswith("urn:searchsvc:feed:")
    assert [entry.id for entry in feed.entries] == [entry.id for entry in again.entries]
    assert all(re.fullmatch(r"urn:searchsvc:paper:[\w.%:-]+", entry.id) for entry in feed.entries)
    assert len({entry.id for entry in feed.entries}) == len(feed.entries)
    assert read(client, "q=recommendation").feed.id != feed.feed.id
    # Each entry is updated when its paper last changed here, and the feed when the latest of them did;
    # it is published on its paper's date, as precisely as known (the seeds give years).
    searched = client.get("/api/search?q=recommendation&subject=cs.LG&sort=added&per_page=50").get_json()
    assert [entry.updated for entry in feed.entries] == [hit["changed"] for hit in searched["results"]]
    assert feed.feed.updated == max(hit["changed"] for hit in searched["results"])
    assert [entry.published for entry in feed.entries] == [
        f"{hit['date']}-01-01T00:00:00Z" for hit in searched["results"]
    ]
    links = {link.rel: link.href for link in feed.feed.links}
    assert parse_qs(urlsplit(links["self"]).query) == {"q": ["recommendation"], "subject": ["cs.LG"]}
    wanted = {"q": ["recommendation"], "subject": ["cs.LG"], "sort": ["added"]}
    assert parse_qs(urlsplit(links["alternate"]).query) == wanted


def test_a_feed_holds_the_newest_fifty(build: Build) -> None:
    records = [
        {"id": f"p{year}", "title": f"Lattice paper of {year}", "abstract": "", "year": year, "authors": ["A. Author"]}
        for year in range(1950, 2020)
    ]
    feed = read(build(records).test_client(), "q=lattice")
    assert FEED_ENTRIES == 50
    assert [entry.id for entry in feed.entries] == [f"urn:searchsvc:paper:p{year}" for year in range(2019, 1969, -1)]
    assert all("summary" not in entry for entry in feed.entries)  # no abstract, no empty summary


def test_polling_an_unchanged_feed_costs_a_304(client: FlaskClient) -> None:
    first = client.get("/feed.atom?q=recommendation")
    assert first.headers["Cache-Control"] == "no-cache" and first.headers["Last-Modified"]
    by_tag = client.get("/feed.atom?q=recommendation", headers={"If-None-Match": first.headers["ETag"]})
    assert by_tag.status_code == 304 and by_tag.data == b""
    by_date = client.get("/feed.atom?q=recommendation", headers={"If-Modified-Since": first.headers["Last-Modified"]})
    assert by_date.status_code == 304
    other_search = client.get("/feed.atom?q=embedding", headers={"If-None-Match": first.headers["ETag"]})
    assert other_search.status_code == 200


def test_record_text_is_escaped_and_characters_xml_cannot_hold_are_dropped(build: Build) -> None:
    client = build(
        [
            {
                "id": "markup",
                "title": MARKUP_TITLE,
                "abstract": "Abstracts & <b onmouseover=alert(2)>tags</b>\x00 too.",
                "year": 2024,
                "categories": ["cs.CR"],
                "authors": ["Eve <svg onload=alert(3)> Mallory"],
            }
        ]
    ).test_client()
    raw = client.get("/feed.atom?q=scholarly").data
    assert b"<script>" not in raw and b"<b " not in raw and b"<svg" not in raw
    assert b"&lt;script&gt;" in raw and b"Tables &amp; " in raw
    entry = read(client, "q=scholarly").entries[0]
    assert entry.title == MARKUP_TITLE.replace("\x0b", "")  # the text, exactly, minus what XML cannot carry
    assert entry.summary == "Abstracts & <b onmouseover=alert(2)>tags</b> too."
    assert entry.authors[0].name == "Eve <svg onload=alert(3)> Mallory"


def test_tex_in_titles_and_abstracts_reads_as_text(build: Build) -> None:
    """A feed reader shows text: math and text commands as the page's <title> reads them, not raw TeX."""
    client = build(
        [
            {
                "id": "tex",
                "title": r"Bounds for $\alpha$-divergences in $O(n \log n)$ time",
                "abstract": r"We study \emph{Erd\H{o}s} graphs and $\ell_1$ penalties.",
                "year": 2024,
                "categories": ["math.CO"],
                "authors": ["Ada Lovelace"],
            }
        ]
    ).test_client()
    entry = read(client, "q=divergences").entries[0]
    assert entry.title == "Bounds for α-divergences in O(n log n) time"
    assert entry.summary == "We study Erdős graphs and l1 penalties."


@pytest.mark.parametrize(
    ("query", "field"),
    [("year_from=soon", "year_from"), ("format=csv", "format"), ("q=" + "a" * 501, "q"), ("q=embedding+AND", None)],
)
def test_bad_parameters_are_a_json_400(client: FlaskClient, query: str, field: str | None) -> None:
    error = error_of(client, f"/feed.atom?{query}", 400)
    if field is not None:
        assert field in error["details"]
    else:
        assert "column" in error["message"]


def test_a_poll_after_an_add_gets_the_new_paper_and_its_date(factory: BackendFactory, tmp_path: Path) -> None:
    """Last-Modified and `<updated>` follow the papers' changes, not only rebuilds (issue #36): a
    reader polling with If-Modified-Since sees what the write API added."""
    token = new_token()
    overrides = factory.overrides(semantic_ranking=False, write_token_hashes=[entry_for("curator", token)])
    rebuild(
        open_backend(load_settings(overrides, environ={})),
        [write_jsonl(tmp_path / "a.jsonl", made_up_papers("wombat", 2))],
    )
    client = create_app(overrides).test_client()
    first = client.get("/feed.atom?q=lattice")
    time.sleep(1.05 - time.time() % 1)  # HTTP dates count whole seconds: the add lands in a later one
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"}
    written = client.post("/api/papers", data=jsonl(made_up_papers("numbat", 1)), headers=headers)
    assert written.status_code == 200
    poll = client.get("/feed.atom?q=lattice", headers={"If-Modified-Since": first.headers["Last-Modified"]})
    assert poll.status_code == 200 and poll.headers["Last-Modified"] != first.headers["Last-Modified"]
    feed = read(client, "q=lattice")
    assert "urn:searchsvc:paper:numbat-00" in [entry.id for entry in feed.entries]
    changed = written.get_json()["changed_at"]  # the change's time, which its papers carry
    assert datetime.fromisoformat(feed.feed.updated) == datetime.fromisoformat(changed)
    assert feed.entries[0].id == "urn:searchsvc:paper:numbat-00" and feed.entries[0].updated == feed.feed.updated
