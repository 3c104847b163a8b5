"""The Whoosh schema: analysed text for ranking, exact terms for facets, columns for sorting."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import Stemmer
from whoosh.analysis import Analyzer, Filter, RegexTokenizer, Token
from whoosh.columns import VarBytesColumn
from whoosh.fields import COLUMN, ID, NUMERIC, STORED, TEXT, Schema

from searchsvc.backends.analysis import (
    WORD_PATTERN,
    folded,
    ranked,
    singular_acronym,
    word_pattern,
)

# The same text unstemmed, for exact phrases, wildcards and spelling suggestions.
EXACT_FIELDS = {"title": "title_exact", "abstract": "abstract_exact"}
# Each unstemmed field's adjacent word pairs, as one term each ("machine translation"): a phrase's
# papers are those holding its pairs (whoosh/phrases.py), found without reading positions.
PAIR_FIELDS = {"title_exact": "title_pairs", "abstract_exact": "abstract_pairs"}
PAIR_SEPARATOR = " "  # never inside a word: the tokenizer splits at spaces
# A segment holds the pair of two adjacent words only where each of them is in more than PAIRED_ABOVE
# of its papers (the unstemmed field's document frequency there): a phrase with a rarer word is found
# from that word's few positions (phrases.py). Most pairs hold a rare word and are found in one paper,
# and they were most of a rebuild's terms (docs/decisions.md, 2026-12-04). Raising it keeps an index
# correct (it holds more pairs than needed); lowering it needs a rebuild (a new SCHEMA_VERSION).
PAIRED_ABOVE = 128

# Facet name → the column holding each paper's exact values (a JSON list, so any
# character, commas included, can be part of a value). `date`, `citations` and `added` (seconds since
# 1970: core.arrival) are read by the same arrays (facets.py, doc_order.py) for the date filter, the
# `cited` and `added` sorts and `added_since`, and never listed.
FACET_COLUMNS = {
    "year": "facet_year",
    "subject": "facet_subject",
    "author": "facet_author",
    "venue": "facet_venue",
    "date": "facet_date",
    "citations": "facet_citations",
    "added": "facet_added",
}
NUMBER_FACETS = ("year", "citations", "added")  # the columns of whole numbers; the others hold text

# 15: an acronym's plural with a "u" ("GPUs") stemmed as its singular too (analysis.ACRONYM_PLURAL); 14: the words
# and folding of the OpenSearch mapping (analysis.WORD_PATTERN, analysis.folded): "*" ends a word, "œ" folds to "oe",
# "ß" to "ss", combining marks stay in words; 13: title and abstract index their reading (core.tex: TeX as its
# words); 12: stored `added` and `changed` (core.arrival), the `added` column; 11: `venue` words for `venue:`
# clauses, an acronym's plural stemmed as its singular; 10: stored `publication` (venue, date, citations, ORCID iDs),
# the venue facet, date and citation columns; 9: word pairs of the unstemmed fields (PAIR_FIELDS); 8: ids in a column
# (doc_order.py), no oldest-rank column; 7: stored `identifiers`
SCHEMA_VERSION = 15


class _Words:
    """analysis.WORD_PATTERN as RegexTokenizer reads its expression (`finditer`, `pattern`), each text's
    matches found by the pattern analysis.word_pattern chooses for it."""

    pattern = WORD_PATTERN

    @staticmethod
    def finditer(text: str) -> Iterator[re.Match[str]]:
        return word_pattern(text).finditer(text)


class WordTokenizer(RegexTokenizer):
    """The words both engines read (analysis.WORD_PATTERN). Pickled by name, as Whoosh pickles the schema
    into the index: a change to the words is a new SCHEMA_VERSION."""

    def __init__(self) -> None:
        super().__init__(_Words())

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self)


class FoldFilter(Filter):
    """Lowercase and ASCII folding as Lucene's filters do it (analysis.folded): "Œuvre" → "oeuvre"."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FoldFilter)

    def __hash__(self) -> int:
        return hash(type(self))

    def __call__(self, tokens: Iterator[Token]) -> Iterator[Token]:
        for token in tokens:
            token.text = folded(token.text)
            yield token


class RankedFilter(Filter):
    """Drops the words ranked text does not keep (analysis.ranked), renumbering the others as Whoosh's
    StopFilter does: the first kept word keeps its position, the next ones follow it."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RankedFilter)

    def __hash__(self) -> int:
        return hash(type(self))

    def __call__(self, tokens: Iterator[Token]) -> Iterator[Token]:
        position = None
        for token in tokens:
            if ranked(token.text):
                if token.positions:
                    if position is None:
                        position = token.pos
                    else:
                        position += 1
                        token.pos = position
                token.stopped = False
                yield token
            elif not token.removestops:  # asked to keep stop words, marked as such
                token.stopped = True
                yield token


class SnowballStemFilter(Filter):
    """English Snowball ("Porter2") stemming through PyStemmer, the maintained C implementation.

    Whoosh's own StemFilter is the original Porter algorithm; its pure-Python Snowball port
    is an older version of the algorithm ("added" → "ad"). The stemmer object cannot be
    pickled, and Whoosh pickles the schema into the index, so only the language is kept.
    """

    def __init__(self, language: str = "english") -> None:
        self.language = language
        self._stemmer = Stemmer.Stemmer(language)

    def __getstate__(self) -> dict[str, Any]:
        return {"language": self.language}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state["language"])  # self.__init__, which mypy refuses on an instance

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SnowballStemFilter) and other.language == self.language

    def __hash__(self) -> int:
        return hash((type(self), self.language))

    def __call__(self, tokens: Iterator[Token]) -> Iterator[Token]:
        stem = self._stemmer.stemWord
        for token in tokens:
            if not token.stopped:
                token.text = stem(singular_acronym(token.text))
            yield token


_STEMMER = SnowballStemFilter()


def stem(word: str) -> str:
    """`word` (lowercased, accent-folded) as the text analyzer stems it (an acronym's plural "s"
    dropped first: analysis.ACRONYM_PLURAL)."""
    return _STEMMER._stemmer.stemWord(singular_acronym(word))


def text_analyzer() -> Analyzer:
    """Words, lowercased and folded to ASCII, stop words dropped, Snowball-stemmed."""
    return WordTokenizer() | FoldFilter() | RankedFilter() | SnowballStemFilter()


def unstemmed_analyzer() -> Analyzer:
    """Words case- and accent-folded but kept whole: exact phrases, names ("Müller" finds "muller")."""
    return WordTokenizer() | FoldFilter()


class WordPairs(Filter):
    """Each two adjacent words as one token, joined by PAIR_SEPARATOR. Whoosh's BiWordFilter does
    the same but fails on a field without words (an empty abstract) and keeps a lone word."""

    def __call__(self, tokens: Iterator[Token]) -> Iterator[Token]:
        previous = None
        for token in tokens:
            text = token.text
            if previous is not None:
                token.text = previous + PAIR_SEPARATOR + text
                yield token
            previous = text


def pair_analyzer() -> Analyzer:
    """The unstemmed words' adjacent pairs: a phrase's papers without reading positions."""
    return unstemmed_analyzer() | WordPairs()


def value_analyzer() -> Analyzer:
    """Each line one whole case- and accent-folded value: a subject such as "cs.LG"."""
    return RegexTokenizer(r"[^\s](?:[^\n]*[^\s])?") | FoldFilter()


def build_schema() -> Schema:
    return Schema(
        id=ID(stored=True, unique=True, sortable=True),  # its column orders ties (doc_order.py)
        title=TEXT(analyzer=text_analyzer(), stored=True, phrase=True),
        abstract=TEXT(analyzer=text_analyzer(), stored=True, phrase=True),
        title_exact=TEXT(analyzer=unstemmed_analyzer(), phrase=True),
        abstract_exact=TEXT(analyzer=unstemmed_analyzer(), phrase=True),
        title_pairs=TEXT(analyzer=pair_analyzer(), phrase=False),
        abstract_pairs=TEXT(analyzer=pair_analyzer(), phrase=False),
        author=TEXT(analyzer=unstemmed_analyzer(), phrase=True),
        venue=TEXT(analyzer=unstemmed_analyzer(), phrase=True),  # `venue:` clauses (the facet is its column)
        subject=TEXT(analyzer=value_analyzer(), phrase=False),
        year=NUMERIC(int, bits=32, stored=True, signed=False),
        subjects=STORED(),
        authors=STORED(),
        identifiers=STORED(),  # Paper.stored(): shown and exported, never searched
        publication=STORED(),  # Paper.stored(): venue, date, citations and ORCID iDs, shown and exported
        added=STORED(),  # Paper.stored(): when it entered this index (core.arrival)
        changed=STORED(),  # Paper.stored(): when it last changed here, a feed entry's `updated`
        facet_year=COLUMN(VarBytesColumn()),
        facet_subject=COLUMN(VarBytesColumn()),
        facet_author=COLUMN(VarBytesColumn()),
        facet_venue=COLUMN(VarBytesColumn()),
        facet_date=COLUMN(VarBytesColumn()),
        facet_citations=COLUMN(VarBytesColumn()),
        facet_added=COLUMN(VarBytesColumn()),
    )
