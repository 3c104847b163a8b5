"""Completions of a query's last word on the cluster, among the papers a query and filters find
(every paper when unnarrowed): author names counted by a terms aggregation; words found in a
sample of the papers holding them (search_bodies.word_completions), then counted over those
papers and fields as the Whoosh vocabulary counts them."""

from __future__ import annotations

from collections.abc import Callable

from searchsvc.backends.analysis import suggestible
from searchsvc.backends.opensearch import search_bodies
from searchsvc.backends.opensearch.asking import AliasSearches
from searchsvc.backends.opensearch.mapping import TEXT_FIELDS
from searchsvc.backends.opensearch.querying import Dsl
from searchsvc.core.suggestions import Suggestion, Typed, combine, most_papers_first
from searchsvc.core.text import has_word_starting


def suggestions(
    searches: AliasSearches, start: Typed, among: Dsl, limit: int, timeout: Callable[[], Dsl]
) -> list[Suggestion]:
    """At most `limit` completions of `start` (core.suggestions.combine): words, then authors,
    counted among the papers `among` matches. `timeout` gives each request what is left of the
    request's budget."""
    authors_body = {**search_bodies.author_completions(start.prefix, limit, among), **timeout()}
    buckets = searches.search(authors_body)["aggregations"]["authors"]["buckets"]
    names = [(bucket["shown"]["buckets"][0]["key"], bucket["doc_count"]) for bucket in buckets]
    authors = [(name, papers) for name, papers in names if has_word_starting(name, start.prefix)]
    words = _completed_words(searches, start.prefix, among, timeout)
    return combine(start, most_papers_first(words, limit), most_papers_first(authors, limit), limit)


def _completed_words(
    searches: AliasSearches, prefix: str, among: Dsl, timeout: Callable[[], Dsl]
) -> list[tuple[str, int]]:
    """Words starting with `prefix` found in a sample, each with its papers per field added up."""
    completions = search_bodies.word_completions(prefix, among)
    sample = searches.search({**completions, **timeout()})["aggregations"]["sample"]
    found = sorted({bucket["key"] for field in TEXT_FIELDS for bucket in sample[field]["buckets"]})
    if not found:
        return []
    counted = searches.search({**search_bodies.word_papers(found, among), **timeout()})["aggregations"]["papers"]
    buckets = counted["buckets"]
    papers = {word: sum(buckets[f"{field}:{word}"]["doc_count"] for field in TEXT_FIELDS) for word in found}
    return [(word, count) for word, count in papers.items() if count and suggestible(word)]
