"""Embedding benchmark: how fast each encoder embeds papers, and what one query costs, in one run.

Embeds the first `--papers` ACL records (title + abstract, as a rebuild does) with every
encoder (numpy, onnx, onnx-int8) on the same texts, each in its own process: with one
thread; with every core as threads (OpenBLAS threads for numpy, ONNX Runtime's intra-op
threads otherwise); and, for the ONNX encoders, as one single-threaded process per core
each embedding its share, started together. It times single short queries on one thread,
as each search by relevance embeds one, and reports papers/s, tokens/s, query percentiles
and the share of the CPU's fp32 peak each reaches (`PEAK_GFLOPS_PER_CORE`; the int8 runs
are counted at the same FLOP as fp32, so their share can pass what fp32 could reach).

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
ENCODERS = ("numpy", "onnx", "onnx-int8")
# AVX2 + FMA, no AVX-512: two 8-wide fused multiply-adds a cycle at about 3 GHz.
PEAK_GFLOPS_PER_CORE = 96.0
HIDDEN, FFN, LAYERS = 384, 1536, 6


def texts_of(papers: int) -> list[str]:
    from searchsvc.semantic.store import paper_text

    return [paper_text(r.get("title") or "", r.get("abstract") or "") for r in corpus.load(corpus.ACL)[:papers]]


def flops(lengths: list[int]) -> float:
    """Multiply-adds ×2 of the forward passes for texts of these token counts (no padding):
    the six matrices of each layer per token, and attention's two products per pair of tokens."""
    per_token = LAYERS * 2 * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * FFN)
    return sum(per_token * n + LAYERS * 2 * 2 * n * n * HIDDEN for n in lengths)


def measure(
    name: str, threads: int, papers: int, queries: int, part: int, parts: int, start_at: float
) -> dict[str, Any]:
    """In this process: embed this part's papers (after `start_at`, so parts start together), then queries."""
    from searchsvc.core.query import meaning, parse
    from searchsvc.semantic.selection import shared_encoder
    from searchsvc.settings import load_settings

    encoder = shared_encoder(name, load_settings().model_cache_dir, threads)
    assert encoder.name == name, f"{name} did not run: {encoder.name} ran instead"
    texts = texts_of(papers)[part::parts]
    encoder.encode(texts[:4])  # the first run allocates ONNX Runtime's buffers
    time.sleep(max(0.0, start_at - time.time()))
    started = time.time()
    encoder.encode(texts)
    ended = time.time()
    query_ms = []
    if queries:
        for text in (meaning(parse(request.q)) for request in mix.generate(corpus.load(corpus.ACL)[:papers], queries)):
            if text:  # what a search by relevance embeds
                began = time.perf_counter()
                encoder.encode([text])
                query_ms.append((time.perf_counter() - began) * 1000)
    return {"started": started, "ended": ended, "query_ms": latency_summary(query_ms) if query_ms else None}


def _children(name: str, threads: int, parts: int, papers: int, queries: int) -> dict[str, Any]:
    """Run `parts` processes of `threads` threads each on their share of the papers, started together."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "PYTHONPATH": str(REPO)}
    start_at = time.time() + 15  # after every process has loaded its model
    running = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.embedding",
                _CHILD,
                name,
                str(threads),
                str(papers),
                str(queries if part == 0 else 0),
                str(part),
                str(parts),
                str(start_at),
            ],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for part in range(parts)
    ]
    results = []
    for child in running:
        out, _ = child.communicate()
        if child.returncode:
            raise SystemExit(f"{name} ({threads} threads, part of {parts}) failed")
        results.append(json.loads(out))
    seconds = max(r["ended"] for r in results) - min(r["started"] for r in results)
    return {"seconds": seconds, "query_ms": results[0]["query_ms"]}


def run(papers: int, queries: int) -> dict[str, Any]:
    from searchsvc.semantic.encoder import load_tokenizer, model_dir

    before = machine()  # the load average the run starts on
    cores = len(os.sched_getaffinity(0))
    texts = texts_of(papers)
    lengths = [len(encoding.ids) for encoding in load_tokenizer(model_dir() / "tokenizer.json").encode_batch(texts)]
    work = flops(lengths)
    runs = []
    for name in ENCODERS:
        ways = [("1 thread", 1, 1), (f"{cores} threads", cores, 1)]
        if name != "numpy":
            ways.append((f"{cores} processes", 1, cores))
        for way, threads, parts in ways:
            measured = _children(name, threads, parts, papers, queries if threads == 1 and parts == 1 else 0)
            seconds = measured["seconds"]
            runs.append(
                {
                    "encoder": name,
                    "cores": way,
                    "seconds": round(seconds, 2),
                    "papers_per_second": round(papers / seconds, 1),
                    "tokens_per_second": round(sum(lengths) / seconds),
                    "gflops": round(work / seconds / 1e9, 1),
                    "share_of_fp32_peak": round(work / seconds / 1e9 / (PEAK_GFLOPS_PER_CORE * threads * parts), 3),
                    "query_ms": measured["query_ms"],
                }
            )
    baseline = {r["cores"]: r["papers_per_second"] for r in runs if r["encoder"] == "numpy"}
    for r in runs:
        same = baseline.get(r["cores"]) or baseline[f"{cores} threads"]
        r["speedup_vs_numpy"] = round(r["papers_per_second"] / same, 2)
    tokens = sorted(lengths)
    return {
        "machine": before,
        "papers": papers,
        "tokens": {
            "total": sum(lengths),
            "mean": round(sum(lengths) / len(lengths), 1),
            "p50": tokens[len(tokens) // 2],
            "max": tokens[-1],
        },
        "gflop": round(work / 1e9, 1),
        "runs": runs,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def markdown(result: dict[str, Any]) -> str:
    rows = [
        [
            r["encoder"],
            r["cores"],
            r["seconds"],
            r["papers_per_second"],
            f"{r['speedup_vs_numpy']}×",
            r["tokens_per_second"],
            f"{r['gflops']} ({r['share_of_fp32_peak']:.0%})",
            r["query_ms"]["p50"] if r["query_ms"] else "",
            r["query_ms"]["p95"] if r["query_ms"] else "",
        ]
        for r in result["runs"]
    ]
    head = [
        "encoder",
        "on",
        "s",
        "papers/s",
        "× numpy",
        "tokens/s",
        "GFLOP/s (of fp32 peak)",
        "query p50 ms",
        "query p95 ms",
    ]
    t = result["tokens"]
    return (
        f"{result['papers']} ACL papers, {t['total']} tokens (mean {t['mean']}, median {t['p50']}, max {t['max']}), "
        f"{result['gflop']} GFLOP; load average {result['machine']['load_average_1_5_15']} before, "
        f"{result['load_average_after']} after\n\n" + table(head, rows)
    )


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [_CHILD]:
        name, threads, papers, queries, part, parts, start_at = argv[1:8]
        print(
            json.dumps(measure(name, int(threads), int(papers), int(queries), int(part), int(parts), float(start_at)))
        )
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
