"""Finding source files and reading them in order, whatever their format."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from searchsvc.core.errors import SearchsvcError, SourceFormatError
from searchsvc.ingest.sources import discover, read_records, source_format
from tests.helpers.paths import SEEDS, SOURCE_SAMPLES


def test_discover_sorts_and_filters(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    for name in ["b/2.txt", "a.jsonl", "notes.md", "b/1.jsonl"]:
        (tmp_path / name).write_text("x")
    found = discover([tmp_path / "b", tmp_path])
    assert found == [tmp_path / "a.jsonl", tmp_path / "b/1.jsonl", tmp_path / "b/2.txt"]


def test_discover_rejects_unknown_and_missing(tmp_path: Path) -> None:
    (tmp_path / "x.docx").write_text("x")
    with pytest.raises(SourceFormatError, match=r"x\.docx:1: unsupported source format '\.docx': accepted .*BibTeX"):
        discover([tmp_path / "x.docx"])
    with pytest.raises(SearchsvcError, match=r"missing\.txt: no such file or folder"):
        discover([tmp_path / "missing.txt"])


def test_read_records_streams_every_file_in_order() -> None:
    files = discover([SEEDS])
    papers = list(read_records(files, lambda message: None))
    assert len(papers) == 36
    assert [p.sources[0].path for p in papers] == [str(files[0])] * 18 + [str(files[1])] * 18


@pytest.mark.parametrize(
    "name, expected",
    [
        ("arxiv-oai-snapshot.jsonl", "arXiv OAI snapshot"),
        ("openalex-works.jsonl", "OpenAlex works"),
        ("arxiv-api.atom", "arXiv Atom"),
        ("arxiv-export.bib", "BibTeX"),
        ("zotero-export.ris", "RIS"),
        ("spreadsheet.csv", "CSV/TSV"),
    ],
)
def test_each_sample_is_read_by_its_format(name: str, expected: str) -> None:
    assert source_format(SOURCE_SAMPLES / name).name == expected


def test_content_decides_between_formats_sharing_an_extension(tmp_path: Path) -> None:
    samples = {
        "ours.json": '{"id": "a", "title": "T", "categories": ["cs.LG"]}\n',
        "oai.json": (SOURCE_SAMPLES / "arxiv-oai-snapshot.jsonl").read_text(encoding="utf-8"),
        "works.ndjson": (SOURCE_SAMPLES / "openalex-works.jsonl").read_text(encoding="utf-8"),
        "feed.xml": (SOURCE_SAMPLES / "arxiv-api.atom").read_text(encoding="utf-8"),
        "broken.jsonl": "\n{not json\n",
    }
    for name, text in samples.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    found = {path.name: source_format(path).name for path in discover([tmp_path])}
    assert found == {
        "broken.jsonl": "JSON lines",
        "feed.xml": "arXiv Atom",
        "oai.json": "arXiv OAI snapshot",
        "ours.json": "JSON lines",
        "works.ndjson": "OpenAlex works",
    }
    with pytest.raises(SourceFormatError, match=r"broken\.jsonl:2: invalid JSON"):
        list(read_records([tmp_path / "broken.jsonl"], lambda m: None))


def test_xml_that_is_not_atom_is_refused_naming_the_formats(write) -> None:
    path = write("feed.xml", '<?xml version="1.0"?>\n<rss version="2.0"><channel/></rss>\n')
    with pytest.raises(SourceFormatError, match=rf"^{path}:1: XML that is not an Atom feed .*: accepted .*\(\.bib\)"):
        source_format(path)


@pytest.mark.reliability
@pytest.mark.parametrize("suffix", [".bib", ".ris", ".csv", ".jsonl", ".json", ".txt"])
def test_one_very_long_line_fails_at_the_line_limit(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"long{suffix}"
    with path.open("wb") as stream:  # 20 MB on one line: past the limit, the reader must stop, not read on
        stream.write(b"@" if suffix == ".bib" else b"")
        for _ in range(20):
            stream.write(b"x" * 1_000_000)
    with pytest.raises(SourceFormatError, match=rf"^{path}:1: line longer than 1,000,000 bytes"):
        list(read_records([path], lambda m: None))


@pytest.mark.reliability
@pytest.mark.parametrize("suffix", [".bib", ".ris", ".csv", ".jsonl", ".atom", ".txt"])
def test_binary_file_fails_cleanly(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"image{suffix}"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 64)
    with pytest.raises(SourceFormatError, match=rf"^{path}:\d+: "):
        list(read_records([path], lambda m: None))


def test_records_are_counted_per_format() -> None:
    counts: Counter[str] = Counter()
    files = [SEEDS, SOURCE_SAMPLES / "arxiv-export.bib", SOURCE_SAMPLES / "arxiv-api.atom"]
    papers = list(read_records(discover(files), lambda m: None, counts))
    assert counts == {"profile pages": 36, "BibTeX": 2, "arXiv Atom": 2} and len(papers) == 40
