"""Typo tolerance (issue #33, item 2: p95 of typo queries < 500 ms at 300k): searches with misspelt
words on a built index, beside the same searches spelt right and with typo tolerance off.

Queries are 1–3 words of the index's own vocabulary, drawn in proportion to the papers holding
them, one of 5+ letters misspelt by one edit (two from 9 letters) after its first letter, into
a word no paper holds; and queries of 30 such misspelt words, the adversarial case (each word
looked up, each with up to three words it stands for, each a posting list). Each is timed
in-process through the search recipe (operations.search: parse, respell, match, rank, facets,
highlights, "did you mean") under the request budget, as a server runs it, ranking by meaning
off. Build the index once and reuse it:

    SEARCHSVC_SEMANTIC_RANKING=false searchsvc rebuild CORPUS --index-dir DIR   # bench/corpus.py for 300k
    python -m bench typos --index-dir DIR [--requests 500] [--out bench/results/typos.json]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Any

from bench.measure import latency_summary, machine, report, table
from bench.spelling import misspell
from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.deadline import request_budget
from searchsvc.core.edits import edit_distance
from searchsvc.core.model import SearchRequest
from searchsvc.core.typos import MIN_LETTERS, allowed_edits
from searchsvc.core.vocabulary import Vocabulary
from searchsvc.operations.search import search
from searchsvc.settings import load_settings

SEED = 20261204
WARMUP = 30
LONG_QUERY_WORDS = 30


def misspelt(rng: random.Random, word: str, vocabulary: Vocabulary) -> str | None:
    """`word` misspelt by as many random edits as typo tolerance allows after its first letter
    (bench.spelling's misspellings), if that makes a word no paper holds."""
    for _ in range(20):
        typo = misspell(rng, word)
        distance = edit_distance(word, typo)
        if len(typo) >= MIN_LETTERS and 0 < distance <= allowed_edits(typo) and not vocabulary.papers(typo):
            return typo
    return None


def queries(vocabulary: Vocabulary, count: int, seed: int = SEED) -> tuple[list[str], list[str], list[str]]:
    """(misspelt, the same spelt right, 30-word misspelt) queries."""
    rng = random.Random(seed)
    words = [(word, papers) for word, papers in vocabulary.items() if word.isalpha() and len(word) >= MIN_LETTERS]
    drawn = rng.choices([w for w, _ in words], weights=[p for _, p in words], k=40 * count)
    typed, right, long = [], [], []
    for i in range(count):
        size = rng.choice((1, 2, 3))
        chosen = drawn[3 * i : 3 * i + size]
        where = rng.randrange(size)
        typo = misspelt(rng, chosen[where], vocabulary)
        if typo is None:
            continue
        typed.append(" ".join(typo if j == where else word for j, word in enumerate(chosen)))
        right.append(" ".join(chosen))
    for i in range(max(count // 25, 5)):
        start = 3 * count + i * LONG_QUERY_WORDS
        typos = [misspelt(rng, word, vocabulary) for word in drawn[start : start + LONG_QUERY_WORDS]]
        long.append(" ".join(typo for typo in typos if typo))
    return typed, right, long


def timed(backend: WhooshBackend, texts: list[str]) -> tuple[list[float], int]:
    """Each query's milliseconds through the search recipe, and how many found nothing."""
    samples, empty = [], 0
    for q in texts:
        started = time.perf_counter()
        with request_budget(backend.settings.search_time_limit_ms):
            found = search(backend, SearchRequest(q=q))
        samples.append((time.perf_counter() - started) * 1000)
        empty += found.total == 0
    return samples, empty


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    tolerant = WhooshBackend(load_settings({"index_dir": args.index_dir, "semantic_ranking": False}, environ={}))
    strict = WhooshBackend(
        load_settings({"index_dir": args.index_dir, "semantic_ranking": False, "typo_tolerance": False}, environ={})
    )
    gen = tolerant._generations.get()
    strict._generations.get()
    typed, right, long = queries(gen.vocabulary, args.requests)
    timed(tolerant, typed[:WARMUP])
    timed(strict, typed[:WARMUP])
    runs = {
        "misspelt, typo tolerance on": timed(tolerant, typed),
        "misspelt, typo tolerance off": timed(strict, typed),
        "spelt right, typo tolerance on": timed(tolerant, right),
        f"{LONG_QUERY_WORDS} misspelt words, typo tolerance on": timed(tolerant, long),
        f"{LONG_QUERY_WORDS} misspelt words, typo tolerance off": timed(strict, long),
    }
    result: dict[str, Any] = {
        "index_dir": str(args.index_dir),
        "papers": gen.facets.doc_count,
        "vocabulary_words": gen.vocabulary.size,
        "sample_queries": typed[:8] + long[:1],
        "runs": {name: {**latency_summary(samples), "found_nothing": empty} for name, (samples, empty) in runs.items()},
        "machine": machine(),
    }
    rows = [
        [name, s["n"], s["found_nothing"], s["mean"], s["p50"], s["p95"], s["p99"], s["max"]]
        for name, s in result["runs"].items()
    ]
    text = (
        f"{result['papers']:,} papers, {result['vocabulary_words']:,} words; load average at the end "
        f"{result['machine']['load_average_1_5_15']}\n\n"
        + table(["queries", "requests", "found nothing", "mean ms", "p50 ms", "p95 ms", "p99 ms", "max ms"], rows)
        + "\n\nSample misspelt queries: "
        + "; ".join(f"`{q}`" for q in typed[:8])
    )
    report(result, text, args.out)


if __name__ == "__main__":
    main()
