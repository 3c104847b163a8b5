"""How far apart two words are: the measure "did you mean" and the vocabulary's lookups share."""

from __future__ import annotations

MAX_EDITS = 2  # a respelling at most this many edits away; both engines' suggesters are asked the same


def edit_distance(a: str, b: str) -> int:
    """Damerau–Levenshtein distance (optimal string alignment): an insertion, a deletion, a
    substitution or a swap of two neighbouring letters is one edit, as in both engines' suggesters."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b))
            if i > 1 and j > 1 and char_a == b[j - 2] and a[i - 2] == char_b:
                cost = min(cost, previous2[j - 2] + 1)
            current.append(cost)
        previous2, previous = previous, current
    return previous[-1]
