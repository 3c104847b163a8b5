"""The query tree (searchsvc.core.query) → Whoosh queries on this backend's fields.

Words search the stemmed title and abstract; phrases and wildcards their unstemmed twins,
so `"embedding tables"` does not match "embedded table". Wildcards are expanded here
against the index's own word list, with a bound, because Whoosh's own expansion has none
(`a*` on a large index takes seconds: docs/decisions.md).

This module only decides which Whoosh query each node becomes. How those queries score is
lucene_scoring.py; how phrases and wildcard words read the request's clock while Whoosh
matches them is deadline_matching.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import Any, Literal

from whoosh import matching, query
from whoosh.matching import Matcher
from whoosh.query import Query
from whoosh.reading import IndexReader
from whoosh.searching import Searcher

from searchsvc.backends.analysis import SEARCH_FIELDS
from searchsvc.backends.bm25f import COORDINATION, FIELD_WEIGHTS, shown_word
from searchsvc.backends.whoosh.deadline_matching import CheckedPhrase, CheckedTerm, Steps
from searchsvc.backends.whoosh.highlights import MatchedWords
from searchsvc.backends.whoosh.lucene_scoring import CoordinatedOr, Weighted, WordInFields
from searchsvc.backends.whoosh.schema import EXACT_FIELDS
from searchsvc.core.deadline import Deadline
from searchsvc.core.errors import QueryTooBroad
from searchsvc.core.query import (
    NAME_FIELDS,
    NARROWING_FIELDS,
    AllOf,
    Also,
    Group,
    Node,
    Not,
    Phrase,
    Prefix,
    Respelled,
    Word,
    Years,
    as_typed,
    either,
    query_error,
    required_words,
    searched_fields,
    split_group,
)

_Parts = Literal["any", "all", "phrase"]


@dataclass(frozen=True)
class CompiledQuery:
    """What a search runs: the scored query and, for a group of words, the all-words tier."""

    scored: Query
    required: Query | None


class QueryCompiler:
    """Translates query trees for one open index generation (and one request's deadline, which phrases check)."""

    def __init__(self, reader: IndexReader, max_wildcard_terms: int, deadline: Deadline | None = None) -> None:
        self._reader = reader
        self._schema = reader.schema
        self._max_wildcard_terms = max_wildcard_terms
        self._deadline = deadline
        self._steps = Steps(deadline)  # shared by every wildcard word of the query

    def compile(self, node: Node) -> CompiledQuery:
        required = required_words(as_typed(node))  # the first tier holds the words as typed
        return CompiledQuery(
            scored=Weighted(self._query(node, "any").normalize()),
            required=None if required is None else self._query(required, "all").normalize(),
        )

    def _query(self, node: Node, parts: _Parts) -> Query:
        """`parts`: how a word that analyses to several (`memory-efficient`) matches, see _word."""
        if isinstance(node, Word):
            return self._word(node, parts)
        if isinstance(node, Respelled):
            return self._word(node.searched, "any")
        if isinstance(node, Also):
            words = [self._word(node.words, "any")] if node.words is not None else []
            return _or(words + [self._phrase(phrase) for phrase in node.phrases])
        if isinstance(node, Phrase):
            return self._phrase(node)
        if isinstance(node, Prefix):
            return self._prefix(node)
        if isinstance(node, Years):
            return query.NumericRange("year", node.low, node.high)
        if isinstance(node, Not):
            return query.Not(self._query(node.node, "phrase"))
        if isinstance(node, AllOf):
            return query.And([self._query(child, "all") for child in node.nodes])
        if isinstance(node, Group):
            narrowing, describing = split_group(node)
            clauses = [self._query(child, parts) for child in narrowing]
            if describing:
                clauses.append(self._any_of(describing, parts, COORDINATION))
            return clauses[0] if len(clauses) == 1 else query.And(clauses)
        return self._any_of(node.nodes, parts, None)

    def _any_of(self, nodes: tuple[Node, ...], parts: _Parts, scale: float | None) -> Query:
        """OR of the wanted clauses (coordinated when `scale` is set), AND NOT the excluded ones."""
        wanted, excluded = either(nodes)
        kept = [self._query(child, parts) for child in wanted]
        positive: Query | None = None
        if len(kept) > 1:
            positive = query.Or(kept) if scale is None else CoordinatedOr(kept, scale=scale)
        elif kept:
            positive = kept[0]
        if not excluded:
            return positive if positive is not None else query.NullQuery
        negated = _or([self._query(child, "phrase") for child in excluded])
        return query.Not(negated) if positive is None else _AndNot(positive, negated)

    def _word(self, node: Word, parts: _Parts) -> Query:
        """A word of title and abstract is one BM25F word; a hyphenated word is its parts.

        Among words typed side by side the parts are words of the group (`memory-efficient`
        ranks like `memory efficient`, papers with both first): read as a phrase, the
        hyphenated words of pasted sentences missed papers writing them apart or joined
        (docs/relevance.md). `AND` and the all-words tier need every part; `NOT` and quotes
        keep the phrase.
        """
        if node.field == "subject":
            return self._phrase(node)
        if node.field in NAME_FIELDS:
            return self._terms(node.field, node.text)
        fields = searched_fields(node.field)
        words = list(dict.fromkeys(self._schema[fields[0]].process_text(node.text, mode="query")))
        if len(words) > 1 and parts == "phrase":
            return _or([self._terms(field, node.text) for field in fields])
        weights = {field: FIELD_WEIGHTS[field] for field in fields}
        scored = [WordInFields(word, weights, shown=shown_word(node.text, word, len(words))) for word in words]
        if not scored:
            return query.NullQuery
        if len(scored) == 1:
            return scored[0]
        return query.And(scored) if parts == "all" else query.Or(scored)

    def _phrase(self, node: Phrase | Word) -> Query:
        if node.field in NARROWING_FIELDS:
            return self._terms(node.field, node.text)
        return _or([self._terms(EXACT_FIELDS[field], node.text) for field in searched_fields(node.field)])

    def _terms(self, field: str, text: str) -> Query:
        """One analysed word, or several as a phrase (`memory-efficient`, `"exact words"`)."""
        words = list(self._schema[field].process_text(text, mode="query"))
        boost = FIELD_WEIGHTS.get(field.removesuffix("_exact"), 1.0)
        if not words:
            return query.NullQuery
        if len(words) == 1:
            return query.Term(field, words[0], boost=boost)
        return CheckedPhrase(field, words, self._deadline, boost=boost)

    def _prefix(self, node: Prefix) -> Query:
        if node.field in NARROWING_FIELDS:
            fields = [node.field]
        else:
            fields = [EXACT_FIELDS[field] for field in searched_fields(node.field)]
        expanded: list[Query] = []
        for field in fields:
            if self._deadline is not None:
                self._deadline.check()  # each expansion reads hundreds of words from the term list
            words = list(self._schema[field].process_text(node.text, mode="query"))
            if len(words) != 1:
                raise query_error(f"a wildcard must follow one word, as in embed*: '{node.text}*'", node.start)
            terms = list(islice(self._reader.expand_prefix(field, words[0]), self._max_wildcard_terms + 1))
            if len(terms) > self._max_wildcard_terms:
                raise query_error(
                    f"'{node.text}*' matches more than {self._max_wildcard_terms} different words:"
                    " type more letters before the *",
                    node.start,
                    QueryTooBroad,
                )
            boost = FIELD_WEIGHTS.get(field.removesuffix("_exact"), 1.0)
            expanded.extend(CheckedTerm(field, term, self._steps, boost=boost) for term in terms)
        return query.Or(expanded) if expanded else query.NullQuery


def _or(subqueries: list[Query]) -> Query:
    return subqueries[0] if len(subqueries) == 1 else query.Or(subqueries)


def matched_words(compiled: Query) -> MatchedWords:
    """The query's words a highlighter should mark in title and abstract."""
    stemmed, exact = set(), set()
    for field, text in compiled.iter_all_terms(phrases=True):
        word = text.decode("utf-8") if isinstance(text, bytes) else str(text)
        if field in SEARCH_FIELDS:
            stemmed.add(word)
        elif field in EXACT_FIELDS.values():
            exact.add(word)
    return MatchedWords(frozenset(stemmed), frozenset(exact))


class _AndNot(query.AndNot):
    """Whoosh's AndNot, with its matcher's first document checked against the excluded ones."""

    def matcher(self, searcher: Searcher, context: Any = None) -> Matcher:
        return _AndNotMatcher(self.a.matcher(searcher, context), self.b.matcher(searcher, searcher.boolean_context()))


class _AndNotMatcher(matching.AndNotMatcher):
    """Whoosh 2.7's AndNotMatcher skips the excluded matcher forward only when the first ids are
    already equal, so a segment's first match passed even when it held the excluded word (in a
    segment whose excluded postings start earlier: `model -vision`, tests/unit/backends/whoosh/
    test_incremental.py). Here the first match is looked for as every later one is."""

    def _find_first(self) -> None:
        if self.a.is_active() and self.b.is_active():
            self._find_next()
