"""Completions of a query's last word on the cluster, among the papers a query and filters find
(every paper when unnarrowed): author names counted by a terms aggregation; words found in
samples of the papers holding them (search_bodies.word_completions), each round sampling only
papers with a word no earlier round found, until none is left, then counted over those papers
and fields as the Whoosh vocabulary counts them. So every word the narrowed papers hold is a
candidate, one held by a single paper too, as on Whoosh, within bounds named in search_bodies
(rounds, words counted, the length of a regular expression) and the request's budget."""

from __future__ import annotations

from collections.abc import Callable

from searchsvc.backends.analysis import folded, suggestible
from searchsvc.backends.opensearch import search_bodies
from searchsvc.backends.opensearch.asking import AliasSearches
from searchsvc.backends.opensearch.mapping import TEXT_FIELDS
from searchsvc.backends.opensearch.querying import Dsl
from searchsvc.core.suggestions import Suggestion, Typed, combine, most_papers_first
from searchsvc.core.text import has_word_starting


def suggestions(
    searches: AliasSearches,
    start: Typed,
    among: Dsl,
    limit: int,
    timeout: Callable[[], Dsl],
    check: Callable[[], None],
) -> list[Suggestion]:
    """At most `limit` completions of `start` (core.suggestions.combine): words, then authors,
    counted among the papers `among` matches. `timeout` gives each request what is left of the
    request's budget; `check` raises once it is spent."""
    authors_body = {**search_bodies.author_completions(start.prefix, limit, among), **timeout()}
    buckets = searches.search(authors_body, scored=False)["aggregations"]["authors"]["buckets"]
    names = [(bucket["shown"]["buckets"][0]["key"], bucket["doc_count"]) for bucket in buckets]
    authors = [(name, papers) for name, papers in names if has_word_starting(name, start.prefix)]
    words = _completed_words(searches, folded(start.written), among, timeout, check)
    return combine(start, most_papers_first(words, limit), most_papers_first(authors, limit), limit)


def _completed_words(
    searches: AliasSearches, prefix: str, among: Dsl, timeout: Callable[[], Dsl], check: Callable[[], None]
) -> list[tuple[str, int]]:
    """Words starting with `prefix` that papers of `among` hold, each with its papers per field added up."""
    found = _found_words(searches, prefix, among, timeout, check)
    if not found:
        return []
    check()
    counted = searches.search({**search_bodies.word_papers(found, among), **timeout()}, scored=False)
    buckets = counted["aggregations"]["papers"]["buckets"]
    papers = {word: sum(buckets[f"{field}:{word}"]["doc_count"] for field in TEXT_FIELDS) for word in found}
    return [(word, count) for word, count in papers.items() if count and suggestible(word)]


def _found_words(
    searches: AliasSearches, prefix: str, among: Dsl, timeout: Callable[[], Dsl], check: Callable[[], None]
) -> list[str]:
    """The words starting with `prefix` in samples of the papers of `among` holding one, a round at
    a time until no paper holds a word not found yet, or a bound (search_bodies) is reached."""
    found: set[str] = set()
    for _ in range(search_bodies.WORD_ROUNDS):
        size = (search_bodies.COUNTED_WORDS - len(found)) // len(TEXT_FIELDS)  # room left, per field
        body = search_bodies.word_completions(prefix, among, sorted(found), size) if size else None
        if body is None:
            break
        check()
        answer = searches.search({**body, **timeout()}, scored=False)
        sample = answer["aggregations"]["sample"]
        listed = [[bucket["key"] for bucket in sample[field]["buckets"]] for field in TEXT_FIELDS]
        new = {word for words in listed for word in words} - found
        found |= new
        whole = answer["hits"]["total"]["value"] == sample["doc_count"] and all(len(w) < size for w in listed)
        if whole or not new:  # every paper with a word not found before was read, and all its words listed
            break
    return sorted(found)
