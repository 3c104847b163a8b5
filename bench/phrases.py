"""Phrases matched with numpy against Whoosh's phrase matcher, side by side on one index.

The quoted phrases of the query mix (bench/mix.py: 2–3 consecutive words of a real title, some
with filters), each searched in-process through the service by both paths, the order
alternating from one phrase to the next so neither always finds the files' pages cached:
- numpy: the papers holding the phrase's word pairs (backends/whoosh/phrases.py), scored over
  arrays (word_scores.py);
- Whoosh: `word_scores.plan` forced to None, so the query runs through Whoosh's matchers
  (`CheckedPhrase`, positions lined up one paper at a time).
Both paths must give the same page and total for every phrase; the report counts any that
differ. Lexical ranking only: the paths differ in matching, not in ranking by meaning.

    python -m bench phrases --index-dir DIR --corpus CORPUS.jsonl [--phrases 60] [--out bench/results/phrases.json]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from bench import corpus, mix
from bench.measure import latency_summary, machine, report, table
from searchsvc.backends.whoosh import WhooshBackend, word_scores
from searchsvc.core.errors import SearchTimedOut
from searchsvc.core.model import SearchRequest
from searchsvc.operations.search import search
from searchsvc.settings import load_settings

LIMIT_MS = 30_000  # the longest the settings allow: Whoosh's path must finish to be timed


def run(index_dir: Path, source: Path, phrases: int) -> dict[str, Any]:
    measured_on = machine()  # the load average before
    records = corpus.load(source)
    chosen = [q for q in mix.generate(records, phrases * 20) if q.kind == "phrase"][:phrases]
    settings = {"index_dir": index_dir, "semantic_ranking": False, "search_time_limit_ms": LIMIT_MS}
    backend = WhooshBackend(load_settings(settings, environ={}))
    started = time.perf_counter()
    search(backend, SearchRequest(q="opening"))
    opened_s = time.perf_counter() - started
    planned = word_scores.plan
    paths = {"numpy": planned, "whoosh": lambda compiled, searcher: None}
    samples: dict[str, list[float]] = {name: [] for name in paths}
    # The process's CPU time as well: on a shared machine the wall time also counts the others' turns.
    cpu_samples: dict[str, list[float]] = {name: [] for name in paths}
    differing = []
    timed_out = dict.fromkeys(paths, 0)  # counted at the time they took (the limit)
    for number, phrase in enumerate(chosen):
        request = SearchRequest(
            q=phrase.q, year_from=phrase.year_from, year_to=phrase.year_to, subject=phrase.subject, author=phrase.author
        )
        seen = {}
        for name in sorted(paths, reverse=bool(number % 2)):
            word_scores.plan = paths[name]  # type: ignore[assignment]
            started, cpu_started = time.perf_counter(), time.process_time()
            try:
                result = search(backend, request)
                seen[name] = (result.total, [(hit.id, hit.score) for hit in result.hits])
            except SearchTimedOut:
                seen[name] = None
                timed_out[name] += 1
            finally:
                word_scores.plan = planned
            samples[name].append((time.perf_counter() - started) * 1000)
            cpu_samples[name].append((time.process_time() - cpu_started) * 1000)
        if seen["numpy"] != seen["whoosh"]:
            differing.append(phrase.q)
    summaries = {name: latency_summary(values) for name, values in samples.items()}
    return {
        "machine": measured_on,
        "index_dir": str(index_dir),
        "papers": len(records),
        "phrases": len(chosen),
        "opened_s": round(opened_s, 2),
        "latency_ms": summaries,
        "cpu_ms": {name: latency_summary(values) for name, values in cpu_samples.items()},
        "whoosh_over_numpy": {
            key: round(summaries["whoosh"][key] / summaries["numpy"][key], 1) for key in ("p50", "p95", "max")
        },
        "timed_out": timed_out,
        "differing": differing,
    }


def markdown(result: dict[str, Any]) -> str:
    rows = [[name, s["n"], s["p50"], s["p95"], s["p99"], s["max"]] for name, s in result["latency_ms"].items()]
    rows += [
        [f"{name}, CPU time", s["n"], s["p50"], s["p95"], s["p99"], s["max"]]
        for name, s in result.get("cpu_ms", {}).items()
    ]
    ratios = result["whoosh_over_numpy"]
    return (
        f"Phrases of the query mix on {result['papers']:,} papers, in-process, lexical ranking "
        f"(`python -m bench phrases`); load average before/after {result['machine']['load_average_1_5_15']}"
        f" / {result['load_after']}\n\n"
        + table(["path", "phrases", "p50 ms", "p95 ms", "p99 ms", "max ms"], rows)
        + f"\n\nWhoosh's matchers over numpy: p50 {ratios['p50']}×, p95 {ratios['p95']}×, max {ratios['max']}×."
        f" Timed out at {LIMIT_MS:,} ms: {result['timed_out']}."
        f" Phrases whose page or total differ between the paths: {len(result['differing'])}.\n"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench phrases", description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", type=Path, required=True, help="a searchsvc index (`searchsvc rebuild`)")
    parser.add_argument("--corpus", type=Path, required=True, help="the JSON lines it was built from")
    parser.add_argument("--phrases", type=int, default=60)
    parser.add_argument("--out", type=Path, default=Path("bench/results/phrases.json"))
    args = parser.parse_args(argv)
    result = run(args.index_dir, args.corpus, args.phrases)
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    report(result, markdown(result), args.out)


if __name__ == "__main__":
    main()
