"""The completions suggestions as you type choose from, arranged once per generation.

Built when a generation is opened, from what is already there: the vocabulary stored with the
generation (words of titles and abstracts, with papers per word) and the author facet's
arrays. Nothing new is written at build time, so an index built before suggestions existed
serves them too. Words `analysis.suggestible` rejects are left out.

Narrowed by a query's earlier words or a search's filters, the counts are the narrowed papers':
an author's from the facet's arrays, every name with the prefix; a word's from its postings. A
prefix of one or two letters starts thousands of words, so words are counted most common first
(in the whole collection) and the count stops once no word left can place: a word's narrowed
papers are at most its papers in all. At most `WORD_POSTINGS` postings are read per key press;
past that (a short prefix over a large collection) a word rare in all but common in the narrowed
papers can be missed until the prefix is longer.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from searchsvc.backends.analysis import folded, suggestible
from searchsvc.backends.whoosh.completion import Completions
from searchsvc.backends.whoosh.facets import FacetIndex, Mask
from searchsvc.backends.whoosh.postings import Postings
from searchsvc.backends.whoosh.schema import EXACT_FIELDS
from searchsvc.core.suggestions import Suggestion, Typed, combine, most_papers_first
from searchsvc.core.vocabulary import Vocabulary

WORD_POSTINGS = 200_000  # postings read at most to count a prefix's words among narrowed papers

_WORD_FIELDS = tuple(EXACT_FIELDS.values())  # the vocabulary's fields, counted apart as it counts them


@dataclass(frozen=True)
class GenerationCompletions:
    words: Completions
    authors: Completions

    def suggest(self, start: Typed, limit: int) -> list[Suggestion]:
        words = self.words.top(folded(start.written), limit)
        authors = self.authors.top(start.prefix, limit)
        return combine(start, words, authors, limit)

    def suggest_among(
        self, start: Typed, among: Mask, postings: Postings, facets: FacetIndex, limit: int, check: Callable[[], None]
    ) -> list[Suggestion]:
        """Completions counted among the papers of `among` alone; those none of them hold left out."""
        words = _counted_words(self.words.with_prefix(folded(start.written)), among, postings, limit, check)
        check()
        held = facets.papers_among("author", among)
        authors = [(name, held[name]) for name, _ in self.authors.with_prefix(start.prefix) if name in held]
        return combine(start, most_papers_first(words, limit), most_papers_first(authors, limit), limit)


def _counted_words(
    candidates: Iterable[tuple[str, int]], among: Mask, postings: Postings, limit: int, check: Callable[[], None]
) -> list[tuple[str, int]]:
    """The `limit` words of `candidates` (most papers in all first) with the most papers of `among`:
    exact until `WORD_POSTINGS` postings have been read."""
    counted: list[tuple[str, int]] = []
    best: list[int] = []  # the `limit` largest counts so far, a min-heap
    read = 0
    for word, papers in candidates:
        if (len(best) == limit and papers < best[0]) or read >= WORD_POSTINGS:
            break  # this word and every later one hold fewer narrowed papers than the `limit` found
        check()
        text = word.encode("utf-8")
        held = sum(int(np.count_nonzero(among[postings.get(field, text)[0]])) for field in _WORD_FIELDS)
        read += papers
        if held:
            counted.append((word, held))
            (heapq.heappush if len(best) < limit else heapq.heappushpop)(best, held)
    return counted


def generation_completions(vocabulary: Vocabulary, facets: FacetIndex) -> GenerationCompletions:
    words = ((word, papers) for word, papers in vocabulary.items() if suggestible(word))
    return GenerationCompletions(
        words=Completions.of(words, keys=lambda word: (word,)),
        authors=Completions.of(facets.papers_per_value("author"), keys=facets.tails("author")),
    )
