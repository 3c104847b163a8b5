"""The query tree (searchsvc.query) → Whoosh queries on this backend's fields.

Words search the stemmed title and abstract; phrases and wildcards their unstemmed twins,
so `"embedding tables"` does not match "embedded table". Wildcards are expanded here
against the index's own word list, with a bound, because Whoosh's own expansion has none
(`a*` on a large index takes seconds, see ../shared/WHOOSH-NOTES.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice

from whoosh import query
from whoosh.query import Query
from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.highlighting import MatchedWords
from searchsvc.backends.whoosh.schema import EXACT_FIELDS, FIELD_BOOSTS, SEARCH_FIELDS
from searchsvc.errors import QueryTooBroad
from searchsvc.query import (
    AllOf,
    Group,
    Node,
    Not,
    Phrase,
    Prefix,
    Word,
    Years,
    query_error,
    required_words,
    split_group,
)

# Scores of documents matching more of a group's clauses are raised (Whoosh's coordination
# bonus), which orders papers within each tier of search.rank.
_COORDINATION = 0.9


@dataclass(frozen=True)
class CompiledQuery:
    """What a search runs: the scored query and, for a group of words, the all-words tier."""

    scored: Query
    required: Query | None


class QueryCompiler:
    """Translates query trees for one open index generation."""

    def __init__(self, reader: IndexReader, max_wildcard_terms: int) -> None:
        self._reader = reader
        self._schema = reader.schema
        self._max_wildcard_terms = max_wildcard_terms

    def compile(self, node: Node) -> CompiledQuery:
        required = required_words(node)
        return CompiledQuery(
            scored=self._query(node).normalize(),
            required=None if required is None else self._query(required).normalize(),
        )

    def _query(self, node: Node) -> Query:
        if isinstance(node, Word):
            return self._word(node)
        if isinstance(node, Phrase):
            return self._phrase(node)
        if isinstance(node, Prefix):
            return self._prefix(node)
        if isinstance(node, Years):
            return query.NumericRange("year", node.low, node.high)
        if isinstance(node, Not):
            return query.Not(self._query(node.node))
        if isinstance(node, AllOf):
            return query.And([self._query(child) for child in node.nodes])
        if isinstance(node, Group):
            narrowing, describing = split_group(node)
            parts = [self._query(child) for child in narrowing]
            if describing:
                parts.append(_any_of([self._query(child) for child in describing], _COORDINATION))
            return parts[0] if len(parts) == 1 else query.And(parts)
        return _any_of([self._query(child) for child in node.nodes], None)

    def _word(self, node: Word) -> Query:
        if node.field == "subject":
            return self._phrase(node)
        if node.field == "author":
            return self._terms("author", node.text)
        return _any_of([self._terms(field, node.text) for field in _text_fields(node.field)], None)

    def _phrase(self, node: Phrase | Word) -> Query:
        if node.field in ("author", "subject"):
            return self._terms(node.field, node.text)
        return _any_of([self._terms(EXACT_FIELDS[field], node.text) for field in _text_fields(node.field)], None)

    def _terms(self, field: str, text: str) -> Query:
        """One analysed word, or several as a phrase (`memory-efficient`, `"exact words"`)."""
        words = list(self._schema[field].process_text(text, mode="query"))
        boost = FIELD_BOOSTS.get(field.removesuffix("_exact"), 1.0)
        if not words:
            return query.NullQuery
        if len(words) == 1:
            return query.Term(field, words[0], boost=boost)
        return query.Phrase(field, words, boost=boost)

    def _prefix(self, node: Prefix) -> Query:
        if node.field in ("author", "subject"):
            fields = [node.field]
        else:
            fields = [EXACT_FIELDS[field] for field in _text_fields(node.field)]
        expanded: list[Query] = []
        for field in fields:
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
            boost = FIELD_BOOSTS.get(field.removesuffix("_exact"), 1.0)
            expanded.extend(query.Term(field, term, boost=boost) for term in terms)
        return query.Or(expanded) if expanded else query.NullQuery


def _text_fields(field: str | None) -> tuple[str, ...]:
    return SEARCH_FIELDS if field is None else (field,)


def _any_of(subqueries: list[Query], scale: float | None) -> Query:
    """OR of the clauses; negated clauses exclude papers instead of adding every other paper.

    `a b NOT c` means (a OR b) AND NOT c, and `NOT a NOT b` neither a nor b.
    """
    negated = [q.query for q in subqueries if isinstance(q, query.Not)]
    kept = [q for q in subqueries if not isinstance(q, query.Not)]
    positive = query.Or(kept, scale=scale) if len(kept) > 1 else (kept[0] if kept else None)
    if not negated:
        return positive if positive is not None else query.NullQuery
    excluded = query.Or(negated)
    return query.Not(excluded) if positive is None else query.AndNot(positive, excluded)


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
