"""The rules both engines' analyzers share (backends/analysis.py)."""

from __future__ import annotations

import pickle
import re

import pytest

from searchsvc.backends.analysis import (
    ACRONYM_PLURAL,
    ACRONYM_SINGULAR,
    WORDS,
    folded,
    ranked,
    singular_acronym,
    unstemmed_words,
    word_pattern,
    words,
)
from searchsvc.backends.whoosh.schema import stem, text_analyzer, unstemmed_analyzer, value_analyzer


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("llms", "llm"),
        ("cnns", "cnn"),
        ("snps", "snp"),
        ("lms", "lm"),
        ("llm", "llm"),
        ("ms", "ms"),  # too short to be an acronym's plural
        ("gpus", "gpu"),  # its one vowel a "u" just before the "s", which Snowball keeps
        ("grus", "gru"),
        ("gpu", "gpu"),
        ("thus", "thu"),  # an ordinary word of that shape: stemmed alike on both sides of a search
        ("bus", "bus"),  # one consonant before the "u": a word
        ("focus", "focus"),
        ("corpus", "corpus"),  # other vowels before the "u": words, whose "-us" Snowball reads
        ("status", "status"),
        ("aus", "aus"),
        ("models", "models"),
        ("rhythms", "rhythms"),  # "y" counts as a vowel
    ],
)
def test_an_acronyms_plural_s_is_dropped_before_stemming(word: str, expected: str) -> None:
    assert singular_acronym(word) == expected
    # OpenSearch's pattern_replace filter reads the same two strings (Java's $1 is Python's \1).
    assert re.sub(ACRONYM_PLURAL, ACRONYM_SINGULAR.replace("$", "\\"), word) == expected


def test_the_whoosh_stemmer_gives_an_acronym_and_its_plural_one_stem() -> None:
    assert stem("llms") == stem("llm") == "llm"
    assert stem("CNNs".lower()) == stem("cnn")
    assert stem("models") == stem("model") == "model"  # Snowball's own plurals as before


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("*The processors* of a*b", ["the", "processors", "of", "a", "b"]),  # "*" is in no word
        ("Œuvre œuvre Łódź Straße STRASSE", ["oeuvre", "oeuvre", "lodz", "strasse", "strasse"]),
        ("Æsthetic Encyclopædia Þórr ɔ ɛ", ["aesthetic", "encyclopaedia", "thorr", "o", "e"]),
        ("Ｆｕｌｌ ﬁnancial ①", ["full", "financial"]),  # "①" is no word character: no word
        ("İstanbul ǅemal", ["istanbul", "dzemal"]),  # Java's lowercase: "İ" is "i", not "i" and a dot
        ("nai\u0308ve x² H₂O", ["nai\u0308ve", "x", "h", "o"]),  # marks stay in words; "²" and "₂" split them
        ("e.g. 3.14 x.y. .5 __init__", ["e.g", "3.14", "x.y", "5", "__init__"]),
    ],
)
def test_words_are_split_and_folded_as_lucene_does(text: str, expected: list[str]) -> None:
    assert unstemmed_words(text) == expected


def test_text_past_the_basic_plane_has_the_same_words_found_the_slower_way() -> None:
    text = "𐐀𐐨 lexicon 𝐱 and 𠀀𠀁 the ǅ"  # Deseret letters, a math letter, CJK Extension B
    assert word_pattern(text) is WORDS
    assert words(text) == WORDS.findall(text) == ["𐐀𐐨", "lexicon", "𝐱", "and", "𠀀𠀁", "the", "ǅ"]
    assert folded("𐐀𐐨") == "𐐨𐐨"
    plain = "Straße and the lexicon"
    assert word_pattern(plain) is not WORDS and words(plain) == WORDS.findall(plain)


def test_whoosh_analyzers_fold_and_split_as_the_shared_rule() -> None:
    text = "*The Œuvre of Łódź, Ｆｕｌｌ ﬁnancial processors*"
    assert [token.text for token in unstemmed_analyzer()(text)] == unstemmed_words(text)
    assert [token.text for token in text_analyzer()(text)] == ["oeuvr", "lodz", "full", "financi", "processor"]
    assert [token.text for token in value_analyzer()("  Œuvre Ｌ\n")] == ["oeuvre l"]


def test_whoosh_analyzers_pickle_without_their_tables() -> None:
    """Whoosh pickles the schema into each index: the word pattern and the folding table are read
    from the code (a change to them is a new SCHEMA_VERSION), not copied into every index."""
    analyzer = text_analyzer()
    pickled = pickle.dumps(analyzer)
    assert len(pickled) < 2_000
    again = pickle.loads(pickled)
    assert again == analyzer
    assert [token.text for token in again("Œuvre processors*")] == ["oeuvr", "processor"]


def test_ranked_text_keeps_words_of_two_utf16_units_as_lucenes_length_filter() -> None:
    assert not ranked("x") and not ranked("the") and ranked("xy")
    assert ranked("𝐱") and ranked("𠀀")  # one character, two UTF-16 units: kept by Lucene's length filter
    assert [token.text for token in text_analyzer()("𠀀 x the 𝐱")] == ["𠀀", "𝐱"]
