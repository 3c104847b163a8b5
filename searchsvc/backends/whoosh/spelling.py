"""The words "did you mean" chooses from: the index's own unstemmed words, written once per generation."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from whoosh.searching import Searcher

from searchsvc.backends.whoosh.schema import EXACT_FIELDS
from searchsvc.core import typos
from searchsvc.core.vocabulary import Vocabulary

VOCABULARY_FILE = "vocabulary.json"


def write_vocabulary(generation: Path, words: Iterable[tuple[str, int]]) -> None:
    """Store the generation's vocabulary with it before it is published, from the words its writers
    wrote (each with its papers, per field and segment): reading it from the index's word list takes
    seconds (docs/performance.md), which every worker would pay on opening it."""
    Vocabulary.of(words).save(generation / VOCABULARY_FILE)


def generation_vocabulary(generation: Path, searcher: Searcher) -> Vocabulary:
    """The vocabulary stored with the generation, or read from its index if it was built without one."""
    stored = generation / VOCABULARY_FILE
    return Vocabulary.load(stored) if stored.exists() else vocabulary(searcher)


def vocabulary(searcher: Searcher) -> Vocabulary:
    """The exact fields' words, each with the papers holding it (a paper with it in both fields counts twice,
    as the spelling rule has always counted)."""
    return Vocabulary.of(_exact_words(searcher))


def _exact_words(searcher: Searcher) -> Iterator[tuple[str, int]]:
    """(word, papers) per field and segment: segments hold different papers, so their counts add up."""
    for leaf, _ in searcher.leaf_searchers():
        reader = leaf.reader()
        for field in EXACT_FIELDS.values():
            for text, info in reader.iter_field(field):
                yield text.decode("utf-8"), info.doc_frequency()


def typo_options(vocabulary: Vocabulary, word: str) -> list[tuple[str, int]] | None:
    """core.typos' lookup: `word`'s near words with their papers (as far as a typo of it may be),
    or None when some paper holds it."""
    return None if vocabulary.papers(word) else vocabulary.near(word, typos.allowed_edits(word))
