"""Field rules every reader applies alike: here, text in composed form."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from searchsvc.core.paper import Paper
from searchsvc.core.publication import Publication
from searchsvc.ingest.fields import composed_paper
from searchsvc.ingest.sources import read_records
from tests.helpers.records import write_jsonl


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def test_every_text_of_a_paper_is_composed_and_its_orcids_still_name_its_authors() -> None:
    author = "Zoë Müller"
    paper = Paper(
        id="p",
        title=nfd("Étude of café networks"),
        abstract=nfd("Naïve résumé"),
        year=2021,
        subjects=[nfd("cs.ÉT")],
        authors=[nfd(author), "Ana Lopes"],
        publication=Publication(venue=nfd("Actes de la Conférence"), orcids={nfd(author): "0000-0002-1825-0097"}),
    )
    done = composed_paper(paper)
    assert (done.title, done.abstract) == ("Étude of café networks", "Naïve résumé")
    assert done.authors == [author, "Ana Lopes"] and done.subjects == ["cs.ÉT"]
    assert done.publication.venue == "Actes de la Conférence"
    assert done.publication.orcids == {author: "0000-0002-1825-0097"}
    assert all(text == unicodedata.normalize("NFC", text) for text in [done.title, done.abstract, *done.authors])


def test_a_paper_already_composed_is_the_same_paper() -> None:
    paper = Paper(id="p", title="Café au lait", abstract="plain", year=None, authors=["José"])
    assert composed_paper(paper) is paper


def test_a_record_read_from_any_source_comes_composed(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "r.jsonl", [{"id": "r", "title": nfd("Café"), "authors": [nfd("José")]}])
    (paper,) = read_records([source], lambda message: None)
    assert (paper.title, paper.authors) == ("Café", ["José"])
