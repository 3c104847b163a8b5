"""What candidates found by meaning (`meaning_candidates`) cost whole searches, and whether both
engines give the same answers with them: the ACL query mix in-process on indexes already built.

For each engine given, every request is searched with `meaning_candidates` 0 and K in turn
(p50 and p95 of each, their ratios, how many totals grew). Given both engines, each plain-word
request (which both score by BM25F) is compared: the same page of ids and scores and the same total.

Build the two indexes of the ACL records from copies of one vector store (a rebuild compacts its
store to its own papers: never point it at another collection's), e.g.:

    cp -r bench/.vectors/300000 /tmp/mc/vectors-w; cp -r bench/.vectors/300000 /tmp/mc/vectors-o
    SEARCHSVC_INDEX_DIR=/tmp/mc/windex SEARCHSVC_VECTOR_STORE=/tmp/mc/vectors-w searchsvc rebuild ACL.jsonl
    SEARCHSVC_BACKEND=opensearch SEARCHSVC_OPENSEARCH_URL=URLS SEARCHSVC_OPENSEARCH_INDEX=mc-acl \\
        SEARCHSVC_INDEX_DIR=/tmp/mc/oindex SEARCHSVC_VECTOR_STORE=/tmp/mc/vectors-o searchsvc rebuild ACL.jsonl
    python -m bench meaning_candidates --whoosh /tmp/mc/windex /tmp/mc/vectors-w \\
        --opensearch URLS mc-acl /tmp/mc/oindex /tmp/mc/vectors-o --requests 300
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from typing import Any

from bench import corpus, mix
from bench.query import _service
from searchsvc.backends import open_backend
from searchsvc.backends.opensearch.word_rescoring import plain_words
from searchsvc.core.errors import SearchsvcError
from searchsvc.core.query import parse
from searchsvc.settings import Settings, load_settings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--whoosh", nargs=2, metavar=("INDEX_DIR", "VECTOR_STORE"))
    parser.add_argument("--opensearch", nargs=4, metavar=("URLS", "ALIAS", "INDEX_DIR", "VECTOR_STORE"))
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--nearest", type=int, default=100, help="K, the meaning_candidates setting compared with 0")
    args = parser.parse_args(argv)
    engines: dict[str, Settings] = {}
    if args.whoosh:
        engines["whoosh"] = _settings({"index_dir": args.whoosh[0], "vector_store": args.whoosh[1]})
    if args.opensearch:
        urls, alias, index_dir, store = args.opensearch
        engines["opensearch"] = _settings(
            {"backend": "opensearch", "opensearch_url": urls, "opensearch_index": alias}
            | {"index_dir": index_dir, "vector_store": store}
        )
    requests = mix.generate(corpus.load(corpus.ACL), args.requests)
    print(f"{len(requests)} requests of the ACL mix, K = {args.nearest}; load before {os.getloadavg()}")
    for name, settings in engines.items():
        print(f"{name}: {_costs(settings, requests, args.nearest)}; load {os.getloadavg()[0]:.2f}", flush=True)
    if len(engines) == 2:
        print(_compared(list(engines.values()), requests, args.nearest))


def _settings(overrides: dict[str, Any]) -> Settings:
    return load_settings(overrides, environ={})


def _costs(settings: Settings, requests: list[mix.MixQuery], nearest: int) -> str:
    asks = {count: _service(open_backend(replace(settings, meaning_candidates=count))) for count in (0, nearest)}
    for request in requests[:10]:  # warm both
        for ask in asks.values():
            ask(request)
    times: dict[int, list[float]] = {count: [] for count in asks}
    grew = 0
    for request in requests:
        totals = {}
        for count, ask in asks.items():
            started = time.perf_counter()
            totals[count] = ask(request).total
            times[count].append((time.perf_counter() - started) * 1000)
        grew += totals[nearest] > totals[0]
    (p50_off, p95_off), (p50_on, p95_on) = (_percentiles(times[count]) for count in (0, nearest))
    return (
        f"K=0 p50 {p50_off:.1f} ms p95 {p95_off:.1f} ms; K={nearest} p50 {p50_on:.1f} ms p95 {p95_on:.1f} ms; "
        f"ratio p50 {p50_on / p50_off:.2f}x p95 {p95_on / p95_off:.2f}x; totals grown {grew} of {len(requests)}"
    )


def _percentiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def _compared(engines: list[Settings], requests: list[mix.MixQuery], nearest: int) -> str:
    asks = [_service(open_backend(replace(settings, meaning_candidates=nearest))) for settings in engines]
    plain = same = 0
    differ = []
    for request in requests:
        try:
            if not request.q or not plain_words(parse(request.q)):
                continue
        except SearchsvcError:
            continue
        plain += 1
        answers = [ask(request) for ask in asks]
        pages = [(answer.total, [(hit.id, hit.score) for hit in answer.hits]) for answer in answers]
        if pages[0] == pages[1]:
            same += 1
        else:
            differ.append(request.q)
    return f"plain-word requests: {plain}; the same page, scores and total on both: {same}; differ: {differ[:5]}"


if __name__ == "__main__":
    main()
