from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from searchsvc.core.catalogue import JournalEntry
from searchsvc.core.identifiers import Identifiers
from searchsvc.core.paper import Paper, SourceLocation, catalogue_key, paper_id_for_title
from searchsvc.core.publication import Publication
from searchsvc.core.text import normalise_title
from searchsvc.host import ScratchFolder
from searchsvc.ingest.collection import SCRATCH_PREFIX
from searchsvc.ingest.field_limits import FieldLimits
from searchsvc.ingest.merging import Replayed, merge_records
from searchsvc.ingest.sources import discover, read_records
from tests.helpers.paths import SEEDS, SOURCE_SAMPLES
from tests.helpers.records import profile_page

BOTH = {
    "Compositional Embeddings Using Complementary Partitions for Memory-Efficient Recommendation Systems",
    "Deep Learning Training in Facebook Data Centers: Design of Scale-up and Scale-out Systems",
    "Differentiable NAS Framework and Application to Ads CTR Prediction",
    "Disaggregated Multi-Tower: Topology-aware Modeling Technique for Efficient Large-Scale Recommendation",
    "Learning to Collide: Recommendation System Model Compression with Learned Hash Functions",
    "Mixed Dimension Embeddings with Application to Memory-Efficient Recommendation Systems",
    "Software-Hardware Co-design for Fast and Scalable Training of Deep Learning Recommendation Models",
    "Supporting Massive DLRM Inference Through Software Defined Memory",
}


def seed_collection():
    return merge_records(read_records(discover([SEEDS]), lambda m: None), lambda m: None)


def test_seed_records_merge_into_28_papers() -> None:
    collection = seed_collection()
    assert (collection.records, len(collection), collection.merged) == (36, 28, 8)
    shared = {p.title for p in collection if len(p.authors) == 2}
    assert shared == BOTH
    for paper in collection:
        if paper.title in BOTH:
            assert paper.authors == ["Dheevatsa Mudigere", "Maxim Naumov"]
            assert len(paper.sources) == 2


def test_ids_are_stable_across_source_order_and_rebuilds() -> None:
    records = list(read_records(discover([SEEDS]), lambda m: None))
    ids = sorted(p.id for p in merge_records(records, lambda m: None))
    shuffled = records[:]
    random.Random(4).shuffle(shuffled)
    assert sorted(p.id for p in merge_records(shuffled, lambda m: None)) == ids
    # The same title always gives the same id: a hash of the normalised title, not a counter.
    assert paper_id_for_title("Compositional Embeddings") == paper_id_for_title("compositional  embeddings!")
    assert paper_id_for_title("Compositional Embeddings").startswith("compositional-embeddings-")
    assert paper_id_for_title("Café Society") == paper_id_for_title("Cafe society")


def test_titles_in_any_script_get_distinct_ids() -> None:
    ids = {paper_id_for_title(t) for t in ("深度学习", "机器翻译", "Μηχανική μάθηση", "Машинное обучение")}
    assert len(ids) == 4
    assert paper_id_for_title("BERT: 深度学习").startswith("bert-")
    assert paper_id_for_title("Машинное обучение") == paper_id_for_title("МАШИННОЕ  обучение!")


def test_ids_differ_for_titles_sharing_a_long_prefix() -> None:
    prefix = "a " * 40
    assert paper_id_for_title(prefix + "one") != paper_id_for_title(prefix + "two")


def test_merge_fills_gaps_and_warns_on_conflicts() -> None:
    def paper(line: int, **fields) -> Paper:
        base = dict(id="p", title="Title", abstract="", year=None, subjects=[], authors=[])
        return Paper(**{**base, **fields}, sources=[SourceLocation("s.jsonl", line)])

    warnings: list[str] = []
    merged = merge_records(
        [
            paper(1, authors=["A"], subjects=["cs.LG"]),
            paper(2, year=2020, abstract="Text.", authors=["B", "A"], subjects=["cs.IR"]),
            paper(3, year=2021, title="Other"),
        ],
        warnings.append,
    )["p"]
    assert (merged.year, merged.abstract, merged.authors, merged.subjects) == (
        2020,
        "Text.",
        ["A", "B"],
        ["cs.LG", "cs.IR"],
    )
    assert warnings == [
        "s.jsonl:3: id 'p' is also used by s.jsonl:1 for another title; keeping s.jsonl:1's",
        "s.jsonl:3: 'p' has year 2021, s.jsonl:1 says 2020; keeping 2020",
    ]


def test_profile_and_jsonl_records_of_one_paper_merge(write) -> None:
    title = "Shared Paper: A Study"
    page = write("a.txt", profile_page("Ada", [("arXiv2020", title, "Abstract.", "cs.LG↗")]))
    records = write("b.jsonl", '{"title": "shared paper - a study", "authors": ["Bob"], "year": 2020}\n')
    collection = merge_records(read_records(discover([page, records]), lambda m: None), lambda m: None)
    (paper,) = collection
    assert paper.authors == ["Ada", "Bob"] and paper.title == title
    assert normalise_title(title) == "shared paper a study"


def _record(line: int, paper_id: str, title: str, **ids: str) -> Paper:
    """A record; an empty `paper_id` is derived from the title, as BibTeX, RIS, CSV and Atom records' are."""
    return Paper(
        id=paper_id or paper_id_for_title(title),
        title=title,
        abstract="",
        year=None,
        subjects=[],
        authors=[f"A{line}"],
        sources=[SourceLocation("s.jsonl", line)],
        identifiers=Identifiers.of(**ids),
    )


def test_same_doi_or_arxiv_id_is_one_paper_whatever_the_title_or_version() -> None:
    records = [
        _record(1, "a", "Preprint title", arxiv="1906.00091v1"),
        _record(2, "", "Published title", arxiv="arXiv:1906.00091v2", doi_text="10.5555/X"),
        _record(3, "", "Third spelling", doi_text="https://doi.org/10.5555/x"),
        _record(4, "d", "Another paper", doi_text="10.5555/other"),
    ]
    collection = merge_records(records, lambda m: None)
    assert (collection.records, len(collection), collection.merged) == (4, 2, 2)
    merged = collection["a"]
    assert merged.title == "Preprint title" and merged.authors == ["A1", "A2", "A3"]
    assert merged.identifiers == Identifiers("1906.00091", "10.5555/x", "")


def test_a_record_joins_papers_read_apart_whatever_the_order() -> None:
    records = [
        _record(1, "", "One", doi_text="10.5555/one"),
        _record(2, "", "Uno", arxiv="2001.01234"),
        _record(3, "", "Eins", doi_text="10.5555/one", arxiv="2001.01234"),
        _record(4, "", "Other"),
    ]
    results = set()
    for seed in range(12):
        shuffled = records[:]
        random.Random(seed).shuffle(shuffled)
        papers = merge_records([_copy(r) for r in shuffled], lambda m: None)
        results.add(tuple(sorted((p.id, tuple(sorted(p.authors))) for p in papers)))
    expected = sorted(
        [
            (paper_id_for_title("Other"), ("A4",)),
            (min(map(paper_id_for_title, ("One", "Uno", "Eins"))), ("A1", "A2", "A3")),
        ]
    )
    assert results == {tuple(expected)}


def test_a_shared_doi_under_another_title_and_another_own_id_is_two_papers() -> None:
    """As in the ACL records, where W18-6482 carries the DOI of W18-6481."""
    warnings: list[str] = []
    records = [
        _record(1, "W18-6481", "Accurate semantic textual similarity", doi_text="10.18653/v1/W18-6481"),
        _record(2, "W18-6482", "Alibaba submission to the WMT18 task", doi_text="10.18653/v1/W18-6481"),
        _record(3, "", "Accurate Semantic Textual Similarity", doi_text="10.18653/v1/W18-6481"),
    ]
    collection = merge_records(records, warnings.append)
    assert sorted(p.id for p in collection) == ["W18-6481", "W18-6482"]
    assert collection["W18-6481"].authors == ["A1", "A3"]
    assert warnings == [
        "s.jsonl:2: doi:10.18653/v1/w18-6481 is also s.jsonl:1's, a paper with another title; kept apart"
    ]


def _copy(paper: Paper) -> Paper:
    return Paper(
        paper.id,
        paper.title,
        paper.abstract,
        paper.year,
        list(paper.subjects),
        list(paper.authors),
        list(paper.sources),
        paper.identifiers,
    )


def test_seeds_with_a_bib_an_atom_feed_and_a_csv_of_some_of_the_same_papers() -> None:
    warnings: list[str] = []
    records = read_records(discover([SEEDS, SOURCE_SAMPLES / "mixed"]), warnings.append)
    collection = merge_records(records, warnings.append)
    # 36 seed records (28 papers) + 3 BibTeX + 2 Atom + 3 CSV records, of which 3 papers are new:
    # one only in the .bib, one only in the .csv, and DLRM (Atom and CSV, matched by arXiv id alone).
    assert (collection.records, len(collection), collection.merged) == (44, 31, 13)
    by_title = {normalise_title(p.title): p for p in collection}
    compositional = by_title[normalise_title(next(t for t in BOTH if t.startswith("Compositional")))]
    assert compositional.identifiers.arxiv == "1909.02107"  # from the .bib (v3) and the feed (v1)
    assert [s.path.rsplit("/", 1)[-1] for s in compositional.sources][2:] == ["lab.bib", "listing.atom"]
    mixed = next(p for title, p in by_title.items() if title.startswith("mixed dimension embeddings with application"))
    assert mixed.identifiers.doi == "10.5555/mixed.dimension" and len(mixed.sources) == 4  # by title and by DOI
    dlrm = [p for p in collection if p.identifiers.arxiv == "1906.00091"]
    assert len(dlrm) == 1 and len(dlrm[0].sources) == 2
    assert any("javascript:alert(1)" in w and "not valid; ignored" in w for w in warnings)


def test_the_catalogue_is_newest_first_with_each_papers_oldest_first_rank() -> None:
    records = [
        Paper(f"p{i}", f"Title {i}", "", year, sources=[SourceLocation("s.jsonl", i)])
        for i, year in enumerate([2019, None, 2021, 2019, 2020, None, 2021])
    ]
    with merge_records(records, lambda m: None) as collection:
        listed = list(collection.catalogue())
        assert [paper.id for paper, _ in listed] == sorted(
            (r.id for r in records), key=lambda i: catalogue_key(collection[i].year, i)
        )
        oldest_first = sorted(listed, key=lambda item: catalogue_key(item[0].year, item[0].id, newest=False))
        assert [rank for _, rank in oldest_first] == list(range(len(records)))
        assert [p.id for p, _ in collection.catalogue(2, 4)] == [p.id for p, _ in listed[2:4]]
        assert collection.without_abstract() == len(records)


def test_merged_papers_are_held_in_a_scratch_file_removed_on_close_or_failure(tmp_path: Path) -> None:
    with merge_records(read_records(discover([SEEDS]), lambda m: None), lambda m: None, tmp_path) as collection:
        scratch = collection.directory
        assert scratch.parent == tmp_path and (scratch / "papers.sqlite").is_file()
    assert not scratch.exists()

    def failing():
        yield from read_records(discover([SEEDS]), lambda m: None)
        raise ValueError("a malformed record")

    with pytest.raises(ValueError):
        merge_records(failing(), lambda m: None, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_scratch_folder_left_by_a_killed_rebuild_is_removed_by_the_next(tmp_path: Path) -> None:
    abandoned = tmp_path / f"{SCRATCH_PREFIX}1-x"  # its lock went with its process
    in_use = ScratchFolder(tmp_path, SCRATCH_PREFIX)  # a rebuild of another index, still running
    for folder in (abandoned, in_use.path):
        folder.mkdir(exist_ok=True)
        (folder / "papers.sqlite").write_bytes(b"x" * 100)
    with merge_records([], lambda m: None, tmp_path) as collection:
        assert sorted(tmp_path.iterdir()) == sorted([in_use.path, collection.directory])


def test_a_replayed_change_keeps_within_the_limits_of_the_rebuild_that_replays_it() -> None:
    """A change journaled before the limits were lowered (or before limits existed) is cut as a
    source record would be, with a warning that names the change's record; a removal still removes."""
    limits = FieldLimits(
        title_chars=20, abstract_chars=30, authors=2, author_name_chars=10, subjects=5, subject_chars=10
    )
    source = _record(1, "kept", "A source paper")
    long = _record(2, "long", "A title far longer than twenty characters")
    long.abstract = "x" * 100
    long.authors = ["Ada", "Bea", "A name past ten characters"]
    gone = _record(3, "gone", "Removed later")
    changes = [
        JournalEntry(at="2026-12-01T00:00:00Z", by="cli", added=[_copy(long), _copy(gone)]),
        JournalEntry(at="2026-12-02T00:00:00Z", by="cli", removed=["gone"]),
    ]
    warnings: list[str] = []
    replayed = Replayed()
    collection = merge_records([source], warnings.append, changes=changes, replayed=replayed, limits=limits)
    assert sorted(p.id for p in collection) == ["kept", "long"]
    cut = collection["long"]
    assert (cut.title, len(cut.abstract), cut.authors) == ("A title far longer…", 30, ["Ada", "Bea"])
    assert (replayed.changes, replayed.added, replayed.removed) == (2, 2, 1)
    assert any(w.startswith("s.jsonl:2: title of 41 characters cut to 20") for w in warnings), warnings
    assert any(w.startswith("s.jsonl:2: abstract of 100 characters cut to 30") for w in warnings), warnings


def test_merging_keeps_the_most_precise_date_a_published_venue_the_largest_count_and_every_orcid() -> None:
    """Issue #31: a preprint's record and its journal version's are one paper with the best of each."""
    preprint = _record(1, "a", "Preprint title", arxiv="1906.00091")
    preprint.year = 2019
    preprint.publication = Publication.of("arXiv", "2019-06", 12, "Semantic Scholar", {"A1": "0000-0002-1825-0097"})
    journal = _record(2, "", "Published title", arxiv="1906.00091v2")
    journal.year = 2019
    journal.publication = Publication.of("Physical Review D", "2019", 394, "OpenAlex", {"A2": "0000-0003-1613-5981"})
    later = _record(3, "", "Published title", arxiv="1906.00091")
    later.year = 2019
    later.publication = Publication.of("CoRR", "2019")
    for records in ([preprint, journal, later], [later, journal, preprint]):
        merged = next(iter(merge_records(records, lambda m: None)))
        found = merged.publication
        assert (found.venue, found.date, found.citations, found.citations_source) == (
            "Physical Review D",
            "2019-06",
            394,
            "OpenAlex",
        )
        assert found.orcids == {"A1": "0000-0002-1825-0097", "A2": "0000-0003-1613-5981"}


def test_a_journal_written_before_papers_had_a_publication_still_reads() -> None:
    """The change journal and merge states hold `Paper.encoded()` text: old entries have 8 parts."""
    paper = _record(1, "a", "Title", doi_text="10.5555/x")
    paper.publication = Publication.of("Venue", "2020-01-02", 3, "OpenAlex", {"A1": "0000-0002-1825-0097"})
    assert Paper.decoded(paper.encoded()) == paper
    old = json.dumps(json.loads(paper.encoded())[:8])
    assert Paper.decoded(old) == replace(paper, publication=Publication())
