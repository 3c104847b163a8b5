"""Embedding benchmark: how fast each encoder embeds papers, and what one query costs, in one run.

Embeds the first `--papers` ACL records (title + abstract, in chunks, as a rebuild does)
with every encoder (numpy, onnx, onnx-int8, bge-small, bge-small-int8; `--encoders` picks)
on the same texts, each in its own process:
with one thread; with every core as threads (OpenBLAS threads for numpy, ONNX Runtime's
intra-op threads otherwise); and, for the ONNX encoders, as a rebuild embeds them, in one
single-threaded worker process per core (`encoder_processes`; their start-up, loading the
model, is reported apart). It times single short queries on one thread,
as each search by relevance embeds one, and reports papers/s, tokens/s, query percentiles
and the share of the CPU's fp32 peak each reaches (`PEAK_GFLOPS_PER_CORE`; the int8 runs
are counted at the same FLOP as fp32, so their share can pass what fp32 could reach).

    python -m bench embedding [--papers 400] [--queries 200] [--encoders onnx-int8,bge-small-int8] [--out FILE]
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
ENCODERS = ("numpy", "onnx", "onnx-int8", "bge-small", "bge-small-int8")
# AVX2 + FMA, no AVX-512: two 8-wide fused multiply-adds a cycle at about 3 GHz.
PEAK_GFLOPS_PER_CORE = 96.0
HIDDEN, FFN = 384, 1536
LAYERS = {"bge-small": 12, "bge-small-int8": 12}  # MiniLM's encoders: 6


def texts_of(papers: int) -> list[str]:
    from searchsvc.semantic.store import paper_text

    return [paper_text(r.get("title") or "", r.get("abstract") or "") for r in corpus.load(corpus.ACL)[:papers]]


def flops(lengths: list[int], layers: int) -> float:
    """Multiply-adds ×2 of the forward passes for texts of these token counts (no padding):
    the six matrices of each layer per token, and attention's two products per pair of tokens."""
    per_token = layers * 2 * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * FFN)
    return sum(per_token * n + layers * 2 * 2 * n * n * HIDDEN for n in lengths)


def token_counts(name: str, texts: list[str]) -> list[int]:
    """Tokens each text gives `name`'s model, as it cuts them."""
    from searchsvc.semantic.encoder import load_tokenizer
    from searchsvc.semantic.onnx_model import tokenizer_file
    from searchsvc.settings import load_settings

    kind = "onnx" if name == "numpy" else name
    tokenizer = load_tokenizer(tokenizer_file(kind, load_settings().model_cache_dir))
    return [len(encoding.ids) for encoding in tokenizer.encode_batch(texts)]


def measure(name: str, threads: int, processes: int, papers: int, queries: int) -> dict[str, Any]:
    """In this process: embed the papers as a rebuild does (chunks of `embedding.CHUNK`; with
    `processes` > 1 in that many single-threaded worker processes), then time queries."""
    from searchsvc.core.query import meaning, parse
    from searchsvc.semantic.embedding import CHUNK
    from searchsvc.semantic.encoder_processes import EncoderProcesses
    from searchsvc.semantic.onnx_model import tokenizer_file
    from searchsvc.semantic.selection import _onnx_model, model_id, shared_encoder
    from searchsvc.settings import load_settings

    texts = texts_of(papers)
    chunks = [texts[start : start + CHUNK] for start in range(0, len(texts), CHUNK)]
    cache_dir = load_settings().model_cache_dir
    began = time.perf_counter()
    if processes > 1:
        model, tokenizer = _onnx_model(name, cache_dir), tokenizer_file(name, cache_dir)
        with EncoderProcesses(name, model_id(name), model, tokenizer, processes) as encode_chunks:
            list(encode_chunks([texts[: 4 * processes]]))  # every worker has loaded its model and run once
            startup = time.perf_counter() - began
            started = time.perf_counter()
            list(encode_chunks(chunks))
            seconds = time.perf_counter() - started
        return {"seconds": seconds, "startup": startup, "query_ms": None}
    encoder = shared_encoder(name, cache_dir, threads)
    assert encoder.name == name, f"{name} did not run: {encoder.name} ran instead"
    encoder.encode(texts[:4])  # the first run allocates ONNX Runtime's buffers
    startup = time.perf_counter() - began
    started = time.perf_counter()
    list(map(encoder.encode, chunks))
    seconds = time.perf_counter() - started
    query_ms = []
    if queries:
        for text in (meaning(parse(request.q)) for request in mix.generate(corpus.load(corpus.ACL)[:papers], queries)):
            if text:  # what a search by relevance embeds
                query_began = time.perf_counter()
                encoder.encode([encoder.query_prefix + text])
                query_ms.append((time.perf_counter() - query_began) * 1000)
    return {"seconds": seconds, "startup": startup, "query_ms": latency_summary(query_ms) if query_ms else None}


def _child(name: str, threads: int, processes: int, papers: int, queries: int) -> dict[str, Any]:
    """`measure` in a process of its own, so each encoder starts from nothing."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "PYTHONPATH": str(REPO)}
    arguments = [name, str(threads), str(processes), str(papers), str(queries)]
    done = subprocess.run(
        [sys.executable, "-m", "bench.embedding", _CHILD, *arguments], env=env, stdout=subprocess.PIPE, text=True
    )
    if done.returncode:
        raise SystemExit(f"{name} ({threads} threads, {processes} processes) failed")
    return json.loads(done.stdout)


def run(papers: int, queries: int, encoders: list[str]) -> dict[str, Any]:
    before = machine()  # the load average the run starts on
    cores = len(os.sched_getaffinity(0))
    texts = texts_of(papers)
    runs = []
    for name in encoders:
        lengths = token_counts(name, texts)
        work = flops(lengths, LAYERS.get(name, 6))
        ways = [("1 thread", 1, 1), (f"{cores} threads", cores, 1)]
        if name != "numpy":
            ways.append((f"{cores} processes (the rebuild's way)", 1, cores))
        for way, threads, processes in ways:
            measured = _child(name, threads, processes, papers, queries if threads == processes == 1 else 0)
            seconds = measured["seconds"]
            runs.append(
                {
                    "encoder": name,
                    "cores": way,
                    "seconds": round(seconds, 2),
                    "papers_per_second": round(papers / seconds, 1),
                    "tokens_per_second": round(sum(lengths) / seconds),
                    "gflops": round(work / seconds / 1e9, 1),
                    "share_of_fp32_peak": round(work / seconds / 1e9 / (PEAK_GFLOPS_PER_CORE * threads * processes), 3),
                    "startup_seconds": round(measured["startup"], 2),
                    "query_ms": measured["query_ms"],
                    "load_average": [round(x, 2) for x in os.getloadavg()],
                }
            )
    baseline = {r["cores"]: r["papers_per_second"] for r in runs if r["encoder"] == encoders[0]}
    for r in runs:
        same = baseline.get(r["cores"]) or baseline[f"{cores} threads"]  # processes: against numpy on every core
        r["speedup_vs_first"] = round(r["papers_per_second"] / same, 2)
    tokens = sorted(token_counts("onnx", texts))
    return {
        "machine": before,
        "papers": papers,
        "tokens": {
            "total": sum(lengths),
            "mean": round(sum(lengths) / len(lengths), 1),
            "p50": tokens[len(tokens) // 2],
            "max": tokens[-1],
        },
        "gflop": round(flops(tokens, 6) / 1e9, 1),
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
            f"{r['speedup_vs_first']}×",
            r["tokens_per_second"],
            f"{r['gflops']} ({r['share_of_fp32_peak']:.0%})",
            r["query_ms"]["p50"] if r["query_ms"] else "",
            r["query_ms"]["p95"] if r["query_ms"] else "",
            r["startup_seconds"],
            r["load_average"],
        ]
        for r in result["runs"]
    ]
    head = [
        "encoder",
        "on",
        "s",
        "papers/s",
        f"× {result['runs'][0]['encoder']}",
        "tokens/s",
        "GFLOP/s (of fp32 peak)",
        "query p50 ms",
        "query p95 ms",
        "startup s (not in s)",
        "load average after",
    ]
    t = result["tokens"]
    return (
        f"{result['papers']} ACL papers, {t['total']} MiniLM tokens "
        f"(mean {t['mean']}, median {t['p50']}, max {t['max']}), "
        f"{result['gflop']} GFLOP for MiniLM; load average {result['machine']['load_average_1_5_15']} before, "
        f"{result['load_average_after']} after\n\n" + table(head, rows)
    )


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [_CHILD]:
        name, threads, processes, papers, queries = argv[1:6]
        print(json.dumps(measure(name, int(threads), int(processes), int(papers), int(queries))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=400)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--encoders", default=",".join(ENCODERS), help="comma-separated, the first the baseline")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    encoders = args.encoders.split(",")
    if unknown := set(encoders) - set(ENCODERS):
        parser.error(f"unknown encoders {sorted(unknown)}; choose from {', '.join(ENCODERS)}")
    result = run(args.papers, args.queries, encoders)
    report(result, markdown(result), args.out)


if __name__ == "__main__":
    main()
