"""tantivy (Rust, through tantivy-py), the speed-of-light reference: the same fields and queries.

    python -m bench.tantivy_ref CORPUS.jsonl INDEX_DIR

Stemmed (`en_stem`) title and abstract, their unstemmed twins, author and subject text, the
year as an indexed fast integer, and subjects and authors as raw fast fields for the facet
aggregations; title, abstract, year, subjects and authors stored. The writer uses tantivy's
defaults (a thread per core).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import tantivy

from bench.mix import MixQuery

FACET_LIMIT = 10


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("title", stored=True, tokenizer_name="en_stem")
    builder.add_text_field("abstract", stored=True, tokenizer_name="en_stem")
    builder.add_text_field("title_exact", tokenizer_name="default")
    builder.add_text_field("abstract_exact", tokenizer_name="default")
    builder.add_text_field("author", tokenizer_name="default")
    builder.add_text_field("subject", tokenizer_name="default")
    builder.add_integer_field("year", stored=True, indexed=True, fast=True)
    builder.add_text_field("subjects", stored=True, fast=True, tokenizer_name="raw")
    builder.add_text_field("authors", stored=True, fast=True, tokenizer_name="raw")
    return builder.build()


def build(corpus: Path, directory: Path) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    ix = tantivy.Index(_schema(), path=str(directory))
    writer = ix.writer()
    with corpus.open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            record = json.loads(line)
            fields: dict[str, Any] = {
                "id": record["id"],
                "title": record["title"],
                "abstract": record.get("abstract") or "",
                "title_exact": record["title"],
                "abstract_exact": record.get("abstract") or "",
                "author": " ; ".join(record.get("authors") or []),
                "subject": "\n".join(record.get("categories") or []),
                "subjects": record.get("categories") or [],
                "authors": record.get("authors") or [],
            }
            if record.get("year") is not None:
                fields["year"] = record["year"]
            writer.add_document(tantivy.Document(**fields))
    writer.commit()
    writer.wait_merging_threads()
    ix.reload()
    return ix.searcher().num_docs


class TantivySearcher:
    def __init__(self, directory: Path) -> None:
        self.ix = tantivy.Index.open(str(directory))
        self.ix.reload()
        self.schema = self.ix.schema
        self.searcher = self.ix.searcher()

    def search(self, mix: MixQuery) -> dict[str, Any]:
        if mix.q:
            parsed, _errors = self.ix.parse_query_lenient(
                mix.q, default_field_names=["title", "abstract"], field_boosts={"title": 4.0}
            )
        else:
            parsed = tantivy.Query.all_query()
        narrowing = self._filters(mix)
        if narrowing:
            parsed = tantivy.Query.boolean_query(
                [(tantivy.Occur.Must, parsed), *((tantivy.Occur.Must, clause) for clause in narrowing)]
            )
        result = self.searcher.search(parsed, limit=10, count=True)
        ids = [self.searcher.doc(address)["id"][0] for _score, address in result.hits]
        facets = self.searcher.aggregate(
            parsed,
            {
                "year": {"terms": {"field": "year", "size": 200}},
                "subject": {"terms": {"field": "subjects", "size": FACET_LIMIT}},
                "author": {"terms": {"field": "authors", "size": FACET_LIMIT}},
            },
        )
        return {"total": result.count, "ids": ids, "facets": facets}

    def _filters(self, mix: MixQuery) -> list[Any]:
        clauses = []
        if mix.year_from is not None or mix.year_to is not None:
            clauses.append(
                tantivy.Query.range_query(
                    self.schema, "year", tantivy.FieldType.Integer, mix.year_from or 0, mix.year_to or 9999
                )
            )
        clauses += [tantivy.Query.term_query(self.schema, "subjects", value) for value in mix.subject]
        clauses += [tantivy.Query.term_query(self.schema, "authors", value) for value in mix.author]
        return clauses


if __name__ == "__main__":
    print(build(Path(sys.argv[1]), Path(sys.argv[2])))
