"""Author pages benchmark: `/authors/<name>` (HTML) and `/api/authors/<name>` (JSON) on a built index.

The target: "ACL records: an author with 100+ papers renders in < 100 ms p50".

1. Opens the app on `--index-dir` in this process (`create_app`, settings from defaults, the
   index and ranking by meaning off: an author's page has no query to rank) and lists every
   author with their paper count (`facet_values("author", "", ...)`).
2. Picks the authors with `--heavy` or more papers (all of them, up to `--authors`) and a spread
   of authors with 10–30 papers (evenly spaced through that list).
3. Times both pages of each author through the Flask test client: a warm-up, then `--rounds`
   rounds, each round every author's HTML page then API in turn (so load drifts hit all alike).
   p50/p95 per group and page, and each author's own p50 (the target is judged on the worst
   author's p50).
4. Splits an author profile into its parts, in process, for the same authors: the filtered
   search (one page, facets) and the co-authors (every paper exported, author lists counted);
   and a cProfile of the heaviest author's HTML page (top functions by cumulative time).
5. With `--gunicorn`, the same URLs through real gunicorn (the Procfile's `web:` line, one
   worker, one client, one connection per request).

    python -m bench authors --index-dir DIR [--rounds 30] [--gunicorn] [--out bench/results/authors.json]
"""

from __future__ import annotations

import argparse
import cProfile
import http.client
import io
import os
import pstats
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bench.measure import latency_summary, machine, percentile, report, table
from bench.server import procfile_web
from searchsvc.core.model import SearchRequest
from searchsvc.core.text import fold
from searchsvc.operations import search as searching

TARGET_P50_MS = 100.0
HEAVY = 100  # papers: the target's "100+"
LIGHT = (10, 30)  # papers: the spread of ordinary authors
WARMUP = 2  # requests of each URL before measuring
PAGES = ("html", "api")


def urls(name: str) -> dict[str, str]:
    return {"html": f"/authors/{quote(name, safe='')}", "api": f"/api/authors/{quote(name, safe='')}"}


def pick_authors(backend: Any, heavy: int, light: int) -> dict[str, list[tuple[str, int]]]:
    """The authors with `HEAVY`+ papers (most first, up to `heavy`) and `light` authors spread
    evenly through those with 10–30 papers."""
    listed = searching.facet_values(backend, "author", "", SearchRequest(), 1_000_000).values
    counts = [(str(value.value), value.count) for value in listed]
    many = [item for item in counts if item[1] >= HEAVY][:heavy]
    ordinary = [item for item in counts if LIGHT[0] <= item[1] <= LIGHT[1]]
    step = max(1, len(ordinary) // light)
    return {f"{HEAVY}+ papers": many, f"{LIGHT[0]}–{LIGHT[1]} papers": ordinary[::step][:light]}


def time_pages(get: Any, groups: dict[str, list[tuple[str, int]]], rounds: int) -> dict[str, Any]:
    """Every author's two pages, `rounds` times, interleaved; latency per group and page, and per author."""
    authors = [name for members in groups.values() for name, _ in members]
    for name in authors:
        for url in urls(name).values():
            for _ in range(WARMUP):
                get(url)
    samples: dict[str, dict[str, list[float]]] = {name: {page: [] for page in PAGES} for name in authors}
    for _ in range(rounds):
        for name in authors:
            for page, url in urls(name).items():
                started = time.perf_counter()
                status = get(url)
                samples[name][page].append((time.perf_counter() - started) * 1000)
                if status != 200:
                    raise RuntimeError(f"{url} answered {status}")
    result = {}
    for group, members in groups.items():
        result[group] = {
            page: {
                **latency_summary([s for name, _ in members for s in samples[name][page]]),
                "worst_author_p50": max(round(percentile(samples[name][page], 0.5), 2) for name, _ in members),
            }
            for page in PAGES
        }
        result[group]["authors"] = [
            {
                "name": name,
                "papers": papers,
                **{f"{page}_p50": round(percentile(samples[name][page], 0.5), 2) for page in PAGES},
            }
            for name, papers in members
        ]
    return result


def parts(backend: Any, groups: dict[str, list[tuple[str, int]]], rounds: int) -> dict[str, Any]:
    """An author profile's two costs, as `searchsvc.operations.authors.author_profile` incurs them: the
    filtered search (default page size) and the co-authors: the export of every paper with its
    stored fields, then the count of their author lists (each name folded to leave the author out)."""
    per_page = backend.settings.default_per_page
    limit = backend.settings.max_export
    result = {}
    for group, members in groups.items():
        search, export, count = [], [], []
        for _ in range(rounds):
            for name, _papers in members:
                filtered = SearchRequest(author=(name,), per_page=per_page)
                started = time.perf_counter()
                searching.search(backend, filtered)
                searched = time.perf_counter()
                papers = searching.export(backend, replace(filtered, sort="newest"), limit)
                exported = time.perf_counter()
                Counter(other for paper in papers for other in set(paper.authors) if fold(other) != fold(name))
                counted = time.perf_counter()
                search.append((searched - started) * 1000)
                export.append((exported - searched) * 1000)
                count.append((counted - exported) * 1000)
        result[group] = {
            "search_ms": latency_summary(search),
            "export_ms": latency_summary(export),
            "count_ms": latency_summary(count),
        }
    return result


def profile_page(client: Any, url: str, top: int = 20) -> str:
    """cProfile of `url` fetched 10 times: the top functions of searchsvc, Whoosh and the template
    rendering by cumulative time (cProfile's overhead inflates the times about threefold)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(10):
        client.get(url)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(r"searchsvc/|whoosh/|templating", top)
    return out.getvalue()


def through_gunicorn(index_dir: Path, groups: dict[str, list[tuple[str, int]]], rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as work:
        with procfile_web(index_dir, 1, Path(work) / "gunicorn.log", SEARCHSVC_SEMANTIC_RANKING="false") as server:

            def get(url: str) -> int:
                connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
                connection.request("GET", url)
                response = connection.getresponse()
                response.read()
                connection.close()
                return response.status

            return time_pages(get, groups, rounds)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", type=Path, required=True, help="a published index of the ACL records")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--authors", type=int, default=12, help="authors in each group")
    parser.add_argument("--gunicorn", action="store_true", help="also through real gunicorn (one worker)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    for variable in [name for name in os.environ if name.startswith("SEARCHSVC_")]:
        del os.environ[variable]  # settings from defaults and the ones given here only
    from searchsvc import create_app

    app = create_app({"index_dir": args.index_dir, "semantic_ranking": False})
    backend = app.extensions["searchsvc"].backend
    client = app.test_client()
    groups = pick_authors(backend, args.authors, args.authors)
    load_before = machine()["load_average_1_5_15"]
    in_process = time_pages(lambda url: client.get(url).status_code, groups, args.rounds)
    split = parts(backend, groups, max(1, args.rounds // 3))
    heaviest = next(iter(groups.values()))[0][0]
    profile = profile_page(client, urls(heaviest)["html"])
    served = through_gunicorn(args.index_dir, groups, max(1, args.rounds // 3)) if args.gunicorn else None
    result = {
        "index": {k: v for k, v in backend.status().items() if k in ("generation", "doc_count", "engine", "built_at")},
        "target_p50_ms": TARGET_P50_MS,
        "rounds": args.rounds,
        "groups": {group: [{"name": n, "papers": p} for n, p in members] for group, members in groups.items()},
        "in_process": in_process,
        "parts": split,
        "gunicorn": served,
        "profile_heaviest_html": profile,
        "load_average_before": load_before,
        "machine": machine(),
    }
    report(result, text(result), args.out)


def text(result: dict[str, Any]) -> str:
    target = result["target_p50_ms"]
    heavy = next(iter(result["in_process"]))
    rows = []
    for where in ("in_process", "gunicorn"):
        for group, pages in (result[where] or {}).items():
            for page in PAGES:
                s = pages[page]
                rows.append([where.replace("_", "-"), group, page, s["n"], s["p50"], s["p95"], s["worst_author_p50"]])
    met = all(
        result[where][heavy][page]["worst_author_p50"] < target
        for where in ("in_process", "gunicorn")
        if result[where]
        for page in PAGES
    )
    part_rows = [
        [group, *(f"{p[f'{part}_ms']['p50']} / {p[f'{part}_ms']['p95']}" for part in ("search", "export", "count"))]
        for group, p in result["parts"].items()
    ]
    authors = [
        [group, a["name"], a["papers"], a["html_p50"], a["api_p50"]]
        for group, pages in result["in_process"].items()
        for a in pages["authors"]
    ]
    m = result["machine"]
    return "\n\n".join(
        [
            f"# Author pages on {result['index']['doc_count']} records ({result['index']['generation']})",
            f"Target: an author with {HEAVY}+ papers renders in < {target:g} ms p50 — "
            + ("**met**" if met else "**missed**")
            + f" (worst author's p50 in the {heavy} group, both pages, every way measured).",
            f"Load average (1, 5, 15 min): {result['load_average_before']} before, "
            f"{m['load_average_1_5_15']} after; {m['cpus']} × {m['cpu_model']}, Python {m['python']}.",
            "## Latency (ms)\n\n"
            + table(["through", "authors", "page", "requests", "p50", "p95", "worst author's p50"], rows),
            "## Where the time goes, in process (p50 / p95 ms per profile)\n\n"
            + table(["authors", "search", "co-authors: export", "co-authors: count"], part_rows),
            "## Per author, in process (p50 ms)\n\n" + table(["group", "author", "papers", "html", "api"], authors),
            "## cProfile of the heaviest author's HTML page (10 requests)\n\n```\n"
            + result["profile_heaviest_html"].strip()
            + "\n```",
        ]
    )
