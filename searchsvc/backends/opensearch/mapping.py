"""The index settings and mapping: analyzers that read text as the Whoosh schema does.

Same words (analysis.WORD_PATTERN), same folding (Lucene's `lowercase` and `asciifolding`, which
the Whoosh schema applies as analysis.folded), same stop words and Snowball English stemmer for
ranked text, and unstemmed `.exact` subfields for phrases and wildcards, so a query means the
same on both backends.
Facet values are keywords as written (for display and counts) with a folded twin for
case- and accent-insensitive filters. Each paper carries its vector for ranking by meaning
(`vectors.py`): in `_source`, which the service reads, and as doc values, which the cluster's
scan for the papers nearest a query reads (`nearest.py`).
"""

from __future__ import annotations

from typing import Any

from searchsvc.backends.analysis import (
    ACRONYM_PLURAL,
    ACRONYM_SINGULAR,
    FIELD_B,
    K1,
    MIN_WORD_CHARS,
    SEARCH_FIELDS,
    STOP_WORDS,
    WORD_FLAGS,
    WORD_PATTERN,
)

# 2: `vector` and `content_key`; 3: `identifiers`; 4: `title.length`, `abstract.length`; 5: `publication`,
# `venue`, `first_day`, `last_day`, `citations`; 6: `venue.words`, `singular_acronym`; 7: `added`, `changed`;
# 8: `title` and `abstract` hold their reading (core.tex), `tex` the text as written; 9: `title.counts`,
# `abstract.counts`; 10: `vector` has doc values (nearest.py); 11: `singular_acronym` also of a plural with a "u"
# ("gpus": analysis.ACRONYM_PLURAL)
MAPPING_VERSION = 11
TEXT_FIELDS = SEARCH_FIELDS
# A title match counts 1.5 times an abstract match. Not Whoosh's 4: there the weight scales a
# word's count before BM25F saturates it once; here it scales each field's saturated score,
# which are then summed (querying.TIE_BREAKER). Chosen on SciFact train (docs/scaling.md).
BOOSTS = {"title": 1.5, "abstract": 1.0}
EXACT = "exact"  # subfield of title and abstract: unstemmed words
LENGTH = "length"  # subfield of title and abstract: its count of ranked words (BM25F's lengths)
# Subfield of title and abstract whose score is a word's count in the paper, read from the hits of a
# search with named queries (word_rescoring: BM25F's word counts without re-analysing the papers).
COUNTS = "counts"
COUNTED = "word_count"  # its similarity
# Paper.publication's values indexed again for searching (the publication object itself is not
# indexed): the venue, a facet; the first and last day its date stands for (YYYYMMDD, both absent
# when undated: core.publication.date_bounds), for date ranges; its citation count, for `cited`.
VENUE = "venue"
NAME_WORDS = "words"  # the venue's subfield of unstemmed words, as `authors` is: `venue:` clauses
FIRST_DAY, LAST_DAY = "first_day", "last_day"
CITATIONS = "citations"
ADDED = "added"  # Paper.stored()'s `added` (core.arrival): `sort=added`, `added_since`
FOLDED = "folded"  # subfield of subjects and authors: the value case- and accent-folded
AUTHOR_VALUE = "authors.raw"  # each author's name as written: facet counts and display
VECTOR = "vector"  # base64 of the paper's float16 vector, as the vector store holds it
EMBEDDED = "embedded"  # true once `vector` is there: what counts papers still lacking one
CONTENT_KEY = "content_key"  # hex of semantic.store.content_key of the paper's text
# Title and abstract index their reading (core.tex); this holds each as written where it differs.
TEX = "tex"
# A merge that expunges deletes rewrites every segment holding one, not only those past 10%:
# an update deletes a few papers per segment, and each deleted copy counts in word statistics.
EXPUNGE_EVERY_DELETE = {"merge.policy.expunge_deletes_allowed": 0}


def index_body(shards: int, meta: dict[str, Any]) -> dict[str, Any]:
    """Settings and mapping of a new index; loaded without replicas or refreshes, see backend.build.
    `meta` holds `mapping_version`, which searches check."""
    return {
        "settings": {
            "index": {
                "number_of_shards": shards,
                "number_of_replicas": 0,
                "refresh_interval": "-1",
                **EXPUNGE_EVERY_DELETE,
            },
            "analysis": {
                "tokenizer": {
                    "words": {
                        "type": "pattern",
                        "pattern": WORD_PATTERN,
                        "group": 0,
                        "flags": WORD_FLAGS,
                    }
                },
                "filter": {
                    "whoosh_stop": {"type": "stop", "stopwords": sorted(STOP_WORDS)},
                    "at_least_two": {"type": "length", "min": MIN_WORD_CHARS},
                    "english_snowball": {"type": "snowball", "language": "English"},
                    # analysis.ACRONYM_PLURAL: "llms" → "llm" before Snowball, as on Whoosh.
                    "singular_acronym": {
                        "type": "pattern_replace",
                        "pattern": ACRONYM_PLURAL,
                        "replacement": ACRONYM_SINGULAR,
                    },
                },
                "analyzer": {
                    "ranked": {
                        "type": "custom",
                        "tokenizer": "words",
                        "filter": [
                            *("lowercase", "asciifolding", "whoosh_stop", "at_least_two"),
                            *("singular_acronym", "english_snowball"),
                        ],
                    },
                    "unstemmed": {"type": "custom", "tokenizer": "words", "filter": ["lowercase", "asciifolding"]},
                },
                "normalizer": {"folded": {"type": "custom", "filter": ["lowercase", "asciifolding"]}},
            },
            # The Whoosh backend's BM25 saturation and per-field length normalisation.
            "similarity": {
                **{f"bm25_{field}": {"type": "BM25", "k1": K1, "b": FIELD_B[field]} for field in TEXT_FIELDS},
                COUNTED: {"type": "scripted", "script": {"source": "return doc.freq;"}},
            },
        },
        "mappings": {
            "dynamic": "strict",
            "_meta": meta,
            "properties": {
                "id": {"type": "keyword"},
                **{field: _ranked_text(field) for field in TEXT_FIELDS},
                "authors": {
                    "type": "text",
                    "analyzer": "unstemmed",
                    "fields": {"raw": {"type": "keyword"}, FOLDED: {"type": "keyword", "normalizer": "folded"}},
                },
                "subjects": {"type": "keyword", "fields": {FOLDED: {"type": "keyword", "normalizer": "folded"}}},
                # The publication's venue again, as a facet: the venue filter and its counts.
                VENUE: {
                    "type": "keyword",
                    "fields": {
                        FOLDED: {"type": "keyword", "normalizer": "folded"},
                        NAME_WORDS: {"type": "text", "analyzer": "unstemmed"},
                    },
                },
                FIRST_DAY: {"type": "integer"},
                LAST_DAY: {"type": "integer"},
                CITATIONS: {"type": "integer"},
                "year": {"type": "integer"},
                ADDED: {"type": "date", "format": "date_time_no_millis"},
                "changed": {"type": "keyword", "index": False, "doc_values": False},  # shown, never searched
                # Paper.stored()'s arXiv id, DOI and URL: kept in _source for links, never searched.
                "identifiers": {"type": "object", "enabled": False},
                # Paper.stored()'s venue, date, citations and ORCID iDs: shown and exported.
                "publication": {"type": "object", "enabled": False},
                # Title and abstract as the source wrote them, where their reading differs (texts.py).
                TEX: {"type": "object", "enabled": False},
                # Read from _source for ranking, and from its doc values (768 bytes a paper) by the
                # scan for papers nearest in meaning (nearest.py). `exists` cannot see a binary
                # field, so a boolean beside it says which papers have one.
                VECTOR: {"type": "binary", "doc_values": True},
                EMBEDDED: {"type": "boolean"},
                CONTENT_KEY: {"type": "keyword", "index": False, "doc_values": False},
            },
        },
    }


def _ranked_text(field: str) -> dict[str, Any]:
    exact = {"type": "text", "analyzer": "unstemmed", "similarity": f"bm25_{field}"}
    # Counts the words the ranked analyzer keeps, not the stop words it drops (position increments).
    length = {"type": "token_count", "analyzer": "ranked", "enable_position_increments": False}
    counts = {"type": "text", "analyzer": "ranked", "index_options": "freqs", "norms": False, "similarity": COUNTED}
    return {
        "type": "text",
        "analyzer": "ranked",
        "similarity": f"bm25_{field}",
        "fields": {EXACT: exact, LENGTH: length, COUNTS: counts},
    }
