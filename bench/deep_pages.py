"""Deep pages on OpenSearch: what ranking them as Whoosh does costs (issue #34, item 2).

A built OpenSearch index (`SEARCHSVC_BACKEND=opensearch searchsvc rebuild ...`) is searched in
process through the search recipe, ranked by words alone, for pages at growing depth of a few
queries of plain words, once with each `rescore_limit` given (each page decided by a rescored
pool of 3 × its last place up to the limit; past it, the page's own papers scored by BM25F).
The limits take turns page by page; each page's median of `--rounds` and the load average.

    python -m bench deep_pages --index-dir DIR --limits 300,1500,3000 [--rounds 5] [--out bench/results/deep-pages.json]

(the cluster and index are the settings' own: SEARCHSVC_OPENSEARCH_URL, SEARCHSVC_OPENSEARCH_INDEX).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from bench.measure import machine, report, table
from searchsvc.backends import open_backend
from searchsvc.core.model import SearchRequest
from searchsvc.operations.search import search
from searchsvc.settings import load_settings

QUERIES = ("language model", "neural machine translation")
PAGES = ((1, 10), (31, 10), (50, 10), (100, 10), (2, 100), (10, 100))  # (page, per_page)


def run(index_dir: Path, limits: list[int], rounds: int) -> dict[str, Any]:
    measured_on = machine()
    backends = {
        limit: open_backend(
            load_settings(
                {"index_dir": index_dir, "rescore_limit": limit, "semantic_ranking": False},
            )
        )
        for limit in limits
    }
    rows = []
    for query in QUERIES:
        for backend in backends.values():
            search(backend, SearchRequest(q=query))  # the word statistics and the caches, once
        samples: dict[tuple[int, int, int], list[float]] = {}
        for _ in range(rounds):
            for page, per_page in PAGES:
                for limit, backend in backends.items():
                    started = time.perf_counter()
                    found = search(backend, SearchRequest(q=query, page=page, per_page=per_page))
                    samples.setdefault((page, per_page, limit), []).append((time.perf_counter() - started) * 1000)
        for (page, per_page, limit), values in samples.items():
            rows.append(
                {
                    "query": query,
                    "total": found.total,
                    "places": f"{(page - 1) * per_page + 1}–{page * per_page}",
                    "rescore_limit": limit,
                    "median_ms": round(statistics.median(values), 1),
                }
            )
    return {"machine": measured_on, "index_dir": str(index_dir), "rounds": rounds, "rows": rows}


def markdown(result: dict[str, Any]) -> str:
    limits = sorted({row["rescore_limit"] for row in result["rows"]})
    by_place: dict[tuple[str, str], dict[int, float]] = {}
    totals = {}
    for row in result["rows"]:
        by_place.setdefault((row["query"], row["places"]), {})[row["rescore_limit"]] = row["median_ms"]
        totals[row["query"]] = row["total"]
    rows = [
        [f"{query} ({totals[query]:,} found)", places, *(found[limit] for limit in limits)]
        for (query, places), found in by_place.items()
    ]
    return (
        f"Deep pages on OpenSearch, in process, ranked by words (`python -m bench deep_pages`), median of "
        f"{result['rounds']} rounds, the limits in turn; load average before/after "
        f"{result['machine']['load_average_1_5_15']} / {result['load_after']}\n\n"
        + table(["query", "places", *(f"ms, rescore_limit {limit:,}" for limit in limits)], rows)
        + "\n"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench deep_pages", description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", type=Path, required=True, help="the index folder of an OpenSearch rebuild")
    parser.add_argument("--limits", default="300,1500,3000", help="rescore_limit values, comma-separated")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench/results/deep-pages.json"))
    args = parser.parse_args(argv)
    result = run(args.index_dir, [int(limit) for limit in args.limits.split(",")], args.rounds)
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    report(result, markdown(result), args.out)


if __name__ == "__main__":
    main()
