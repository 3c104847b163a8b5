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
from whoosh.fields import COLUMN, ID, STORED, TEXT, Schema
from whoosh.support.charset import accent_map

# Fields a free-text query searches, and how much a match in each counts.
SEARCH_FIELDS = ("title", "abstract")
FIELD_BOOSTS = {"title": 2.0, "abstract": 1.0}

# Facet name → the column holding each paper's exact values (a JSON list, so any
# character, commas included, can be part of a value).
FACET_COLUMNS = {"year": "facet_year", "subject": "facet_subject", "author": "facet_author"}

# Column holding each paper's position oldest-first (ties by id). Newest-first is the
# document order itself (see indexing.write_index).
OLDEST_RANK = "oldest_rank"

SCHEMA_VERSION = 3


def text_analyzer() -> Analyzer:
    """Words, lowercased, accents folded, stop words dropped, Porter-stemmed."""
    return RegexTokenizer() | LowercaseFilter() | CharsetFilter(accent_map) | StopFilter() | StemFilter()


def name_analyzer() -> Analyzer:
    """Name parts, case- and accent-folded but not stemmed ("Müller" finds "muller")."""
    return RegexTokenizer() | LowercaseFilter() | CharsetFilter(accent_map)


def build_schema() -> Schema:
    return Schema(
        id=ID(stored=True, unique=True),
        title=TEXT(analyzer=text_analyzer(), stored=True, phrase=True),
        abstract=TEXT(analyzer=text_analyzer(), stored=True, phrase=True),
        author=TEXT(analyzer=name_analyzer(), phrase=True),
        year=STORED(),
        subjects=STORED(),
        authors=STORED(),
        facet_year=COLUMN(VarBytesColumn()),
        facet_subject=COLUMN(VarBytesColumn()),
        facet_author=COLUMN(VarBytesColumn()),
        oldest_rank=COLUMN(NumericColumn("I")),
    )
