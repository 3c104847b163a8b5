"""The contract: one suite of API behaviour, run against both backends on the same sources.

Every test here takes `client` (the seeds, published by the real rebuild) or `build` (an
app over records of its own) and runs once on the embedded Whoosh index and once on the
2-node OpenSearch test cluster (the fixtures: tests/contract/conftest.py). Both backends
asked the same questions side by side: tests/contract/test_both_backends_agree.py.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest
import rispy
from flask.testing import FlaskClient

from tests.helpers.apps import error_of
from tests.helpers.backends import BackendFactory, Build
from tests.helpers.documents import HIT_KEYS, SEARCH_RESULT_KEYS

COMPOSITIONAL = "Compositional Embeddings Using Complementary Partitions for Memory-Efficient Recommendation Systems"
# Queries in users' words and the seed paper each must find first, whichever encoder ranks by meaning
# (tests/unit/backends/whoosh/test_semantic_ranking.py checks them with bge-small too).
NATURAL_SEED_QUERIES = [
    ("embedding table compression", "Learning to Collide: Recommendation System Model Compression"),
    ("FP8 training", "LoKA: Low-precision Kernel Applications for Recommendation Models At Scale"),
    ("checkpointing recommendation models", "Check-N-Run: A Checkpointing System"),
    ("fault tolerant training on many GPUs", "Training LLMs with Fault Tolerant HSDP on 100,000 GPUs"),
    ("near-memory processing for recommendation", "RecNMP: Accelerating Personalized Recommendation"),
    ("network topology for distributed training", "TopoOpt: Co-optimizing Network Topology"),
    ("disaggregated inference", "Beyond the Buzz: A Pragmatic Take on Inference Disaggregation"),
    ("compositional embeddings", COMPOSITIONAL),
]


def facet(document: dict, name: str) -> dict:
    return {v["value"]: v["count"] for v in document["facets"][name]}


def selected(document: dict, name: str) -> list:
    return [v["value"] for v in document["facets"][name] if v["selected"]]


# --- /api/search -------------------------------------------------------------------


def test_search_returns_the_result_document(client: FlaskClient) -> None:
    response = client.get("/api/search?q=compositional+embeddings&per_page=3")
    assert response.status_code == 200
    document = response.get_json()
    assert document["query"] == {
        "q": "compositional embeddings",
        "subject": [],
        "author": [],
        "venue": [],
        "year_from": None,
        "year_to": None,
        "date_from": None,
        "date_to": None,
        "added_since": None,
        "sort": "relevance",
        "page": 1,
        "per_page": 3,
        "exact": False,
        "explain": False,
    }
    top = document["results"][0]
    assert top["title"] == COMPOSITIONAL
    assert top["highlights"]["title"].startswith("<mark>Compositional</mark> <mark>Embeddings</mark>")
    assert list(top) == list(HIT_KEYS) and list(document) == list(SEARCH_RESULT_KEYS)
    assert top["matched"] is None and document["identifier"] is None  # words, not a pasted arXiv id or DOI
    assert document["pages"] == -(-document["total"] // 3)


def test_multi_select_subject_facet_keeps_counting_the_other_subjects(client: FlaskClient) -> None:
    everything = client.get("/api/search").get_json()
    lg = client.get("/api/search?subject=cs.LG&per_page=100").get_json()
    assert (
        facet(lg, "subject")
        == facet(everything, "subject")
        == {
            "cs.LG": 12,
            "cs.DC": 8,
            "cs.IR": 6,
            "cs.AR": 1,
            "cs.NI": 1,
        }
    )
    assert selected(lg, "subject") == ["cs.LG"]
    assert lg["total"] == len(lg["results"]) == 12 and all("cs.LG" in hit["subjects"] for hit in lg["results"])
    # The other facets are narrowed by the subject filter.
    assert facet(lg, "author") == dict(Counter(a for hit in lg["results"] for a in hit["authors"]))
    assert facet(lg, "year") == dict(Counter(hit["year"] for hit in lg["results"]))
    # Ticking a second subject adds its papers: values within a facet are OR-ed ...
    both = client.get("/api/search?subject=cs.LG&subject=cs.NI").get_json()
    assert both["total"] == 13 and selected(both, "subject") == ["cs.LG", "cs.NI"]
    # ... and facets are AND-ed.
    narrowed = client.get("/api/search?subject=cs.LG&author=Maxim+Naumov&per_page=100").get_json()
    assert narrowed["results"] and len(narrowed["results"]) == narrowed["total"]
    assert all("Maxim Naumov" in hit["authors"] and "cs.LG" in hit["subjects"] for hit in narrowed["results"])
    assert narrowed["total"] == facet(lg, "author")["Maxim Naumov"]


def test_selected_values_are_listed_even_at_zero(client: FlaskClient) -> None:
    document = client.get("/api/search?q=shampoo&subject=cs.NI&author=Nobody").get_json()
    assert document["total"] == 0
    assert {"value": "cs.NI", "count": 0, "selected": True} in document["facets"]["subject"]
    assert {"value": "Nobody", "count": 0, "selected": True} in document["facets"]["author"]


def test_year_filters_are_inclusive_and_year_facet_is_newest_first(client: FlaskClient) -> None:
    document = client.get("/api/search?year_from=2021&year_to=2023&per_page=100").get_json()
    assert {hit["year"] for hit in document["results"]} == {2021, 2022, 2023}
    years = [v["value"] for v in document["facets"]["year"]]
    assert years == sorted(years, reverse=True)
    assert selected(document, "year") == [2023, 2022, 2021]


def test_pagination_when_the_total_is_an_exact_multiple_of_per_page(client: FlaskClient) -> None:
    pages = [client.get(f"/api/search?per_page=7&page={n}").get_json() for n in (1, 2, 3, 4, 5)]
    assert [p["total"] for p in pages] == [28] * 5
    assert [p["pages"] for p in pages] == [4] * 5
    assert [len(p["results"]) for p in pages] == [7, 7, 7, 7, 0]
    ids = [hit["id"] for p in pages for hit in p["results"]]
    assert len(set(ids)) == 28


def test_relevance_pages_are_stable(client: FlaskClient) -> None:
    whole = client.get("/api/search?q=training+recommendation&per_page=20").get_json()["results"]
    paged = [
        hit
        for n in range(1, 5)
        for hit in client.get(f"/api/search?q=training+recommendation&per_page=5&page={n}").get_json()["results"]
    ]
    assert [hit["id"] for hit in paged] == [hit["id"] for hit in whole]


def test_sorting_by_date(client: FlaskClient) -> None:
    newest = client.get("/api/search?q=training&sort=newest&per_page=100").get_json()["results"]
    oldest = client.get("/api/search?q=training&sort=oldest&per_page=100").get_json()["results"]
    assert [h["year"] for h in newest] == sorted((h["year"] for h in newest), reverse=True)
    assert [h["year"] for h in oldest] == sorted(h["year"] for h in oldest)
    assert newest and len(newest) == len(oldest)  # not empty, so the next check is not vacuous
    assert all(h["score"] is None for h in newest + oldest)


def test_query_syntax_through_the_api(client: FlaskClient) -> None:
    def ids(q: str) -> set[str]:
        return {hit["id"] for hit in client.get("/api/search", query_string={"q": q, "per_page": 100}).json["results"]}

    def total(q: str) -> int:
        return client.get("/api/search", query_string={"q": q}).json["total"]

    assert total("author:naumov") == total("author:NAUMOV") == total('author:"Maxim Naumov"') == 18
    assert total("subject:cs.ni") == 1
    assert total("year:2019-2020") == 5 == total("year:2019") + total("year:2020")
    assert ids("title:shampoo") <= ids("shampoo")
    assert ids("embed*") >= ids("embedding") | ids("embedded")
    assert ids("embedding -compositional") == ids("embedding") - ids("compositional")
    assert ids("embedding AND compositional") == ids("embedding") & ids("compositional")
    assert ids("compositional OR shampoo") == ids("compositional") | ids("shampoo")
    # year:, subject: and author: beside words narrow the search like filters.
    assert ids("year:2021 author:mudigere training") == ids("year:2021") & ids("author:mudigere") & ids("training")
    assert ids("year:2021 training") == {
        hit["id"]
        for hit in client.get("/api/search?q=training&year_from=2021&year_to=2021&per_page=100").json["results"]
    }


def test_exact_phrases_match_unstemmed_text(build: Build) -> None:
    app = build(
        [
            {"id": "exact", "title": "Embedding tables at scale"},
            {"id": "stemmed", "title": "Embedded table formats"},
            {"id": "apart", "title": "Tables for embedding"},
        ],
    )
    client = app.test_client()

    def ids(q: str) -> list[str]:
        return sorted(hit["id"] for hit in client.get("/api/search", query_string={"q": q}).json["results"])

    assert ids('"embedding tables"') == ["exact"]
    assert ids("embedding tables") == ["apart", "exact", "stemmed"]  # words are stemmed: embedded ~ embedding
    assert ids('"embedded"') == ["stemmed"]
    hit = client.get("/api/search", query_string={"q": '"embedding tables"'}).json["results"][0]
    assert hit["highlights"]["title"] == "<mark>Embedding</mark> <mark>tables</mark> at scale"


def test_papers_matching_all_words_rank_above_papers_matching_some(build: Build) -> None:
    app = build(
        [
            {"id": "some", "title": "Sparse sparse sparse attention", "abstract": "Sparse attention, sparse kernels."},
            {"id": "all", "title": "A study", "abstract": "We look at sparse models and at quantization too."},
            {"id": "none", "title": "Unrelated", "abstract": "Nothing here."},
        ],
    )
    results = app.test_client().get("/api/search?q=sparse+quantization").json["results"]
    assert [hit["id"] for hit in results] == ["all", "some"]


def test_author_matching_ignores_case_and_accents(build: Build) -> None:
    client = build([{"id": "1", "title": "Title", "authors": ["Jürgen Müller"]}]).test_client()
    for q in ("author:muller", "author:Müller", "author:MULLER", 'author:"jurgen muller"'):
        assert client.get("/api/search", query_string={"q": q}).json["total"] == 1, q
    assert client.get("/api/search", query_string={"author": "jurgen muller"}).json["total"] == 1


def test_facet_filters_fold_values_as_the_clusters_normalizer_does(build: Build) -> None:
    """Lowercase, then Lucene's ASCII folding, on both engines: "oeuvre" is the venue "L'Œuvre",
    "lukasz cwik" the author "Łukasz Ćwik" (letters without a decomposition, which Unicode's NFKD
    leaves alone); the value filtered by is counted and shown selected."""
    client = build(
        [
            {"id": "1", "title": "One", "authors": ["Łukasz Ćwik"], "venue": "L'Œuvre"},
            {"id": "2", "title": "Two", "authors": ["Jane Doe"], "venue": "Elsewhere"},
        ]
    ).test_client()
    for params in ({"venue": "l'oeuvre"}, {"author": "lukasz cwik"}, {"venue": "L'ŒUVRE", "author": "ŁUKASZ ĆWIK"}):
        found = client.get("/api/search", query_string=params).json
        assert [hit["id"] for hit in found["results"]] == ["1"], params
        for name in params:
            selected = [(v["value"], v["count"]) for v in found["facets"][name] if v["selected"]]
            assert selected == [({"venue": "L'Œuvre", "author": "Łukasz Ćwik"}[name], 1)], (params, name)


@pytest.mark.reliability
def test_stored_markup_is_escaped_in_results_and_highlights(build: Build) -> None:
    title = '<script>alert("x")</script> Graph networks'
    client = build([{"id": "x", "title": title, "abstract": "<img src=x onerror=alert(1)> graph"}]).test_client()
    response = client.get("/api/search?q=graph")
    hit = response.json["results"][0]
    assert hit["title"] == title  # data stays data ...
    assert hit["highlights"]["title"] == (
        "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; <mark>Graph</mark> networks"
    )  # ... and HTML is escaped
    assert hit["highlights"]["abstract"] == "&lt;img src=x onerror=alert(1)&gt; <mark>graph</mark>"
    assert "<script>" not in json.dumps(hit["highlights"])


def test_did_you_mean(client: FlaskClient) -> None:
    misspelled = client.get("/api/search?q=compostional+embedings").json
    assert misspelled["suggestion"] == "compositional embeddings"
    assert client.get("/api/search?q=compositional+embeddings").json["suggestion"] is None
    assert client.get("/api/search?q=Checkpointng").json["suggestion"] == "checkpointing"


def test_paper_and_related_papers(client: FlaskClient) -> None:
    hit = client.get("/api/search?q=compositional+embeddings").json["results"][0]
    paper = client.get(f"/api/papers/{hit['id']}").json
    assert paper == {key: hit[key] for key in HIT_KEYS if key not in ("score", "highlights", "matched", "explanation")}
    assert paper["identifiers"] == {"arxiv": None, "doi": None, "url": None}  # profile pages give none
    related = client.get(f"/api/papers/{hit['id']}/related").json
    assert related["id"] == hit["id"]
    assert 0 < len(related["results"]) <= 5
    assert hit["id"] not in {r["id"] for r in related["results"]}
    assert any("embedding" in r["abstract"].lower() for r in related["results"][:2])


def test_paper_ids_with_slashes(build: Build) -> None:
    client = build([{"id": "hep-th/9901001", "title": "Strings"}]).test_client()
    assert client.get("/api/papers/hep-th/9901001").json["title"] == "Strings"
    assert client.get("/api/papers/hep-th/9901001/related").json == {"id": "hep-th/9901001", "results": []}


def test_facet_prefix_lookup_counts_under_query_and_other_filters(client: FlaskClient) -> None:
    found = client.get("/api/facets/author?prefix=nau").json
    assert found == {
        "name": "author",
        "prefix": "nau",
        "values": [{"value": "Maxim Naumov", "count": 18, "selected": False}],
        "truncated": False,
    }
    assert client.get("/api/facets/author?prefix=MAXIM+n").json["values"][0]["value"] == "Maxim Naumov"
    under_query = client.get("/api/facets/author?prefix=nau&q=shampoo&author=Maxim+Naumov").json["values"]
    shampoo = client.get("/api/search?q=shampoo").json
    assert under_query == [
        {"value": "Maxim Naumov", "count": facet(shampoo, "author").get("Maxim Naumov", 0), "selected": True}
    ]
    subjects = client.get("/api/facets/subject?prefix=cs&limit=2").json
    assert [v["value"] for v in subjects["values"]] == ["cs.LG", "cs.DC"] and subjects["truncated"] is True
    years = client.get("/api/facets/year?prefix=202").json["values"]
    assert [v["value"] for v in years] == sorted({2020, 2021, 2022, 2023, 2024, 2025, 2026}, reverse=True)


def test_suggestions_complete_the_last_word_to_authors_by_their_papers(client: FlaskClient) -> None:
    document = client.get("/api/suggest?q=training+NAUM").get_json()
    authors = [s for s in document["suggestions"] if s["kind"] == "author"]
    assert [s["value"] for s in authors] == ["Maxim Naumov"]
    (naumov,) = authors
    assert naumov["text"] == 'training author:"Maxim Naumov"'
    # Counted among the papers the earlier word finds: his papers holding "training".
    search = client.get("/api/search", query_string={"q": "training", "author": "Maxim Naumov"}).get_json()
    everything = client.get("/api/search", query_string={"author": "Maxim Naumov"}).get_json()
    assert naumov["papers"] == search["total"] < everything["total"]
    (alone,) = [s for s in client.get("/api/suggest?q=NAUM").get_json()["suggestions"] if s["kind"] == "author"]
    assert alone["papers"] == everything["total"]
    assert client.get("/api/suggest?q=naumov+").get_json() == {"q": "naumov ", "suggestions": []}
    assert set(error_of(client, "/api/suggest?q=na&limit=0", 400)["details"]) == {"limit"}


def test_suggestions_complete_the_last_word_to_words_by_their_papers(client: FlaskClient) -> None:
    document = client.get("/api/suggest?q=memory+COMPO").get_json()
    words = [s for s in document["suggestions"] if s["kind"] == "word"]
    assert {"text": "memory compositional", "kind": "word", "value": "compositional", "papers": 1} in words
    assert [s["papers"] for s in words] == sorted((s["papers"] for s in words), reverse=True)
    assert all(s["value"].startswith("compo") for s in words)
    embedding = client.get("/api/suggest?q=embeddi").get_json()["suggestions"]
    assert [s["value"] for s in embedding[:2]] == ["embedding", "embeddings"]


def test_suggestions_are_counted_under_the_search_filters(client: FlaskClient) -> None:
    """The page sends its whole form: sort and paging are accepted and ignored, the filters narrow."""
    form = {"q": "naum", "year_from": 2024, "subject": "cs.LG", "sort": "newest", "page": 2, "per_page": 20}
    (naumov,) = [s for s in client.get("/api/suggest", query_string=form).get_json()["suggestions"]]
    filtered = client.get("/api/search", query_string={"author": "Maxim Naumov", "year_from": 2024, "subject": "cs.LG"})
    assert naumov["papers"] == filtered.get_json()["total"]
    words = client.get("/api/suggest", query_string={"q": "embed"}).get_json()["suggestions"]
    in_2019 = client.get("/api/suggest", query_string={"q": "embed", "year_from": 2019, "year_to": 2019}).get_json()
    everywhere = {s["value"]: s["papers"] for s in words}
    narrowed = {s["value"]: s["papers"] for s in in_2019["suggestions"]}
    assert narrowed and all(papers <= everywhere[word] for word, papers in narrowed.items())
    assert sum(narrowed.values()) < sum(everywhere[word] for word in narrowed)
    assert client.get("/api/suggest", query_string={"q": "embed", "subject": "no.SUCH"}).get_json()["suggestions"] == []
    assert set(error_of(client, "/api/suggest?q=embed&year_from=2020&year_to=2019", 400)["details"]) == {"year_to"}


def test_author_papers_and_co_authors(client: FlaskClient) -> None:
    author = client.get("/api/authors/Maxim Naumov?per_page=100").json
    assert (author["name"], author["total"], len(author["results"])) == ("Maxim Naumov", 18, 18)
    assert author["coauthors"] == [{"name": "Dheevatsa Mudigere", "count": 8}]
    search = client.get("/api/search?author=Maxim+Naumov&per_page=100").json
    assert [hit["id"] for hit in author["results"]] == [hit["id"] for hit in search["results"]]
    assert (author["years"], author["subjects"]) == (search["facets"]["year"], search["facets"]["subject"])
    assert client.get("/api/authors/maxim naumov?per_page=1").json["name"] == "Maxim Naumov"
    assert error_of(client, "/api/authors/Maxim Naumof", 404)["details"] == {"suggestions": ["Maxim Naumov"]}


def test_author_names_with_slashes_and_accents(build: Build) -> None:
    authors = ["AC/DC Collective", "Jürgen Müller"]
    client = build([{"id": "1", "title": "Title", "authors": authors}]).test_client()
    assert client.get("/api/authors/ac/dc collective").json["coauthors"] == [{"name": "Jürgen Müller", "count": 1}]
    assert client.get("/api/authors/JURGEN MULLER").json["name"] == "Jürgen Müller"


def test_export_formats(client: FlaskClient) -> None:
    jsonl_export = client.get("/api/export?format=jsonl&q=embedding")
    assert jsonl_export.status_code == 200
    assert jsonl_export.headers["Content-Disposition"] == 'attachment; filename="searchsvc-export.jsonl"'
    records = [json.loads(line) for line in jsonl_export.get_data(as_text=True).splitlines()]
    search = client.get("/api/search?q=embedding&per_page=100").json
    assert [r["id"] for r in records] == [hit["id"] for hit in search["results"]]
    assert jsonl_export.headers["X-Export-Count"] == str(search["total"])

    rows = list(csv.DictReader(io.StringIO(client.get("/api/export?format=csv&subject=cs.NI").get_data(as_text=True))))
    assert [row["subjects"] for row in rows] == ["cs.NI"]

    bibtex = client.get("/api/export?format=bibtex&q=shampoo")
    assert bibtex.mimetype == "application/x-bibtex"
    assert bibtex.get_data(as_text=True).startswith("@misc{")


@pytest.mark.reliability
def test_identifiers_are_served_linked_and_exported(build: Build) -> None:
    client = build(
        [
            {"id": "a", "title": "Lattice one", "arxiv": "arXiv:1909.02107v3", "doi": "https://doi.org/10.5555/ABC"},
            {"id": "b", "title": "Lattice two", "url": 'https://example.org/?a="><script>alert(1)</script>'},
            {"id": "c", "title": "Lattice three", "url": "javascript:alert(1)"},
        ]
    ).test_client()
    paper = client.get("/api/papers/a").json
    assert paper["identifiers"] == {"arxiv": "1909.02107", "doi": "10.5555/abc", "url": None}
    hits = {hit["id"]: hit["identifiers"] for hit in client.get("/api/search?q=lattice").json["results"]}
    assert hits["c"] == {"arxiv": None, "doi": None, "url": None}  # a javascript: address is never kept
    assert hits["b"]["url"].startswith("https://example.org/")

    page = client.get("/papers/a").get_data(as_text=True)
    assert 'href="https://arxiv.org/abs/1909.02107"' in page and 'href="https://doi.org/10.5555/abc"' in page
    results = client.get("/?q=lattice").get_data(as_text=True)
    assert "<script>alert" not in results and "javascript:" not in results
    assert 'href="https://example.org/?a=&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in results

    csv_text = client.get("/api/export?format=csv&q=lattice").get_data(as_text=True)
    rows = {row["id"]: row for row in csv.DictReader(io.StringIO(csv_text))}
    assert (rows["a"]["doi"], rows["a"]["arxiv"], rows["a"]["url"]) == ("10.5555/abc", "1909.02107", "")
    jsonl_text = client.get("/api/export?format=jsonl&q=lattice").get_data(as_text=True)
    records = {r["id"]: r for r in map(json.loads, jsonl_text.splitlines())}
    assert (records["a"]["arxiv"], records["c"]["url"]) == ("1909.02107", None)
    bibtex = client.get("/api/export?format=bibtex&q=lattice+one").get_data(as_text=True)
    assert "doi = {10.5555/abc}" in bibtex and "eprint = {1909.02107}" in bibtex and "archivePrefix = {arXiv}" in bibtex


class _MetaTags(HTMLParser):
    """The `<meta name=… content=…>` tags of a page, in order, as (name, content)."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, str]] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "meta" and values.get("name"):
            self.tags.append((values["name"] or "", values.get("content") or ""))


_CITED = [
    {
        "id": "a",
        "title": 'Lattice one: "quoted" <b>bold</b>',
        "authors": ["Maxim Naumov", "Zoë Müller"],
        "year": 2020,
        "arxiv": "arXiv:1909.02107v3",
        "doi": "https://doi.org/10.5555/ABC",
    },
    {"id": "b", "title": "Lattice two", "authors": ["Plato"], "year": 2019},
    {"id": "c", "title": "Lattice three"},
]


def test_chosen_papers_are_exported_in_the_order_given(build: Build) -> None:
    """Issue #31: `id=` (repeatable) exports exactly the papers a reader chose, in their order."""
    client = build(_CITED).test_client()
    chosen = client.get("/api/export?format=jsonl&id=c&id=a")
    assert chosen.status_code == 200 and chosen.headers["X-Export-Count"] == "2"
    assert [json.loads(line)["id"] for line in chosen.get_data(as_text=True).splitlines()] == ["c", "a"]
    unknown = error_of(client, "/api/export?format=ris&id=a&id=nope", 404)
    assert "'nope'" in unknown["message"]
    assert error_of(client, "/api/export?format=ris&id=a&id=a", 400)["details"] == {"id": ["Given more than once: a."]}
    assert error_of(client, "/api/export?format=ris&id=a&q=lattice", 400)["details"] == {
        "id": ["Give papers by id or a search (q), not both."]
    }
    assert list(error_of(client, "/api/export?format=ris&id=a/../b", 400)["details"]) == ["id"]


def test_ris_export_reads_back_with_a_ris_parser(build: Build) -> None:
    client = build(_CITED).test_client()
    ris = client.get("/api/export?format=ris&q=lattice&sort=oldest")
    assert ris.mimetype == "application/x-research-info-systems"
    assert ris.headers["Content-Disposition"] == 'attachment; filename="searchsvc-export.ris"'
    records = rispy.loads(ris.get_data(as_text=True))
    assert [(r["title"], r.get("authors"), r.get("year"), r.get("doi")) for r in records] == [
        ("Lattice two", ["Plato"], "2019", None),
        ('Lattice one: "quoted" <b>bold</b>', ["Naumov, Maxim", "Müller, Zoë"], "2020", "10.5555/abc"),
        ("Lattice three", None, None, None),
    ]


def test_a_paper_page_carries_the_citation_tags_reference_managers_read(build: Build) -> None:
    """Issue #31: Highwire `citation_*` tags, as Zotero's connector reads them from arXiv's pages."""
    client = build(_CITED).test_client()
    page = client.get("/papers/a").get_data(as_text=True)
    assert '<b>bold</b>"' not in page  # the title is escaped inside its attribute
    assert [tag for tag in _MetaTags(page).tags if tag[0].startswith("citation_")] == [
        ("citation_title", 'Lattice one: "quoted" <b>bold</b>'),
        ("citation_author", "Maxim Naumov"),
        ("citation_author", "Zoë Müller"),
        ("citation_publication_date", "2020"),
        ("citation_doi", "10.5555/abc"),
        ("citation_arxiv_id", "1909.02107"),
        ("citation_abstract_html_url", "/papers/a"),
    ]
    bare = [tag for tag in _MetaTags(client.get("/papers/c").get_data(as_text=True)).tags if "citation" in tag[0]]
    assert bare == [("citation_title", "Lattice three"), ("citation_abstract_html_url", "/papers/c")]


def test_invalid_parameters_are_a_400_naming_each_field(client: FlaskClient) -> None:
    error = error_of(client, "/api/search?per_page=0&sort=best&year_from=20x&page=0&colour=red", 400)
    assert error["code"] == "invalid_parameters"
    assert set(error["details"]) == {"per_page", "sort", "year_from", "page", "colour"}
    assert error["details"]["per_page"] == ["Must be between 1 and 100."]
    assert error["details"]["colour"] == ["Unknown field."]
    assert error_of(client, "/api/search?page=2&page=3", 400)["details"] == {"page": ["Given more than once."]}
    deep = error_of(client, "/api/search?page=101&per_page=100", 400)
    assert "page * per_page must be at most 10000" in deep["details"]["page"][0]
    assert error_of(client, "/api/search?q=" + "x" * 501, 400)["details"]["q"] == [
        "Longer than the maximum of 500 characters."
    ]
    assert error_of(client, "/api/search?year_from=2020&year_to=2019", 400)["details"]["year_to"]
    assert error_of(client, "/api/export?q=x", 400)["details"] == {"format": ["Missing data for required field."]}
    assert error_of(client, "/api/export?format=pdf", 400)["details"]["format"]
    assert error_of(client, "/api/facets/author?prefix=" + "n" * 101, 400)["details"]["prefix"]


def test_query_syntax_errors_are_a_400_saying_where(client: FlaskClient) -> None:
    error = error_of(client, "/api/search?q=embedding+AND", 400)
    assert error["code"] == "query_syntax"
    assert error["message"] == "query syntax: 'AND' needs a search term after it (column 11)"
    assert error["details"] == {"q": ["'AND' needs a search term after it (column 11)"], "column": 11}
    assert error_of(client, "/api/search?q=year:abc", 400)["details"]["column"] == 6


def test_unknown_papers_facets_and_routes_are_a_json_404(client: FlaskClient) -> None:
    assert error_of(client, "/api/papers/no-such-paper", 404) == {
        "code": "not_found",
        "message": "no paper with id 'no-such-paper'",
        "details": {"id": "no-such-paper"},
    }
    assert error_of(client, "/api/papers/no-such-paper/related", 404)["code"] == "not_found"
    assert "the facets are year, subject, author" in error_of(client, "/api/facets/colour", 404)["message"]
    assert error_of(client, "/api/nothing-here", 404)["code"] == "not_found"
    response = client.post("/api/search")
    assert response.status_code == 405 and response.json["error"]["code"] == "method_not_allowed"
    assert response.headers["Allow"]


NASTY_QUERIES = [
    "\x00",
    "a\x00b",
    "\x1b[31m",
    "(((",
    '"""',
    "AND OR NOT",
    "NOT NOT x",
    "-(-(x))",
    "- -x",
    "**",
    "title:*",
    "year:",
    "year:0000",
    "year:..",
    "🙂*",
    "日本語",
    "a:b:c",
    "title:()",
    "x^2 y~ [1 TO 2] {a} \\ ` '",
    "\u200b\ufeff",
    "(" * 250,
    '"' + "a " * 240 + '"',
    "x*" * 100,
]


@pytest.mark.reliability
@pytest.mark.parametrize("q", NASTY_QUERIES)
def test_nasty_queries_get_an_answer_or_a_clear_400_never_a_500(client: FlaskClient, q: str) -> None:
    for url, extra in (
        ("/api/search", {}),
        ("/api/facets/author", {"prefix": q[:100]}),
        ("/api/export", {"format": "csv"}),
    ):
        response = client.get(url, query_string={"q": q, **extra})
        assert response.status_code in (200, 400), (url, response.get_data(as_text=True))
        if response.status_code == 400:
            assert response.json["error"]["code"] in ("query_syntax", "query_too_broad", "invalid_parameters")
            assert response.json["error"]["message"]


@pytest.mark.reliability
@pytest.mark.parametrize(
    "params",
    [
        {"page": "99999999999999999999999"},
        {"per_page": "1e3"},
        {"year_from": "-5"},
        {"year_to": "2020.5"},
        {"page": "-1"},
        {"subject": ""},
        {"author": ""},
        {"sort": ""},
    ],
)
def test_out_of_range_and_malformed_parameters_are_a_400(client: FlaskClient, params: dict) -> None:
    assert error_of(client, "/api/search?" + "&".join(f"{k}={v}" for k, v in params.items()), 400)["details"]


@pytest.mark.reliability
def test_no_published_index_is_a_503(factory: BackendFactory) -> None:
    client = factory.unpublished().test_client()
    for url in ("/api/search", "/readyz", "/api/papers/x", "/api/facets/author", "/api/export?format=csv"):
        error = error_of(client, url, 503)
        assert error["code"] == "index_unavailable"
        assert "no index is published" in error["message"]
    assert client.get("/healthz").json == {"status": "ok"}


def test_readiness_names_the_published_index(client: FlaskClient, factory: BackendFactory) -> None:
    ready = client.get("/readyz").json
    assert ready["status"] == "ready" and ready["doc_count"] == 28
    assert ready["engine"] == factory.kind  # the engine, not its library's version


@pytest.mark.parametrize(("query", "expected_first"), NATURAL_SEED_QUERIES)
def test_natural_seed_queries_rank_their_paper_first(client: FlaskClient, query: str, expected_first: str) -> None:
    assert client.get("/api/search", query_string={"q": query}).json["results"][0]["title"].startswith(expected_first)


def test_an_acronym_finds_its_plural_and_its_plural_the_acronym(build: Build) -> None:
    """Snowball keeps the "s" of "LLMs" (no vowel before it) and "GPUs": both engines drop it first."""
    client = build(
        [
            {"id": "plural", "title": "Evaluating LLMs on reasoning", "year": 2024},
            {"id": "singular", "title": "An LLM for code review", "year": 2023},
            {"id": "other", "title": "Training CNNs on images", "year": 2022},
            {"id": "gpus", "title": "Sharding embeddings over GPUs", "year": 2021},
            {"id": "gpu", "title": "One GPU is enough", "year": 2020},
        ]
    ).test_client()
    for query in ("LLM", "llms", "LLMs"):
        found = client.get("/api/search", query_string={"q": query}).json["results"]
        assert sorted(hit["id"] for hit in found) == ["plural", "singular"], query
    for query in ("GPU", "GPUs"):  # its one vowel just before the "s": Snowball keeps that "s" too
        found = client.get("/api/search", query_string={"q": query}).json["results"]
        assert sorted(hit["id"] for hit in found) == ["gpu", "gpus"], query
    (hit,) = [hit for hit in client.get("/api/search?q=LLM").json["results"] if hit["id"] == "plural"]
    assert hit["highlights"]["title"] == "Evaluating <mark>LLMs</mark> on reasoning"
    assert [hit["id"] for hit in client.get("/api/search?q=cnn").json["results"]] == ["other"]


def test_the_search_page_footer_names_the_served_generation_and_its_last_change(client: FlaskClient) -> None:
    """The footer reads `backend.last_change()` (one request on OpenSearch), which must say what
    /readyz, from the whole `status()`, says."""
    ready = client.get("/readyz").get_json()
    page = client.get("/", query_string={"q": "training"}).get_data(as_text=True)
    assert f"Index generation <code>{ready['generation']}</code>" in page
    day = datetime.fromisoformat(ready["changed_at"]).astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    assert f">{day}</time>" in page
