"""The rules both engines' analyzers share (backends/analysis.py)."""

from __future__ import annotations

import re

import pytest

from searchsvc.backends.analysis import ACRONYM_PLURAL, ACRONYM_SINGULAR, singular_acronym
from searchsvc.backends.whoosh.schema import stem


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("llms", "llm"),
        ("cnns", "cnn"),
        ("snps", "snp"),
        ("lms", "lm"),
        ("llm", "llm"),
        ("ms", "ms"),  # too short to be an acronym's plural
        ("gpus", "gpus"),  # a vowel before its "s": an ordinary word to Snowball, left to it
        ("bus", "bus"),
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
