"""Embedding benchmark: how fast the sentence model embeds papers, and what one query costs.

Embeds the first `--papers` ACL records (title + abstract, as a rebuild does) with the
service's encoder, once with one BLAS thread and once with every core (each in its own
process: OpenBLAS reads its thread count at import), and times single short queries, as
each search by relevance embeds one. Reports papers/s, tokens/s and query percentiles.

    python -m bench embedding [--papers 400] [--queries 200] [--out bench/results/embedding.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import corpus, mix
from bench.measure import REPO, latency_summary, machine, report, table

_CHILD = "--child"


def measure(papers: int, queries: int) -> dict[str, Any]:
    """In this process: embed `papers` records, then `queries` queries one at a time."""
    from searchsvc.core.query import meaning, parse
    from searchsvc.semantic.encoder import shared_encoder
    from searchsvc.semantic.store import paper_text

    records = corpus.load(corpus.ACL)[:papers]
    texts = [paper_text(r.get("title") or "", r.get("abstract") or "") for r in records]
    encoder = shared_encoder()
    tokens = encoder.token_count(texts)
    started = time.perf_counter()
    encoder.encode(texts)
    seconds = time.perf_counter() - started
    query_ms = []
    for text in (meaning(parse(request.q)) for request in mix.generate(records, queries)):
        if text:  # what a search by relevance embeds
            started = time.perf_counter()
            encoder.encode([text])
            query_ms.append((time.perf_counter() - started) * 1000)
    return {
        "papers": len(texts),
        "tokens": tokens,
        "seconds": round(seconds, 2),
        "papers_per_second": round(len(texts) / seconds, 1),
        "tokens_per_second": round(tokens / seconds),
        "query_ms": latency_summary(query_ms),
    }


def run(papers: int, queries: int) -> dict[str, Any]:
    runs = {}
    for threads in ("1", str(os.cpu_count() or 1)):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "PYTHONPATH": str(REPO)}
        command = [sys.executable, "-m", "bench.embedding", _CHILD, str(papers), str(queries)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        runs[threads] = json.loads(done.stdout)
    return {"machine": machine(), "runs": runs}


def markdown(result: dict[str, Any]) -> str:
    rows = [
        [
            threads,
            r["papers"],
            r["tokens"],
            r["seconds"],
            r["papers_per_second"],
            r["tokens_per_second"],
            r["query_ms"]["p50"],
            r["query_ms"]["p95"],
        ]
        for threads, r in result["runs"].items()
    ]
    head = ["BLAS threads", "papers", "tokens", "s", "papers/s", "tokens/s", "query p50 ms", "query p95 ms"]
    return table(head, rows)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [_CHILD]:
        print(json.dumps(measure(int(argv[1]), int(argv[2]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=400)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    result = run(args.papers, args.queries)
    report(result, markdown(result), args.out)


if __name__ == "__main__":
    main()
