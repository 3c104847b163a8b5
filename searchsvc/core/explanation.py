"""Why a paper is where it is: its score taken apart into parts that add up to it (issue #32).

The lexical score is each query word's BM25F part in each field, plus the coordination bonus,
plus `other`: what the words do not explain (the whole lexical score where the engine does not
score the query as plain words: phrases, wildcards, author: clauses and the like). With ranking
by meaning the score shown is fused (core.fusion): lexical / best_lexical + meaning, meaning
being WEIGHT × similarity. So, to the float's last bits:

    lexical == sum of the words' parts + coordination + other
    score == lexical / best_lexical + meaning    (== lexical when not ranked by meaning)

An engine gives the words' parts (`LexicalParts`, computed by backends/bm25f.py, the arithmetic
that scored them); the rest is the ranking policy's, here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from searchsvc.core import fusion
from searchsvc.core.ranking import Placed

SCORE_PLACES = 4  # a hit's score is shown to this many decimal places
PART_PLACES = (
    6  # an explanation's parts: the parts of a score shown to 4 places add up to it within 0.00005 + 0.0000005 each
)

TIERS = (
    "matches every word as typed",
    "matches some of the words as typed",
    "found only through a word's typos or other forms",
)


@dataclass(frozen=True)
class WordPart:
    """One scored word (named as the query wrote it: backends/bm25f.shown_word) and its part of the
    score in each field."""

    word: str
    fields: dict[str, float]

    @property
    def total(self) -> float:
        return sum(self.fields.values())


@dataclass(frozen=True)
class LexicalParts:
    """The words' parts of one paper's lexical score, and the coordination bonus."""

    words: tuple[WordPart, ...]
    coordination: float


@dataclass(frozen=True)
class Explanation:
    """One hit's score taken apart (see the module's docstring for how the parts add up)."""

    tier: int
    words: tuple[WordPart, ...]  # the largest part first
    coordination: float
    other: float
    lexical: float
    best_lexical: float | None  # the divisor, when ranked by meaning
    similarity: float | None
    similarity_rank: int | None  # among the tier's candidates reordered by meaning, 1 = nearest
    meaning: float | None  # weight × similarity
    score: float
    weight: float = fusion.WEIGHT  # the encoder's (core.fusion.weight)

    @property
    def tier_label(self) -> str:
        return TIERS[self.tier]

    @property
    def fields(self) -> list[str]:
        """The fields any word is searched in, in the order they first come."""
        return list(dict.fromkeys(field for word in self.words for field in word.fields))


def explained(placed: Placed[Any], parts: LexicalParts | None) -> Explanation:
    """`placed`'s score taken apart, the words' parts given by the engine (None: it does not score
    the paper as plain words, and the whole lexical score is `other`)."""
    words = () if parts is None else tuple(sorted(parts.words, key=lambda part: (-part.total, part.word)))
    coordination = 0.0 if parts is None else parts.coordination
    other = placed.lexical - sum(part.total for part in words) - coordination
    weight = fusion.WEIGHT if placed.weight is None else placed.weight
    meaning = None if placed.similarity is None else weight * placed.similarity
    return Explanation(
        tier=placed.tier,
        words=words,
        coordination=coordination,
        other=other,
        lexical=placed.lexical,
        best_lexical=placed.best_lexical if meaning is not None else None,
        similarity=placed.similarity,
        similarity_rank=placed.similarity_rank,
        meaning=meaning,
        score=placed.score,
        weight=weight,
    )
