"""Spelling suggestions from the index's own unstemmed words."""

from __future__ import annotations

from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.schema import EXACT_FIELDS, unstemmed_analyzer

_ANALYZER = unstemmed_analyzer()
MIN_WORD_LENGTH = 3  # shorter words have too many neighbours one edit away to guess from


def correct_spelling(reader: IndexReader, text: str) -> str | None:
    """The commonest word nearest to `text` if no paper contains `text` itself, else None.

    Nearer words win over commoner ones (one edit before two), and the first letter is
    trusted: few misspellings change it, and it keeps the word-list scan short.
    """
    tokens = [token.text for token in _ANALYZER(text)]
    if len(tokens) != 1 or len(tokens[0]) < MIN_WORD_LENGTH or tokens[0].isdigit():
        return None
    word = tokens[0]
    if any(reader.doc_frequency(field, word) for field in EXACT_FIELDS.values()):
        return None
    for distance in (1, 2):
        frequency: dict[str, int] = {}
        for field in EXACT_FIELDS.values():
            for candidate in reader.terms_within(field, word, distance, prefix=1):
                frequency[candidate] = frequency.get(candidate, 0) + reader.doc_frequency(field, candidate)
        if frequency:
            return min(frequency, key=lambda candidate: (-frequency[candidate], candidate))
    return None
