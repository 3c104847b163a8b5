"""Suggestions on both engines: whether OpenSearch's equal Whoosh's, and what each costs (issue #34, item 4).

The same collection rebuilt on each engine, ranking by meaning off; a fixed set of prefixes of
1–5 letters, alone, after an earlier word and under a one-year filter, each suggested in process
through the suggest operation under a request budget, `--rounds` times on each engine in turn.
Per prefix: each engine's median, whether the suggestions are the same, and the words only
Whoosh offers.

    python -m bench suggest_engines --whoosh-dir DIR --opensearch-dir DIR2 [--rounds 3] [--out FILE.json]

(the cluster and alias are the settings' own: SEARCHSVC_OPENSEARCH_URL, SEARCHSVC_OPENSEARCH_INDEX).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from bench.measure import machine, report, table
from searchsvc.backends import Backend, open_backend
from searchsvc.core.deadline import request_budget
from searchsvc.core.model import SearchRequest, SuggestRequest
from searchsvc.operations.search import suggest
from searchsvc.settings import load_settings

# (typed, a year to narrow to or None): short prefixes start many words, longer ones few.
PREFIXES = (
    *(("m", "co", "la", "k", "z", "q", "x", "ph", "um")),
    *(("mod", "tran", "neur", "embed", "sema", "dial")),
    *(("language m", "translation s", "parsing de")),
)
NARROWED = (("s", 2010), ("ne", 2015))


def suggested(backend: Backend, typed: str, year: int | None) -> tuple[list[tuple[str, int]], float]:
    """The suggestions for `typed` (in `year` only, if given) and the milliseconds they took."""
    narrowing = SearchRequest(year_from=year, year_to=year) if year else SearchRequest()
    started = time.perf_counter()
    with request_budget(backend.settings.search_time_limit_ms):
        found = suggest(backend, SuggestRequest(typed, narrowing, backend.settings.suggestion_limit))
    return [(one.value, one.papers) for one in found], (time.perf_counter() - started) * 1000


def run(folders: dict[str, Path], rounds: int) -> dict[str, Any]:
    measured_on = machine()
    backends = {
        kind: open_backend(load_settings({"index_dir": folder, "backend": kind, "semantic_ranking": False}))
        for kind, folder in folders.items()
    }
    for backend in backends.values():
        suggested(backend, "a", None)  # the generation opened, the caches warm
    rows = []
    for typed, year in [*((typed, None) for typed in PREFIXES), *NARROWED]:
        found: dict[str, list[tuple[str, int]]] = {}
        times: dict[str, list[float]] = {kind: [] for kind in backends}
        for _ in range(rounds):
            for kind, backend in backends.items():
                found[kind], took = suggested(backend, typed, year)
                times[kind].append(took)
        only_whoosh = [word for word in found["whoosh"] if word not in found["opensearch"]]
        rows.append(
            {
                "typed": typed,
                "year": year,
                **{f"{kind}_ms": round(statistics.median(values), 1) for kind, values in times.items()},
                "same": found["whoosh"] == found["opensearch"],
                "only_whoosh": only_whoosh,
            }
        )
    return {"machine": measured_on, "folders": {k: str(v) for k, v in folders.items()}, "rounds": rounds, "rows": rows}


def markdown(result: dict[str, Any]) -> str:
    rows = [
        [
            f"`{row['typed']}`" + (f", {row['year']} only" if row["year"] else ""),
            row["whoosh_ms"],
            row["opensearch_ms"],
            "yes" if row["same"] else "no",
            ", ".join(f"{word} ({papers})" for word, papers in row["only_whoosh"]),
        ]
        for row in result["rows"]
    ]
    same = sum(row["same"] for row in result["rows"])
    return (
        f"Suggestions on both engines, in process (`python -m bench suggest_engines`), median of {result['rounds']} "
        f"rounds; {same} of {len(rows)} the same; load average before/after "
        f"{result['machine']['load_average_1_5_15']} / {result['load_after']}\n\n"
        + table(["typed", "Whoosh ms", "OpenSearch ms", "same", "only on Whoosh (papers)"], rows)
        + "\n"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench suggest_engines", description=__doc__.splitlines()[0])
    parser.add_argument("--whoosh-dir", type=Path, required=True, help="the index folder of a Whoosh rebuild")
    parser.add_argument("--opensearch-dir", type=Path, required=True, help="the index folder of an OpenSearch rebuild")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/results/suggest-engines.json"))
    args = parser.parse_args(argv)
    result = run({"whoosh": args.whoosh_dir, "opensearch": args.opensearch_dir}, args.rounds)
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    report(result, markdown(result), args.out)


if __name__ == "__main__":
    main()
