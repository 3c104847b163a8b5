"""Build benchmark: `searchsvc rebuild` against a bare single-writer Whoosh build and tantivy, in one run.

Each build runs as its own process (the real CLI for searchsvc), one after the other on the
same corpus file; wall time, records/s, index size on disk and the peak RSS of the process
tree (sampled every 50 ms, so the writer's child processes count) are measured.

    python -m bench build [--records N] [--rounds R] [--out bench/results/build.json]
"""

from __future__ import annotations

import argparse
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
LABELS = {
    "searchsvc": "`searchsvc rebuild` (CLI)",
    OPENSEARCH: "`searchsvc rebuild` (CLI) on OpenSearch (2 shards, 1 replica)",
    "whoosh": "bare Whoosh, same schema, one default `ix.writer()`",
    "tantivy": "tantivy 0.27 (reference)",
}


EMBEDDED = re.compile(r"(\d+) embedded in ([\d.]+) s")  # `RebuildReport.summary`


def opensearch_env(urls: str) -> dict[str, str]:
    """The settings that point searchsvc at the cluster, under an alias of the benchmark's own."""
    return {"SEARCHSVC_BACKEND": "opensearch", "SEARCHSVC_OPENSEARCH_URL": urls, "SEARCHSVC_OPENSEARCH_INDEX": "bench"}


def build_once(engine: str, source: Path, work: Path, opensearch: str | None = None, **settings: str) -> dict[str, Any]:
    """One build of `source` by `engine` into a fresh directory under `work` (or onto the
    cluster at `opensearch`: then the peak RSS is the loading client's, and the size the
    primary shards' on the cluster). `settings`: more SEARCHSVC_* variables for searchsvc."""
    target = work / f"{engine}-index"
    extra = {"PYTHONPATH": str(REPO), **settings}
    if engine == OPENSEARCH:
        assert opensearch, "the OpenSearch build needs --opensearch URLS"
        extra.update(opensearch_env(opensearch))
        # A fresh index folder holds no merge state, so the rebuild builds though the alias serves the same
        # records (an up-to-date rebuild publishes nothing); `--force` would do too, but older versions lack it.
        command = [str(VENV_BIN / "searchsvc"), "rebuild", str(source), "--index-dir", str(target)]
    elif engine == "searchsvc":
        command = [str(VENV_BIN / "searchsvc"), "rebuild", str(source), "--index-dir", str(target)]
    else:
        module = "bench.bare_whoosh" if engine == "whoosh" else "bench.tantivy_ref"
        command = [sys.executable, "-m", module, str(source), str(target)]
    run = run_measured(command, env=clean_env(**extra))
    size = opensearch_index_bytes(opensearch) if engine == OPENSEARCH and opensearch else directory_size(target)
    embedded = EMBEDDED.search(run.stdout)  # in the rebuild's summary when ranking by meaning embedded any
    return {
        "engine": engine,
        "seconds": round(run.seconds, 2),
        "cpu_seconds": round(run.cpu_seconds, 2),
        "peak_rss_bytes": run.peak_rss,
        "index_bytes": size,
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


def run(records: int, rounds: int, engines: tuple[str, ...], opensearch: str | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-build-") as scratch:
        work = Path(scratch)
        source = work / "corpus.jsonl"
        described = corpus.prepare(source, records)
        runs: list[dict[str, Any]] = []
        for number in range(rounds):
            order = engines if number % 2 == 0 else tuple(reversed(engines))  # alternate: load drifts
            for engine in order:
                shutil.rmtree(work / f"{engine}-index", ignore_errors=True)
                runs.append({"round": number, **build_once(engine, source, work, opensearch)})
    return summarise(described, runs, engines)


def summarise(described: dict[str, Any], runs: list[dict[str, Any]], engines: tuple[str, ...]) -> dict[str, Any]:
    """Best (fastest) round per engine, and each engine's time as a ratio of bare Whoosh's."""
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
                mib(row["index_bytes"]),
                mib(row["peak_rss_max_bytes"]),
            ]
        )
    head = (
        f"{described['records']:,} records ({described['synthetic']:,} synthetic) from {described['source']}; "
        f"{len(result['runs']) // len(result['best'])} round(s), best shown; load average at the end "
        f"{result['machine']['load_average_1_5_15']}\n\n"
    )
    header = [
        "build",
        "best s",
        "all rounds s",
        "records/s",
        "time / bare Whoosh",
        "CPU s",
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
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    engines = tuple(args.engines.split(",")) + ((OPENSEARCH,) if args.opensearch else ())
    result = run(args.records, args.rounds, engines, args.opensearch)
    report(result, markdown(result), args.out)


if __name__ == "__main__":
    main()
