"""The query tree (searchsvc.core.query) → OpenSearch query DSL, with the Whoosh backend's meaning.

Words search the stemmed title and abstract together (`cross_fields`: one blended word
statistic over both fields, the best field's score plus a share of the other's); phrases
and wildcards search the unstemmed `.exact` subfields; `author:` and `subject:` match whole
names and values.
"""

from __future__ import annotations

from typing import Any, Literal

from searchsvc.backends.analysis import folded, unstemmed_words
from searchsvc.backends.opensearch.mapping import (
    ADDED,
    BOOSTS,
    EXACT,
    FIRST_DAY,
    FOLDED,
    LAST_DAY,
    NAME_WORDS,
    VENUE,
)
from searchsvc.core.model import SearchRequest
from searchsvc.core.query import (
    NAME_FIELDS,
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
    either,
    query_error,
    searched_fields,
    split_group,
)

Dsl = dict[str, Any]
_Parts = Literal["any", "all", "phrase"]
MATCH_ALL: Dsl = {"match_all": {}}
# A word's score: its best field's, plus this share of the other's (docs/scaling.md).
TIE_BREAKER = 0.3


# Each name field's words, matched unstemmed as a phrase (core.query.NAME_FIELDS).
_NAME_WORDS = {"author": "authors", "venue": f"{VENUE}.{NAME_WORDS}"}


def translate(node: Node, parts: _Parts = "any") -> Dsl:
    """`parts`: how a word that analyses to several (`memory-efficient`) matches: any of them,
    all of them, or as a phrase (under NOT), as in the Whoosh backend's QueryCompiler."""
    if isinstance(node, Word):
        return _word(node, parts)
    if isinstance(node, Respelled):
        return _word(node.searched, "any")
    if isinstance(node, Also):
        words = [_word(node.words, "any")] if node.words is not None else []
        return _or(words + [_phrase(phrase) for phrase in node.phrases])
    if isinstance(node, Phrase):
        return _phrase(node)
    if isinstance(node, Prefix):
        return _prefix(node)
    if isinstance(node, Years):
        return year_range(node.low, node.high)
    if isinstance(node, Not):
        return {"bool": {"must_not": [translate(node.node, "phrase")]}}
    if isinstance(node, AllOf):
        return {"bool": {"must": [translate(child, "all") for child in node.nodes]}}
    if isinstance(node, Group):
        narrowing, describing = split_group(node)
        clauses = [translate(child, parts) for child in narrowing]
        if describing:
            clauses.append(_any_of(describing, parts))
        return clauses[0] if len(clauses) == 1 else {"bool": {"must": clauses}}
    return _any_of(node.nodes, parts)


def all_words(required: Node) -> Dsl:
    """The all-words tier of a group (core.query.required_words): each of its clauses required.

    A stop word ("for" in "network topology for training") is no word to require: as on
    Whoosh it drops out, instead of matching no paper and leaving the tier empty.
    """
    return {
        "bool": {
            "must": [
                _word(child, "all", drop_stop_words=True) if isinstance(child, Word) else translate(child, "all")
                for child in (required.nodes if isinstance(required, AllOf) else (required,))
            ]
        }
    }


def year_range(low: int | None, high: int | None) -> Dsl:
    bounds = {key: value for key, value in (("gte", low), ("lte", high)) if value is not None}
    return {"range": {"year": bounds}}


def filters(request: SearchRequest) -> dict[str, Dsl | None]:
    """Per facet, the filter the request sets on it (None: not filtered); the date range and
    `added_since`, which are no facets, under "date" and "added", so every facet is counted under them."""
    years = dates = None
    if request.years:
        years = year_range(request.year_from, request.year_to)
    if request.dated:
        low, high = request.day_range  # a paper is in it when a day its date may stand for is
        dates = {"bool": {"filter": [{"range": {FIRST_DAY: {"lte": high}}}, {"range": {LAST_DAY: {"gte": low}}}]}}
    return {
        "year": years,
        "date": dates,
        "added": (
            None
            if request.added_since is None
            else {"range": {ADDED: {"gte": request.added_since, "format": "epoch_second"}}}
        ),
        "subject": {"terms": {f"subjects.{FOLDED}": list(request.subject)}} if request.subject else None,
        "author": {"terms": {f"authors.{FOLDED}": list(request.author)}} if request.author else None,
        "venue": {"terms": {f"{VENUE}.{FOLDED}": list(request.venue)}} if request.venue else None,
    }


def all_of(clauses: list[Dsl | None]) -> Dsl:
    """A filter every clause must pass (match_all when there are none)."""
    kept = [clause for clause in clauses if clause is not None]
    return {"bool": {"filter": kept}} if kept else MATCH_ALL


def _word(node: Word, parts: _Parts, drop_stop_words: bool = False) -> Dsl:
    if node.field == "subject":
        return _value("subjects", node.text)
    if node.field in NAME_FIELDS:
        return {"match_phrase": {_NAME_WORDS[node.field]: node.text}}
    fields = [f"{field}^{BOOSTS[field]:g}" for field in searched_fields(node.field)]
    if parts == "phrase":
        return {"multi_match": {"query": node.text, "fields": fields, "type": "phrase"}}
    operator = "and" if parts == "all" else "or"
    query: Dsl = {"query": node.text, "fields": fields, "type": "cross_fields", "operator": operator}
    query["tie_breaker"] = TIE_BREAKER
    if drop_stop_words:
        query["zero_terms_query"] = "all"
    return {"multi_match": query}


def _phrase(node: Phrase) -> Dsl:
    if node.field == "subject":
        return _value("subjects", node.text)
    if node.field in NAME_FIELDS:
        return {"match_phrase": {_NAME_WORDS[node.field]: node.text}}
    return _or(
        [
            {"match_phrase": {f"{field}.{EXACT}": {"query": node.text, "boost": BOOSTS[field]}}}
            for field in searched_fields(node.field)
        ]
    )


def _prefix(node: Prefix) -> Dsl:
    """A trailing wildcard; the cluster expands it (a query expanding to more words than its
    clause limit is refused, and reported as too broad)."""
    if node.field == "subject":
        return {"prefix": {f"subjects.{FOLDED}": {"value": folded(node.text).strip()}}}
    words = unstemmed_words(node.text)
    if len(words) != 1:
        raise query_error(f"a wildcard must follow one word, as in embed*: '{node.text}*'", node.start)
    word = words[0]
    if node.field in NAME_FIELDS:
        fields = [_NAME_WORDS[node.field]]
    else:
        fields = [f"{field}.{EXACT}" for field in searched_fields(node.field)]
    return _or(
        [{"prefix": {field: {"value": word, "rewrite": "scoring_boolean", "boost": _boost(field)}}} for field in fields]
    )


def _value(field: str, text: str) -> Dsl:
    return {"term": {f"{field}.{FOLDED}": text.strip()}}


def _boost(field: str) -> float:
    return BOOSTS.get(field.split(".")[0], 1.0)


def _or(clauses: list[Dsl]) -> Dsl:
    return clauses[0] if len(clauses) == 1 else {"bool": {"should": clauses, "minimum_should_match": 1}}


def _any_of(nodes: tuple[Node, ...], parts: _Parts) -> Dsl:
    """OR of the wanted clauses, AND NOT the excluded ones (core.query.either)."""
    if len(nodes) == 1:
        return translate(nodes[0], parts)
    wanted, excluded = either(nodes)
    if not excluded:
        return _or([translate(child, parts) for child in wanted])
    query: Dsl = {"bool": {"must_not": [translate(child, "phrase") for child in excluded]}}
    if wanted:
        query["bool"]["should"] = [translate(child, parts) for child in wanted]
        query["bool"]["minimum_should_match"] = 1
    else:
        query["bool"]["must"] = [MATCH_ALL]
    return query
