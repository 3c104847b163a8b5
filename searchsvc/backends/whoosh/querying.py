"""Query strings → Whoosh queries, with only the syntax the service supports enabled.

Field prefixes, wildcards, ranges, boosts and `*:*` are switched off: each lets a query
reach fields or expand to term lists that users were never meant to control, and some
are CPU bombs on a large index (see ../shared/WHOOSH-NOTES.md).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

from whoosh import qparser, query
from whoosh.fields import Schema
from whoosh.query import Query

from searchsvc.backends.whoosh.schema import FIELD_BOOSTS, SEARCH_FIELDS
from searchsvc.errors import QuerySyntaxError

# Scores of documents matching more of the query's words are raised, so that papers with
# all the words rank above those with some, while a pasted sentence still finds papers.
_COORDINATION = 0.9

_DISABLED_PLUGINS = (
    qparser.FieldsPlugin,
    qparser.WildcardPlugin,
    qparser.RangePlugin,
    qparser.BoostPlugin,
    qparser.EveryPlugin,
    qparser.SingleQuotePlugin,
)


def make_parser(schema: Schema) -> qparser.QueryParser:
    parser = qparser.MultifieldParser(
        list(SEARCH_FIELDS), schema, fieldboosts=FIELD_BOOSTS, group=qparser.OrGroup.factory(_COORDINATION)
    )
    for plugin in _DISABLED_PLUGINS:
        parser.remove_plugin_class(plugin)
    return parser


def parse_query(parser: qparser.QueryParser, text: str) -> Query:
    """The query for `text`; the parser's crashes on pathological input become syntax errors."""
    try:
        # Rewritten before Whoosh normalises: normalising flattens nested groups, which would
        # lift a NOT out of its parentheses.
        return _negations_exclude(parser.parse(text, normalize=False)).normalize()
    except (RecursionError, IndexError) as exc:
        raise QuerySyntaxError(f"the query is nested too deeply or malformed ({type(exc).__name__})") from None


def _negations_exclude(q: Query) -> Query:
    """Make `a b NOT c` mean (a OR b) AND NOT c, and `NOT a NOT b` mean neither a nor b.

    With OR as the default group Whoosh reads them as `a OR b OR (NOT c)` and
    `(NOT a) OR (NOT b)`, which add every paper lacking one word instead of removing the
    papers that have it.
    """
    q = q.apply(_negations_exclude)
    if not isinstance(q, query.Or):
        return q
    negated = [sub.query for sub in q.subqueries if isinstance(sub, query.Not)]
    if not negated:
        return q
    excluded = query.Or(negated)
    kept = [sub for sub in q.subqueries if not isinstance(sub, query.Not)]
    if not kept:
        return query.Not(excluded)
    positive = copy.copy(q)
    positive.subqueries = kept
    return query.AndNot(positive, excluded)


def highlight_terms(query: Query) -> frozenset[str]:
    """The analysed words of the query that a highlighter should mark in title and abstract."""
    return frozenset(_texts(query.iter_all_terms(phrases=True)))


def _texts(terms: Iterable[tuple[str, object]]) -> Iterable[str]:
    for field, text in terms:
        if field in SEARCH_FIELDS:
            yield text.decode("utf-8") if isinstance(text, bytes) else str(text)
