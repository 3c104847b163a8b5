"""Other forms of typed words (core.synonyms): which runs of words have them, and the file of groups."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchsvc.core.acronyms import Acronym
from searchsvc.core.errors import ConfigurationError
from searchsvc.core.query import Also, Group, Word, as_typed, parse, widened
from searchsvc.core.synonyms import MAX_WIDENED, Synonyms, key, read_file
from searchsvc.settings import load_settings

TABLE = Synonyms.of(
    [
        Acronym("DLRM", ("deep learning recommendation models", "deep learning recommendation model"), 9),
        Acronym("NAS", ("neural architecture search",), 2),
    ],
    [("click-through rate", "CTR", "clickthrough")],
)


def also(q: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(found.typed, found.forms) for found in widened(TABLE.widened(parse(q))) if isinstance(found, Also)]


def test_an_acronym_also_searches_its_long_forms_and_a_long_form_its_acronym() -> None:
    assert also("DLRM") == [("DLRM", ("deep learning recommendation models", "deep learning recommendation model"))]
    assert [forms for _, forms in also("dlrm training")] == [forms for _, forms in also("DLRM")]  # 4 letters: any case
    assert also("Deep Learning Recommendation Model") == [("Deep Learning Recommendation Model", ("DLRM",))]
    assert also("training deep learning recommendation models fast") == [
        ("deep learning recommendation models", ("DLRM",))
    ]
    assert also("NAS") == [("NAS", ("neural architecture search",))]
    assert also("DLRMs")[0][1] == also("DLRM")[0][1]  # its plural too


def test_short_mined_acronyms_need_a_capital_but_a_files_forms_match_in_any_case() -> None:
    assert also("nas") == []  # "nas" is a word; a three-letter short form matches as written
    assert also("ctr") == [("ctr", ("click-through rate", "clickthrough"))]
    assert also("Click-Through Rate") == [("Click-Through Rate", ("CTR", "clickthrough"))]


@pytest.mark.parametrize(
    "q", ['"DLRM"', "title:DLRM", "DLRM AND training", "DLRM OR NAS", "-DLRM", "DLRM*", "deep learning"]
)
def test_what_is_searched_only_as_typed(q: str) -> None:
    assert also(q) == []


def test_the_other_forms_are_a_clause_beside_the_words_which_as_typed_drops() -> None:
    tree = TABLE.widened(parse("DLRM training"))
    assert isinstance(tree, Group) and tree.nodes[:2] == parse("DLRM training").nodes  # type: ignore[union-attr]
    assert as_typed(tree) == parse("DLRM training")
    single = TABLE.widened(parse("NAS"))
    assert isinstance(single, Group) and as_typed(single) == Word("NAS", None, 0, 3)
    found = widened(single)[0]
    assert isinstance(found, Also) and found.words is None
    # A phrase is matched unstemmed: its twin in the other number is searched too (never shown).
    assert [p.text for p in found.phrases] == ["neural architecture search", "neural architecture searchs"]
    assert TABLE.widened(parse("training")) == parse("training")


def test_forms_compare_folded_with_plurals_and_hyphens_as_one() -> None:
    assert key("Click-Through Rates") == key("click through rate") == ("click", "through", "rate")


def test_a_synonyms_file_is_groups_of_forms_and_says_where_it_is_wrong(tmp_path: Path) -> None:
    good = tmp_path / "synonyms.txt"
    good.write_text("# acronyms we use\nclick-through rate, CTR,  clickthrough\n\nGPU, graphics processor # trailing\n")
    assert read_file(good) == [("click-through rate", "CTR", "clickthrough"), ("GPU", "graphics processor")]
    bad = tmp_path / "bad.txt"
    bad.write_text("GPU, graphics processor\nlonely\n")
    with pytest.raises(ValueError, match=rf"^{bad}:2: a group needs two forms or more"):
        read_file(bad)
    with pytest.raises(ConfigurationError, match=rf"SEARCHSVC_SYNONYMS_FILE={bad}: {bad}:2: a group needs two forms"):
        load_settings(environ={"SEARCHSVC_SYNONYMS_FILE": str(bad)})
    with pytest.raises(ValueError, match="cannot be read"):
        read_file(tmp_path / "missing.txt")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9, coffee\n".encode("latin-1"))
    with pytest.raises(ValueError, match="not UTF-8"):
        read_file(tmp_path / "latin1.txt")
    assert load_settings(environ={"SEARCHSVC_SYNONYMS_FILE": str(good)}).synonyms_file == str(good)


def test_building_a_large_table_checks_the_deadline_as_it_goes() -> None:
    """A new generation's table is built by the first search after it: the worker's other searches
    must go on meanwhile (the deadline's cooperative pause), and a spent budget ends it."""
    checked: list[int] = []
    acronyms = [Acronym(f"AB{n}", (f"alpha beta {n}",), 1) for n in range(1600)]
    Synonyms.of(acronyms, check=lambda: checked.append(1))
    assert len(checked) == 4  # every 500 groups

    def spent() -> None:
        raise TimeoutError

    with pytest.raises(TimeoutError):
        Synonyms.of(acronyms, check=spent)


def test_a_query_widens_its_first_few_runs_only() -> None:
    """Each widened run adds phrases to read: a query of 100 acronyms took 1.3 s on the ACL records."""
    many = Synonyms.of([Acronym(f"AB{n}X", (f"alpha beta {n} x",), 1) for n in range(20)])
    tree = many.widened(parse(" ".join(f"AB{n}X" for n in range(20))))
    assert [found.typed for found in widened(tree)] == [f"AB{n}X" for n in range(MAX_WIDENED)]
