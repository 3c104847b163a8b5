"""BibTeX: real arXiv exports, LaTeX to Unicode, names, macros, identifiers, and each malformed case."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.export import EXPORT_FORMATS
from searchsvc.core.identifiers import Identifiers
from searchsvc.core.paper import Paper
from searchsvc.core.publication import Publication
from searchsvc.ingest.bibtex import MAX_ENTRY_CHARS, read_bibtex
from searchsvc.ingest.profile import read_profile
from tests.helpers.paths import SEEDS, SOURCE_SAMPLES


def read(path: Path, warnings: list[str] | None = None) -> list[Paper]:
    return list(read_bibtex(path, (warnings if warnings is not None else []).append))


def test_real_arxiv_export() -> None:
    papers = read(SOURCE_SAMPLES / "arxiv-export.bib")
    assert [p.title for p in papers] == [
        "Calculation of prompt diphoton production cross sections at Tevatron and LHC energies",
        "Number Parsing at a Gigabyte per Second",
    ]
    first, second = papers
    assert first.authors == ["C. Balázs", "E. L. Berger", "P. M. Nadolsky", "C. -P. Yuan"]
    assert (first.year, first.subjects, first.abstract) == (2007, ["hep-ph"], "")
    assert first.identifiers == Identifiers("0704.0001", "10.1103/physrevd.76.013009", "")
    assert second.authors == ["Daniel Lemire"] and second.subjects == ["cs.DS", "cs.MS"]
    assert second.identifiers == Identifiers("2101.11408", "10.1002/spe.2984", "https://arxiv.org/abs/2101.11408")
    assert [str(p.sources[0]) for p in papers] == [f"{SOURCE_SAMPLES / 'arxiv-export.bib'}:{n}" for n in (1, 11)]
    # arXiv's @misc has no venue; the year is all either entry says of the date
    assert first.publication == Publication(date="2007")
    assert second.publication == Publication(venue="Software: Practice and Experience", date="2021")


def test_latex_names_macros_and_dates(write) -> None:
    path = write(
        "lab.bib",
        '@string{ieee = "IEEE"}\n@preamble{"\\newcommand{\\x}{y}"}\n@comment{not a paper}\n'
        '@article{k1,\n  title = {The {B}est \\"{o}f \\emph{All} \\& 50\\% $x^2$},\n'
        '  author = {M{\\"u}ller, Hans and van der Berg, J. and {Barnes and Noble} and Hans M{\\"u}ller},\n'
        "  journal = ieee, month = jan, date = {2019-05-01},\n"
        "  abstract = {Line one\n   line two.}, keywords = {deep learning; graphs, cs.LG}\n}\n",
    )
    (paper,) = read(path)
    assert paper.title == "The Best öf All & 50% $x^2$"
    assert paper.authors == ["Hans Müller", "J. van der Berg", "Barnes and Noble"]
    assert (paper.year, paper.abstract, paper.subjects) == (
        2019,
        "Line one line two.",
        ["deep learning", "graphs", "cs.LG"],
    )
    assert paper.publication == Publication(venue="IEEE", date="2019-05-01")  # biblatex's date over the month


@pytest.mark.parametrize(
    "fields, venue, date",
    [
        ("year = 2021, month = jun", "", "2021-06"),  # BibTeX's month macro
        ("year = 2021, month = JUN, day = 29", "", "2021-06-29"),
        ("year = {2021}, month = {June}, day = {29}", "", "2021-06-29"),
        ('year = "2021", month = "6"', "", "2021-06"),
        ("year = 2021, month = jun, day = 31", "", "2021-06"),
        ("date = {2021-06-29}", "", "2021-06-29"),  # biblatex: the year from it too
        ("date = {2021-06-01/2021-06-30}, year = 2021", "", "2021-06-01"),
        ("year = 2021, journal = {J. Chem. Phys.}, booktitle = {B}", "J. Chem. Phys.", "2021"),
        (
            "year = 2021, journaltitle = {Software: Practice and Experience}",
            "Software: Practice and Experience",
            "2021",
        ),
        ("year = 2021, booktitle = {Proc. of {KDD} \\& Friends}", "Proc. of KDD & Friends", "2021"),
        ("", "", ""),
    ],
)
def test_venue_and_date(write, fields: str, venue: str, date: str) -> None:
    warnings: list[str] = []
    (paper,) = read(write("d.bib", f"@article{{k, title = {{T}}, {fields}}}\n"), warnings)
    assert paper.publication == Publication(venue=venue, date=date)
    assert paper.year == (int(date[:4]) if date else None) and warnings == []


def test_a_date_or_month_that_cannot_be_read_is_left_out_with_a_warning(write) -> None:
    path = write(
        "d.bib",
        "@misc{a, title = {A}, date = {2021?}, month = {March}}\n"
        "@misc{b, title = {B}, year = 2021, month = {Spring}}\n"
        "@misc{c, title = {C}, year = 2021, month = foo}\n",
    )
    warnings: list[str] = []
    a, b, c = read(path, warnings)
    assert (a.year, a.publication.date) == (2021, "2021-03")  # the year and month fields, then
    assert (b.publication.date, c.publication.date) == ("2021", "2021")
    assert warnings == [
        f'{path}:1: entry "a": date "2021?" is not a date; ignored',
        f'{path}:2: entry "b": month "Spring" is not a month; ignored',
        f'{path}:3: entry "c": month "foo" is not a month; ignored',
        f'{path}:3: entry "c": month uses foo, which no @string above defines; kept as written',
    ]


def test_a_date_of_another_year_than_the_year_is_left_out(write) -> None:
    path = write("d.bib", "@article{k, title = {T}, year = 2008, date = {2007-10-10}}\n")
    warnings: list[str] = []
    (paper,) = read(path, warnings)
    assert (paper.year, paper.publication.date) == (2008, "2008")
    assert warnings == [f'{path}:1: entry "k": date 2007-10-10 is not in the year 2008; ignored']


def test_an_at_string_may_redefine_a_month(write) -> None:
    (paper,) = read(write("d.bib", '@string{jun = "7"}\n@misc{k, title = {T}, year = 2021, month = jun}\n'))
    assert paper.publication.date == "2021-07"


def test_accents_and_letter_commands_at_the_start_of_a_name(write) -> None:
    path = write(
        "names.bib",
        "@misc{k, title = {T},\n  author = {Arne K\\\"ohn and \\'Alvaro Torralba and {\\L}ukasz Grabowski and"
        " \\L{}ukasz Kaiser and Ond\\v{r}ej Bojar and Jan Haji\\v c and Felipe S\\'anchez-Mart{\\'\\i}nez and"
        " Tony O{\\textquoteright}Dowd and Pawe{\\l} K\\k{e}dzia and Hugo Gon\\c{c}alo and Alberto Sim\\~oes}}\n",
    )
    (paper,) = read(path)
    assert paper.authors == [
        "Arne Köhn",
        "Álvaro Torralba",
        "Łukasz Grabowski",
        "Łukasz Kaiser",
        "Ondřej Bojar",
        "Jan Hajič",
        "Felipe Sánchez-Martínez",
        "Tony O’Dowd",
        "Paweł Kędzia",
        "Hugo Gonçalo",
        "Alberto Simões",
    ]


def test_entries_the_scanner_leaves_to_bibtexparser_read_the_same(write) -> None:
    """A macro, parentheses, quoted values, deep braces: the same paper as the plain entry."""
    plain = read(write("plain.bib", "@misc{k, title = {The {{D}eep} Way}, author = {A B}, year = 2020}\n"))
    others = read(
        write(
            "others.bib",
            '@string{way = "The {{D}eep} Way"}\n@misc(k, title = way, author = "A B", year = {2020})\n'
            "@misc{k, title = {The {{{D}}eep} Way}, author = {A B}, year = 2020}\n",
        )
    )
    assert [(p.title, p.authors, p.year) for p in others] == [(plain[0].title, plain[0].authors, plain[0].year)] * 2


def test_hash_joins_texts_numbers_and_macros(write) -> None:
    """Issue #36: `"Foo " # "Bar"` was stored as written, quotes and # included, without a warning."""
    path = write(
        "joined.bib",
        '@string{conf = "Proc. of X"}\n@string{full = Conf # " 2020"}\n'
        '@inproceedings{a,\n  title = "Foo " # "Bar",\n  abstract = full # { on } # 42,\n  month = jan\n}\n'
        '@misc{b, title = {Baz} #" "# CONF, author = "A" # " B", year = 20 # 20}\n',
    )
    warnings: list[str] = []
    a, b = read(path, warnings)
    assert (a.title, a.abstract) == ("Foo Bar", "Proc. of X 2020 on 42")
    assert (b.title, b.authors, b.year) == ("Baz Proc. of X", ["A B"], 2020)
    assert warnings == []  # `jan` is no @string of the file: it is BibTeX's own month macro


def test_what_cannot_be_joined_is_kept_as_written_with_a_warning(write) -> None:
    path = write(
        "unresolved.bib",
        '@misc{k,\n  title = conf2 # " 2020"}\n@string{late = "x" # nope}\n'
        "@misc{j, title = {T} # late, note = {a} {b}, publisher = undefined}\n",
    )
    warnings: list[str] = []
    k, j = read(path, warnings)
    assert (k.title, j.title) == ("conf2 2020", "Txnope")
    assert warnings == [
        f'{path}:1: entry "k": title uses conf2, which no @string above defines; kept as written',
        f'{path}:3: @string "late" uses nope, which no @string above defines; kept as written',
        f'{path}:4: entry "j": note is not texts, numbers and @string names joined by #; kept as written',
    ]


def test_invalid_doi_and_url_are_dropped_with_a_warning(write) -> None:
    path = write("x.bib", "@misc{k, title={T}, doi={nonsense}, url={javascript:alert(1)}}\n")
    warnings: list[str] = []
    (paper,) = read(path, warnings)
    assert paper.identifiers == Identifiers()
    assert len(warnings) == 2 and all(w.startswith(f'{path}:1: entry "k"') for w in warnings)


def test_eprint_of_another_archive_is_not_an_arxiv_id(write) -> None:
    (paper,) = read(write("x.bib", "@misc{k, title={T}, eprint={2001.01234}, archivePrefix={HAL}}\n"))
    assert paper.identifiers.arxiv == ""


def test_our_export_reimports_to_the_same_papers(tmp_path: Path) -> None:
    seeds = [p for path in sorted(SEEDS.glob("*.txt")) for p in read_profile(path, lambda m: None)]
    odd = Paper(
        id="odd-1",
        title="Braces {x} and \\ back^slash ~ 100% & $5 #1 _a_",
        abstract="@misc{x, at line start}",
        year=None,
        subjects=["cs.LG"],
        authors=["Ann and Bob, Ltd, Co, Inc"],
        identifiers=Identifiers.of(
            arxiv="2101.11408v2", doi_text="10.1002/SPE.2984", url="https://example.org/a?b=1&c=2"
        ),
    )
    published = Paper(
        id="published-1",
        title="Published",
        abstract="",
        year=2020,
        publication=Publication(venue="Software: Practice & Experience", date="2020-08-23"),
    )
    originals = [*seeds, odd, published]
    path = tmp_path / "export.bib"
    path.write_text("".join(EXPORT_FORMATS["bibtex"].write(originals)), encoding="utf-8")
    back = read(path)
    assert len(back) == len(originals) > 30
    for before, after in zip(originals, back, strict=True):
        assert (after.id, after.title, after.abstract, after.year, after.authors, after.identifiers) == (
            before.id,
            before.title,
            before.abstract,
            before.year,
            before.authors,
            before.identifiers,
        )
        assert after.subjects == before.subjects
        assert after.publication == before.publication  # (no citations or ORCID iDs: BibTeX has no field for them)


@pytest.mark.parametrize(
    "content, line, problem",
    [
        ("@misc{nokey, year = 2020}\n", 1, r"entry \"nokey\" has no title"),
        ("\n\n@misc{k, title = {T}, year = {twenty}}\n", 3, r"entry \"k\": 'year' must hold a year"),
        ("@misc{a, title={A}}\n\n@misc{broken, title = {T\n", 3, r"entry \"broken\" cannot be read"),
        ("@misc{dup, title = {A}, title = {B}}\n", 1, r"entry \"dup\" cannot be read: Duplicate field keys"),
        ("% only a comment\n", 1, r"file has no BibTeX entries"),
        ("", 1, r"file has no BibTeX entries"),
    ],
)
def test_malformed_entries_name_line_and_key(write, content: str, line: int, problem: str) -> None:
    path = write("bad.bib", content)
    with pytest.raises(SourceFormatError, match=rf"^{path}:{line}: {problem}"):
        read(path)


def test_unclosed_brace_stops_at_the_entry_limit(write) -> None:
    path = write(
        "open.bib", "@misc{k, title = {never closed,\n" + ("word " * 100 + "\n") * (MAX_ENTRY_CHARS // 500 + 10)
    )
    with pytest.raises(SourceFormatError, match=rf"^{path}:1: entry longer than .* brace left open"):
        read(path)


def test_binary_file_fails_with_its_line(write) -> None:
    path = write("bin.bib", b"@misc{k, title={T}}\n\xff\xfe\x00garbage")
    with pytest.raises(SourceFormatError, match=rf"^{path}:2: not UTF-8"):
        read(path)


def test_windows_line_endings_and_an_entry_over_chunks(write) -> None:
    """CRLF files read as LF ones, and entries read across the reader's megabyte chunks keep their lines."""
    entry = "@misc{{k{n},\r\n  title = {{Paper {n}}},\r\n  abstract = {{{text}}}\r\n}}\r\n\r\n"
    path = write("windows.bib", "".join(entry.format(n=n, text="word " * 2000) for n in range(300)))
    papers = read(path)
    assert [p.title for p in papers] == [f"Paper {n}" for n in range(300)]
    assert [p.sources[0].line for p in papers] == [1 + 5 * n for n in range(300)]
    assert papers[-1].abstract == ("word " * 2000).strip()
