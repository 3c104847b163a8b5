"""The query language: what each piece of syntax means, the errors for what does not parse, and the words
the model reads for ranking by meaning."""

from __future__ import annotations

import pytest

from searchsvc.core.errors import QuerySyntaxError
from searchsvc.core.query import (
    AllOf,
    AnyOf,
    Group,
    Not,
    Phrase,
    Prefix,
    Word,
    Years,
    meaning,
    parse,
    required_words,
    split_group,
    words,
)


def texts(node) -> list[str]:
    return [word.text for word in words(node)]


def test_words_side_by_side_form_a_group_whose_all_words_tier_is_required() -> None:
    tree = parse("graph neural networks")
    assert isinstance(tree, Group) and texts(tree) == ["graph", "neural", "networks"]
    assert required_words(tree) == AllOf(tree.nodes)
    assert required_words(parse("graph OR neural")) is None  # explicit operators say what is required
    assert required_words(parse("graph")) is None


def test_year_subject_and_author_clauses_beside_words_narrow_the_search() -> None:
    tree = parse("year:2020 graph subject:cs.LG networks (author:a OR author:b) title:x")
    assert isinstance(tree, Group)
    narrowing, describing = split_group(tree)
    assert narrowing == (
        Years(2020, 2020),
        Word("cs.LG", "subject", 24, 29),
        AnyOf((Word("a", "author", 47, 48), Word("b", "author", 59, 60))),
    )
    assert texts(Group(describing)) == ["graph", "networks", "x"]


def test_a_venue_clause_narrows_like_an_author_clause() -> None:
    tree = parse('open access venue:PeerJ VENUE:"physical review"')
    assert isinstance(tree, Group)
    narrowing, describing = split_group(tree)
    assert narrowing == (Word("PeerJ", "venue", 18, 23), Phrase("physical review", "venue", 30, 47))
    assert texts(Group(describing)) == ["open", "access"]


def test_operators_and_precedence() -> None:
    tree = parse("a AND b OR c d")
    assert tree == Group(
        (
            AnyOf((AllOf((Word("a", None, 0, 1), Word("b", None, 6, 7))), Word("c", None, 11, 12))),
            Word("d", None, 13, 14),
        )
    )
    assert parse("a NOT b") == Group((Word("a", None, 0, 1), Not(Word("b", None, 6, 7))))
    assert parse("a -b") == Group((Word("a", None, 0, 1), Not(Word("b", None, 3, 4))))
    assert parse('-"exact words"') == Not(Phrase("exact words", None, 1, 14))


def test_a_minus_inside_a_word_is_part_of_it() -> None:
    assert parse("memory-efficient") == Word("memory-efficient", None, 0, 16)
    assert texts(parse("inflammation-related (+)-catechin")) == ["inflammation-related", "+", "-catechin"]
    assert texts(parse("a - b")) == ["a", "-", "b"]


def test_field_prefixes_apply_to_words_phrases_and_groups() -> None:
    assert parse("title:graph") == Word("graph", "title", 6, 11)
    assert parse("Author:Naumov") == Word("Naumov", "author", 7, 13)
    assert parse('author:"Maxim Naumov"') == Phrase("Maxim Naumov", "author", 7, 21)
    assert parse("subject:cs.LG") == Word("cs.LG", "subject", 8, 13)
    assert parse("abstract:(graph nets)") == Group(
        (Word("graph", "abstract", 10, 15), Word("nets", "abstract", 16, 20))
    )
    assert parse("title:(a author:b)") == Group((Word("a", "title", 7, 8), Word("b", "author", 16, 17)))
    # A colon after a word that is not a field is pasted text, not syntax.
    assert texts(parse("Results: we found")) == ["Results:", "we", "found"]


def test_year_prefix_takes_a_year_or_a_range() -> None:
    assert parse("year:2020") == Years(2020, 2020)
    assert parse("year:2018-2020") == Years(2018, 2020)
    assert parse("year:2018..2020") == Years(2018, 2020)
    assert parse("year:2018-") == Years(2018, None)
    assert parse("year:..2020") == Years(None, 2020)
    assert parse("year:(2019 OR 2021)") == AnyOf((Years(2019, 2019), Years(2021, 2021)))


def test_trailing_wildcard() -> None:
    assert parse("embed*") == Prefix("embed", None, 0, 6)
    assert parse("title:embed*") == Prefix("embed", "title", 6, 12)


def test_nothing_to_search_for() -> None:
    assert parse("") is None
    assert parse("()") is None
    assert parse('""') is None


def test_pasted_text_with_unbalanced_parentheses_is_read_as_words() -> None:
    assert texts(parse("we found (p < 0.05")) == ["we", "found", "p", "<", "0.05"]
    assert texts(parse("1) first 2) second")) == ["1", "first", "2", "second"]
    assert texts(parse("(" * 30 + "deep" + ")" * 30)) == ["deep"]


@pytest.mark.parametrize(
    ("query", "message", "column"),
    [
        ("embedding AND", "'AND' needs a search term after it", 11),
        ("AND embedding", "'AND' must stand between two search terms", 1),
        ("graph OR OR nets", "'OR' must stand between two search terms", 10),
        ("graph NOT", "'NOT' needs a search term after it", 7),
        ("title:", "'title:' needs a search term after it", 1),
        ("title:title:x", "'title:' cannot follow another field prefix", 7),
        ('"unclosed phrase', 'this quote (") is never closed', 1),
        ("title:(graph nets", "this '(' is never closed", 7),
        ("graph AND nets)", "this ')' has no matching '('", 15),
        ("a AND " + "(" * 21 + "b" + ")" * 21, "parentheses are nested more than 20 deep", 27),
        ("year:abc", "year: expects a year such as 2020 or a range such as 2018-2020, not 'abc'", 6),
        ("year:2021-2019", "year: the range 2021-2019 ends before it starts", 6),
        ("year:20201", "year: expects a year", 6),
        ("embed*ing", "a wildcard may only end a word, as in embed*: 'embed*ing'", 6),
        ("*ing", "a wildcard may only end a word", 1),
        ("*", "'*' alone would match every paper: leave the query empty to list them all", 1),
    ],
)
def test_syntax_errors_say_what_and_where(query: str, message: str, column: int) -> None:
    with pytest.raises(QuerySyntaxError) as caught:
        parse(query)
    error = caught.value
    assert error.code == "query_syntax"
    assert error.details["column"] == column
    assert error.details["q"][0].startswith(message)
    assert error.details["q"][0].endswith(f"(column {column})")


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("embedding tables", "embedding tables"),
        ('"model compression" -survey', "model compression"),
        ("title:hashing OR abstract:sketches", "hashing sketches"),
        ("author:naumov year:2020", ""),
        ("embed* NOT quantization", ""),
        ("(fp8 AND training) OR author:smith", "fp8 training"),
    ],
)
def test_the_model_reads_the_query_words_about_the_papers_text(query: str, text: str) -> None:
    assert meaning(parse(query)) == text
