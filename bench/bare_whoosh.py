"""Bare Whoosh, the baseline: title and abstract indexed once each, a default writer, Whoosh's own search API.

Build (a script, so it runs as its own process and its memory is measured alone):

    python -m bench.bare_whoosh CORPUS.jsonl INDEX_DIR

The index is what a developer using Whoosh directly would build for the same searches
(`bare_schema()`): title and abstract each indexed once, stemmed with positions (Whoosh's
own phrases need them) and stored, the authors, subjects and year to filter on, the same
stored fields and facet columns, the same documents in the same newest-first order, written
by one `ix.writer()` with Whoosh's defaults and one commit. What searchsvc indexes beyond
that (each text again unstemmed, its word pairs) is its own cost, and so is what it adds
around Whoosh (reading and merging records, generations, the check): issue #35 judges the
rebuild against this build.

Search (`BareSearcher`): what a developer using Whoosh directly, knowing its pitfalls
(docs/decisions.md), would write for the same request: `MultifieldParser` over title
(boost 4) and abstract with `OrGroup`, Whoosh's default BM25F, the filters as a `filter=`
query, the top 10 with their stored fields, the match count, and the three facets counted
over the full match set from the facet columns, read once when the index is opened
(`groupedby` with `allow_overlap=True` is ~40x slower, bench/facets.py).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from itertools import chain
from pathlib import Path
from typing import Any

from whoosh import index, qparser, query
from whoosh.fields import Schema
from whoosh.searching import Searcher

from bench.mix import MixQuery
from searchsvc.backends.whoosh.schema import EXACT_FIELDS, FACET_COLUMNS, PAIR_FIELDS, build_schema, unstemmed_analyzer
from searchsvc.core.text import fold

FACET_LIMIT = 10


def build(corpus: Path, directory: Path) -> int:
    """Index `corpus` into `directory` with one default writer; return the number of documents."""
    with corpus.open(encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    newest = sorted(records, key=lambda r: (r.get("year") is None, -(r.get("year") or 0), r["id"]))
    directory.mkdir(parents=True, exist_ok=True)
    ix = index.create_in(str(directory), bare_schema())
    writer = ix.writer()
    for record in newest:
        title = " ".join(record["title"].split())
        abstract = " ".join((record.get("abstract") or "").split())
        subjects = record.get("categories") or []
        authors = record.get("authors") or []
        year = record.get("year")
        writer.add_document(
            id=record["id"],
            title=title,
            abstract=abstract,
            author=" ; ".join(authors),
            subject="\n".join(subjects),
            year=year,
            subjects=subjects,
            authors=authors,
            facet_year=_column([] if year is None else [year]),
            facet_subject=_column(subjects),
            facet_author=_column(authors),
        )
    writer.commit()
    count = ix.doc_count()
    ix.close()
    return count


def bare_schema() -> Schema:
    """searchsvc's schema without its second and third indexing of title and abstract."""
    schema = build_schema()
    for name in (*EXACT_FIELDS.values(), *PAIR_FIELDS.values()):
        schema.remove(name)
    return schema


def _column(values: list[Any]) -> bytes:
    return json.dumps(values, ensure_ascii=False).encode("utf-8")


class BareSearcher:
    """Whoosh's own search API over an index with searchsvc's schema."""

    def __init__(self, directory: Path) -> None:
        self.ix = index.open_dir(str(directory))
        self.searcher: Searcher = self.ix.searcher()
        self.parser = qparser.MultifieldParser(
            ["title", "abstract"], self.ix.schema, fieldboosts={"title": 4.0}, group=qparser.OrGroup
        )
        reader = self.searcher.reader()
        self.facets = {
            name: [tuple(json.loads(raw)) for raw in reader.column_reader(column)]
            for name, column in FACET_COLUMNS.items()
        }
        self._author_words = unstemmed_analyzer()

    def search(self, mix: MixQuery) -> dict[str, Any]:
        q = self.parser.parse(mix.q) if mix.q else query.Every()
        narrowing = self._filter(mix)
        results = self.searcher.search(q, limit=10, filter=narrowing)
        hits = [hit.fields() for hit in results]
        matched = set(self.searcher.docs_for_query(q))
        if narrowing is not None:
            matched &= set(self.searcher.docs_for_query(narrowing))
        facets = {}
        for name, of_doc in self.facets.items():
            counts = Counter(chain.from_iterable(map(of_doc.__getitem__, matched)))
            facets[name] = sorted(counts.items(), reverse=True) if name == "year" else counts.most_common(FACET_LIMIT)
        return {"total": len(matched), "ids": [hit["id"] for hit in hits], "facets": facets}

    def _filter(self, mix: MixQuery) -> query.Query | None:
        clauses: list[query.Query] = []
        if mix.year_from is not None or mix.year_to is not None:
            clauses.append(query.NumericRange("year", mix.year_from, mix.year_to))
        clauses += [query.Term("subject", fold(subject)) for subject in mix.subject]
        for author in mix.author:
            words = [token.text for token in self._author_words(author)]
            clauses.append(query.Phrase("author", words) if len(words) > 1 else query.Term("author", words[0]))
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else query.And(clauses)

    def close(self) -> None:
        self.searcher.close()
        self.ix.close()


if __name__ == "__main__":
    print(build(Path(sys.argv[1]), Path(sys.argv[2])))
