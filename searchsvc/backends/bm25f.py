"""BM25F, the score of plain words on every engine: the arithmetic, written once.

A word's occurrences in title and abstract are weighed (`FIELD_WEIGHTS`), each divided by its
field's length normalisation, summed and saturated once (`analysis.K1`), and multiplied by
Lucene's idf from the field where the word is commonest, so a word found in both fields does
not count twice as a word in one. In a group of words, papers matching more of the query's
(word, field) pairs get Whoosh's coordination bonus (`COORDINATION`). Field lengths are
counted as Whoosh stores them (`stored_lengths`: one byte each), and scores are rounded to
1/`SCORE_SCALE` so that sums added in another order tie as they should.

Whoosh computes it over whole posting lists (whoosh/word_scores.py) or in its matchers
(whoosh/lucene_scoring.py); OpenSearch recomputes it for its best candidates from the word counts and
lengths the cluster answers with their hits (opensearch/word_rescoring.py). Both call these functions,
so plain words rank alike on both.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import log
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from searchsvc.backends.analysis import FIELD_B, K1
from searchsvc.core.explanation import LexicalParts, WordPart

Floats = npt.NDArray[np.float64]
# One paper's value (Whoosh's matchers score a paper at a time) or every paper's (the numpy paths).
Values = TypeVar("Values", float, Floats)
# One scored word in one paper: its text, boost × idf, and its weighed, normalised frequency per field.
WordInPaper = tuple[str, float, dict[str, float]]

FIELD_WEIGHTS = {"title": 4.0, "abstract": 1.0}  # how much an occurrence in each searched field counts
COORDINATION = 0.9  # the scale of the bonus for matching more of a group's words (Whoosh's CoordMatcher)
SCORE_SCALE = 1e9  # scores are 0.1–100; sums added in another order differ by ~1e-14

# The length each byte stands for: Whoosh's table (whoosh.util.numeric), from its formula.
_BYTE_LENGTHS = [round((1.033**n - 1) * 27) for n in range(256)]
_LENGTH_OF_BYTE = np.array(_BYTE_LENGTHS, dtype=np.float64)


def idf(papers: int, frequency: int) -> float:
    """Lucene's BM25 idf of a word in `frequency` of `papers` papers: words in most papers weigh
    almost nothing (Whoosh's own idf adds 1 to every word, and common words then outvote rare ones)."""
    return log(1 + (papers - frequency + 0.5) / (frequency + 0.5))


def field_b(field: str) -> float:
    """BM25's b (length normalisation strength) of a field and of its unstemmed twin."""
    return FIELD_B.get(field.removesuffix("_exact"), 0.75)


def stored_lengths(lengths: npt.ArrayLike) -> Floats:
    """Field lengths as Whoosh keeps them: rounded up to the nearest length one byte can stand
    for (exact to 10 words, within ~3% above)."""
    counts = np.asarray(lengths, dtype=np.float64)
    return _LENGTH_OF_BYTE[np.minimum(np.searchsorted(_BYTE_LENGTHS, counts, side="left"), 255)]


def length_of_byte(codes: npt.NDArray[np.int64]) -> Floats:
    """The lengths Whoosh's one-byte codes stand for (a segment's length column, read at once)."""
    return _LENGTH_OF_BYTE[codes]


def length_norm(lengths: Values, average: float, field: str) -> Values:
    """BM25's length normalisation of `field`: 1 for a field of average length."""
    b = field_b(field)
    return 1 - b + b * lengths / (average or 1.0)


def saturated(frequency: Values, scale: float) -> Values:
    """A word's score from its weighed, normalised frequency; `scale` is boost × idf."""
    return scale * frequency * (K1 + 1) / (frequency + K1)


def coordinated(total: Floats, matching: npt.NDArray[np.int64], term_count: int, scale: float) -> Floats:
    """Scores with the coordination bonus (as Whoosh's CoordMatcher): `matching` counts each
    paper's matched (word, field) pairs, `term_count` the query's pairs found in the index."""
    if not term_count or term_count == scale:
        return total
    return (total + (matching - 1) / (term_count - scale) ** 2) * ((term_count - 1) / term_count)


def rounded(scores: Floats) -> Floats:
    """Scores rounded to 1/SCORE_SCALE. floor(x + 0.5), not round(): Python and numpy compute
    it bit for bit alike (numpy's round() is not Python's)."""
    return np.floor(scores * SCORE_SCALE + 0.5) / SCORE_SCALE


def shown_word(typed: str, term: str, terms: int) -> str:
    """How "why this result" names a scored word: as the query wrote it where it is one word of the
    index (`memory`, not the stem `memori`), with the index's word beside it where the query's word
    is several (`memory-efficient: effici`)."""
    return typed if terms == 1 else f"{typed}: {term}"


def word_parts(words: Sequence[WordInPaper], coordination: float | None, term_count: int) -> LexicalParts:
    """One paper's lexical score taken apart by word and field ("why this result", core.explanation).

    A word's score saturates its fields' summed frequencies once, so each field gets the share of
    that score its own frequency is of the sum: the shares add up to the word's score. With the
    coordination bonus (`coordination`: its scale; `term_count`: the query's (word, field) pairs
    in the index) `coordinated` scales the sum of the words' scores, so each part is scaled alike
    and the bonus is its own scaled part. Every searched field of every word is given, 0 where
    the paper lacks the word."""
    found: list[WordPart] = []
    matching = 0  # the paper's matched (word, field) pairs, as `coordinated` counts them
    for word, scale, frequencies in words:
        matching += sum(1 for frequency in frequencies.values() if frequency > 0)
        total = sum(frequencies.values())
        score = float(saturated(total, scale)) if total > 0 else 0.0
        found.append(
            WordPart(word, {field: score * part / total if total > 0 else 0.0 for field, part in frequencies.items()})
        )
    factor, bonus = 1.0, 0.0
    if coordination is not None and term_count and term_count != coordination and matching:
        factor = (term_count - 1) / term_count
        bonus = (matching - 1) / (term_count - coordination) ** 2 * factor
    scaled = (WordPart(part.word, {field: share * factor for field, share in part.fields.items()}) for part in found)
    return LexicalParts(tuple(scaled), bonus)
