from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from importlib.metadata import distribution
from pathlib import Path

import bibtexparser
import pytest
import rispy
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft3Validator

from searchsvc.core.export import EXPORT_FORMATS, bibtex_entry
from searchsvc.core.identifiers import Identifiers
from searchsvc.core.paper import Paper, id_problem
from searchsvc.core.publication import Publication
from searchsvc.core.text import one_line
from searchsvc.ingest.fields import distinct
from searchsvc.ingest.sources import read_records
from tests.helpers.fuzzing import FUZZ

NASTY_TITLE = r"{unbalanced } } % & _ \ ~ ^ <script> #$ @misc{x,"
_BIBTEX_SPECIALS = re.compile(r"[{}%&#$_~^\\]")
_BIBTEX_ESCAPED = re.compile(
    r"\\(textbackslash|textbraceleft|textbraceright|textasciitilde|textasciicircum)\{\}|\\([%&#$_])"
)
_UNESCAPE = {
    "textbackslash": "\\",
    "textbraceleft": "{",
    "textbraceright": "}",
    "textasciitilde": "~",
    "textasciicircum": "^",
}
_FIELD = re.compile(r"  ([a-z]+) = \{(.*)\},?")


def paper(
    title: str = "Compositional Generalization",
    *,
    id: str = "p1",
    abstract: str = "An abstract.",
    year: int | None = 2020,
    subjects: list[str] | None = None,
    authors: list[str] | None = None,
) -> Paper:
    return Paper(
        id=id,
        title=title,
        abstract=abstract,
        year=year,
        subjects=["cs.CL", "cs.LG"] if subjects is None else subjects,
        authors=["Maxim Naumov", "Zoë Müller"] if authors is None else authors,
    )


def export(name: str, *papers: Paper) -> str:
    return "".join(EXPORT_FORMATS[name].write(papers))


def bibtex_fields(entry: str) -> tuple[str, dict[str, str]]:
    """The key and the raw field values of one entry, checking its layout on the way."""
    lines = entry.splitlines()
    head = re.fullmatch(r"@misc\{([a-z0-9]+),", lines[0])
    assert head, lines[0]
    assert lines[-1] == "}"
    fields = {}
    for line in lines[1:-1]:
        match = _FIELD.fullmatch(line)
        assert match, line
        fields[match[1]] = match[2]
    return head[1], fields


def unescape(value: str) -> str:
    return _BIBTEX_ESCAPED.sub(lambda m: _UNESCAPE[m[1]] if m[1] else m[2], value)


def test_formats_are_registered_by_name() -> None:
    assert {name: (f.name, f.media_type, f.extension) for name, f in EXPORT_FORMATS.items()} == {
        "bibtex": ("bibtex", "application/x-bibtex; charset=utf-8", "bib"),
        "csv": ("csv", "text/csv; charset=utf-8", "csv"),
        "jsonl": ("jsonl", "application/x-ndjson; charset=utf-8", "jsonl"),
        "csljson": ("csljson", "application/vnd.citationstyles.csl+json; charset=utf-8", "json"),
        "ris": ("ris", "application/x-research-info-systems; charset=utf-8", "ris"),
    }


@pytest.mark.parametrize(
    ("name", "header_chunks", "closing_chunks"),
    [("bibtex", 0, 0), ("csljson", 0, 1), ("csv", 1, 0), ("jsonl", 0, 0), ("ris", 0, 0)],
)
def test_writers_stream_one_chunk_per_paper(name: str, header_chunks: int, closing_chunks: int) -> None:
    taken: list[str] = []

    def papers() -> Iterator[Paper]:
        for title in ("First", "Second", "Third"):
            taken.append(title)
            yield paper(title)

    chunks = EXPORT_FORMATS[name].write(papers())
    for _ in range(header_chunks + 1):
        next(chunks)
    assert taken == ["First"]  # lazy: nothing read ahead of what was sent
    assert len(list(chunks)) == 2 + closing_chunks
    assert len(list(EXPORT_FORMATS[name].write([]))) == max(header_chunks, closing_chunks)


def test_jsonl_is_the_reader_input_format(tmp_path: Path) -> None:
    papers = [
        paper("Ünïcode “quotes” and \\ backslash", abstract="Line one two", authors=["Perlis, A. J.", "Zoë Müller"]),
        paper("No year, no lists", id="2016.acl-1.1", abstract="", year=None, subjects=[], authors=[]),
    ]
    text = export("jsonl", *papers)
    assert text.count("\n") == 2 and "Zoë" in text  # one line per paper, not ASCII-escaped
    assert list(json.loads(text.splitlines()[0])) == [
        "id",
        "title",
        "abstract",
        "year",
        "categories",
        "authors",
        "doi",
        "arxiv",
        "url",
        "venue",
        "date",
        "citations",
        "citations_source",
        "orcids",
    ]
    path = tmp_path / "export.jsonl"
    path.write_text(text, encoding="utf-8")
    warnings: list[str] = []
    read = list(read_records([path], warnings.append))
    assert warnings == []
    fields = [(p.id, p.title, p.abstract, p.year, p.subjects, p.authors) for p in read]
    assert fields == [(p.id, p.title, p.abstract, p.year, p.subjects, p.authors) for p in papers]


def test_csv_has_a_header_and_joins_lists() -> None:
    rows = list(csv.reader(io.StringIO(export("csv", paper(), paper("Undated", year=None, authors=[])), newline="")))
    assert rows == [
        [
            *("id", "title", "year", "subjects", "authors", "abstract", "doi", "arxiv", "url"),
            *("venue", "date", "citations", "citations_source"),
        ],
        [
            "p1",
            "Compositional Generalization",
            "2020",
            "cs.CL; cs.LG",
            "Maxim Naumov; Zoë Müller",
            "An abstract.",
            *[""] * 7,
        ],
        ["p1", "Undated", "", "cs.CL; cs.LG", "", "An abstract.", *[""] * 7],
    ]


def test_csv_round_trips_commas_quotes_and_newlines() -> None:
    title = 'A "quoted", comma\'d\ntitle\r\nover lines'
    text = export("csv", paper(title, abstract="x,y"))
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[1][1] == title
    assert rows[1][5] == "x,y"
    assert len(rows) == 2


@pytest.mark.reliability
@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_csv_cells_cannot_start_a_formula(start: str) -> None:
    formula = start + 'HYPERLINK("http://evil.example","x")'
    text = export("csv", paper(formula, id=formula, abstract=formula, subjects=[formula], authors=[formula, "B"]))
    row = list(csv.reader(io.StringIO(text, newline="")))[1]
    quoted = "'" + formula
    assert row == [quoted, quoted, "2020", quoted, quoted + "; B", quoted, *[""] * 7]


# Texts as readers store them (whitespace folded), starting with what a spreadsheet runs or the mark itself.
_STARTS = st.sampled_from(["", "=", "+", "-", "@", "\t", "\r", "'", "''", "'=", "'-", "' ", "-'", " '@"])
_TEXTS = st.builds(lambda start, rest: one_line(start + rest), _STARTS, st.text(max_size=30))
# List items (authors, subjects) also hold what the list cell escapes: ";" (its separator) and "\\".
_ESCAPED = st.sampled_from(["", ";", "\\", "\\;", ";;", "\\\\", '"', "; -x", "; =y", "a\\", ";'"])
_ITEMS = st.lists(
    st.builds(lambda text, middle, end: one_line(text + middle + end), _TEXTS, _ESCAPED, _ESCAPED), max_size=3
).map(distinct)
_IDS = st.sampled_from(["-x", "-", "--1", "-=", "p1", ":x", "_", "."]) | st.from_regex(
    r"-?[A-Za-z0-9._:/-]{1,20}", fullmatch=True
)


@FUZZ
@given(
    paper_id=_IDS.filter(lambda i: id_problem(i) is None),
    title=_TEXTS.filter(bool),
    abstract=_TEXTS,
    year=st.none() | st.integers(1000, 2999),
    subjects=_ITEMS,
    authors=_ITEMS,
)
def test_a_csv_export_re_imports_to_the_same_papers(
    tmp_path_factory: pytest.TempPathFactory,
    paper_id: str,
    title: str,
    abstract: str,
    year: int | None,
    subjects: list[str],
    authors: list[str],
) -> None:
    """Issue #36: the cells marked against formulas (`'-x`) came back with their mark, an id
    starting with `-` stopped the import (`'` is not allowed in an id), and a name or subject
    holding `;` came back as two."""
    exported = Paper(paper_id, title, abstract, year, subjects, authors)
    path = tmp_path_factory.mktemp("export") / "export.csv"
    path.write_text(export("csv", exported), encoding="utf-8")
    (read,) = read_records([path], lambda message: None)
    assert (read.id, read.title, read.abstract, read.year, read.subjects, read.authors) == (
        paper_id,
        title,
        abstract,
        year,
        subjects,
        authors,
    )


def test_a_name_or_subject_holding_a_semicolon_or_a_backslash_is_escaped_in_its_cell(tmp_path: Path) -> None:
    authors = ["-Smith; Jones", 'C:\\dir\\; "q"', "=A\\"]
    text = export("csv", paper(subjects=["a;b", "c\\;d"], authors=authors))
    row = list(csv.reader(io.StringIO(text, newline="")))[1]
    assert row[3:5] == ["a\\;b; c\\\\\\;d", '\'-Smith\\; Jones; C:\\\\dir\\\\\\; "q"; =A\\\\']
    path = tmp_path / "export.csv"
    path.write_text(text, encoding="utf-8")
    (read,) = read_records([path], lambda message: None)
    assert (read.subjects, read.authors) == (["a;b", "c\\;d"], authors)


def test_a_sheet_without_escapes_reads_as_before(tmp_path: Path) -> None:
    """Only `\\;` and `\\\\` are escapes: a backslash before anything else is kept, `;` separates."""
    path = tmp_path / "sheet.csv"
    path.write_text('title,authors,subjects\nT,"M\\""uller;Doe ;; \\Eve\\",cs.CL;cs.LG\n', encoding="utf-8")
    (read,) = read_records([path], lambda message: None)
    assert (read.authors, read.subjects) == (['M\\"uller', "Doe", "\\Eve\\"], ["cs.CL", "cs.LG"])


def test_csv_leaves_safe_cells_alone() -> None:
    row = list(csv.reader(io.StringIO(export("csv", paper("a=b", abstract=" =1+1")), newline="")))[1]
    assert (row[1], row[5]) == ("a=b", " =1+1")


def test_bibtex_entry_fields() -> None:
    assert bibtex_entry(paper()) == (
        "@misc{naumov2020compositional,\n"
        "  title = {{Compositional Generalization}},\n"
        "  author = {Maxim Naumov and Zoë Müller},\n"
        "  year = {2020},\n"
        "  abstract = {An abstract.},\n"
        "  keywords = {cs.CL, cs.LG},\n"
        "  note = {searchsvc id: p1}\n"
        "}\n"
    )


def test_bibtex_leaves_out_unknown_fields() -> None:
    key, fields = bibtex_fields(bibtex_entry(paper(abstract="", year=None, subjects=[], authors=[])))
    assert key == "anonndcompositional"
    assert fields == {"title": "{Compositional Generalization}", "note": "searchsvc id: p1"}


@pytest.mark.reliability
def test_bibtex_escapes_any_text_into_a_valid_entry() -> None:
    nasty = NASTY_TITLE + " ü 中文"
    entry = bibtex_entry(
        paper(
            nasty, id="id_1", abstract="one\n@article{y,\n" + nasty, subjects=["a_b", "c%d"], authors=["A {B", "C\\D"]
        )
    )
    _, fields = bibtex_fields(entry)  # also: every field on one line, so no line starts with "@"
    assert fields["title"].startswith("{") and fields["title"].endswith("}")
    assert unescape(fields["title"][1:-1]) == nasty
    assert unescape(fields["abstract"]) == "one @article{y, " + nasty
    assert unescape(fields["keywords"]) == "a_b, c%d"
    assert unescape(fields["author"]) == "A {B and C\\D"
    assert unescape(fields["note"]) == "searchsvc id: id_1"
    for value in [fields["title"][1:-1], *(v for k, v in fields.items() if k != "title")]:
        assert not _BIBTEX_SPECIALS.search(_BIBTEX_ESCAPED.sub("", value)), value
    # BibTeX and biber count every brace, escaped or not: the raw braces must balance and never go below zero.
    depth = 0
    for char in entry:
        depth += {"{": 1, "}": -1}.get(char, 0)
        assert depth >= 0
    assert depth == 0
    assert "<script>" in entry and "ü 中文" in entry  # no HTML escaping, Unicode kept as is


def test_bibtex_braces_author_names_bibtex_would_split() -> None:
    _, fields = bibtex_fields(
        bibtex_entry(paper(authors=["Research and Development Group", "A, B, C, D", "Al Andersen"]))
    )
    assert fields["author"] == "{Research and Development Group} and {A, B, C, D} and Al Andersen"


@pytest.mark.parametrize(
    ("authors", "year", "title", "key"),
    [
        (["Hans Müller"], 2020, "Compositional Generalization", "muller2020compositional"),
        (["Perlis, A. J."], 1982, "Epigrams on Programming", "perlis1982epigrams"),
        (["Jan Łukasiewicz", "X Y"], None, "The On A Of Self-Supervised Learning", "lukasiewiczndselfsupervised"),
        (["Guido van Rossum"], 1995, "A Python tutorial", "rossum1995python"),
        ([], 2001, "“Quoted” title", "anon2001quoted"),
        (["王小明"], 2019, "中文 and the 2nd test", "anon20192nd"),
        (["O'Brien"], 2019, "中文", "obrien2019"),
    ],
)
def test_bibtex_citation_keys(authors: list[str], year: int | None, title: str, key: str) -> None:
    assert bibtex_fields(bibtex_entry(paper(title, year=year, authors=authors)))[0] == key


def test_bibtex_export_makes_keys_unique() -> None:
    same = paper("Müller's law", authors=["Anna Müller"])
    suffix_lookalike = paper("Müllersb law", authors=["Anna Müller"])  # its own key is the second "same"'s
    text = export("bibtex", same, same, same, suffix_lookalike, same, paper())
    assert [bibtex_fields(entry)[0] for entry in text.split("\n\n")] == [
        "muller2020mullers",
        "muller2020mullersb",
        "muller2020mullersc",
        "muller2020mullersbb",
        "muller2020mullersd",
        "naumov2020compositional",
    ]
    assert bibtex_entry(same).startswith("@misc{muller2020mullers,")  # a single entry is never suffixed
    assert text.endswith("}\n") and "\n\n\n" not in text


def test_bibtex_export_parses_with_bibtexparser() -> None:
    text = export("bibtex", paper(NASTY_TITLE, abstract="x\n@misc{y,"), paper(NASTY_TITLE), paper())
    library = bibtexparser.parse_string(text)
    assert library.failed_blocks == []
    entries = [{"ID": entry.key, **entry.fields_dict} for entry in library.entries]
    entries = [{key: getattr(value, "value", value) for key, value in entry.items()} for entry in entries]
    assert [entry["ID"] for entry in entries] == [
        "naumov2020unbalanced",
        "naumov2020unbalancedb",
        "naumov2020compositional",
    ]
    assert unescape(entries[0]["title"][1:-1]) == NASTY_TITLE


# RIS --------------------------------------------------------------------------------------------


def identified(exported: Paper) -> Paper:
    return replace(
        exported,
        identifiers=Identifiers.of(
            arxiv="arXiv:2104.05158v2",
            doi_text="https://doi.org/10.1145/3394486.3403059",
            url="https://example.org/p?a=1&b=2",
        ),
    )


def test_ris_reads_back_with_rispy_and_with_our_reader(tmp_path: Path) -> None:
    """Issue #31: what a reference manager takes; rispy is the RIS parser Python tools use."""
    papers = [
        identified(paper(authors=["Maxim Naumov", "Zoë Müller", "Perlis, A. J.", "Plato", "Ludwig van Beethoven"])),
        paper("No year, nothing else", abstract="", year=None, subjects=[], authors=[]),
    ]
    text = export("ris", *papers)
    first, second = rispy.loads(text)
    assert first == {
        "type_of_reference": "GEN",
        "title": "Compositional Generalization",
        "authors": ["Naumov, Maxim", "Müller, Zoë", "Perlis, A. J.", "Plato", "Beethoven, Ludwig van"],
        "year": "2020",
        "abstract": "An abstract.",
        "keywords": ["cs.CL", "cs.LG"],
        "doi": "10.1145/3394486.3403059",
        "urls": ["https://example.org/p?a=1&b=2", "https://arxiv.org/abs/2104.05158"],
        "notes": ["searchsvc id: p1"],
    }
    assert second == {"type_of_reference": "GEN", "title": "No year, nothing else", "notes": ["searchsvc id: p1"]}
    path = tmp_path / "export.ris"
    path.write_text(text, encoding="utf-8")
    read = list(read_records([path], pytest.fail))
    assert read[0].authors == ["Maxim Naumov", "Zoë Müller", "A. J. Perlis", "Plato", "Ludwig van Beethoven"]
    read[0].authors[2] = "Perlis, A. J."  # as every reader gives a "Surname, Given" name
    assert [(p.title, p.authors, p.year, p.subjects, p.abstract, p.identifiers) for p in read] == [
        (p.title, p.authors, p.year, p.subjects, p.abstract, p.identifiers) for p in papers
    ]


@FUZZ
@given(title=_TEXTS.filter(str.strip), abstract=_TEXTS, authors=_ITEMS, subjects=_ITEMS)
def test_no_text_starts_a_ris_tag_of_its_own(
    title: str, abstract: str, authors: list[str], subjects: list[str]
) -> None:
    """A value is folded onto its tag's line: text holding a line break then `ER  - ` or `TY  - `
    cannot end the record or start another."""
    injected = "\nER  - \n\nTY  - JOUR\nTI  - Injected\r\n"
    exported = paper(title + injected, abstract=abstract + injected, authors=authors, subjects=subjects)
    (record,) = rispy.loads(export("ris", exported))
    assert record["title"] == " ".join((title + injected).split())
    assert record.get("abstract", "") == " ".join((abstract + injected).split())


# Venue, date, citations and ORCID iDs (issue #31) ------------------------------------------------


def published(exported: Paper, venue: str, date: str) -> Paper:
    orcids = {"Maxim Naumov": "0000-0002-1825-0097"}
    return replace(exported, publication=Publication.of(venue, date, 394, "OpenAlex", orcids))


def test_every_export_keeps_venue_date_citations_and_orcids_and_re_imports_them(tmp_path: Path) -> None:
    papers = [
        identified(published(paper(id="j1"), "Physical Review D", "2020-04-02")),
        published(paper("A Workshop Paper", id="w1"), "Proceedings of the Workshop on Tests", "2020-06"),
        paper("Nothing Known", id="n1", year=None),
    ]
    for name in ("jsonl", "csv", "ris"):
        path = tmp_path / f"export.{name}"
        path.write_text(export(name, *papers), encoding="utf-8")
        read = list(read_records([path], pytest.fail))
        kept = [p.publication for p in read]
        if name != "jsonl":  # CSV and RIS have no place for ORCID iDs; RIS none for citations
            papers_kept = [replace(p.publication, orcids={}) for p in papers]
            if name == "ris":
                papers_kept = [replace(p, citations=None, citations_source="") for p in papers_kept]
        else:
            papers_kept = [p.publication for p in papers]
        assert kept == papers_kept, name


def test_bibtex_and_ris_say_what_kind_of_work_a_paper_is_by_its_venue() -> None:
    journal = published(paper(id="j1"), "Physical Review D", "2020-04-02")
    workshop = published(paper("A Workshop Paper", id="w1"), "Proceedings of the Workshop on Tests", "2020-06")
    preprint = published(paper("A Preprint", id="p2"), "arXiv", "2020")
    library = bibtexparser.parse_string(export("bibtex", journal, workshop, preprint))
    assert library.failed_blocks == []
    kinds = [(e.entry_type, e.fields_dict.get("journal"), e.fields_dict.get("booktitle")) for e in library.entries]
    values = [(kind, getattr(j, "value", None), getattr(b, "value", None)) for kind, j, b in kinds]
    assert values == [
        ("article", "Physical Review D", None),
        ("inproceedings", None, "Proceedings of the Workshop on Tests"),
        ("misc", None, None),
    ]
    assert [e.fields_dict["date"].value if "date" in e.fields_dict else None for e in library.entries] == [
        "2020-04-02",
        "2020-06",
        None,  # a year alone is the year field
    ]
    records = rispy.loads(export("ris", journal, workshop, preprint))
    assert [(r["type_of_reference"], r.get("secondary_title"), r.get("date")) for r in records] == [
        ("JOUR", "Physical Review D", "2020/04/02"),
        ("CPAPER", "Proceedings of the Workshop on Tests", "2020/06"),
        ("GEN", "arXiv", None),
    ]


# CSL-JSON ------------------------------------------------------------------------------------------


def csl_schema() -> dict:
    """The CSL-JSON schema (draft 3) of citation-style-language/schema, as csl-data ships it."""
    return json.loads(distribution("csl-data").locate_file("csl_data/csl-data.json").read_text(encoding="utf-8"))


def test_csl_json_validates_against_the_csl_schema_and_says_what_each_paper_is() -> None:
    schema = csl_schema()
    Draft3Validator.check_schema(schema)
    papers = [
        identified(
            published(paper(authors=["Maxim Naumov", "Plato", "Perlis, A. J."]), "Physical Review D", "2020-04-02")
        ),
        published(paper("A Workshop Paper", id="w1"), "Proceedings of the Workshop on Tests", "2020-06"),
        paper(NASTY_TITLE, id="n1", year=None, abstract="", subjects=[], authors=[]),
    ]
    document = json.loads(export("csljson", *papers))
    assert list(Draft3Validator(schema).iter_errors(document)) == []
    journal, workshop, nasty = document
    assert journal == {
        "id": "p1",
        "type": "article-journal",
        "title": "Compositional Generalization",
        "author": [
            {"family": "Naumov", "given": "Maxim"},
            {"literal": "Plato"},
            {"family": "Perlis", "given": "A. J."},
        ],
        "container-title": "Physical Review D",
        "issued": {"date-parts": [[2020, 4, 2]]},
        "abstract": "An abstract.",
        "keyword": "cs.CL, cs.LG",
        "DOI": "10.1145/3394486.3403059",
        "URL": "https://example.org/p?a=1&b=2",
        "number": "arXiv:2104.05158",
        "note": "searchsvc id: p1",
    }
    assert (workshop["type"], workshop["issued"]) == ("paper-conference", {"date-parts": [[2020, 6]]})
    assert nasty == {"id": "n1", "type": "article", "title": NASTY_TITLE, "note": "searchsvc id: n1"}
    assert json.loads(export("csljson")) == []
    # The validator is not a formality: a wrong type or date is caught.
    assert list(Draft3Validator(schema).iter_errors([{**journal, "type": "preprint"}]))
    assert list(Draft3Validator(schema).iter_errors([{**journal, "issued": {"date-parts": "2020-04-02"}}]))
