"""The rebuild's segment writer writes the files Whoosh's own SegmentWriter writes, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from whoosh import index
from whoosh.writing import SegmentWriter

from searchsvc.backends.whoosh import segment_writing
from searchsvc.backends.whoosh.analysed_text import AnalysedText
from searchsvc.backends.whoosh.indexing import document
from searchsvc.backends.whoosh.schema import build_schema
from searchsvc.core.paper import Paper
from tests.helpers.paths import SHARED_ACL

# What tokenizing, folding, stop words, stemming and renumbering must agree on.
TEXTS = [
    "",
    "the of and a",  # stop words only: no stemmed term at all
    "The Müller–Ölçer café: naïve résumés, ﬁnancial ß straße ǅ İstanbul",
    "of the a processing processes processors* a.b.c 3.14 x.y. .5 __init__ can't",
    "Machine translation for machine translation: machine TRANSLATION",
    "a a a a b a a",  # a stop word between kept words: the renumbered positions
    "日本語の テキスト 和 中文 and עברית text; ٣٤٥ numbers ²³",
    "word " * 300,  # a long field: the length byte's precision
]


def _papers(count: int) -> list[Paper]:
    papers = [
        Paper(id=f"t{n}", title=text, abstract=TEXTS[-1 - n], authors=["Zoë Ölçer", "A. B. Müller"], year=2000 + n)
        for n, text in enumerate(TEXTS)
    ]
    if SHARED_ACL.exists():
        with SHARED_ACL.open(encoding="utf-8") as lines:
            for _, line in zip(range(count), lines, strict=False):
                record = json.loads(line)
                papers.append(
                    Paper(
                        id=record["id"],
                        title=record["title"],
                        abstract=record.get("abstract") or "",
                        authors=record.get("authors") or [],
                        subjects=record.get("categories") or [],
                        year=record.get("year"),
                    )
                )
    return papers


def _write(directory: Path, writer_class: Any, papers: list[Paper], **options: Any) -> index.Index:
    directory.mkdir()
    ix = index.create_in(str(directory), build_schema())
    writer = writer_class(ix, limitmb=1, **options)
    for paper in papers:
        writer.add_document(**document(paper))
    writer.commit()
    return index.open_dir(str(directory))


def _files(ix: index.Index) -> dict[str, bytes]:
    """The bytes of each file of the index's one segment (in its compound file), by extension."""
    (segment,) = ix._segments()
    files = segment.open_compound_file(ix.storage)
    prefix = segment.make_filename("")
    try:
        return {name.removeprefix(prefix): files.open_file(name).read() for name in files.list()}
    finally:
        files.close()


def test_the_segment_is_the_one_whoosh_writes(tmp_path: Path) -> None:
    """Byte for byte. 150 ACL papers at a 1 MB limit: both pools spill runs, whose merge is compared too."""
    papers = _papers(150)
    expected = _write(tmp_path / "whoosh", SegmentWriter, papers)
    found = _write(tmp_path / "ours", segment_writing.PaperSegmentWriter, papers)
    try:
        assert found.doc_count() == len(papers)
        assert _files(found) == _files(expected)
    finally:
        expected.close()
        found.close()


@pytest.mark.parametrize("text", TEXTS)
def test_one_pass_gives_each_field_its_analyzers_terms(text: str) -> None:
    schema = build_schema()
    analysed = AnalysedText(text)
    for name, kind in segment_writing.ANALYSED.items():
        assert sorted(getattr(analysed, kind)()) == sorted(schema[name].index(text)), name
