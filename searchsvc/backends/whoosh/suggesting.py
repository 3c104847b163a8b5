"""The completions suggestions as you type choose from, arranged once per generation.

Built when a generation is opened, from what is already there: the vocabulary stored with the
generation (words of titles and abstracts, with papers per word) and the author facet's
arrays. Nothing new is written at build time, so an index built before suggestions existed
serves them too. Stop words and one-letter words are left out: they find no papers on their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from searchsvc.backends.analysis import MIN_WORD_CHARS, STOP_WORDS
from searchsvc.backends.whoosh.facets import FacetIndex
from searchsvc.core.completion import Completions
from searchsvc.core.suggestions import Suggestion, Typed, combine
from searchsvc.core.text import word_tails
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
    words = ((word, papers) for word, papers in vocabulary.items() if _suggestible(word))
    return GenerationCompletions(
        words=Completions.of(words, keys=lambda word: (word,)),
        authors=Completions.of(facets.papers_per_value("author"), keys=word_tails),
    )


def _suggestible(word: str) -> bool:
    return len(word) >= MIN_WORD_CHARS and word not in STOP_WORDS and not word.isdigit()
