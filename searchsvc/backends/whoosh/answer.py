"""The Whoosh engine's first answer to a search: every match scored at once as arrays over the
generation's documents, the filters as masks, and the search recipe's further questions
(a tier's candidates, the page's hits, facets, respellings) answered from them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from searchsvc.backends.analysis import unstemmed_words
from searchsvc.backends.whoosh import word_parts, word_scores
from searchsvc.backends.whoosh.compiling import CompiledQuery, QueryCompiler, matched_words
from searchsvc.backends.whoosh.deadline_collectors import all_matching, all_scored
from searchsvc.backends.whoosh.facets import Filters, Mask, intersect
from searchsvc.backends.whoosh.generation_cache import OpenGeneration
from searchsvc.backends.whoosh.highlights import MatchedWords
from searchsvc.backends.whoosh.hits import hits_of
from searchsvc.core import spelling
from searchsvc.core.deadline import Deadline
from searchsvc.core.explanation import LexicalParts
from searchsvc.core.model import FacetValue, Hit, SearchRequest
from searchsvc.core.paper import Paper
from searchsvc.core.query import Node, as_typed, widened
from searchsvc.core.ranking import LAST_TIER, NO_WORDS, Candidates, Nearest, related_order
from searchsvc.settings import Settings

Ranked = list[tuple[int, float | None]]  # document numbers with their scores


@dataclass(frozen=True)
class Found:
    """What a query matches on one generation, and what the filters let through."""

    gen: OpenGeneration
    tree: Node | None  # the query matched, widened by typos and other forms (core.typos, core.synonyms)
    compiled: CompiledQuery | None
    typed_compiled: CompiledQuery | None  # the query as typed (`compiled` unless widened)
    matched: Mask  # what the query matches
    filters: Filters
    allowed: Mask  # ... and the filters let through
    literal: Mask  # ... and the query matches as typed (not only through typos or other forms)
    deadline: Deadline  # of the request this match is for
    scored: word_scores.Scored | None  # every match's score (None when browsing without a query)
    typed_scores: word_scores.Floats | None  # ... by the words as typed: what orders the first tiers

    @cached_property
    def all_words(self) -> Mask:
        """Allowed papers matching all words of a group as typed (`literal` for other queries)."""
        if self.compiled is None or self.compiled.required is None:
            return self.literal
        if self.scored is not None and self.scored.all_words is not None:
            return self.allowed & self.scored.all_words
        return self.allowed & mask(self.gen, all_matching(self.gen.searcher, self.compiled.required, self.deadline))


def match(
    gen: OpenGeneration, request: SearchRequest, tree: Node | None, deadline: Deadline, settings: Settings
) -> Found:
    """The papers `tree` matches on `gen`, scored, and those `request`'s filters let through; for
    a widened tree (respelled words, other forms), also those it matches as typed and their scores
    (a second pass without them)."""
    deadline.check()
    compiled, scored, matched = _scored(gen, tree, settings, deadline)
    typed_compiled, typed, literal = (
        (compiled, scored, matched) if not widened(tree) else _scored(gen, as_typed(tree), settings, deadline)
    )
    filters = gen.facets.filters(request)
    deadline.check()
    allowed = intersect(matched, list(filters.values()))
    typed_scores = None if typed is None else typed.scores
    return Found(
        gen,
        tree,
        compiled,
        typed_compiled,
        matched,
        filters,
        allowed,
        allowed & literal,
        deadline,
        scored,
        typed_scores,
    )


def _scored(
    gen: OpenGeneration, tree: Node | None, settings: Settings, deadline: Deadline
) -> tuple[CompiledQuery | None, word_scores.Scored | None, Mask]:
    """`tree` compiled, every match's score (None when browsing), and what it matches."""
    if tree is None:
        return None, None, gen.all_docs
    compiled = QueryCompiler(gen.searcher.reader(), settings.max_wildcard_terms, deadline).compile(tree)
    deadline.check()
    words_plan = word_scores.plan(compiled, gen.searcher)
    if words_plan is not None:
        scored = word_scores.score(words_plan, gen.postings, gen.searcher, deadline.check)
        return compiled, scored, scored.matched & gen.all_docs  # matchers see an update's deleted papers too
    docs, scores = all_scored(gen.searcher, compiled.scored, deadline)
    matched = mask(gen, docs) & gen.all_docs
    dense = np.zeros(len(matched), dtype=np.float64)
    dense[docs] = scores
    return compiled, word_scores.Scored(matched, dense, None), matched


class WhooshAnswer:
    """The search recipe's `backends.Answer` on one generation (refs are document numbers); read
    only while the engine's turn is held (`WhooshBackend.answer`)."""

    def __init__(self, found: Found, request: SearchRequest, tree: Node | None, settings: Settings) -> None:
        self._found = found
        self._request = request
        self._tree = tree
        self._settings = settings

    @cached_property
    def _tiers(self) -> list[Mask]:
        """Papers matching all words of a group first, then the rest matching as typed, then those
        found only through typos or other forms (core.ranking's tiers)."""
        found = self._found
        return [found.all_words, found.literal & ~found.all_words, found.allowed & ~found.literal]

    def total(self) -> int:
        return int(np.count_nonzero(self._found.allowed))

    def searched(self) -> Node | None:
        return self._found.tree

    def literal(self) -> int:
        return int(np.count_nonzero(self._found.literal))

    def all_words(self) -> int:
        return int(np.count_nonzero(self._found.all_words))

    def meaning_ready(self) -> bool:
        return self._found.gen.vectors.get() is not None

    def candidates(self, tier: int, low: int, high: int, with_vectors: bool) -> Candidates[int]:
        """Places [low, high) of `tier` by score, ties in catalogue order (doc_order.DocOrder)."""
        assert self._found.scored is not None and self._found.typed_scores is not None  # set for every query
        rank = self._found.gen.order.rank
        # The first tiers in the order of the words as typed: what only widening adds (core.typos,
        # core.synonyms) never reorders them; the last tier by everything the query searched.
        scores = self._found.scored.scores if tier == LAST_TIER else self._found.typed_scores
        best = word_scores.top(scores, self._tiers[tier], rank, low, high)
        docs = np.array([docnum for docnum, _ in best], dtype=np.int64)
        scores = np.array([score for _, score in best], dtype=np.float64)
        vectors = self._found.gen.vectors.get() if with_vectors else None
        refs = docs.tolist()
        return Candidates(refs, scores, rank[docs], None if vectors is None else vectors[docs], refs)

    def nearest(self, query: np.ndarray, count: int) -> Nearest[int] | None:
        """The generation's vectors scanned whole (None while a fresh open is still reading them:
        `WhooshBackend.answer` waited for them before the turn), the papers the filters leave out
        or deleted set aside."""
        found = self._found
        vectors = found.gen.vectors.whole(wait_s=0)
        if vectors is None:
            return None
        assert found.scored is not None and found.typed_scores is not None  # set for every query
        live = intersect(found.gen.all_docs, list(found.filters.values()))
        best = related_order(vectors, query, count, exclude=np.flatnonzero(~live))
        found.deadline.check()
        docs = np.array([docnum for docnum, _ in best], dtype=np.int64)
        tiers = np.full(len(docs), NO_WORDS, dtype=np.int64)
        for tier, members in enumerate(self._tiers):
            tiers[members[docs]] = tier
        scores = np.where(tiers == LAST_TIER, found.scored.scores[docs], found.typed_scores[docs])
        scores = np.where(tiers == NO_WORDS, 0.0, scores).astype(np.float64)
        refs = docs.tolist()
        return Nearest(refs, refs, tiers, scores, found.gen.order.rank[docs], vectors[docs])

    def lexical_parts(self, tier: int, refs: list[int]) -> list[LexicalParts | None]:
        """The words' parts of these papers' lexical scores in `tier`, scored as `candidates` scores
        them (by the words as typed but in the last tier); None for a query not of plain words."""
        found = self._found
        plain = word_parts.plain_words(found.compiled if tier == LAST_TIER else found.typed_compiled)
        if plain is None:
            return [None] * len(refs)
        return list(word_parts.lexical_parts(plain, refs, found.gen.postings, found.gen.searcher, found.deadline.check))

    def page(self) -> list[int]:
        order = self._found.gen.order
        by = {"oldest": order.by_oldest, "cited": order.by_cited, "added": order.by_added}.get(
            self._request.sort, order.by_newest
        )
        return [int(docnum) for docnum in by[self._found.allowed[by]][self._request.start : self._request.end]]

    def hits(self, ranked: Ranked) -> list[Hit]:
        compiled = self._found.compiled
        words = matched_words(compiled.scored) if compiled else MatchedWords()
        return hits_of(self._found.gen, ranked, words, self._found.deadline)

    def papers(self, ranked: Ranked) -> list[Paper]:
        papers = []
        for docnum, _ in ranked:
            self._found.deadline.check()
            papers.append(Paper.from_stored(self._found.gen.searcher.stored_fields(docnum)))
        self._found.deadline.check()
        return papers

    def facets(self) -> dict[str, list[FacetValue]]:
        found = self._found
        return found.gen.facets.counts(found.matched, found.filters, self._request, self._settings.facet_limits())

    def respellings(self) -> dict[spelling.Check, str]:
        checks = spelling.checks(self._tree, unstemmed_words)
        return spelling.respellings(checks, self._found.gen.vocabulary, self._found.deadline)

    def all_words_of(self, request: SearchRequest, tree: Node | None) -> int:
        found = match(self._found.gen, request, tree, self._found.deadline, self._settings)
        return int(np.count_nonzero(found.all_words))


def mask(gen: OpenGeneration, docnums: Iterable[int] | np.ndarray) -> Mask:
    found = np.zeros(gen.facets.doc_count, dtype=bool)
    found[docnums if isinstance(docnums, np.ndarray) else np.fromiter(docnums, dtype=np.int64)] = True
    return found
