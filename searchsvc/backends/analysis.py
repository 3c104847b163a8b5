"""How both engines read text and score it, so a query means and ranks the same on either.

The Whoosh schema and the OpenSearch mapping are each built from these: the same stop
words, searched fields and BM25 parameters (docs/relevance.md says how they were chosen).
Field boosts differ by engine, because the engines combine fields differently, and so does
the word pattern (WORD_PATTERN).
"""

from __future__ import annotations

import re

from searchsvc.core.query import TEXT_FIELDS

SEARCH_FIELDS = TEXT_FIELDS  # what a free-text query searches
# A word on OpenSearch. whoosh-reloaded's RegexTokenizer keeps `*` inside words as well
# (`[\w\*]+(\.?[\w\*]+)*`), so a stored "Processors*" is one word there and "processors"
# here; the Whoosh schema keeps its own default, because unifying them moves its ranking
# (docs/decisions.md, 2026-12-01: a follow-up with a schema version of its own).
WORD_PATTERN = r"\w+(\.?\w+)*"
# Whoosh's default stop list (whoosh.analysis.STOP_WORDS), dropped from ranked text; words
# shorter than MIN_WORD_CHARS are dropped too (Whoosh's StopFilter(minsize=2)).
STOP_WORDS = frozenset(
    "a an and are as at be by can for from have if in is it may not of on or tbd that the this to us we when "
    "will with yet you your".split()
)
MIN_WORD_CHARS = 2
# The plural "s" of a word without a vowel: an acronym ("LLMs", "CNNs", "SNPs"), which Snowball
# keeps ("llms" stays "llms", as its "s" follows no vowel), so `LLM` missed papers writing only
# "LLMs". Applied before stemming by both engines (OpenSearch: a pattern_replace filter with these
# two strings; Whoosh: `singular_acronym`). Not "GPUs", whose "u" makes it an ordinary word here.
ACRONYM_PLURAL = r"^([b-df-hj-np-tv-xz]{2,})s$"
ACRONYM_SINGULAR = "$1"
_ACRONYM_PLURAL = re.compile(ACRONYM_PLURAL)
# BM25: term-frequency saturation, and length normalisation per field.
K1 = 1.6
FIELD_B = {"title": 0.9, "abstract": 0.75}


def singular_acronym(word: str) -> str:
    """`word` (lowercased, accent-folded) without the plural "s" of an acronym: "llms" → "llm"."""
    return word[:-1] if word.endswith("s") and _ACRONYM_PLURAL.match(word) else word


def suggestible(word: str) -> bool:
    """Whether a word is worth suggesting as you type: stop words, one-letter words and bare
    numbers find nothing on their own (the ranked fields drop the first two)."""
    return len(word) >= MIN_WORD_CHARS and word not in STOP_WORDS and not word.isdigit()
