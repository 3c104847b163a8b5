"""The rebuild's segment writer writes the files Whoosh's own SegmentWriter writes, byte for byte,
but for the word pairs of rare words, which it leaves out (schema.PAIRED_ABOVE), and its small
posting blocks, which it leaves uncompressed (term_writing.COMPRESSED_FROM)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import pytest
from whoosh import index
from whoosh.writing import SegmentWriter

from searchsvc.backends.whoosh import posting_blocks, segment_writing, term_writing
from searchsvc.backends.whoosh.analysed_text import AnalysedText
from searchsvc.backends.whoosh.indexing import document, indexed_text
from searchsvc.backends.whoosh.schema import PAIR_FIELDS, build_schema
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
    "L'Œuvre de *The Łódź, Ｆｕｌｌ æ ɔ nai\u0308ve 𠀀 𝐱 𐐀 x",  # Lucene's folding; words of two UTF-16 units
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


def _write(directory: Path, writer_class: Any, papers: list[Paper], told: bool = False) -> index.Index:
    directory.mkdir()
    ix = index.create_in(str(directory), build_schema())
    writer = writer_class(ix, limitmb=1)
    if told:
        writer.expect(indexed_text(paper) for paper in papers)
        assert 0 < len(writer._paired["abstract_pairs"]) < 1000  # some words paired, most not
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


def _terms(ix: index.Index) -> dict[tuple[str, bytes], tuple[Any, ...]]:
    """Each term's statistics and postings (document, weight, value), as Whoosh reads them."""
    found = {}
    with ix.reader() as reader:
        for field, term in reader.all_terms():
            info = reader.term_info(field, term)
            m = reader.postings(field, term)
            postings = []
            while m.is_active():
                postings.append((m.id(), m.weight(), m.value()))
                m.next()
            statistics = (info.weight(), info.doc_frequency(), info.min_length(), info.max_length(), info.max_weight())
            found[field, term] = (statistics, postings)
    return found


def test_the_segment_is_the_one_whoosh_writes_without_the_pairs_of_rare_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Byte for byte, but for the terms and postings files, where every term of Whoosh's segment is
    found with the same statistics and postings except the pairs holding a word in PAIRED_ABOVE
    papers or fewer. 150 ACL papers at a 1 MB limit: both pools spill runs, whose merge is compared too."""
    monkeypatch.setattr(segment_writing, "PAIRED_ABOVE", 20)
    papers = _papers(150)
    expected = _write(tmp_path / "whoosh", SegmentWriter, papers)
    found = _write(tmp_path / "ours", segment_writing.PaperSegmentWriter, papers)
    try:
        assert found.doc_count() == len(papers)
        whooshs, ours = _files(expected), _files(found)
        assert whooshs.keys() == ours.keys()
        for name in whooshs.keys() - {".trm", ".pst"}:
            assert ours[name] == whooshs[name], name
        terms = _terms(expected)
        frequency = {key: len(postings) for key, (_, postings) in terms.items()}
        words_of = {pairs: exact for exact, pairs in PAIR_FIELDS.items()}
        kept = {
            (field, term): found
            for (field, term), found in terms.items()
            if field not in words_of or all(frequency[words_of[field], word] > 20 for word in term.split(b" "))
        }
        assert len(kept) < len(terms) and any(field in words_of for field, _ in kept)  # pairs both kept and left out
        assert _terms(found) == kept
    finally:
        expected.close()
        found.close()


def test_small_blocks_are_stored_uncompressed_and_read_alike_by_both_readers(tmp_path: Path) -> None:
    """Every block's header names its own zlib level: 0 below COMPRESSED_FROM pickled bytes, the
    codec's above. Whoosh's matcher and posting_blocks read the same postings from either kind."""
    found = _write(tmp_path / "ours", segment_writing.PaperSegmentWriter, _papers(150))
    levels = set()
    try:
        with found.reader() as reader:
            for field, term in reader.all_terms():
                m = reader.postings(field, term)
                ids = []
                while m.is_active():
                    ids.append(m.id())
                    m.next()
                m = reader.postings(field, term)
                for block, listed in posting_blocks._listed(m):
                    stored = block.end - block.data
                    if block.compression:
                        raw = zlib.decompress(listed.raw[block.data - listed.start : block.end - listed.start])
                        assert len(raw) >= term_writing.COMPRESSED_FROM
                    else:
                        assert stored < term_writing.COMPRESSED_FROM
                    levels.add(block.compression)
                read = [int(doc) for postings in posting_blocks.all_postings(m) for doc in postings.ids]
                assert read == ids, (field, term)
    finally:
        found.close()
    assert levels == {0, 3}  # both kinds written; 3: the W3 codec's level


def test_a_writer_told_its_papers_first_writes_the_same_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebuild tells each writer its papers before adding them, so that the pairs it would leave
    out are not even made: the files are the same as a writer's that was not told."""
    monkeypatch.setattr(segment_writing, "PAIRED_ABOVE", 20)
    papers = _papers(150)
    plain = _write(tmp_path / "plain", segment_writing.PaperSegmentWriter, papers)
    told = _write(tmp_path / "told", segment_writing.PaperSegmentWriter, papers, told=True)
    try:
        assert _files(told) == _files(plain)
    finally:
        plain.close()
        told.close()


@pytest.mark.parametrize("text", TEXTS)
def test_one_pass_gives_each_field_its_analyzers_terms(text: str) -> None:
    schema = build_schema()
    analysed = AnalysedText(text)
    for name, kind in segment_writing.ANALYSED.items():
        assert sorted(getattr(analysed, kind)()) == sorted(schema[name].index(text)), name
