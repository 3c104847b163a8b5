"""What the sources say beyond the text, searched at size (issue #31): the venue filter and its
lookup, date ranges, the `cited` and `added` sorts and `added_since`, each beside the same searches
without them, in-process through the search recipe (parse, match, rank, facets, highlights) under
the request budget, as a server runs it, ranking by meaning off; the variants take turns request
by request after a warm-up of each.

The ACL records name their proceedings (`booktitle`, 768 venues) and month, which our JSON lines
read as `venue` and `date` ("2019-11"): they are copied there. A synthetic record of the 300k corpus
(bench/corpus.py) gets a real venue of its year and a random month; every record a synthetic
citation count from a heavy-tailed distribution, none for a fifth of them (labelled so). After the rebuild one
change adds 20 papers, so arrivals differ and `added_since` selects that change's papers.

    python -m bench publication --records 300000 --index-dir DIR [--requests 200] [--out FILE.json]

An index built by an earlier run in DIR is reused (only the change is made again).
"""

from __future__ import annotations

import argparse
import calendar
import json
import random
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.corpus import load, prepare
from bench.measure import latency_summary, machine, report, table
from bench.mix import generate
from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.arrival import since_second
from searchsvc.core.deadline import request_budget
from searchsvc.core.errors import SearchsvcError
from searchsvc.core.model import SearchRequest
from searchsvc.operations import update
from searchsvc.operations.rebuild import rebuild
from searchsvc.operations.search import facet_values, search
from searchsvc.settings import load_settings

SEED = 20261204
WARMUP = 20
CHANGE = 20  # papers the change after the rebuild adds


_MONTHS = {name: number for number, name in enumerate(calendar.month_name) if name}


def with_publication(record: dict[str, Any], rng: random.Random, venues: dict[int, list[str]]) -> dict[str, Any]:
    """`record` with its venue, date and citation count (see the module's docstring); `venues`: each
    year's real venues, one for a synthetic record."""
    year = record.get("year")
    added: dict[str, Any] = {}
    venue = record.get("booktitle") or (rng.choice(venues[year]) if venues.get(year) else None)
    if venue:
        added["venue"] = venue
    if year:
        month = _MONTHS.get(re.split(r"[^A-Za-z]", str(record.get("month") or ""))[0]) or rng.randint(1, 12)
        added["date"] = f"{year}-{month:02d}"
    if rng.random() >= 0.2:
        added["citations"] = int(rng.paretovariate(1.2)) - 1
        added["citations_source"] = "synthetic"
    return {**record, **added}


def corpus(target: Path, records: int) -> Path:
    """The benchmark corpus of `records` records (0: the real ACL ones), with publication fields."""
    plain = target.with_suffix(".plain.jsonl")
    prepare(plain, records)
    rng = random.Random(SEED)
    venues: dict[int, list[str]] = {}
    for record in load():
        if record.get("year") and record.get("booktitle"):
            venues.setdefault(record["year"], []).append(record["booktitle"])
    with target.open("w", encoding="utf-8") as sink:
        for record in load(plain):
            sink.write(json.dumps(with_publication(record, rng, venues), ensure_ascii=False) + "\n")
    plain.unlink()
    return target


def timed(
    backend: WhooshBackend, variants: dict[str, list[Callable[[], object]]]
) -> dict[str, tuple[list[float], int]]:
    """Each request's milliseconds under the request budget, and how many ran out of it, per variant.
    The variants take turns request by request, so the file cache and the load treat them alike."""
    runs: dict[str, tuple[list[float], int]] = {name: ([], 0) for name in variants}
    for number in range(max(len(requests) for requests in variants.values())):
        for name, requests in variants.items():
            if number >= len(requests):
                continue
            samples, failed = runs[name]
            started = time.perf_counter()
            try:
                with request_budget(backend.settings.search_time_limit_ms):
                    requests[number]()
            except SearchsvcError:
                failed += 1
            samples.append((time.perf_counter() - started) * 1000)
            runs[name] = (samples, failed)
    return runs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000, help="0: the real ACL records")
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    backend = WhooshBackend(load_settings({"index_dir": args.index_dir, "semantic_ranking": False}, environ={}))
    with tempfile.TemporaryDirectory(dir=args.index_dir.parent) as work:
        source = corpus(Path(work) / "records.jsonl", args.records)
        build_seconds = None
        if backend.published() is None:
            started = time.perf_counter()
            rebuild(backend, [source])
            build_seconds = time.perf_counter() - started
        records = load(source)
    rng = random.Random(SEED)
    # Papers of their own: another id and no DOI (which would merge them into the paper they copy).
    fresh = [
        {**record, "id": f"bench-added-{time.time_ns()}-{n}", "doi": None}
        for n, record in enumerate(rng.sample(records, CHANGE))
    ]
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "change.jsonl"
        path.write_text("".join(json.dumps(record) + "\n" for record in fresh), encoding="utf-8")
        change = update.add(backend, [path], embed=False)
    assert change.changed_at is not None and len(change.added) == CHANGE
    since = since_second(change.changed_at)

    words = [SearchRequest(q=query.q) for query in generate(records, 4 * args.requests) if query.kind == "words"]
    words = words[: args.requests]
    venues = Counter(record["venue"] for record in records if record.get("venue"))
    venue_rng = random.Random(SEED)
    picked = venue_rng.choices(list(venues), weights=list(venues.values()), k=len(words))
    years = sorted({record["year"] for record in records if record.get("year")})
    spans = [(year, venue_rng.randint(1, 6)) for year in venue_rng.choices(years, k=len(words))]
    browse = SearchRequest(q="")

    def searches(requests: list[SearchRequest]) -> list[Callable[[], object]]:
        return [lambda wanted=wanted: search(backend, wanted) for wanted in requests]

    variants: dict[str, list[Callable[[], object]]] = {
        "words": searches(words),
        "words + venue filter": searches([replace(w, venue=(v,)) for w, v in zip(words, picked, strict=True)]),
        "words + date range (months)": searches(
            [
                replace(w, date_from=f"{y}-{m:02d}-01", date_to=f"{y}-{m + 5:02d}-28")
                for w, (y, m) in zip(words, spans, strict=True)
            ]
        ),
        "words, sort=cited": searches([replace(w, sort="cited") for w in words]),
        "words, sort=added": searches([replace(w, sort="added") for w in words]),
        "words + added_since (the change)": searches([replace(w, added_since=since) for w in words]),
        "browse, sort=newest": searches([replace(browse, sort="newest", page=p % 50 + 1) for p in range(len(words))]),
        "browse, sort=cited": searches([replace(browse, sort="cited", page=p % 50 + 1) for p in range(len(words))]),
        "browse, sort=added": searches([replace(browse, sort="added", page=p % 50 + 1) for p in range(len(words))]),
        "browse + added_since": searches([replace(browse, added_since=since) for _ in words]),
        "venue lookup (2 letters), words": [
            lambda w=w, v=v: facet_values(backend, "venue", v.split()[-2][:2], w, 10)
            for w, v in zip(words, picked, strict=True)
        ],
    }
    timed(backend, {name: requests[:WARMUP] for name, requests in variants.items()})
    runs = timed(backend, variants)
    found = search(backend, replace(browse, added_since=since))
    result: dict[str, Any] = {
        "index_dir": str(args.index_dir),
        "records": len(records),
        "papers": search(backend, browse).total,
        "venues": len(venues),
        "publication_fields": "venue and month from the ACL records (synthetic records: a real venue of the "
        "year, a random month); citation counts synthetic",
        "build_seconds": build_seconds,
        "added_since_found": found.total,
        "budget_ms": backend.settings.search_time_limit_ms,
        "runs": {
            name: {**latency_summary(samples), "out_of_budget": failed} for name, (samples, failed) in runs.items()
        },
        "machine": machine(),
    }
    base = result["runs"]["words"]
    rows = [
        [name, s["n"], s["out_of_budget"], s["p50"], s["p95"], s["p99"], s["max"], f"{s['p95'] / base['p95']:.2f}×"]
        for name, s in result["runs"].items()
    ]
    text = (
        f"{result['papers']:,} papers ({len(records):,} records; venues and months from the ACL records, "
        "citation counts synthetic), "
        f"{len(venues):,} venues; `added_since` found {found.total} (the change added {CHANGE}); "
        f"load average at the end {result['machine']['load_average_1_5_15']}\n\n"
        + table(["requests", "n", "out of budget", "p50 ms", "p95 ms", "p99 ms", "max ms", "p95 / words"], rows)
    )
    report(result, text, args.out)


if __name__ == "__main__":
    main()
