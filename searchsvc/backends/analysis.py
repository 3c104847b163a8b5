"""How both engines read text and score it, so a query means and ranks the same on either.

The Whoosh schema and the OpenSearch mapping are each built from these: the same words
(WORD_PATTERN), folding (`folded`), stop words, searched fields and BM25 parameters
(docs/relevance.md says how they were chosen). Field boosts differ by engine, because the
engines combine fields differently.

Which characters make a word and what each becomes when folded are Lucene's: the cluster splits
words with Java's `\\w` (UNICODE_CHARACTER_CLASS) and folds with its `lowercase` and `asciifolding`
filters; Whoosh reads the same from `lucene_tables.py`, what those components do to every character,
read from a test cluster (opensearch/lucene_analysis.py writes it), as one character class and one
`str.translate` table. Neither Python's `\\w` nor its `str.lower` decides a word.
"""

from __future__ import annotations

import re

from searchsvc.backends.lucene_tables import FOLDED, WORD_CHARACTERS
from searchsvc.core.query import TEXT_FIELDS

SEARCH_FIELDS = TEXT_FIELDS  # what a free-text query searches


# A word: word characters, single dots between them ("e.g", "3.5"). Word characters are what Java's `\w`
# matches with WORD_FLAGS (letters, digits, combining marks, `_`); not `*`, which whoosh-reloaded's
# default tokenizer keeps in a word for its own query parser (unused here). The cluster's tokenizer reads
# WORD_PATTERN; Python reads WORDS, the same pattern with `\w` spelled out from lucene_tables.py (Java
# matches a spelled-out class of its 733 ranges about fifteen times slower than its `\w`).
WORD_PATTERN = r"\w+(?:\.?\w+)*"
WORD_FLAGS = "UNICODE_CHARACTER_CLASS"


def _words(runs: tuple[tuple[int, int], ...]) -> re.Pattern[str]:
    """WORD_PATTERN with `\\w` as the class of these (first, last) runs of code points."""
    special = set("\\[]^-")

    def char(code: int) -> str:
        return "\\" + chr(code) if chr(code) in special else chr(code)

    characters = "[" + "".join(char(a) if a == b else f"{char(a)}-{char(b)}" for a, b in runs) + "]"
    return re.compile(WORD_PATTERN.replace("\\w", characters))


WORDS = _words(WORD_CHARACTERS)
# The same words in text without characters past U+FFFF (almost all text). Python's `re` matches a
# class holding such characters range by range, ten times slower than the table it uses without them.
_BMP_WORDS = _words(tuple(run for run in WORD_CHARACTERS if run[1] <= 0xFFFF))
_SUPPLEMENTARY = re.compile("[\U00010000-\U0010ffff]")
# Lucene's `lowercase` then `asciifolding`, character by character: "Œuvre" → "oeuvre", "Straße" →
# "strasse", "Ｌ" → "l". One translation table, applied in C.
_FOLDING = {code: "".join(map(chr, points)) for code, points in FOLDED.items()}
# Whoosh's default stop list (whoosh.analysis.STOP_WORDS), dropped from ranked text; words
# shorter than MIN_WORD_CHARS are dropped too (`ranked`).
STOP_WORDS = frozenset(
    "a an and are as at be by can for from have if in is it may not of on or tbd that the this to us we when "
    "will with yet you your".split()
)
MIN_WORD_CHARS = 2
# The plural "s" of a word without a vowel, or whose one vowel is a "u" before the "s": an acronym
# ("LLMs", "CNNs", "SNPs"; "GPUs", "GRUs", "CPUs"), which Snowball keeps ("llms" stays "llms", as its
# "s" follows no vowel; "gpus" too, as its one vowel is just before it), so `LLM` and `GPU` missed
# papers writing only "LLMs" or "GPUs". Applied before stemming by both engines (OpenSearch: a
# pattern_replace filter with these two strings; Whoosh: `singular_acronym`). Case is gone by then:
# of the words of the ACL, SciFact, Cranfield and CACM records, only "thus" and "plus" (and "clus",
# "mplus") are ordinary words of that shape, and stemming them "thu" and "plu" on both sides of a
# search changes what they find in nothing.
ACRONYM_PLURAL = r"^([b-df-hj-np-tv-xz]{2,}u?)s$"
ACRONYM_SINGULAR = "$1"
_ACRONYM_PLURAL = re.compile(ACRONYM_PLURAL)
# BM25: term-frequency saturation, and length normalisation per field.
K1 = 1.6
FIELD_B = {"title": 0.9, "abstract": 0.75}


def folded(text: str) -> str:
    """`text` lowercased and folded to ASCII where Lucene's ASCIIFoldingFilter folds it."""
    return text.translate(_FOLDING)


def ranked(word: str) -> bool:
    """Whether ranked text keeps a folded word: no stop word, and MIN_WORD_CHARS long as Lucene's length
    filter counts (in UTF-16 units, so a word of one character past U+FFFF, such as "𠀀", is kept)."""
    return word not in STOP_WORDS and (
        len(word) >= MIN_WORD_CHARS or len(word.encode("utf-16-le")) >= 2 * MIN_WORD_CHARS
    )


def word_pattern(text: str) -> re.Pattern[str]:
    """WORDS compiled for finding the words of `text` quickly: the same matches."""
    return _BMP_WORDS if text.isascii() or _SUPPLEMENTARY.search(text) is None else WORDS


def words(text: str) -> list[str]:
    """`text`'s words as written (WORD_PATTERN)."""
    return word_pattern(text).findall(text)


def unstemmed_words(text: str) -> list[str]:
    """`text`'s words, folded and kept whole, as the unstemmed fields index them."""
    return [folded(word) for word in words(text)]


def singular_acronym(word: str) -> str:
    """`word` (lowercased, accent-folded) without the plural "s" of an acronym: "llms" → "llm"."""
    return word[:-1] if word.endswith("s") and _ACRONYM_PLURAL.match(word) else word


def suggestible(word: str) -> bool:
    """Whether a word is worth suggesting as you type: stop words, one-letter words and bare
    numbers find nothing on their own (the ranked fields drop the first two)."""
    return len(word) >= MIN_WORD_CHARS and word not in STOP_WORDS and not word.isdigit()
