"""The ranking policy every engine follows: tiers, reordering by meaning, and a page across them.

By relevance, papers matching all words of a group as typed come first (tier 0), then those
matching only some (tier 1), then those found only through a word's typos or other forms
(tier 2: core.typos, core.synonyms). Within a tier the engine's lexical score decides (of the
words as typed in the first two, so widening a query never reorders them), ties going to the
newer paper, then the id (`paper.catalogue_key`). With ranking by meaning, each tier's best
`fusion.CANDIDATES` lexical matches are reordered by the fused score (`fusion.fused`);
papers below them keep the lexical order. An engine only finds a tier's candidates in lexical
order (`CandidateSource`); what comes first is decided here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import numpy as np

from searchsvc.core import fusion
from searchsvc.core.deadline import Deadline

LAST_TIER = 2  # the papers found only through a word's typos or other forms
Ref = TypeVar("Ref")  # how an engine refers to a paper: a document number, a hit document


@dataclass(frozen=True)
class TierSlice:
    """The part [low, high) of tier `tier` that a page shows, and the candidates [fetch_low,
    fetch_high) of that tier, in lexical order, needed to decide it."""

    tier: int
    low: int
    high: int
    fetch_low: int
    fetch_high: int


@dataclass
class Candidates(Generic[Ref]):
    """Places [fetch_low, fetch_high) of one tier in lexical order: best first, ties already in
    catalogue order. `ties` ranks them in catalogue order (lower first) for ties of the fused
    score; `vectors` holds their unit vectors (a row each) or is None when some has none."""

    refs: Sequence[Ref]
    scores: np.ndarray
    ties: np.ndarray
    vectors: np.ndarray | None


@dataclass(slots=True)  # not frozen: made for every paper of every page, and frozen ones are slower to make
class Placed(Generic[Ref]):
    """A paper placed on a page, with what placed it there (core.explanation takes it apart): its
    tier, its lexical score and, when ranked by meaning, the best lexical score among the tier's
    candidates (the divisor), its cosine similarity to the query and that similarity's rank among
    the reordered candidates (1 = nearest in meaning; None below them)."""

    ref: Ref
    score: float  # what orders the page: the fused score, or the lexical one
    tier: int
    lexical: float
    best_lexical: float | None = None
    similarity: float | None = None
    similarity_rank: int | None = None


class CandidateSource(Protocol[Ref]):
    def candidates(self, tier: int, low: int, high: int, with_vectors: bool) -> Candidates[Ref]:
        """Places [low, high) of `tier` in lexical order (vectors only if `with_vectors`)."""


def page_slices(tier_sizes: Sequence[int], start: int, end: int, window: int) -> list[TierSlice]:
    """Which places of each tier the page [start, end) of the whole ordered list takes.

    With ranking by meaning (`window` > 0) a tier's first `window` places are fetched whatever
    the page, since reordering them decides which of them reach it.
    """
    slices = []
    offset = 0
    for tier, size in enumerate(tier_sizes):
        low, high = max(start - offset, 0), min(end - offset, size)
        offset += size
        if low < high:
            fetch_low, fetch_high = (0, max(high, min(window, size))) if window else (low, high)
            slices.append(TierSlice(tier, low, high, fetch_low, fetch_high))
    return slices


def order_slice(part: TierSlice, found: Candidates[Ref], query: np.ndarray | None) -> list[Placed[Ref]]:
    """The page's places [low, high) of one tier, with their scores (fused when `query` is given
    and every candidate has a vector; lexical otherwise)."""
    first = part.low - part.fetch_low
    if query is None or found.vectors is None:
        count = part.high - part.low
        return [
            Placed(found.refs[i], float(found.scores[i]), part.tier, float(found.scores[i]))
            for i in range(first, first + count)
        ]
    head = min(fusion.CANDIDATES, len(found.refs))
    best = float(found.scores[0])
    similarity = fusion.similarities(found.vectors, query)
    fused = fusion.fused(found.scores, best, similarity)
    order = np.concatenate([np.lexsort((found.ties[:head], -fused[:head])), np.arange(head, len(found.refs))])
    nearest = np.empty(head, dtype=np.int64)  # each reordered candidate's rank by similarity, ties by lexical place
    nearest[np.argsort(-similarity[:head], kind="stable")] = np.arange(1, head + 1)
    return [
        Placed(
            found.refs[i],
            float(fused[i]),
            part.tier,
            float(found.scores[i]),
            best if best > 0 else None,
            float(similarity[i]),
            int(nearest[i]) if i < head else None,
        )
        for i in order[first : first + part.high - part.low]
    ]


def rank_page(
    tier_sizes: Sequence[int],
    start: int,
    end: int,
    source: CandidateSource[Ref],
    query: Callable[[int], np.ndarray] | None,
    deadline: Deadline,
) -> list[Placed[Ref]]:
    """The places [start, end) of the whole ordered result, each with its score and what made it.

    `query` gives the query's vector a tier is reordered by (computed only for a tier whose
    candidates all have vectors: the first tiers' by the words as typed, the last's by all the
    words searched), or is None when the search is ranked by words alone.
    """
    window = fusion.CANDIDATES if query is not None else 0
    ranked: list[Placed[Ref]] = []
    for part in page_slices(tier_sizes, start, end, window):
        found = source.candidates(part.tier, part.fetch_low, part.fetch_high, with_vectors=window > 0)
        deadline.check()
        vector = None
        if query is not None and found.vectors is not None:
            vector = query(part.tier)
            deadline.check()
        ranked.extend(order_slice(part, found, vector))
    return ranked


# A paper's most distinctive words that "related papers" look for when its vector is not there
# (more-like-this): both engines ask for this many.
RELATED_KEY_TERMS = 12


class Rows(Protocol):
    """Vectors by row, as an array or an engine's arrays held apart (one per segment)."""

    def __len__(self) -> int: ...

    def __getitem__(self, rows: slice) -> np.ndarray: ...


# Rocchio's weights (Manning, Raghavan & Schütze, Introduction to Information Retrieval, 9.1.1):
# papers to be unlike count for less than papers to be like, since both usually share a topic.
UNLIKE_WEIGHT = 0.25


def rocchio(like: np.ndarray, unlike: np.ndarray) -> np.ndarray:
    """The unit vector "like these, unlike those": the mean of the `like` rows minus
    `UNLIKE_WEIGHT` times the mean of the `unlike` rows (either a 2-d array of unit vectors)."""
    target = like.astype(np.float32).mean(axis=0)
    if len(unlike):
        target = target - UNLIKE_WEIGHT * unlike.astype(np.float32).mean(axis=0)
    norm = float(np.linalg.norm(target))
    unit: np.ndarray = target / norm if norm > 0 else target
    return unit


def related_order(
    vectors: Rows, paper: np.ndarray, limit: int, exclude: Sequence[int] | np.ndarray = ()
) -> list[tuple[int, float]]:
    """Rows of `vectors` nearest in meaning to `paper` (cosine of unit vectors), the `limit`
    best first, ties to the lower row; never the rows of `exclude` (the paper's own, deleted ones)."""
    similarity = similarities(vectors, paper)
    left_out = np.unique(np.asarray(exclude, dtype=np.int64))
    similarity[left_out] = -np.inf
    count = min(limit, len(similarity) - len(left_out))
    if count <= 0:
        return []
    candidates = np.arange(len(similarity))
    if len(similarity) > count:
        kth = np.partition(-similarity, count - 1)[count - 1]
        candidates = np.flatnonzero(-similarity <= kth)
    order = candidates[np.lexsort((candidates, -similarity[candidates]))][:count]
    return [(int(i), float(similarity[i])) for i in order]


_ROWS_AT_ONCE = 16_384  # float16 rows widened to float32 at a time: a few MB, whatever the collection


def similarities(vectors: Rows, query: np.ndarray) -> np.ndarray:
    """Each row's dot product with `query`, in float32 (stored vectors are float16)."""
    wanted = query.astype(np.float32)
    out = np.empty(len(vectors), dtype=np.float32)
    for start in range(0, len(vectors), _ROWS_AT_ONCE):
        out[start : start + _ROWS_AT_ONCE] = vectors[start : start + _ROWS_AT_ONCE].astype(np.float32) @ wanted
    return out
