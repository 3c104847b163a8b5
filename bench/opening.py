"""How long opening a published generation takes, measured in a process of its own (`bench churn` runs it).

    python -m bench.opening   # the index and ranking from SEARCHSVC_* (the server's own settings)

It prints one JSON line when started, for its fresh open of the published generation, then one for
each line read on stdin (the name of the generation now published): the re-open of a process that
holds the previous generation, as a worker's first search after a change waits for it. Only the
public interface is timed (`GenerationCache(store, vector_store).get(wait_s)`, waiting for an open
made beside the served generation until it ends; then, ranking by meaning, the `OpenGeneration`'s
vectors and the rows of `CANDIDATES` papers, what the first search reads), so the figures stay
honest whatever the cache does inside; `whole_s` is until every vector is in memory (a fresh
open reads them beside its first searches). Loading the encoder is done before: a worker loads it
once, not per generation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from bench.measure import REPO
from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.backends.whoosh.generation_cache import GenerationCache
from searchsvc.settings import load_settings

CANDIDATES = 300  # rows a first search by meaning reads: the lexical candidates it reorders, 100 per tier
OPEN_WAIT_S = 600.0  # longer than any open: the figure is the time until this process serves the new generation


class OpenProbe:
    """The harness's end of a `python -m bench.opening` process."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._process = process

    def opened(self) -> dict[str, Any]:
        """The next figure the process prints (the first is its fresh open)."""
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"bench.opening exited {self._process.wait()}: see its log")
        return dict(json.loads(line))

    def reopen(self, generation: str) -> dict[str, Any]:
        """Have the process open `generation`, now published, beside the one it holds."""
        assert self._process.stdin is not None
        self._process.stdin.write(generation + "\n")
        self._process.stdin.flush()
        return self.opened()


@contextmanager
def probe(env: Mapping[str, str], log: Path) -> Iterator[OpenProbe]:
    """A `python -m bench.opening` process with the settings in `env`, until the block ends."""
    with log.open("a", encoding="utf-8") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.opening"],
            cwd=REPO,
            env={**env, "PYTHONPATH": str(REPO)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
    try:
        yield OpenProbe(process)
    finally:
        assert process.stdin is not None
        process.stdin.close()  # its loop ends
        process.wait(timeout=60)


def main(lines: TextIO = sys.stdin) -> None:
    backend = WhooshBackend(load_settings())
    store_file = backend.vector_store  # loads the encoder when ranking by meaning is on
    cache = GenerationCache(backend.store, lambda: store_file)
    semantic = backend.settings.semantic_ranking
    _print(_open(cache, semantic, expected=None))
    for line in lines:
        _print(_open(cache, semantic, expected=line.strip()))


def _open(cache: GenerationCache, semantic: bool, expected: str | None) -> dict[str, Any]:
    started, cpu = time.perf_counter(), time.process_time()
    opened = cache.get(wait_s=OPEN_WAIT_S)  # a re-open runs beside the served generation: waited for
    open_s, open_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    vectors_s = vectors_cpu_s = whole_s = 0.0
    if semantic:
        started, cpu = time.perf_counter(), time.process_time()
        rows = opened.vectors.get()
        if rows is not None:  # what a first search by meaning reads: its candidates' rows
            rows[np.random.default_rng(len(rows)).choice(len(rows), min(len(rows), CANDIDATES), replace=False)]
        vectors_s, vectors_cpu_s = time.perf_counter() - started, time.process_time() - cpu
        opened.vectors.whole(wait_s=OPEN_WAIT_S)  # a fresh open reads them beside its first searches
        whole_s = time.perf_counter() - started
    return {
        "generation": opened.path.name,
        "expected": expected,
        "open_s": round(open_s, 3),
        "vectors_s": round(vectors_s, 3),
        # CPU time of this process (all its threads) beside each: the rest waited for the disk or the cores
        "open_cpu_s": round(open_cpu_s, 3),
        "vectors_cpu_s": round(vectors_cpu_s, 3),
        "seconds": round(open_s + vectors_s, 3),
        # until every vector is in memory (related papers scan them all; searches read rows until then)
        "whole_s": round(open_s + whole_s, 3),
        "load_1min": round(os.getloadavg()[0], 2),
    }


def _print(figures: dict[str, Any]) -> None:
    print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
