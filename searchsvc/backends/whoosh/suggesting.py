"""The completions suggestions as you type choose from, arranged once per generation.

Built when a generation is opened, from what is already there: the vocabulary stored with the
generation (words of titles and abstracts, with papers per word) and the author facet's
arrays. Nothing new is written at build time, so an index built before suggestions existed
serves them too. Words `analysis.suggestible` rejects are left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from searchsvc.backends.analysis import suggestible
from searchsvc.backends.whoosh.completion import Completions
from searchsvc.backends.whoosh.facets import FacetIndex
from searchsvc.core.suggestions import Suggestion, Typed, combine
from searchsvc.core.vocabulary import Vocabulary


@dataclass(frozen=True)
class GenerationCompletions:
    words: Completions
    authors: Completions

    def suggest(self, start: Typed, limit: int) -> list[Suggestion]:
        words = self.words.top(start.prefix, limit)
        authors = self.authors.top(start.prefix, limit)
        return combine(start, words, authors, limit)


def generation_completions(vocabulary: Vocabulary, facets: FacetIndex) -> GenerationCompletions:
    words = ((word, papers) for word, papers in vocabulary.items() if suggestible(word))
    return GenerationCompletions(
        words=Completions.of(words, keys=lambda word: (word,)),
        authors=Completions.of(facets.papers_per_value("author"), keys=facets.tails("author")),
    )
