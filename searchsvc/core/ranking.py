"""The ranking policy every engine follows: tiers, reordering by meaning, and a page across them.

By relevance, papers matching all words of a group as typed come first (tier 0), then those
matching only some (tier 1), then those found only through a word's typos or other forms
(tier 2: core.typos, core.synonyms). Within a tier the engine's lexical score decides (of the
words as typed in the first two, so widening a query never reorders them), ties going to the
newer paper, then the id (`paper.catalogue_key`). With ranking by meaning, each tier's best
`fusion.CANDIDATES` lexical matches are reordered by the fused score (`fusion.fused`);
papers below them keep the lexical order. An engine only finds a tier's candidates in lexical
order (`CandidateSource`); what comes first is decided here.

Candidates found by meaning (`join_by_meaning`, when asked for): the papers nearest in meaning
to the query among those the filters let through join the fused pool of the tier they are in,
with their own lexical score, wherever their lexical place; a paper holding none of the query's
words joins the last tier's pool with lexical score 0, only for a query of words that describe
(`query.only_describes`) and that found something. Tier 0 keeps its first place from its own
lexical candidates, so an exact title match is never pushed off it (docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

import numpy as np

from searchsvc.core import fusion
from searchsvc.core.deadline import Deadline

LAST_TIER = 2  # the papers found only through a word's typos or other forms
NO_WORDS = -1  # the tier of a paper found by meaning alone: it holds none of the query's words
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
    catalogue order. `ties` orders them in catalogue order (lower first) for ties of the fused
    score, comparably across one search's asks (ranks, or `paper.catalogue_tie` strings);
    `vectors` holds their unit vectors (a row each) or is None when some has none."""

    refs: Sequence[Ref]
    scores: np.ndarray
    ties: np.ndarray
    vectors: np.ndarray | None
    keys: Sequence[Hashable] | None = None  # what tells papers apart across asks (None: the refs do)


@dataclass
class Nearest(Generic[Ref]):
    """Papers nearest in meaning to a query vector among the live papers the filters let through,
    nearest first: each one's tier (`NO_WORDS` if the query's words do not find it), its lexical
    score in that tier (0 for `NO_WORDS`), its catalogue tie rank and its unit vector, as
    `Candidates` gives them, and a key telling it apart from the tiers' candidates."""

    refs: Sequence[Ref]
    keys: Sequence[Hashable]
    tiers: np.ndarray
    scores: np.ndarray
    ties: np.ndarray
    vectors: np.ndarray

    def rows(self, chosen: np.ndarray) -> Nearest[Ref]:
        """The papers of the rows `chosen` (a boolean mask), in order."""
        at = np.flatnonzero(chosen).tolist()
        return Nearest(
            [self.refs[i] for i in at],
            [self.keys[i] for i in at],
            self.tiers[at],
            self.scores[at],
            self.ties[at],
            self.vectors[at],
        )


@dataclass
class Joining(Generic[Ref]):
    """Papers found by meaning for each tier's fused pool (`join_by_meaning`), and the tier sizes
    with the papers of no words counted in the tier whose pool they join."""

    sizes: list[int]
    by_tier: dict[int, Nearest[Ref]] = field(default_factory=dict)
    added: int = 0  # papers holding none of the query's words shown: counted in the total, not in facets
    alone_tier: int = NO_WORDS  # the tier whose pool they join


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
    weight: float | None = None  # what the similarity was multiplied by


class CandidateSource(Protocol[Ref]):
    def candidates(self, tier: int, low: int, high: int, with_vectors: bool) -> Candidates[Ref]:
        """Places [low, high) of `tier` in lexical order (vectors only if `with_vectors`)."""


class NearestSource(Protocol[Ref]):
    def nearest(self, query: np.ndarray, count: int) -> Nearest[Ref] | None:
        """The `count` live papers nearest in meaning to `query` among those the filters let
        through (an exact scan of their vectors), or None if the engine cannot find them now."""


def join_by_meaning(
    tier_sizes: Sequence[int],
    source: NearestSource[Ref],
    query: Callable[[int], np.ndarray],
    count: int,
    alone: bool,
) -> Joining[Ref]:
    """Which papers nearest in meaning to the query join each tier's fused pool: those in a tier
    join that tier's (by the tier's query vector); with `alone` (a query that only describes and
    found something), those holding none of its words join the last non-empty tier's, counted in
    its size. Nothing joins when the engine cannot find them (vectors pending)."""
    sizes = list(tier_sizes)
    joining: Joining[Ref] = Joining(sizes)
    filled = [tier for tier, size in enumerate(sizes) if size > 0]
    if count <= 0 or not filled:
        return joining
    asked: dict[int, Nearest[Ref] | None] = {}  # by query vector: the first tiers' and the last's are often one
    for tier in filled:
        vector = query(tier)
        if id(vector) not in asked:
            asked[id(vector)] = source.nearest(vector, count)
        found = asked[id(vector)]
        if found is None:
            return Joining(list(tier_sizes))
        joined = found.tiers == tier
        if alone and tier == filled[-1]:
            joined |= found.tiers == NO_WORDS
            joining.added, joining.alone_tier = int(np.count_nonzero(found.tiers == NO_WORDS)), tier
            sizes[tier] += joining.added
        if joined.any():
            joining.by_tier[tier] = found.rows(joined)
    return joining


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


def order_slice(
    part: TierSlice,
    found: Candidates[Ref],
    query: np.ndarray | None,
    joined: Nearest[Ref] | None = None,
    weight: float | None = None,
) -> list[Placed[Ref]]:
    """The page's places [low, high) of one tier, with their scores (fused when `query` is given
    and every candidate has a vector; lexical otherwise). `joined`: papers found by meaning that
    join the tier's fused pool (`join_by_meaning`); `found` then holds the tier's places from its
    first, enough of them to fill [low, high) once those are taken out of the lexical order.
    `weight`: the similarity's in the fused score (`fusion.weight` of the encoder; None: `fusion.WEIGHT`)."""
    weight = fusion.WEIGHT if weight is None else weight
    if joined is not None:
        return _order_joined(part, found, query, joined, weight)
    first = part.low - part.fetch_low
    if query is None or found.vectors is None:
        count = part.high - part.low
        return [
            Placed(found.refs[i], float(found.scores[i]), part.tier, float(found.scores[i]))
            for i in range(first, first + count)
        ]
    head = min(fusion.CANDIDATES, len(found.refs))
    best = float(found.scores[0])
    placed = _fused_placed(part.tier, found.refs, found.scores, found.ties, found.vectors, query, best, weight, head)
    return placed[first : first + part.high - part.low]


def _order_joined(
    part: TierSlice, found: Candidates[Ref], query: np.ndarray | None, joined: Nearest[Ref], weight: float
) -> list[Placed[Ref]]:
    """`order_slice` with papers found by meaning: the tier's first `fusion.CANDIDATES` lexical
    candidates and the joined papers not among them are reordered together by the fused score
    (the divisor still the tier's best lexical score); the rest of the tier follows in lexical
    order without the joined papers. In tier 0 the first place stays a lexical candidate's."""
    keys: Sequence[Hashable] = found.keys if found.keys is not None else found.refs
    head = min(fusion.CANDIDATES, len(found.refs))
    in_head = set(keys[:head])
    extra = joined.rows(np.array([key not in in_head for key in joined.keys], dtype=bool))
    moved = set(extra.keys)
    tail = [i for i in range(head, len(found.refs)) if keys[i] not in moved]
    refs = [*found.refs[:head], *extra.refs]
    lexical = np.concatenate([found.scores[:head], extra.scores]).astype(np.float64)
    ties = np.concatenate([found.ties[:head], extra.ties])
    best = float(found.scores[0]) if head else 0.0
    rest = [Placed(found.refs[i], float(found.scores[i]), part.tier, float(found.scores[i])) for i in tail]
    if query is None or found.vectors is None:  # by words alone: the joined papers after the tier's own
        pool = [Placed(refs[i], float(lexical[i]), part.tier, float(lexical[i])) for i in range(len(refs))]
        return (pool[:head] + rest + pool[head:])[part.low : part.high]
    vectors = np.concatenate([found.vectors[:head], extra.vectors])
    first_among = head if part.tier == 0 else None  # the best of the tier's own candidates keeps place 1
    pool = _fused_placed(part.tier, refs, lexical, ties, vectors, query, best, weight, len(refs), first_among)
    return (pool + rest)[part.low : part.high]


def _fused_placed(
    tier: int,
    refs: Sequence[Ref],
    lexical: np.ndarray,
    ties: np.ndarray,
    vectors: np.ndarray,
    query: np.ndarray,
    best: float,
    weight: float,
    reordered: int,
    first_among: int | None = None,
) -> list[Placed[Ref]]:
    """Every row placed with its fused score (`best`: the tier's best lexical score, the divisor):
    the first `reordered` rows by that score, ties by `ties`, each with its similarity's rank among
    them; the rest after them in their order. With `first_among`, place 1 goes to the best of the
    first `first_among` rows, wherever the others put it. The similarity is to the query's vector
    moved toward the rows a first such fusion places first (`fusion.fed_back`)."""

    def fusing(toward: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        similarity = fusion.similarities(vectors, toward)
        fused = fusion.fused(lexical, best, similarity, weight)
        order = np.concatenate([np.lexsort((ties[:reordered], -fused[:reordered])), np.arange(reordered, len(refs))])
        if first_among and len(order) and order[0] >= first_among:
            first = next(i for i in order if i < first_among)
            order = np.concatenate([[first], order[order != first]])
        return similarity, fused, order

    similarity, fused, order = fusing(query)
    if reordered:
        similarity, fused, order = fusing(
            fusion.fed_back(query, vectors[order[: min(fusion.FEEDBACK_PAPERS, reordered)]])
        )
    nearest = np.empty(reordered, dtype=np.int64)  # each reordered row's rank by similarity, ties by lexical place
    nearest[np.argsort(-similarity[:reordered], kind="stable")] = np.arange(1, reordered + 1)
    return [
        Placed(
            refs[i],
            float(fused[i]),
            tier,
            float(lexical[i]),
            best if best > 0 else None,
            float(similarity[i]),
            int(nearest[i]) if i < reordered else None,
            weight,
        )
        for i in order
    ]


def rank_page(
    tier_sizes: Sequence[int],
    start: int,
    end: int,
    source: CandidateSource[Ref],
    query: Callable[[int], np.ndarray] | None,
    deadline: Deadline,
    joining: Joining[Ref] | None = None,
    weight: float | None = None,
) -> list[Placed[Ref]]:
    """The places [start, end) of the whole ordered result, each with its score and what made it.

    `query` gives the query's vector a tier is reordered by (computed only for a tier whose
    candidates all have vectors: the first tiers' by the words as typed, the last's by all the
    words searched), or is None when the search is ranked by words alone. `joining`: papers found
    by meaning (`join_by_meaning`; `tier_sizes` then its sizes), fetched past the page's end by as
    many places as join the tier, since those leave its lexical order. `weight`: as `order_slice`'s.
    """
    window = fusion.CANDIDATES if query is not None else 0
    lexical_sizes = list(tier_sizes)
    if joining is not None and joining.added:
        lexical_sizes[joining.alone_tier] -= joining.added
    ranked: list[Placed[Ref]] = []
    for part in page_slices(tier_sizes, start, end, window):
        joined = joining.by_tier.get(part.tier) if joining is not None else None
        fetch_high = part.fetch_high
        if joined is not None:
            fetch_high = min(max(part.fetch_high, window) + len(joined.refs), lexical_sizes[part.tier])
        found = source.candidates(part.tier, part.fetch_low, fetch_high, with_vectors=window > 0)
        deadline.check()
        vector = None
        if query is not None and found.vectors is not None:
            vector = query(part.tier)
            deadline.check()
        ranked.extend(order_slice(part, found, vector, joined, weight))
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
