"""How far apart two words are: the measure "did you mean", typo tolerance and the vocabulary's lookups share."""

from __future__ import annotations

from rapidfuzz.distance import OSA

MAX_EDITS = 2  # a respelling at most this many edits away; both engines' suggesters are asked the same


def edit_distance(a: str, b: str) -> int:
    """Damerau–Levenshtein distance (optimal string alignment): an insertion, a deletion, a
    substitution or a swap of two neighbouring letters is one edit, as in both engines' suggesters.
    RapidFuzz's C++ (half a microsecond a pair): the Python loop it replaced took 80 µs, and a
    typo lookup compares a word with a few hundred."""
    return int(OSA.distance(a, b))
