"""Facet counting: searchsvc's per-generation arrays against Whoosh's own grouped facets.

Indexes the same records twice, with `searchsvc rebuild` and as a bare Whoosh index whose
year, subject and author facets are indexed `ID` fields, then runs the same queries through
`WhooshBackend.search` (ranking, highlights and three multi-select facets) and through bare
Whoosh `search(..., groupedby=FieldFacet(..., allow_overlap=True))` for the three facets.
The two sides run alternately in one process, so machine load affects both alike.

    python bench/facets.py [--records N] [--queries N] [--out bench/results/facets.json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from whoosh import index, qparser, sorting
from whoosh.fields import ID, TEXT, Schema
from whoosh.query import Every

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.backends.whoosh.generation_cache import OpenGeneration
from searchsvc.backends.whoosh.schema import text_analyzer
from searchsvc.core.model import SearchRequest
from searchsvc.operations.rebuild import rebuild
from searchsvc.settings import load_settings

ACL = Path(__file__).resolve().parents[2] / "shared" / "data" / "acl-anthology-2016" / "corpus.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ACL)
    parser.add_argument("--records", type=int, default=0, help="first N records only (0: all)")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as work:
        corpus = _slice(args.corpus, args.records, Path(work) / "corpus.jsonl")
        backend = WhooshBackend(
            load_settings({"index_dir": Path(work) / "searchsvc", "semantic_ranking": False}, environ={})
        )
        records = rebuild(backend, [corpus]).papers
        bare = _bare_index(corpus, Path(work) / "bare")
        queries = _queries(corpus, args.queries)

        started = time.perf_counter()
        OpenGeneration(backend.store.hold_current(), backend.vector_store)
        open_seconds = time.perf_counter() - started

        searchsvc_ms: list[float] = []
        whoosh_ms: list[float] = []
        with bare.searcher() as searcher:
            text_parser = qparser.MultifieldParser(["title", "abstract"], bare.schema, group=qparser.OrGroup)
            for _ in range(args.reps):
                for q in queries:
                    searchsvc_ms.append(_time(backend.search, SearchRequest(q=q)))
                    whoosh_ms.append(_time(_grouped, searcher, text_parser, q))

    result = {
        "corpus": str(args.corpus),
        "records": records,
        "queries": len(queries),
        "reps": args.reps,
        "open_generation_s": round(open_seconds, 3),
        "searchsvc_search_ms": _summary(searchsvc_ms),
        "whoosh_grouped_facets_ms": _summary(whoosh_ms),
    }
    result["ratio_median"] = round(
        result["searchsvc_search_ms"]["median"] / result["whoosh_grouped_facets_ms"]["median"], 3
    )
    print(_table(result))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


def _slice(corpus: Path, records: int, target: Path) -> Path:
    if not records:
        return corpus
    with corpus.open(encoding="utf-8") as source, target.open("w", encoding="utf-8") as sink:
        for line, _ in zip(source, range(records), strict=False):
            sink.write(line)
    return target


def _bare_index(corpus: Path, directory: Path) -> index.Index:
    """The facets as Whoosh would index them for its own grouping: one ID term per value."""
    directory.mkdir()
    schema = Schema(
        id=ID(stored=True, unique=True),
        title=TEXT(analyzer=text_analyzer(), stored=True),
        abstract=TEXT(analyzer=text_analyzer(), stored=True),
        year=ID(stored=True),
        subject=ID(stored=True),
        author=ID(stored=True),
    )
    ix = index.create_in(str(directory), schema)
    with ix.writer(limitmb=256) as writer, corpus.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            writer.add_document(
                id=record["id"],
                title=record["title"],
                abstract=record.get("abstract") or "",
                year=[str(record["year"])] if record.get("year") else [],
                subject=record.get("categories") or [],
                author=record.get("authors") or [],
            )
    return ix


def _grouped(searcher: Any, parser: qparser.QueryParser, q: str) -> None:
    query = parser.parse(q) if q else Every()
    facets = {name: sorting.FieldFacet(name, allow_overlap=True) for name in ("year", "subject", "author")}
    results = searcher.search(query, groupedby=facets, limit=10)
    for name in facets:
        results.groups(name)


def _queries(corpus: Path, count: int) -> list[str]:
    """Two-word slices of random titles, plus the empty query (browse everything)."""
    rng = random.Random(20161130)
    with corpus.open(encoding="utf-8") as lines:
        titles = [json.loads(line)["title"] for line in lines]
    queries = [""]
    while len(queries) < count:
        words = [w for w in rng.choice(titles).lower().split() if w.isalpha()]
        if len(words) >= 2:
            start = rng.randrange(len(words) - 1)
            queries.append(" ".join(words[start : start + 2]))
    return queries


def _time(action: Callable[..., object], *args: Any) -> float:
    started = time.perf_counter()
    action(*args)
    return (time.perf_counter() - started) * 1000


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median": round(statistics.median(ordered), 1),
        "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 1),
        "max": round(ordered[-1], 1),
    }


def _table(result: dict[str, Any]) -> str:
    rows = [
        "| | median ms | p95 ms | max ms |",
        "|---|---|---|---|",
        "| searchsvc search: ranking, highlights, 3 multi-select facets | {median} | {p95} | {max} |".format(
            **result["searchsvc_search_ms"]
        ),
        "| bare Whoosh: top 10 + `groupedby` 3 facets, `allow_overlap=True` | {median} | {p95} | {max} |".format(
            **result["whoosh_grouped_facets_ms"]
        ),
    ]
    return (
        f"{result['queries']} queries x {result['reps']} on {result['corpus']}; "
        f"opening a searchsvc generation: {result['open_generation_s']} s; "
        f"median ratio searchsvc / bare Whoosh: {result['ratio_median']}\n\n" + "\n".join(rows)
    )


if __name__ == "__main__":
    sys.exit(main())
