"""Scale curve: build time, query latency and worker memory at about 30k, 100k and 300k records.

For each size: the corpus (the real ACL records, then labelled synthetic ones, see
bench/corpus.py), `searchsvc rebuild` and tantivy builds measured as in bench/build.py (the
bare single-writer Whoosh build only up to `--bare-build-max` records: it takes ~10 s per
1,000 records), the query mix through gunicorn from the Procfile (clients = workers), and
the same requests in-process through the service, bare Whoosh (its own API over the
service's index files, see bench/bare_whoosh.py) and tantivy. Writes scale.json, scale.md
and scale.png (matplotlib, Agg).

Lexical ranking only by default. `--semantic` ranks by meaning too, with the default encoder:
each rebuild embeds the papers its vector store lacks (reported: how many, in how long), and
the store is kept between runs and sizes (`--vector-store`, default bench/.vectors), so sizes in
increasing order embed each paper once (the larger corpus begins with the smaller one).

    python -m bench scale [--sizes 0,100000,300000] [--requests 200] [--semantic [--vector-store DIR]]
                          [--out bench/results/scale.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench import corpus, mix
from bench.bare_whoosh import BareSearcher
from bench.build import build_once
from bench.measure import VECTOR_STORE, machine, mib, table
from bench.query import WARMUP, _service, http_load, in_process
from bench.server import procfile_web
from bench.tantivy_ref import TantivySearcher
from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.settings import load_settings

# Without --semantic: the lexical path, which every search runs anyway.
LEXICAL = {"SEARCHSVC_SEMANTIC_RANKING": "false"}


def one_size(
    records: int, requests: int, local_requests: int, workers: int, bare_build_max: int, vector_store: Path | None
) -> dict[str, Any]:
    """One corpus size; `vector_store`: rank by meaning, with the vectors kept there (None: lexical only)."""
    ranking = {"SEARCHSVC_VECTOR_STORE": str(vector_store)} if vector_store else LEXICAL
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as scratch:
        work = Path(scratch)
        source = work / "corpus.jsonl"
        described = corpus.prepare(source, records)
        engines = ["searchsvc", "tantivy"] + (["whoosh"] if described["records"] <= bare_build_max else [])
        builds = {engine: build_once(engine, source, work, **ranking) for engine in engines}
        if "whoosh" in builds:
            shutil.rmtree(work / "whoosh-index")
        loaded = corpus.load(source)
        sequence = mix.generate(loaded, requests)
        warmup = mix.generate(loaded, WARMUP, seed=mix.SEED + 1)
        index_dir = work / "searchsvc-index"
        with procfile_web(index_dir, workers, work / "gunicorn.log", **ranking) as server:
            warm = http_load(server, warmup, workers)  # each worker's first search opens the index: kept apart
            load = http_load(server, sequence, workers)
        stored = {"vector_store": str(vector_store)} if vector_store else {}
        chosen = {"index_dir": index_dir, "semantic_ranking": bool(vector_store), **stored}
        backend = WhooshBackend(load_settings(chosen, environ={}))
        generation = index_dir / "generations" / (index_dir / "CURRENT").read_text().strip()
        bare = BareSearcher(generation)
        reference = TantivySearcher(work / "tantivy-index")
        local_engines = {"searchsvc": _service(backend), "whoosh": bare.search, "tantivy": reference.search}
        in_process(warmup[:10], local_engines)
        local = in_process(sequence[:local_requests], local_engines)
        bare.close()
    warmed = {key: warm[key] for key in ("requests", "errors", "error_statuses", "latency_ms")}
    return {"corpus": described, "builds": builds, "warmup": warmed, "http": load, "in_process": local}


def plot(result: dict[str, Any], target: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [row["corpus"]["records"] for row in result["sizes"]]
    figure, (latency, build, memory) = plt.subplots(1, 3, figsize=(15, 4.5))
    for label, pick in (
        ("gunicorn p50", lambda r: r["http"]["latency_ms"]["p50"]),
        ("gunicorn p95", lambda r: r["http"]["latency_ms"]["p95"]),
        ("gunicorn p99", lambda r: r["http"]["latency_ms"]["p99"]),
        ("bare Whoosh in-process p50", lambda r: r["in_process"]["whoosh"]["latency_ms"]["p50"]),
        ("bare Whoosh in-process p95", lambda r: r["in_process"]["whoosh"]["latency_ms"]["p95"]),
        ("tantivy in-process p50", lambda r: r["in_process"]["tantivy"]["latency_ms"]["p50"]),
    ):
        latency.plot(sizes, [pick(r) for r in result["sizes"]], marker="o", label=label)
    latency.axhline(1000, color="grey", linestyle=":", label="1 s (p95 target)")
    latency.set(title="Query mix latency", xlabel="records", ylabel="ms", xscale="log", yscale="log")
    latency.legend(fontsize=7)
    for engine, label in (
        ("searchsvc", "searchsvc rebuild"),
        ("whoosh", "bare Whoosh, one writer"),
        ("tantivy", "tantivy"),
    ):
        points = [
            (r["corpus"]["records"], r["builds"][engine]["seconds"]) for r in result["sizes"] if engine in r["builds"]
        ]
        if points:
            build.plot(*zip(*points, strict=True), marker="o", label=label)
    build.set(title="Build time", xlabel="records", ylabel="seconds", xscale="log", yscale="log")
    build.legend(fontsize=7)
    memory.plot(
        sizes,
        [mib(max(r["http"]["worker_peak_rss_bytes"])) for r in result["sizes"]],
        marker="o",
        label="largest gunicorn worker, peak RSS",
    )
    memory.axhline(1024, color="grey", linestyle=":", label="1 GiB (target)")
    memory.set(title="Memory per worker", xlabel="records", ylabel="MiB", xscale="log")
    memory.legend(fontsize=7)
    figure.suptitle("searchsvc at scale (ACL Anthology records + labelled synthetic extension)")
    figure.tight_layout()
    figure.savefig(target, dpi=110)


def markdown(result: dict[str, Any]) -> str:
    rows = []
    for r in result["sizes"]:
        http, local, builds = r["http"], r["in_process"], r["builds"]
        rows.append(
            [
                f"{r['corpus']['records']:,} ({r['corpus']['synthetic']:,} synthetic)",
                builds["searchsvc"]["seconds"],
                builds.get("whoosh", {}).get("seconds", "—"),
                builds["tantivy"]["seconds"],
                mib(builds["searchsvc"]["index_bytes"]),
                http["throughput_rps"],
                http["latency_ms"]["p50"],
                http["latency_ms"]["p95"],
                http["latency_ms"]["p99"],
                http["errors"],
                mib(max(http["worker_peak_rss_bytes"])),
                local["searchsvc"]["latency_ms"]["p50"],
                local["whoosh"]["latency_ms"]["p50"],
                local["whoosh"]["latency_ms"]["p95"],
                local["tantivy"]["latency_ms"]["p50"],
            ]
        )
    header = [
        "records",
        "rebuild s",
        "bare Whoosh build s",
        "tantivy build s",
        "index MiB",
        "gunicorn req/s",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "errors",
        "worker RSS MiB",
        "in-process searchsvc p50",
        "bare Whoosh p50",
        "bare Whoosh p95",
        "tantivy p50",
    ]
    ranking = (
        f"ranked by meaning too ({result['encoder']} encoder)" if result.get("semantic_ranking") else "lexical ranking"
    )
    return (
        f"{result['workers']} gunicorn workers, {result['workers']} clients, {result['requests']} requests per size "
        f"(in-process: the first {result['local_requests']}), {ranking}; load average at the end "
        f"{result['machine']['load_average_1_5_15']}\n\n" + table(header, rows) + "\n\n" + by_kind(result)
    )


def by_kind(result: dict[str, Any]) -> str:
    """Through gunicorn, per kind of request; then each size's warm-up and the rebuild's embedding."""
    rows = [
        [f"{r['corpus']['records']:,}", kind, summary["n"], summary["p50"], summary["p95"], summary["p99"]]
        for r in result["sizes"]
        for kind, summary in r["http"]["by_kind_ms"].items()
    ]
    notes = []
    for r in result["sizes"]:
        build, warmup = r["builds"]["searchsvc"], r.get("warmup")
        embedded = build.get("embedded", 0)
        if embedded:
            seconds = build["embedding_seconds"]
            notes.append(
                f"- {r['corpus']['records']:,}: the rebuild embedded {embedded:,} papers (the others were stored) "
                f"in {seconds:,.0f} s, {embedded / seconds:.1f} papers/s"
            )
        if warmup:  # each worker's first search opens the index
            errors = f" {warmup['error_statuses']}" if warmup["errors"] else ""
            notes.append(
                f"- {r['corpus']['records']:,}: warm-up before the measured requests: {warmup['requests']} requests, "
                f"{warmup['errors']} errors{errors}, slowest {warmup['latency_ms']['max']:,.0f} ms"
            )
    header = ["records", "kind", "requests", "p50 ms", "p95 ms", "p99 ms"]
    return table(header, rows) + ("\n\n" + "\n".join(notes) if notes else "")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,100000,300000", help="record counts (0: the real ACL records)")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--local-requests", type=int, default=100, help="of those, how many also run in-process")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--bare-build-max", type=int, default=30_000)
    parser.add_argument("--semantic", action="store_true", help="rank by meaning too (embeds what the store lacks)")
    parser.add_argument("--vector-store", type=Path, default=VECTOR_STORE, help="with --semantic (default %(default)s)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    vector_store = args.vector_store.resolve() if args.semantic else None
    result: dict[str, Any] = {
        "workers": args.workers,
        "requests": args.requests,
        "local_requests": args.local_requests,
        "semantic_ranking": args.semantic,
        "sizes": [],
    }
    if args.semantic:
        result["encoder"] = load_settings(environ={}).encoder
    for size in (int(s) for s in args.sizes.split(",")):
        result["sizes"].append(
            one_size(size, args.requests, args.local_requests, args.workers, args.bare_build_max, vector_store)
        )
        result["machine"] = machine()
        if args.out:  # after every size, so a long run leaves what it measured
            args.out.write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result)
    print(text)
    if args.out:
        args.out.with_suffix(".md").write_text(text + "\n")
        plot(result, args.out.with_suffix(".png"))


if __name__ == "__main__":
    main()
