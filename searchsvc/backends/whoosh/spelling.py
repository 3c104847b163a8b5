"""Respellings from the index's own unstemmed words, chosen by the core spelling rule."""

from __future__ import annotations

from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.schema import EXACT_FIELDS, unstemmed_analyzer
from searchsvc.core import spelling

_ANALYZER = unstemmed_analyzer()


def unstemmed_tokens(text: str) -> list[str]:
    """`text`'s words as the exact fields index them."""
    return [token.text for token in _ANALYZER(text)]


def respelling(reader: IndexReader, word: str) -> str | None:
    """The core rule's choice among indexed words near `word`, if no paper contains `word` itself."""
    if any(reader.doc_frequency(field, word) for field in EXACT_FIELDS.values()):
        return None
    options = [
        (candidate, reader.doc_frequency(field, candidate))
        for field in EXACT_FIELDS.values()
        # The first letter is trusted (prefix=1): it keeps the word-list scan short.
        for candidate in reader.terms_within(field, word, spelling.MAX_EDITS, prefix=1)
    ]
    return spelling.choose(word, options)
