"""The Whoosh schema: analysed text for ranking, exact terms for facets, columns for sorting."""

from __future__ import annotations

from whoosh.analysis import (
    Analyzer,
    CharsetFilter,
    LowercaseFilter,
    RegexTokenizer,
    StemFilter,
    StopFilter,
)
from whoosh.columns import NumericColumn, VarBytesColumn
from whoosh.fields import COLUMN, ID, NUMERIC, STORED, TEXT, Schema
from whoosh.support.charset import accent_map

# Fields a free-text query searches, and how much a match in each counts.
SEARCH_FIELDS = ("title", "abstract")
FIELD_BOOSTS = {"title": 2.0, "abstract": 1.0}
# The same text unstemmed, for exact phrases, wildcards and spelling suggestions.
EXACT_FIELDS = {"title": "title_exact", "abstract": "abstract_exact"}

# Facet name → the column holding each paper's exact values (a JSON list, so any
# character, commas included, can be part of a value).
FACET_COLUMNS = {"year": "facet_year", "subject": "facet_subject", "author": "facet_author"}

# Column holding each paper's position oldest-first (ties by id). Newest-first is the
# document order itself (see indexing.write_index).
OLDEST_RANK = "oldest_rank"

SCHEMA_VERSION = 4


def text_analyzer() -> Analyzer:
    """Words, lowercased, accents folded, stop words dropped, Porter-stemmed."""
    return RegexTokenizer() | LowercaseFilter() | CharsetFilter(accent_map) | StopFilter() | StemFilter()


def unstemmed_analyzer() -> Analyzer:
    """Words case- and accent-folded but kept whole: exact phrases, names ("Müller" finds "muller")."""
    return RegexTokenizer() | LowercaseFilter() | CharsetFilter(accent_map)


def value_analyzer() -> Analyzer:
    """Each line one whole case- and accent-folded value: a subject such as "cs.LG"."""
    return RegexTokenizer(r"[^\s](?:[^\n]*[^\s])?") | LowercaseFilter() | CharsetFilter(accent_map)


def build_schema() -> Schema:
    return Schema(
        id=ID(stored=True, unique=True),
        title=TEXT(analyzer=text_analyzer(), stored=True, phrase=True),
        abstract=TEXT(analyzer=text_analyzer(), stored=True, phrase=True),
        title_exact=TEXT(analyzer=unstemmed_analyzer(), phrase=True),
        abstract_exact=TEXT(analyzer=unstemmed_analyzer(), phrase=True),
        author=TEXT(analyzer=unstemmed_analyzer(), phrase=True),
        subject=TEXT(analyzer=value_analyzer(), phrase=False),
        year=NUMERIC(int, bits=32, stored=True, signed=False),
        subjects=STORED(),
        authors=STORED(),
        facet_year=COLUMN(VarBytesColumn()),
        facet_subject=COLUMN(VarBytesColumn()),
        facet_author=COLUMN(VarBytesColumn()),
        oldest_rank=COLUMN(NumericColumn("I")),
    )
