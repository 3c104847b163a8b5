"""Updates against a full rebuild, side by side in one run: `searchsvc add` of 100 new papers and
`remove` of 100 ids on an index of N records, then a rebuild of the same final sources, whose
search results must be identical to the updated index's (ids, scores, totals, facets).

    python -m bench update [--records 300000] [--changed 100] [--successive 10] [--final-check] [--semantic]
                           [--vector-store DIR | --random-base-vectors] [--out FILE]

Then `--successive` more adds of `--changed` papers each, timed one by one: one update segment
each, until more than MAX_SMALL_SEGMENTS of them are merged (backends/whoosh/updates.py).
`--final-check` then rebuilds the final sources (the base without the removed papers, and every
add) and compares the search results once more.

With `--semantic`, the first rebuild embeds the whole corpus (hours at 300,000 papers); give
`--vector-store DIR` to keep those vectors between runs: a run killed half-way, or the next one,
embeds only what the store lacks. Only the first rebuild uses DIR; everything after it works on a
copy, so the added papers are never in DIR and every add's embedding time (reported separately)
is real.

`--random-base-vectors` skips those hours instead: the first rebuild indexes without embedding,
then the store gets a random unit vector for each of its papers, under the paper's real content
key. Everything the update path does at that size is then real (a store of N rows loaded, extended
and saved; N vectors for each new generation; the new papers embedded by the real encoder), but
the base papers' ranking by meaning is noise, so the run says `"base_vectors": "random"`.

The corpus is bench/corpus.py's (the ACL records, then labelled synthetic ones), as for `bench scale`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import corpus, mix
from bench.measure import machine
from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.backends.whoosh.generation_vectors import KEYS_FILE
from searchsvc.core.model import SearchRequest
from searchsvc.operations import update
from searchsvc.operations.rebuild import rebuild
from searchsvc.operations.search import search
from searchsvc.semantic.encoder import DIMENSIONS
from searchsvc.semantic.store import StoredVectors, save
from searchsvc.settings import load_settings


def run(
    records: int,
    changed: int,
    successive: int,
    semantic: bool,
    final_check: bool,
    kept_vectors: Path | None = None,
    random_base: bool = False,
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-update-") as scratch:
        work = Path(scratch)
        vectors = work / "vectors"
        source = work / "corpus.jsonl"
        described = corpus.prepare(source, records + changed * (1 + successive))
        lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
        base, added = work / "base.jsonl", work / "added.jsonl"
        base.write_text("".join(lines[:records]), encoding="utf-8")
        added.write_text("".join(lines[records : records + changed]), encoding="utf-8")
        later = []
        for number in range(successive):
            start = records + changed * (1 + number)
            later.append(work / f"later-{number:02d}.jsonl")
            later[-1].write_text("".join(lines[start : start + changed]), encoding="utf-8")
        removed_ids = [json.loads(line)["id"] for line in lines[: records : max(1, records // changed)]][:changed]
        del lines

        first = _backend(work / "updated", semantic and not random_base, kept_vectors or vectors)
        timings: dict[str, Any] = {"load_before": os.getloadavg()}
        timings["first_rebuild_s"] = _timed(lambda: rebuild(first, [base]))
        if kept_vectors:
            shutil.copytree(kept_vectors, vectors)
        updated = _backend(work / "updated", semantic, vectors)
        if random_base and semantic:
            timings["random_base_vectors"] = random_vectors(first, updated.vector_store)
        _progress("first rebuild", timings)
        timings["add"] = _timed_report(lambda: update.add(updated, [added]))
        # What the first search after a publish waits for in each worker: opening the new generation.
        timings["open_after_add_s"] = _timed(updated.status)
        _progress("add", timings)
        rebuilt = _backend(work / "rebuilt", semantic, vectors)  # its papers' vectors are stored already
        timings["full_rebuild_s"] = _timed(lambda: rebuild(rebuilt, [base, added]))
        timings["open_after_rebuild_s"] = _timed(rebuilt.status)
        _progress("full rebuild", timings)
        queries = mix.generate(corpus.load(source), 60)
        identical, compared = _same_results(updated, rebuilt, queries)
        timings["remove"] = _timed_report(lambda: update.remove(updated, removed_ids))
        timings["successive_adds"] = [
            {**_timed_report(lambda path=path: update.add(updated, [path])), "segments": _segments(updated)}
            for path in later
        ]
        if final_check:  # after the removal and every add: a rebuild of the same final sources
            gone = set(removed_ids)
            kept = work / "base-kept.jsonl"
            with base.open(encoding="utf-8") as lines_in, kept.open("w", encoding="utf-8") as lines_out:
                lines_out.writelines(line for line in lines_in if json.loads(line)["id"] not in gone)
            final = _backend(work / "final", semantic, vectors)
            timings["final_rebuild_s"] = _timed(lambda: rebuild(final, [kept, added, *later]))
            timings["identical_after_all_changes"], _ = _same_results(updated, final, queries)
        timings["load_after"] = os.getloadavg()
    return {
        "machine": machine(),
        "corpus": described,
        "records": records,
        "changed": changed,
        "semantic_ranking": semantic,
        "base_vectors": "random" if random_base and semantic else "encoder",
        **timings,
        "add_vs_rebuild": round(timings["full_rebuild_s"] / timings["add"]["seconds"], 1),
        "identical_to_rebuild": identical,
        "queries_compared": compared,
    }


def _progress(phase: str, timings: dict[str, Any]) -> None:
    """Each phase's figures as soon as they exist: a 300,000-record run takes an hour."""
    print(f"{phase}: {json.dumps(timings)} load {os.getloadavg()}", file=sys.stderr, flush=True)


def random_vectors(built: WhooshBackend, store: Path) -> int:
    """Store a random unit vector under each content key of `built`'s published generation."""
    generation = built.store.generations / built.store.published_name()
    # One key per document, deleted ones too (the manifest's doc_count counts live papers only).
    keys = np.load(generation / KEYS_FILE, allow_pickle=False)
    rows = np.random.default_rng(18).standard_normal((len(keys), DIMENSIONS), dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    save(store, StoredVectors(keys, rows.astype(np.float16)))
    return len(keys)


def _segments(backend: WhooshBackend) -> int:
    """Segments of the published generation (an update adds one; merging small ones folds them)."""
    generation = backend.store.generations / backend.store.published_name()
    return len(list(generation.glob("*.seg")))


def _backend(index_dir: Path, semantic: bool, vectors: Path) -> WhooshBackend:
    # The comparison's searches may take their time: a 503 would only hide what is compared.
    settings = {
        "index_dir": index_dir,
        "semantic_ranking": semantic,
        "vector_store": str(vectors),
        "search_time_limit_ms": 30_000,
    }
    return WhooshBackend(load_settings(settings, environ={}))


def _timed(work: Any) -> float:
    started = time.perf_counter()
    work()
    return round(time.perf_counter() - started, 2)


def _timed_report(work: Any) -> dict[str, Any]:
    started = time.perf_counter()
    report = work()
    return {
        "seconds": round(time.perf_counter() - started, 2),
        "embedding_seconds": round(report.embedding_seconds, 2),
        **{name: len(getattr(report, name)) for name in ("added", "replaced", "removed", "unchanged", "missing")},
    }


def _same_results(first: WhooshBackend, second: WhooshBackend, queries: list[mix.MixQuery]) -> tuple[bool, int]:
    """Whether every query (with its filters) gives the same ids, scores, total and facets on both."""
    compared = 0
    for query in queries:
        request = SearchRequest(
            q=query.q,
            year_from=query.year_from,
            year_to=query.year_to,
            subject=query.subject,
            author=query.author,
            per_page=20,
        )
        a, b = search(first, request), search(second, request)
        seen = [(found.total, [(h.id, h.score) for h in found.hits], found.facets) for found in (a, b)]
        if seen[0] != seen[1]:
            return False, compared + 1
        compared += 1
    return True, compared


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench update", description=__doc__)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--changed", type=int, default=100)
    parser.add_argument("--successive", type=int, default=10, help="more adds after the first, timed one by one")
    parser.add_argument(
        "--final-check", action="store_true", help="rebuild the final sources too and compare once more"
    )
    parser.add_argument("--semantic", action="store_true", help="rank by meaning too (embeds the whole corpus first)")
    parser.add_argument("--vector-store", type=Path, default=None, help="keep the vectors here between runs")
    parser.add_argument(
        "--random-base-vectors", action="store_true", help="with --semantic: random vectors for the base papers"
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.random_base_vectors and (args.vector_store or not args.semantic):
        parser.error("--random-base-vectors goes with --semantic, and not with --vector-store")
    result = run(
        args.records,
        args.changed,
        args.successive,
        args.semantic,
        args.final_check,
        args.vector_store,
        args.random_base_vectors,
    )
    out = args.out or Path(f"bench/results/update-{args.records}{'-semantic' if args.semantic else ''}.json")
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
