"""The keys of the JSON documents the API and `searchsvc search --json` return, in order: pinned by
the tests of both, so a field added or dropped is a decision the tests name."""

from __future__ import annotations

SEARCH_RESULT_KEYS = (
    "query",
    "total",
    "page",
    "per_page",
    "pages",
    "took_ms",
    "results",
    "facets",
    "suggestion",
    "identifier",
    "typos",
    "also_searched",
)
HIT_KEYS = (
    "id",
    "title",
    "abstract",
    "year",
    "date",
    "venue",
    "citations",
    "subjects",
    "authors",
    "orcids",
    "identifiers",
    "added",
    "changed",
    "score",
    "highlights",
    "matched",
    "explanation",
)
