"""Plain-word queries matched and scored over whole posting lists at once, with numpy.

Most searches are a few plain words or a pasted sentence: a group of `WordInFields`
clauses with the coordination bonus. Whoosh scores them one document at a time through a
tree of Python matchers, which for a pasted sentence means most of the collection
(docs/performance.md, "Figures behind the code"). Here each word's postings are read as arrays (and kept per
generation, bounded), and the same arithmetic as `_BM25FMatcher`, `_Coordination` and
`_Rounded` (backends/bm25f.py) runs over every matching paper at once. Any other query (phrases, wildcards,
NOT, fields) goes through Whoosh unchanged. The two paths are tested to give the same
results (tests/unit/backends/whoosh/test_word_scores.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import numpy as np
from whoosh import query
from whoosh.query import Query
from whoosh.searching import Searcher

from searchsvc.backends import bm25f
from searchsvc.backends.whoosh.compiling import CompiledQuery
from searchsvc.backends.whoosh.deadline_matching import CheckedPhrase
from searchsvc.backends.whoosh.facets import Mask
from searchsvc.backends.whoosh.lucene_scoring import CoordinatedOr, Weighted, WordInFields, idf
from searchsvc.backends.whoosh.phrases import phrase_docs
from searchsvc.backends.whoosh.postings import Floats, Ints, Postings
from searchsvc.backends.whoosh.schema import EXACT_FIELDS

# Whoosh's Or preloads its matches instead of building a tree of unions in segments of up
# to this many documents, and the preloaded matcher hides its terms from the coordination
# count: nested ORs of more than two words stay on Whoosh's path in such segments.
_OR_TREE_ABOVE = 5000
_EXACT = frozenset(EXACT_FIELDS.values())


@dataclass(frozen=True)
class PhraseInField:
    """Words side by side in one unstemmed field (a quoted phrase, or one word of it): each word
    scores BM25 of that field, as Whoosh's phrase matcher sums its words' term scores."""

    field: str
    words: tuple[bytes, ...]
    boost: float


Clause = WordInFields | PhraseInField


@dataclass(frozen=True)
class WordsPlan:
    clauses: tuple[Clause, ...]  # every word occurrence and phrase the score adds up
    coordination: float | None  # the bonus's scale, when the clauses are a group
    required: Query | None  # what a paper must match for the first tier: clauses under AND and OR


def plan(compiled: CompiledQuery, searcher: Searcher) -> WordsPlan | None:
    """The query as words and phrases to score with numpy, or None if it needs Whoosh's matchers."""
    # By the size of the collection, not of its segments: an update's small segment must not
    # change how a query is scored (a rebuild's segments are all above the bound, or it has one).
    return plan_of(compiled, small_segments=searcher.doc_count() <= _OR_TREE_ABOVE)


def plan_of(compiled: CompiledQuery, small_segments: bool) -> WordsPlan | None:
    """The query as words and phrases, or None if it is anything else. With `small_segments`,
    also None where Whoosh's matchers count the coordination bonus differently (`_OR_TREE_ABOVE`);
    without, the words and phrases the score adds up, whichever path scored them."""
    if not isinstance(compiled.scored, Weighted):
        return None
    top = compiled.scored.child
    coordination = None
    if isinstance(top, CoordinatedOr) and len(top.subqueries) > 1:
        coordination = top.scale
        parts = top.subqueries
    else:
        parts = [top]
    clauses: list[Clause] = []
    for part in parts:
        found = _clauses_of_or(part, small_segments)
        if found is None:
            return None
        clauses.extend(found)
    if compiled.required is not None and not _only_clauses(compiled.required):
        return None
    return WordsPlan(tuple(clauses), coordination, compiled.required)


def _clauses_of_or(q: Query, small_segments: bool) -> list[Clause] | None:
    if type(q) is query.Or:
        if len(q.subqueries) > 2 and small_segments:
            return None
        found = [_clause(sub) for sub in q.subqueries]
        return None if None in found else cast("list[Clause]", found)  # `in` does not narrow the items' type
    clause = _clause(q)
    return None if clause is None else [clause]


def _clause(q: Query) -> Clause | None:
    if isinstance(q, WordInFields):
        return q
    if isinstance(q, CheckedPhrase):
        return PhraseInField(q.fieldname, tuple(word.encode("utf-8") for word in q.words), q.boost)
    if type(q) is query.Term and q.fieldname in _EXACT:  # not CheckedTerm: wildcards stay on Whoosh's path
        text = q.text if isinstance(q.text, bytes) else q.text.encode("utf-8")
        return PhraseInField(q.fieldname, (text,), q.boost)
    return None


def _only_clauses(q: Query) -> bool:
    """Whether `q` is words and phrases combined by AND and OR (only which papers match it counts)."""
    if _clause(q) is not None:
        return True
    return isinstance(q, query.And | query.Or) and all(_only_clauses(sub) for sub in q.subqueries)


@dataclass
class Scored:
    matched: Mask  # papers matching any word
    scores: Floats  # document number → score (0 where not matched)
    all_words: Mask | None  # papers matching every required word


def score(words_plan: WordsPlan, postings: Postings, searcher: Searcher, check: Callable[[], None]) -> Scored:
    """The plan's matches and scores, as Whoosh's matchers would compute them."""
    n = postings.doc_count
    total = np.zeros(n, dtype=np.float64)
    matching = np.zeros(n, dtype=np.int64)  # each paper's matched (field, word) pairs, for the coordination bonus
    matched = np.zeros(n, dtype=bool)
    phrases = _PhraseMatches(postings, check)
    for clause in words_plan.clauses:
        check()
        if isinstance(clause, PhraseInField):
            docs = phrases.docs(clause)
            total[docs] += _phrase_scores(clause, docs, postings, searcher, check)
            matching[docs] += len(clause.words)
            matched[docs] = True
            continue
        text = clause.text.encode("utf-8")
        in_fields: list[tuple[Ints, Floats]] = []
        for field, weight in clause.fields.items():
            ids, tf = postings.get(field, text)
            if not len(ids) or not searcher.doc_frequency(field, text):  # only in an update's deleted papers
                continue
            norm = bm25f.length_norm(postings.lengths(field)[ids], searcher.avg_field_length(field), field)
            in_fields.append((ids, weight * tf / norm))
            matching[ids] += 1
        if not in_fields:
            continue
        hit, frequency = _summed(in_fields)
        total[hit] += bm25f.saturated(frequency, clause.boost * idf(searcher, tuple(clause.fields), text))
        matched[hit] = True
    if words_plan.coordination is not None:
        pairs = term_count(words_plan.clauses, postings, searcher)
        total[matched] = bm25f.coordinated(total[matched], matching[matched], pairs, words_plan.coordination)
    scores = bm25f.rounded(total)
    all_words = None if words_plan.required is None else matched & _docs(words_plan.required, phrases)
    return Scored(matched, scores, all_words)


def _summed(in_fields: list[tuple[Ints, Floats]]) -> tuple[Ints, Floats]:
    """The papers holding a word in any field, and its field-weighted frequencies summed per paper
    in field order (as adding them into a zeroed array would). Sparse: arrays the size of the
    collection cost ~2 ms a word at 300,000 papers even for a rare word."""
    if len(in_fields) == 1:
        return in_fields[0]
    papers, where = np.unique(np.concatenate([ids for ids, _ in in_fields]), return_inverse=True)
    summed = np.bincount(where, weights=np.concatenate([part for _, part in in_fields]))
    return papers, cast(Floats, summed)  # float64 with weights; numpy's stubs give bincount's result as intp


class _PhraseMatches:
    """Each phrase's matching papers, found once per search (the all-words tier asks again)."""

    def __init__(self, postings: Postings, check: Callable[[], None]) -> None:
        self.postings = postings
        self._check = check
        self._found: dict[tuple[str, tuple[bytes, ...]], Ints] = {}

    def docs(self, phrase: PhraseInField) -> Ints:
        key = (phrase.field, phrase.words)
        if key not in self._found:
            self._found[key] = phrase_docs(self.postings, phrase.field, phrase.words, self._check)
        return self._found[key]


def _phrase_scores(
    phrase: PhraseInField, docs: Ints, postings: Postings, searcher: Searcher, check: Callable[[], None]
) -> Floats:
    """Each word's BM25 in the phrase's field, summed (as Whoosh's intersection of term matchers
    adds their LuceneBM25 scores), times the field's boost."""
    field = phrase.field
    norm = bm25f.length_norm(postings.lengths(field)[docs], searcher.avg_field_length(field), field)
    part = np.zeros(len(docs), dtype=np.float64)
    for word in phrase.words:
        tf = postings.weights_at(field, word, docs, check)
        part += bm25f.saturated(tf / norm, idf(searcher, (field,), word))
    return phrase.boost * part


def term_count(clauses: tuple[Clause, ...], postings: Postings, searcher: Searcher) -> int:
    """The query's (field, word) pairs in the index, as CoordinatedOr._term_count counts Whoosh's
    term matchers: per pair, the most any segment has. A phrase has its words' matchers only in
    segments holding all of them."""
    most: dict[tuple[str, bytes], int] = {}
    for reader, _ in postings.leaves:
        counted: Counter[tuple[str, bytes]] = Counter()
        for clause in clauses:
            if isinstance(clause, PhraseInField):
                phrase = cast(PhraseInField, clause)  # mypy keeps WordInFields too, as it derives from untyped Whoosh
                terms = [(phrase.field, word) for word in phrase.words]
                present = terms if all(term in reader for term in terms) else []
            else:
                text = clause.text.encode("utf-8")
                present = [(field, text) for field in clause.fields if (field, text) in reader]
            counted.update(term for term in present if searcher.doc_frequency(*term))
        for term, count in counted.items():
            most[term] = max(most.get(term, 0), count)
    return sum(most.values())


def _docs(q: Query, phrases: _PhraseMatches) -> Mask:
    """The papers matching `q`, a query of which `_only_clauses` holds."""
    mask = np.zeros(phrases.postings.doc_count, dtype=bool)
    if isinstance(q, WordInFields):
        for field in q.fields:
            mask[phrases.postings.get(field, q.text.encode("utf-8"))[0]] = True
        return mask
    clause = _clause(q)
    if isinstance(clause, PhraseInField):
        mask[phrases.docs(clause)] = True
        return mask
    masks = [_docs(sub, phrases) for sub in q.subqueries]
    combine = np.logical_and if isinstance(q, query.And) else np.logical_or
    return combine.reduce(masks) if masks else mask


def top(scores: Floats, tier: Mask, rank: Ints, low: int, high: int) -> list[tuple[int, float]]:
    """Places [low, high) of `tier` by score, ties by `rank` (each document's place in catalogue order)."""
    candidates = np.flatnonzero(tier)
    if len(candidates) > high:
        kth = np.partition(-scores[candidates], high - 1)[high - 1]
        candidates = candidates[-scores[candidates] <= kth]
    order = np.lexsort((rank[candidates], -scores[candidates]))[low:high]
    return [(int(d), float(scores[d])) for d in candidates[order]]
