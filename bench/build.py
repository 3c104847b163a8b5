"""Build benchmark: `searchsvc rebuild` against a bare single-writer Whoosh build and tantivy, in one run.

Each build runs as its own process (the real CLI for searchsvc), one after the other on the
same corpus file, the order alternating round by round; wall time, CPU seconds (user and
system of the process and every process it started and waited for: the index writers),
records/s, index size on disk, the peak RSS of the process tree (sampled every 50 ms, so the
writer's child processes count) and the load average before and after each build are
measured. searchsvc ranks by words alone (`SEARCHSVC_SEMANTIC_RANKING=false`) unless
`--semantic`, so its time is the index's, not the encoder's. Bare Whoosh indexes title and
abstract once each (bench/bare_whoosh.py), as issue #35 defines it.

With `--baseline DIR` (an export or worktree of another commit) that code's `searchsvc
rebuild` runs in the same rounds: a change to indexing measured against the commit before it.

    python -m bench build [--records N] [--rounds R] [--semantic] [--baseline DIR] [--out bench/results/build.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from opensearchpy import OpenSearch

from bench import corpus
from bench.measure import REPO, VENV_BIN, clean_env, directory_size, machine, mib, report, run_measured, table

ENGINES = ("searchsvc", "whoosh", "tantivy")
OPENSEARCH = "searchsvc-opensearch"  # with --opensearch URLS: `searchsvc rebuild` onto that cluster
BASELINE = "searchsvc-baseline"  # with --baseline DIR: that checkout's `searchsvc rebuild`
LABELS = {
    "searchsvc": "`searchsvc rebuild` (CLI)",
    OPENSEARCH: "`searchsvc rebuild` (CLI) on OpenSearch (2 shards, 1 replica)",
    BASELINE: "`searchsvc rebuild` (CLI) of the baseline",
    "whoosh": "bare Whoosh: title and abstract once each, one default `ix.writer()`",
    "tantivy": "tantivy 0.27 (reference)",
}


EMBEDDED = re.compile(r"(\d+) embedded in ([\d.]+) s")  # `RebuildReport.summary`


def opensearch_env(urls: str) -> dict[str, str]:
    """The settings that point searchsvc at the cluster, under an alias of the benchmark's own."""
    return {"SEARCHSVC_BACKEND": "opensearch", "SEARCHSVC_OPENSEARCH_URL": urls, "SEARCHSVC_OPENSEARCH_INDEX": "bench"}


def build_once(
    engine: str, source: Path, work: Path, opensearch: str | None = None, baseline: Path | None = None, **settings: str
) -> dict[str, Any]:
    """One build of `source` by `engine` into a fresh directory under `work` (or onto the
    cluster at `opensearch`: then the peak RSS is the loading client's, and the size the
    primary shards' on the cluster). `settings`: more SEARCHSVC_* variables for searchsvc."""
    target = work / f"{engine}-index"
    code = baseline if engine == BASELINE and baseline else REPO
    path = os.pathsep.join(filter(None, (str(code), os.environ.get("PYTHONPATH"))))  # tantivy may live apart
    extra = {"PYTHONPATH": path, **settings}
    if engine == OPENSEARCH:
        assert opensearch, "the OpenSearch build needs --opensearch URLS"
        extra.update(opensearch_env(opensearch))
    if engine in (OPENSEARCH, "searchsvc", BASELINE):
        # A fresh index folder holds no merge state, so the rebuild builds even where the OpenSearch alias
        # serves the same records (an up-to-date rebuild publishes nothing); `--force` would do too, but
        # older versions (a --baseline) lack it.
        command = [str(VENV_BIN / "searchsvc"), "rebuild", str(source), "--index-dir", str(target)]
    else:
        module = "bench.bare_whoosh" if engine == "whoosh" else "bench.tantivy_ref"
        command = [sys.executable, "-m", module, str(source), str(target)]
    load_before = [round(x, 2) for x in os.getloadavg()]
    run = run_measured(command, env=clean_env(**extra))
    size = opensearch_index_bytes(opensearch) if engine == OPENSEARCH and opensearch else directory_size(target)
    embedded = EMBEDDED.search(run.stdout)  # in the rebuild's summary when ranking by meaning embedded any
    return {
        "engine": engine,
        "seconds": round(run.seconds, 2),
        "cpu_seconds": round(run.cpu_seconds, 2),
        "peak_rss_bytes": run.peak_rss,
        "index_bytes": size,
        "load_before": load_before,
        "load_after": [round(x, 2) for x in os.getloadavg()],
        **({"embedded": int(embedded[1]), "embedding_seconds": float(embedded[2])} if embedded else {}),
    }


def opensearch_index_bytes(urls: str) -> int:
    """Bytes of the primary shards of the index the benchmark alias points at."""
    client = OpenSearch(hosts=urls.split(","))
    try:
        (index,) = client.indices.get_alias(name=opensearch_env(urls)["SEARCHSVC_OPENSEARCH_INDEX"])
        stats = client.indices.stats(index=index, metric="store")
        return int(stats["indices"][index]["primaries"]["store"]["size_in_bytes"])
    finally:
        client.close()


def run(
    records: int,
    rounds: int,
    engines: tuple[str, ...],
    opensearch: str | None = None,
    semantic: bool = False,
    baseline: Path | None = None,
) -> dict[str, Any]:
    settings = {} if semantic else {"SEARCHSVC_SEMANTIC_RANKING": "false"}
    with tempfile.TemporaryDirectory(prefix="bench-build-") as scratch:
        work = Path(scratch)
        source = work / "corpus.jsonl"
        described = corpus.prepare(source, records)
        runs: list[dict[str, Any]] = []
        for number in range(rounds):
            order = engines if number % 2 == 0 else tuple(reversed(engines))  # alternate: load drifts
            for engine in order:
                shutil.rmtree(work / f"{engine}-index", ignore_errors=True)
                runs.append({"round": number, **build_once(engine, source, work, opensearch, baseline, **settings)})
    return {**summarise(described, runs, engines), "semantic_ranking": semantic, "baseline": str(baseline or "")}


def summarise(described: dict[str, Any], runs: list[dict[str, Any]], engines: tuple[str, ...]) -> dict[str, Any]:
    """Best (fastest) round per engine, and each engine's wall time and CPU seconds as ratios of bare
    Whoosh's: of the best rounds, and round by round (builds run next to each other, at one load)."""
    best = {}
    for engine in engines:
        mine = [r for r in runs if r["engine"] == engine]
        fastest = min(mine, key=lambda r: r["seconds"])
        best[engine] = {
            **fastest,
            "records_per_s": round(described["records"] / fastest["seconds"], 1),
            "all_seconds": [r["seconds"] for r in mine],
            "peak_rss_max_bytes": max(r["peak_rss_bytes"] for r in mine),
        }
    if "whoosh" in best:
        for engine in best:
            best[engine]["ratio_to_whoosh"] = round(best[engine]["seconds"] / best["whoosh"]["seconds"], 3)
            best[engine]["cpu_ratio_to_whoosh"] = round(best[engine]["cpu_seconds"] / best["whoosh"]["cpu_seconds"], 3)
            mine = {r["round"]: r for r in runs if r["engine"] == engine}
            bare = {r["round"]: r for r in runs if r["engine"] == "whoosh"}
            best[engine]["round_ratios"] = [
                [
                    round(mine[n]["seconds"] / bare[n]["seconds"], 3),
                    round(mine[n]["cpu_seconds"] / bare[n]["cpu_seconds"], 3),
                ]
                for n in sorted(mine)
                if n in bare
            ]
    return {"corpus": described, "machine": machine(), "runs": runs, "best": best}


def markdown(result: dict[str, Any]) -> str:
    described = result["corpus"]
    rows = []
    for engine, row in result["best"].items():
        rows.append(
            [
                LABELS[engine],
                row["seconds"],
                ", ".join(map(str, row["all_seconds"])),
                row["records_per_s"],
                row.get("ratio_to_whoosh", ""),
                row["cpu_seconds"],
                row.get("cpu_ratio_to_whoosh", ""),
                "; ".join(f"{wall}, {cpu}" for wall, cpu in row.get("round_ratios", [])),
                " → ".join(
                    str(r[k][0]) for r in result["runs"] if r["engine"] == engine for k in ("load_before", "load_after")
                ),
                mib(row["index_bytes"]),
                mib(row["peak_rss_max_bytes"]),
            ]
        )
    head = (
        f"{described['records']:,} records ({described['synthetic']:,} synthetic) from {described['source']}; "
        f"{len(result['runs']) // len(result['best'])} round(s), best shown; ranking by meaning "
        f"{'on' if result.get('semantic_ranking') else 'off'}; {result['machine']['cpus']} cores "
        f"({result['machine']['cpu_model']}); load average at the end {result['machine']['load_average_1_5_15']}\n\n"
    )
    header = [
        "build",
        "best s",
        "all rounds s",
        "records/s",
        "time / bare Whoosh",
        "CPU s",
        "CPU / bare Whoosh",
        "per round: time, CPU / bare Whoosh",
        "1-min load before → after, each round",
        "index MiB",
        "peak RSS MiB",
    ]
    return head + table(header, rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=0, help="0: the 29,580 ACL records; more adds synthetic ones")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--opensearch", metavar="URLS", help="also `searchsvc rebuild` onto this OpenSearch cluster")
    parser.add_argument("--semantic", action="store_true", help="searchsvc ranks by meaning too (embeds what it lacks)")
    parser.add_argument("--baseline", type=Path, metavar="DIR", help="also rebuild with the searchsvc code in DIR")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    engines = tuple(args.engines.split(","))
    if "tantivy" in engines and importlib.util.find_spec("tantivy") is None:  # found out only after minutes of building
        parser.error(
            "tantivy is not installed (a reference, no dependency of searchsvc: `pip install tantivy==0.27.0`"
            " apart, on PYTHONPATH); or leave it out: --engines searchsvc,whoosh"
        )
    engines += (OPENSEARCH,) if args.opensearch else ()
    engines += (BASELINE,) if args.baseline else ()
    result = run(args.records, args.rounds, engines, args.opensearch, args.semantic, args.baseline)
    report(result, markdown(result), args.out)


if __name__ == "__main__":
    main()
