"""Each plain word's part of a paper's score on Whoosh ("why this result", core.explanation).

Read from the same posting lists and statistics as word_scores.py scores them, for the page's
papers only, and taken apart by the arithmetic that scored them (bm25f.word_parts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from whoosh.searching import Searcher

from searchsvc.backends import bm25f
from searchsvc.backends.whoosh.compiling import CompiledQuery
from searchsvc.backends.whoosh.lucene_scoring import WordInFields, idf
from searchsvc.backends.whoosh.postings import Floats, Postings
from searchsvc.backends.whoosh.word_scores import WordsPlan, plan_of, term_count
from searchsvc.core.explanation import LexicalParts


def plain_words(compiled: CompiledQuery | None) -> WordsPlan | None:
    """The query as plain words scored by BM25F, or None if it scores anything else (a phrase,
    a wildcard, NOT, AND, a field of names): only plain words can be taken apart by word."""
    found = None if compiled is None else plan_of(compiled, small_segments=False)
    if found is None or not all(isinstance(clause, WordInFields) for clause in found.clauses):
        return None
    return found


def lexical_parts(
    plan: WordsPlan, docs: Sequence[int], postings: Postings, searcher: Searcher, check: Callable[[], None]
) -> list[LexicalParts]:
    """Each of `docs`' lexical score taken apart by word and field."""
    wanted = np.asarray(docs, dtype=np.int64)
    words: list[list[bm25f.WordInPaper]] = [[] for _ in docs]
    for clause in plan.clauses:
        check()
        assert isinstance(clause, WordInFields)  # plain_words made sure
        text = clause.text.encode("utf-8")
        frequencies = {
            field: _frequencies(postings, searcher, field, text, weight, wanted)
            for field, weight in clause.fields.items()
        }
        scale = clause.boost * idf(searcher, tuple(clause.fields), text)
        for row, found in enumerate(words):
            found.append((clause.shown, scale, {field: float(values[row]) for field, values in frequencies.items()}))
    count = 0 if plan.coordination is None else term_count(plan.clauses, postings, searcher)
    return [bm25f.word_parts(found, plan.coordination, count) for found in words]


def _frequencies(
    postings: Postings, searcher: Searcher, field: str, text: bytes, weight: float, docs: np.ndarray
) -> Floats:
    """The word's weighed, normalised frequency in `field` of each of `docs` (0 where absent), as
    word_scores.score computes it."""
    out = np.zeros(len(docs), dtype=np.float64)
    ids, tf = postings.get(field, text)
    if not len(ids) or not searcher.doc_frequency(field, text):
        return out
    at = np.minimum(np.searchsorted(ids, docs), len(ids) - 1)
    present = ids[at] == docs
    held = docs[present]
    norm = bm25f.length_norm(postings.lengths(field)[held], searcher.avg_field_length(field), field)
    out[present] = weight * tf[at[present]] / norm
    return out
