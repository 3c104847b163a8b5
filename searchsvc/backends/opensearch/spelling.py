"""Choosing a respelling among the cluster's term suggestions, by the Whoosh backend's rule:
nearer words win over commoner ones (one edit before two), then the commonest."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

MAX_EDITS = 2


def respell(word: str, options: Iterable[dict[str, Any]]) -> str | None:
    """The best of the suggester's options (`text`, `freq`) from every field, or None."""
    frequency: dict[str, int] = {}
    for option in options:
        if option["text"][:1] == word[:1]:  # the first letter is trusted, as on Whoosh
            frequency[option["text"]] = frequency.get(option["text"], 0) + int(option.get("freq", 0))
    scored = [(edit_distance(word, text), -count, text) for text, count in frequency.items()]
    best = min((entry for entry in scored if 0 < entry[0] <= MAX_EDITS), default=None)
    return None if best is None else best[2]


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: insertions, deletions and substitutions."""
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)))
        previous = current
    return previous[-1]
