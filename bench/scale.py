"""Scale curve: build time, query latency and memory at about 30k, 100k and 300k records, per engine.

For each size: the corpus (the real ACL records, then labelled synthetic ones, see
bench/corpus.py), built by `searchsvc rebuild` on each engine asked for (`--engines`: the
embedded Whoosh index, and/or the OpenSearch backend on a cluster) and measured as in
bench/build.py; then, for each ranking asked for (`--rankings`: by words alone, and/or by
meaning too), the query mix through gunicorn from the Procfile (`--workers`, default the
Procfile's 2) at each client count (`--clients`), with each worker's and each OpenSearch
node's peak RSS. With the Whoosh engine, the same requests also run in-process through the
service, bare Whoosh (its own API over the service's index files, see bench/bare_whoosh.py)
and tantivy, and tantivy builds the corpus too (the bare single-writer Whoosh build only up to
`--bare-build-max` records: it takes ~10 s per 1,000 records); `--no-references` leaves
those out. Writes scale.json, scale.md and scale.png (matplotlib, Agg).

Ranking by meaning uses the default encoder, or the one `--encoder` names: each rebuild embeds the
papers its vector store lacks (reported: how many, in how long), and the stores are kept between
runs and engines, one per size (`--vector-store`, default bench/.vectors, holds a folder per
record count): a store
shared by sizes was compacted by the smaller corpus's rebuild to that corpus's papers, which
threw away the larger one's vectors (270,000 of them, 50 minutes of embedding, on 5 Dec).
Each engine builds once per size, with the
vectors when any ranking asked for needs them; a ranking by words alone is served from the
same index with ranking by meaning switched off, as a user would switch it.

OpenSearch: `--opensearch URLS` names a cluster; without it, the 2-node test cluster of
tests/helpers/opensearch_cluster.py is started for the run (`--heap` per node) and stopped after.

    python -m bench scale [--sizes 0,100000,300000] [--requests 200] [--rankings lexical,semantic]
                          [--engines whoosh,opensearch] [--clients 2,4] [--vector-store DIR] [--encoder E]
                          [--out bench/results/scale.json]
    python -m bench scale --semantic ...   # the same as --rankings semantic
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
from opensearchpy import OpenSearch

from bench import corpus, mix
from bench.bare_whoosh import BareSearcher
from bench.build import OPENSEARCH, build_once, opensearch_env
from bench.measure import VECTOR_STORE, PeakSampler, machine, mib, table
from bench.query import WARMUP, _service, http_load, in_process
from bench.server import procfile_web
from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.settings import ENCODERS, load_settings

ENGINES = {"whoosh": "searchsvc", "opensearch": OPENSEARCH}  # the engine's name here: its build's in bench/build.py
RANKINGS = ("lexical", "semantic")
LEXICAL = {"SEARCHSVC_SEMANTIC_RANKING": "false"}


def ranking_env(ranking: str, vector_store: Path, encoder: str) -> dict[str, str]:
    """The settings of one ranking: by words alone, or by meaning too with the encoder's kept vectors."""
    if ranking == "semantic":
        return {"SEARCHSVC_VECTOR_STORE": str(vector_store), "SEARCHSVC_ENCODER": encoder}
    return LEXICAL


def node_pids(urls: str) -> dict[str, int]:
    """Each node's name and its JVM's PID, as the cluster reports them (`_nodes/process`)."""
    client = OpenSearch(hosts=urls.split(","))
    try:
        nodes = client.nodes.info(metric="process")["nodes"].values()
        return {node["name"]: int(node["process"]["id"]) for node in nodes}
    finally:
        client.close()


@contextlib.contextmanager
def nodes_sampled(pids: dict[str, int]) -> Iterator[dict[str, int]]:
    """Each local node's peak RSS over the block, filled in when it ends (a node on another machine is left out)."""
    samplers = {name: PeakSampler(pid) for name, pid in pids.items() if psutil.pid_exists(pid)}
    peaks: dict[str, int] = {}
    try:
        yield peaks
    finally:
        peaks.update({name: sampler.stop() for name, sampler in samplers.items()})


def serve(
    engine: str,
    ranking: str,
    index_dir: Path,
    log: Path,
    sequence: list[mix.MixQuery],
    warmup: list[mix.MixQuery],
    workers: int,
    clients: list[int],
    vector_store: Path,
    encoder: str,
    opensearch: str | None,
) -> list[dict[str, Any]]:
    """The mix through gunicorn serving one engine's index with one ranking, at each client count."""
    settings = {**ranking_env(ranking, vector_store, encoder), **(opensearch_env(opensearch) if opensearch else {})}
    pids = node_pids(opensearch) if opensearch else {}
    loads = []
    with procfile_web(index_dir, workers, log, **settings) as server:
        warm = http_load(server, warmup, workers)  # each worker's first search opens the index: kept apart
        warmed = {key: warm[key] for key in ("requests", "errors", "error_statuses", "latency_ms")}
        for count in clients:
            with nodes_sampled(pids) as nodes:
                load = http_load(server, sequence, count)
            after = [round(x, 2) for x in os.getloadavg()]
            loads.append(
                {"engine": engine, "ranking": ranking, **load, "warmup": warmed, "node_peak_rss_bytes": nodes,
                 "load_after": after}
            )  # fmt: skip
    return loads


def references(
    work: Path,
    index_dir: Path,
    ranking: str,
    vector_store: Path,
    encoder: str,
    sequence: list[mix.MixQuery],
    warmup: list[mix.MixQuery],
) -> dict[str, Any]:
    """The same requests in-process: the service over the Whoosh index, bare Whoosh and tantivy, interleaved."""
    from bench.tantivy_ref import TantivySearcher  # the bench extra's tantivy: only the references need it

    semantic = ranking == "semantic"
    chosen = {
        "index_dir": index_dir,
        "semantic_ranking": semantic,
        **({"vector_store": vector_store, "encoder": encoder} if semantic else {}),
    }
    backend = WhooshBackend(load_settings(chosen, environ={}))
    bare = BareSearcher(index_dir / "generations" / (index_dir / "CURRENT").read_text().strip())
    reference = TantivySearcher(work / "tantivy-index")
    local_engines = {"searchsvc": _service(backend), "whoosh": bare.search, "tantivy": reference.search}
    try:
        in_process(warmup[:10], local_engines)
        return in_process(sequence, local_engines)
    finally:
        bare.close()


def one_size(records: int, args: argparse.Namespace, opensearch: str | None) -> dict[str, Any]:
    """One corpus size: every engine's build, then every ranking's load through gunicorn on each."""
    needs_vectors = "semantic" in args.rankings
    vector_store = args.vector_store / str(records)  # a store per size: see the module's docstring
    build_settings = ranking_env("semantic" if needs_vectors else "lexical", vector_store, args.encoder)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as scratch:
        work = Path(scratch)
        source = work / "corpus.jsonl"
        described = corpus.prepare(source, records)
        loaded = corpus.load(source)
        sequence = mix.generate(loaded, args.requests)
        warmup = mix.generate(loaded, args.warmup, seed=mix.SEED + 1)
        builds: dict[str, Any] = {}
        loads: list[dict[str, Any]] = []
        local: dict[str, Any] = {}
        compared = "whoosh" in args.engines and args.references  # the in-process references, over the Whoosh index
        if compared:
            builds["tantivy"] = build_once("tantivy", source, work)
            if described["records"] <= args.bare_build_max:
                builds["bare whoosh"] = build_once("whoosh", source, work)
                shutil.rmtree(work / "whoosh-index")
        for engine in args.engines:
            build = ENGINES[engine]
            url = opensearch if engine == "opensearch" else None
            builds[engine] = build_once(build, source, work, opensearch=url, **build_settings)
            for ranking in args.rankings:
                log = work / f"gunicorn-{engine}-{ranking}.log"
                index_dir = work / f"{build}-index"
                loads += serve(
                    engine,
                    ranking,
                    index_dir,
                    log,
                    sequence,
                    warmup,
                    args.workers,
                    args.clients,
                    vector_store,
                    args.encoder,
                    url,
                )
                if engine == "whoosh" and compared:
                    requests = sequence[: args.local_requests]
                    local[ranking] = references(work, index_dir, ranking, vector_store, args.encoder, requests, warmup)
    return {"corpus": described, "builds": builds, "http": loads, "in_process": local}


def judged(size: dict[str, Any], engine: str, ranking: str, clients: int) -> dict[str, Any] | None:
    """The load of one engine and ranking at one client count, if it ran."""
    wanted = (engine, ranking, clients)
    return next((load for load in size["http"] if (load["engine"], load["ranking"], load["clients"]) == wanted), None)


def plot(result: dict[str, Any], target: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = result["sizes"]
    records = [size["corpus"]["records"] for size in sizes]
    figure, (latency, build, memory) = plt.subplots(1, 3, figsize=(15, 4.5))
    for engine in result["engines"]:
        for ranking in result["rankings"]:
            runs = [judged(size, engine, ranking, result["workers"]) for size in sizes]
            if None in runs:
                continue
            for quantile in ("p50", "p95"):
                points = [run["latency_ms"][quantile] for run in runs if run]
                latency.plot(records, points, marker="o", label=f"{engine}, {ranking}, gunicorn {quantile}")
            rss = [mib(max(run["worker_peak_rss_bytes"])) for run in runs if run]
            memory.plot(records, rss, marker="o", label=f"{engine}, {ranking}: largest worker")
        if engine == "opensearch":
            nodes = [max(sum(run["node_peak_rss_bytes"].values()) for run in size["http"]) for size in sizes]
            memory.plot(records, [mib(n) for n in nodes], marker="s", label="opensearch: all nodes")
    latency.axhline(1000, color="grey", linestyle=":", label="1 s (p95 target)")
    latency.set(title="Query mix latency", xlabel="records", ylabel="ms", xscale="log", yscale="log")
    latency.legend(fontsize=7)
    for engine in [*result["engines"], "bare whoosh", "tantivy"]:
        points = [
            (size["corpus"]["records"], size["builds"][engine]["seconds"]) for size in sizes if engine in size["builds"]
        ]
        if points:
            build.plot(*zip(*points, strict=True), marker="o", label=engine)
    build.set(title="Build time", xlabel="records", ylabel="seconds", xscale="log", yscale="log")
    build.legend(fontsize=7)
    memory.axhline(1024, color="grey", linestyle=":", label="1 GiB (worker target)")
    memory.set(title="Peak memory", xlabel="records", ylabel="MiB", xscale="log")
    memory.legend(fontsize=7)
    figure.suptitle("searchsvc at scale (ACL Anthology records + labelled synthetic extension)")
    figure.tight_layout()
    figure.savefig(target, dpi=110)


def markdown(result: dict[str, Any]) -> str:
    header = [
        "records",
        "engine",
        "ranking",
        "clients",
        "req/s",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "errors",
        "worker peak RSS MiB",
        "node peak RSS MiB",
        "load after",
    ]
    rows = [
        [
            f"{size['corpus']['records']:,}",
            load["engine"],
            load["ranking"],
            load["clients"],
            load["throughput_rps"],
            load["latency_ms"]["p50"],
            load["latency_ms"]["p95"],
            load["latency_ms"]["p99"],
            load["errors"],
            ", ".join(str(mib(rss)) for rss in load["worker_peak_rss_bytes"]),
            ", ".join(f"{name} {mib(rss)}" for name, rss in sorted(load["node_peak_rss_bytes"].items())) or "—",
            load["load_after"],
        ]
        for size in result["sizes"]
        for load in size["http"]
    ]
    return (
        f"gunicorn from the Procfile with {result['workers']} gevent workers, {result['requests']} requests per run "
        f"(the same seeded mix on every engine), clients {', '.join(map(str, result['clients']))}; ranking by meaning "
        f"with the {result['encoder']} encoder; load average at the end {result['machine']['load_average_1_5_15']}\n\n"
        + table(header, rows)
        + "\n\n"
        + builds(result)
        + "\n\n"
        + ratios(result)
        + "\n\n"
        + by_kind(result)
        + local_table(result)
    )


def builds(result: dict[str, Any]) -> str:
    """Each engine's build per size, with what its rebuild embedded."""
    header = ["records", "build", "seconds", "CPU s", "peak RSS MiB (client)", "index MiB", "embedded", "load before"]
    rows = []
    for size in result["sizes"]:
        for engine, build in size["builds"].items():
            embedded = build.get("embedded", 0)
            rows.append(
                [
                    f"{size['corpus']['records']:,}",
                    engine,
                    build["seconds"],
                    build["cpu_seconds"],
                    mib(build["peak_rss_bytes"]),
                    mib(build["index_bytes"]),
                    f"{embedded:,} in {build['embedding_seconds']:,.0f} s" if embedded else "0",
                    build["load_before"],
                ]
            )
    return table(header, rows)


def ratios(result: dict[str, Any]) -> str:
    """OpenSearch over Whoosh in the same run: each percentile at each client count, and the build."""
    if not {"whoosh", "opensearch"} <= set(result["engines"]):
        return ""
    rows = []
    for size in result["sizes"]:
        build = indexing_seconds(size["builds"]["opensearch"]) / indexing_seconds(size["builds"]["whoosh"])
        for ranking in result["rankings"]:
            for clients in result["clients"]:
                ours, theirs = judged(size, "opensearch", ranking, clients), judged(size, "whoosh", ranking, clients)
                if ours and theirs:
                    by = [round(ours["latency_ms"][q] / theirs["latency_ms"][q], 2) for q in ("p50", "p95", "p99")]
                    rows.append([f"{size['corpus']['records']:,}", ranking, clients, *by, round(build, 2)])
    header = ["records", "ranking", "clients", "p50 ÷ Whoosh", "p95 ÷ Whoosh", "p99 ÷ Whoosh", "build ÷ Whoosh*"]
    note = "\n\n\\* each build's time without its embedding (the engine that builds first embeds what the store lacks)"
    return "OpenSearch over Whoosh, same run:\n\n" + table(header, rows) + note


def indexing_seconds(build: dict[str, Any]) -> float:
    """A build's time without the embedding its rebuild did."""
    return float(build["seconds"]) - float(build.get("embedding_seconds", 0.0))


def by_kind(result: dict[str, Any]) -> str:
    """Through gunicorn, per kind of request, at one client per worker; then each run's warm-up."""
    rows = [
        [f"{size['corpus']['records']:,}", load["engine"], load["ranking"], kind, s["n"], s["p50"], s["p95"], s["p99"]]
        for size in result["sizes"]
        for load in size["http"]
        if load["clients"] == result["workers"]
        for kind, s in load["by_kind_ms"].items()
    ]
    notes = []
    for size in result["sizes"]:
        for load in size["http"]:
            warmup = load["warmup"]
            if load["clients"] != result["clients"][0]:
                continue
            errors = f" {warmup['error_statuses']}" if warmup["errors"] else ""
            notes.append(
                f"- {size['corpus']['records']:,}, {load['engine']}, {load['ranking']}: warm-up before the measured "
                f"requests: {warmup['requests']} requests, {warmup['errors']} errors{errors}, slowest "
                f"{warmup['latency_ms']['max']:,.0f} ms"
            )
    header = ["records", "engine", "ranking", "kind", "requests", "p50 ms", "p95 ms", "p99 ms"]
    return table(header, rows) + ("\n\n" + "\n".join(notes) if notes else "")


def local_table(result: dict[str, Any]) -> str:
    """The in-process references over the Whoosh index, if they ran."""
    rows = [
        [f"{size['corpus']['records']:,}", ranking, name, *(run["latency_ms"][q] for q in ("p50", "p95", "p99"))]
        for size in result["sizes"]
        for ranking, engines in size["in_process"].items()
        for name, run in engines.items()
    ]
    if not rows:
        return ""
    header = ["records", "ranking", "in-process", "p50 ms", "p95 ms", "p99 ms"]
    return f"\n\nIn-process, the first {result['local_requests']} requests:\n\n" + table(header, rows)


@contextlib.contextmanager
def cluster_for(args: argparse.Namespace, scratch: Path) -> Iterator[str | None]:
    """The cluster's URLs: those given, or the test cluster started for the run (None: no OpenSearch asked for)."""
    if "opensearch" not in args.engines:
        yield None
    elif args.opensearch:
        yield args.opensearch
    else:
        from tests.helpers.opensearch_cluster import start_cluster

        with start_cluster(scratch / "opensearch", heap=args.heap) as cluster:
            yield ",".join(cluster.urls)


def listed(text: str, allowed: tuple[str, ...] | dict[str, str]) -> list[str]:
    chosen = [item.strip() for item in text.split(",") if item.strip()]
    unknown = [item for item in chosen if item not in allowed]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(allowed)}: {text!r}")
    return chosen


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,100000,300000", help="record counts (0: the real ACL records)")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--local-requests", type=int, default=100, help="of those, how many also run in-process")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", default="", help="client counts, one load run each (default: one per worker)")
    parser.add_argument(
        "--warmup",
        type=int,
        default=WARMUP,
        help="requests before each measured run: a fresh JVM needs more (%(default)s)",
    )
    parser.add_argument("--bare-build-max", type=int, default=30_000)
    parser.add_argument("--engines", type=lambda text: listed(text, ENGINES), default=["whoosh"])
    parser.add_argument("--rankings", type=lambda text: listed(text, RANKINGS), default=["lexical"])
    parser.add_argument("--semantic", action="store_true", help="the same as --rankings semantic")
    parser.add_argument("--no-references", dest="references", action="store_false", help="no tantivy, no bare Whoosh")
    parser.add_argument("--vector-store", type=Path, default=VECTOR_STORE, help="kept between runs (%(default)s)")
    parser.add_argument(
        "--encoder",
        choices=ENCODERS,
        default=load_settings(environ={}).encoder,
        help="ranking by meaning's encoder (%(default)s, the default's)",
    )
    parser.add_argument("--opensearch", metavar="URLS", help="the cluster (default: start the 2-node test cluster)")
    parser.add_argument("--heap", default="512m", help="each test cluster node's Java heap (%(default)s)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.semantic:
        args.rankings = ["semantic"]
    args.vector_store = args.vector_store.resolve()
    args.clients = [int(c) for c in args.clients.split(",")] if args.clients else [args.workers]
    result: dict[str, Any] = {
        "workers": args.workers,
        "clients": args.clients,
        "requests": args.requests,
        "local_requests": args.local_requests,
        "engines": args.engines,
        "rankings": args.rankings,
        "encoder": args.encoder,
        "sizes": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench-scale-cluster-") as scratch, cluster_for(args, Path(scratch)) as url:
        for size in (int(s) for s in args.sizes.split(",")):
            result["sizes"].append(one_size(size, args, url))
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
