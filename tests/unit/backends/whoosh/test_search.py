"""Ranked, faceted search through the backend interface, on the seeds and on small fixtures."""

from __future__ import annotations

from collections import Counter

import pytest

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.model import SearchRequest, SearchResult
from searchsvc.operations.search import search
from tests.helpers.indexes import MakeIndex
from tests.helpers.paths import SEEDS


def raw_seed_records() -> list[dict]:
    """The seed records read naively (4 non-blank lines each), independent of the reader."""
    records = []
    for path in sorted(SEEDS.glob("*.txt")):
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        person = lines[1]
        for year, title, _abstract, subject in zip(*[iter(lines[4:])] * 4, strict=True):
            records.append({"title": title, "year": int(year[5:]), "subject": subject.rstrip("↗"), "author": person})
    return records


def facet_dict(result: SearchResult, name: str) -> dict:
    return {v.value: v.count for v in result.facets[name]}


def test_empty_query_lists_every_paper_newest_first_with_exact_facets(seed_backend: WhooshBackend) -> None:
    result = search(seed_backend, SearchRequest(per_page=100))
    records = raw_seed_records()
    papers = {r["title"]: r for r in records}  # one per distinct title
    assert result.total == len(papers) == 28
    years = [hit.year for hit in result.hits]
    assert years == sorted(years, reverse=True)
    assert facet_dict(result, "year") == dict(Counter(p["year"] for p in papers.values()))
    assert facet_dict(result, "subject") == dict(Counter(p["subject"] for p in papers.values()))
    assert facet_dict(result, "author") == dict(Counter(r["author"] for r in records))
    assert [v.value for v in result.facets["year"]] == sorted(facet_dict(result, "year"), reverse=True)
    subjects = result.facets["subject"]
    assert [(v.value, v.count) for v in subjects] == sorted(
        ((v.value, v.count) for v in subjects), key=lambda x: (-x[1], x[0])
    )


def test_compositional_embeddings_ranks_its_paper_first(seed_backend: WhooshBackend) -> None:
    result = search(seed_backend, SearchRequest(q="compositional embeddings"))
    top = result.hits[0]
    assert (
        top.title
        == "Compositional Embeddings Using Complementary Partitions for Memory-Efficient Recommendation Systems"
    )
    assert top.score is not None and all(top.score >= hit.score for hit in result.hits)  # hits[0] exists: not vacuous
    assert top.highlights["title"] == (
        "<mark>Compositional</mark> <mark>Embeddings</mark> Using Complementary Partitions"
        " for Memory-Efficient Recommendation Systems"
    )
    assert "<mark>embedding" in top.highlights["abstract"]


@pytest.mark.parametrize(
    ("query", "expected_first"),
    [
        (
            "checkpointing recommendation models",
            "Check-N-Run: A Checkpointing System for Training Deep Learning Recommendation Models",
        ),
        (
            "helix parallelism decoding",
            "Helix Parallelism: Rethinking Sharding Strategies for Interactive Multi-Million-Token LLM Decoding",
        ),
        (
            "Shampoo",
            "A Distributed Data-Parallel PyTorch Implementation of the Distributed Shampoo Optimizer"
            " for Training Neural Networks At-Scale",
        ),
    ],
)
def test_keyword_queries_find_their_paper(seed_backend: WhooshBackend, query: str, expected_first: str) -> None:
    assert search(seed_backend, SearchRequest(q=query)).hits[0].title == expected_first


def test_stemming_and_accent_folding_in_text(make_index: MakeIndex) -> None:
    backend = make_index([{"id": "1", "title": "Résumé parsing", "abstract": "Parsers parsed."}])
    for query in ("resume", "RÉSUMÉ", "parse", "parsers"):
        assert search(backend, SearchRequest(q=query)).total == 1, query


def test_multi_select_facet_counts(seed_backend: WhooshBackend) -> None:
    """With cs.LG selected, the subject facet still counts the others as if unfiltered."""
    unfiltered = search(seed_backend, SearchRequest())
    selected = search(seed_backend, SearchRequest(subject=("cs.LG",)))
    assert facet_dict(selected, "subject") == facet_dict(unfiltered, "subject")
    assert {v.value: v.selected for v in selected.facets["subject"]} == {
        "cs.LG": True,
        "cs.DC": False,
        "cs.IR": False,
        "cs.AR": False,
        "cs.NI": False,
    }
    assert selected.total == 12
    # Other facets are narrowed by the subject filter.
    lg_authors = Counter(
        a for hit in search(seed_backend, SearchRequest(subject=("cs.LG",), per_page=100)).hits for a in hit.authors
    )
    assert facet_dict(selected, "author") == dict(lg_authors)
    # A second subject adds its papers (values within a facet are OR-ed).
    both = search(seed_backend, SearchRequest(subject=("cs.LG", "cs.NI")))
    assert both.total == 13


def test_facets_combine_with_and(seed_backend: WhooshBackend) -> None:
    result = search(seed_backend, SearchRequest(subject=("cs.DC",), author=("Maxim Naumov",), per_page=100))
    assert result.total == len(result.hits) > 0  # not empty, so the next check is not vacuous
    assert all("cs.DC" in hit.subjects and "Maxim Naumov" in hit.authors for hit in result.hits)
    naumov_dc = [r for r in raw_seed_records() if r["author"] == "Maxim Naumov" and r["subject"] == "cs.DC"]
    assert result.total == len(naumov_dc)


def test_filters_are_case_and_accent_insensitive_and_unknown_values_listed(seed_backend: WhooshBackend) -> None:
    result = search(seed_backend, SearchRequest(author=("maxim naumov", "Nobody Known"), subject=("CS.lg",)))
    assert result.total > 0
    assert [(v.value, v.count, v.selected) for v in result.facets["author"] if v.selected] == [
        ("Maxim Naumov", facet_dict(result, "author")["Maxim Naumov"], True),
        ("Nobody Known", 0, True),
    ]
    assert [v.value for v in result.facets["subject"] if v.selected] == ["cs.LG"]


def test_selected_value_listed_beyond_the_facet_limit_and_at_zero(make_index: MakeIndex) -> None:
    records = [
        {"id": str(i), "title": f"Paper {i}", "authors": [f"Author {i:02}"], "categories": ["cs.LG"]} for i in range(15)
    ]
    records.append({"id": "x", "title": "Other", "authors": ["Author 14"], "categories": ["cs.IR"]})
    backend = make_index(records, facet_limit=3)
    result = search(backend, SearchRequest(author=("Author 09",), subject=("cs.IR",)))
    authors = [(v.value, v.count, v.selected) for v in result.facets["author"]]
    assert authors == [("Author 14", 1, False), ("Author 09", 0, True)]
    assert result.total == 0


def test_year_range_filter_and_year_facet(seed_backend: WhooshBackend) -> None:
    result = search(seed_backend, SearchRequest(year_from=2021, year_to=2023, per_page=100))
    assert {hit.year for hit in result.hits} == {2021, 2022, 2023}
    expected = len({r["title"] for r in raw_seed_records() if 2021 <= r["year"] <= 2023})
    assert result.total == expected
    year_facet = {v.value: (v.count, v.selected) for v in result.facets["year"]}
    assert year_facet[2022][1] and not year_facet[2024][1]  # counts ignore the year filter itself
    assert year_facet[2024][0] == 2


def test_pagination_with_total_an_exact_multiple_of_per_page(seed_backend: WhooshBackend) -> None:
    pages = [search(seed_backend, SearchRequest(page=n, per_page=7)) for n in range(1, 6)]
    assert [r.pages for r in pages] == [4] * 5
    assert [len(r.hits) for r in pages] == [7, 7, 7, 7, 0]  # page 4 is full; no empty page is ever advertised
    ids = [hit.id for r in pages for hit in r.hits]
    assert len(ids) == len(set(ids)) == 28


def test_relevance_pages_are_stable_and_ties_go_to_newer(seed_backend: WhooshBackend) -> None:
    whole = search(seed_backend, SearchRequest(q="training", per_page=100)).hits
    paged = [
        hit for n in range(1, 5) for hit in search(seed_backend, SearchRequest(q="training", page=n, per_page=3)).hits
    ]
    assert [h.id for h in paged] == [h.id for h in whole[:12]]
    keys = [(-h.score, -(h.year or 0)) for h in whole]
    assert keys == sorted(keys)


def test_sort_orders(seed_backend: WhooshBackend) -> None:
    newest = search(seed_backend, SearchRequest(q="recommendation", sort="newest", per_page=100)).hits
    oldest = search(seed_backend, SearchRequest(q="recommendation", sort="oldest", per_page=100)).hits
    assert [(-h.year, h.id) for h in newest] == sorted((-h.year, h.id) for h in newest)
    assert [(h.year, h.id) for h in oldest] == sorted((h.year, h.id) for h in oldest)
    assert {h.id for h in newest} == {h.id for h in oldest}
    assert newest and all(h.score is None for h in newest)


def test_undated_papers_sort_last_both_ways(make_index: MakeIndex) -> None:
    backend = make_index(
        [
            {"id": "a", "title": "Alpha", "year": None},
            {"id": "b", "title": "Beta", "year": 2001},
            {"id": "c", "title": "Gamma", "year": 1999},
        ]
    )
    assert [h.id for h in search(backend, SearchRequest(sort="newest")).hits] == ["b", "c", "a"]
    assert [h.id for h in search(backend, SearchRequest(sort="oldest")).hits] == ["c", "b", "a"]


def test_stored_markup_is_escaped_in_highlights(make_index: MakeIndex) -> None:
    title = '<script>alert("x")</script> Graph <b>neural</b> networks & "quotes"'
    backend = make_index([{"id": "x", "title": title, "abstract": "<img src=x onerror=alert(1)> graph"}])
    hit = search(backend, SearchRequest(q="graph")).hits[0]
    assert hit.title == title  # the stored value itself is returned as data
    assert hit.highlights["title"] == (
        "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; <mark>Graph</mark> &lt;b&gt;neural&lt;/b&gt; "
        "networks &amp; &quot;quotes&quot;"
    )
    assert hit.highlights["abstract"] == "&lt;img src=x onerror=alert(1)&gt; <mark>graph</mark>"
    unmatched = search(backend, SearchRequest()).hits[0]  # no query: the fallbacks must escape too
    assert unmatched.highlights["title"].startswith("&lt;script&gt;")
    assert unmatched.highlights["abstract"] == "&lt;img src=x onerror=alert(1)&gt; graph"


def test_equal_scores_go_to_the_newer_paper_then_the_smaller_id(make_index: MakeIndex) -> None:
    same = {"title": "Graph neural networks", "abstract": "Message passing."}
    records = [
        {"id": "c", "year": 2019, **same},
        {"id": "b", "year": 2021, **same},
        {"id": "d", "year": None, **same},
        {"id": "a", "year": 2021, **same},
        {"id": "e", "year": 2020, **same},
    ]
    backend = make_index(records)
    hits = search(backend, SearchRequest(q="graph networks")).hits
    assert len({hit.score for hit in hits}) == 1  # a genuine tie
    assert [hit.id for hit in hits] == ["a", "b", "e", "c", "d"]
    paged = [
        h.id for n in (1, 2, 3) for h in search(backend, SearchRequest(q="graph networks", page=n, per_page=2)).hits
    ]
    assert paged == ["a", "b", "e", "c", "d"]


def test_not_removes_papers_instead_of_adding_all_others(seed_backend: WhooshBackend) -> None:
    def ids(q: str) -> set[str]:
        return {hit.id for hit in search(seed_backend, SearchRequest(q=q, per_page=100)).hits}

    everything = ids("")
    embedding, compositional, training = ids("embedding"), ids("compositional"), ids("training")
    assert compositional & embedding and compositional - embedding  # overlapping, neither contains the other
    assert ids("embedding NOT compositional") == embedding - compositional
    assert ids("NOT embedding") == everything - embedding
    assert ids("NOT embedding NOT training") == everything - embedding - training
    assert ids("training (embedding NOT compositional)") == training | (embedding - compositional)


def test_phrase_matches_adjacent_words_only(seed_backend: WhooshBackend) -> None:
    phrase = search(seed_backend, SearchRequest(q='"embedding tables"', per_page=100)).hits
    words = search(seed_backend, SearchRequest(q="embedding tables", per_page=100)).hits
    assert 0 < len(phrase) < len(words)  # `phrase` is not empty, so the next check is not vacuous
    assert all("embedding table" in hit.abstract.lower() or "embedding table" in hit.title.lower() for hit in phrase)
