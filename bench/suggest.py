"""Suggestions as you type: latency of `GET /api/suggest` lookups on a built index (issue #19: p95 < 20 ms at 300k).

Prefixes of 1–6 letters are cut from words drawn from the index's own vocabulary in proportion
to the papers holding them (what people type is mostly common words), half of them after an
earlier word (completions then counted among the papers holding it). Each is timed in-process
through the suggest operation under a request budget, the prefixes alone also under a one-year
filter (narrowed the same way), and all through the Flask test client (routing, validation, JSON).
Also: how long the generation's completions take to build when a worker opens it, and the memory
they hold. Build the index once and reuse it:

    SEARCHSVC_SEMANTIC_RANKING=false searchsvc rebuild CORPUS --index-dir DIR   # bench/corpus.py for 300k
    python -m bench suggest --index-dir DIR [--requests 2000] [--out bench/results/suggest.json]
"""

from __future__ import annotations

import argparse
import random
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench.measure import latency_summary, machine, report, table
from searchsvc import create_app
from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.backends.whoosh.suggesting import generation_completions
from searchsvc.core.deadline import request_budget
from searchsvc.core.model import SearchRequest, SuggestRequest
from searchsvc.operations.search import suggest
from searchsvc.settings import load_settings

SEED = 20261219
WARMUP = 50


def prefixes(backend: WhooshBackend, count: int, seed: int = SEED) -> list[str]:
    """Queries as typed: a start of 1–6 letters of a real word, after an earlier word half the time."""
    gen = backend._generations.get()
    words = [(word, papers) for word, papers in gen.vocabulary.items() if word.isalpha() and len(word) > 1]
    rng = random.Random(seed)
    drawn = rng.choices([w for w, _ in words], weights=[p for _, p in words], k=2 * count)
    typed = []
    for i in range(count):
        word = drawn[2 * i]
        start = word[: rng.randint(1, min(6, len(word)))]
        typed.append(f"{drawn[2 * i + 1]} {start}" if rng.random() < 0.5 else start)
    return typed


def timed(call, queries: list[str]) -> list[float]:  # type: ignore[no-untyped-def]
    samples = []
    for q in queries:
        started = time.perf_counter()
        call(q)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    overrides = {"index_dir": args.index_dir, "semantic_ranking": False}
    backend = WhooshBackend(load_settings(overrides, environ={}))
    started = time.perf_counter()
    gen = backend._generations.get()
    opened = time.perf_counter() - started
    started = time.perf_counter()
    generation_completions(gen.vocabulary, gen.facets)
    built = time.perf_counter() - started
    tracemalloc.start()
    held = generation_completions(gen.vocabulary, gen.facets)
    held_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del held
    queries = prefixes(backend, args.requests)
    limit = backend.settings.suggestion_limit

    years = sorted(int(year) for year, _ in gen.facets.papers_per_value("year"))
    year = years[len(years) // 2]  # a year in the middle of the collection's

    def in_process(q: str, search: SearchRequest | None = None) -> None:
        with request_budget(backend.settings.search_time_limit_ms):
            suggest(backend, SuggestRequest(q, search or SearchRequest(), limit))

    def in_one_year(q: str) -> None:
        in_process(q, SearchRequest(year_from=year, year_to=year))

    app = create_app(overrides)
    app.extensions["searchsvc"].backend.status()  # the app's own backend opens the generation outside a request
    client = app.test_client()

    def through_flask(q: str) -> None:
        assert client.get("/api/suggest", query_string={"q": q}).status_code == 200

    timed(in_process, queries[:WARMUP])
    timed(through_flask, queries[:WARMUP])
    alone = [q for q in queries if " " not in q]
    after_a_word = [q for q in queries if " " in q]
    result: dict[str, Any] = {
        "index_dir": str(args.index_dir),
        "papers": gen.facets.doc_count,
        "words": gen.completions.words.size,
        "authors": gen.completions.authors.size,
        "generation_open_s": round(opened, 2),
        "completions_build_s": round(built, 2),
        "completions_mib": round(held_bytes / 2**20, 1),
        "requests": len(queries),
        "sample_queries": queries[:10],
        "in_process_ms": latency_summary(timed(in_process, alone)),
        "after_a_word_ms": latency_summary(timed(in_process, after_a_word)),
        "one_year_filter": year,
        "in_one_year_ms": latency_summary(timed(in_one_year, alone)),
        "flask_test_client_ms": latency_summary(timed(through_flask, queries)),
        "machine": machine(),
    }
    rows = [
        [path, s["n"], s["mean"], s["p50"], s["p95"], s["p99"], s["max"]]
        for path, s in (
            ("in-process, a prefix alone", result["in_process_ms"]),
            ("in-process, after an earlier word", result["after_a_word_ms"]),
            (f"in-process, a prefix alone, year {year} only", result["in_one_year_ms"]),
            ("Flask test client GET /api/suggest, all", result["flask_test_client_ms"]),
        )
    ]
    text = (
        f"{result['papers']:,} papers, {result['words']:,} words and {result['authors']:,} authors to complete; "
        f"generation opened in {result['generation_open_s']} s, "
        f"of which completions {result['completions_build_s']} s ({result['completions_mib']} MiB held); "
        f"load average at the end {result['machine']['load_average_1_5_15']}\n\n"
        + table(["path", "requests", "mean ms", "p50 ms", "p95 ms", "p99 ms", "max ms"], rows)
    )
    report(result, text, args.out)


if __name__ == "__main__":
    main()
