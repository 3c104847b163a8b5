"""Query benchmark: the query mix through real gunicorn, and the same queries in-process.

1. Indexes the corpus with `searchsvc rebuild` (the CLI), the bare single-writer Whoosh build
   (bench/bare_whoosh.py) and tantivy.
2. Starts gunicorn from the Procfile's `web:` line and sends the seeded mix (bench/mix.py)
   from `--clients` threads, one new loopback connection per request (sync workers close
   them), after a warm-up; records each request's latency, status and the workers' RSS.
3. Runs the same requests in this process, interleaved per request: `WhooshBackend.search`
   (the service without HTTP), bare Whoosh (search + match count + facets, see
   bench/bare_whoosh.py) and tantivy.

    python -m bench query [--records N] [--requests 400] [--clients 2,6] [--out bench/results/query.json]
    python -m bench query --opensearch URLS ...   # the OpenSearch backend too, side by side

With `--opensearch URLS` the corpus is also loaded onto that cluster (`searchsvc rebuild`
with SEARCHSVC_BACKEND=opensearch), the same mix is sent to a second gunicorn serving from
it, and `OpenSearchBackend.search` joins the in-process engines.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import corpus, mix
from bench.bare_whoosh import BareSearcher
from bench.build import OPENSEARCH, build_once, opensearch_env
from bench.measure import VECTOR_STORE, latency_summary, machine, mib, report, table
from bench.server import Server, procfile_web, timed_get
from searchsvc.backends import Backend
from searchsvc.backends.opensearch import OpenSearchBackend
from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.model import SearchRequest
from searchsvc.operations import search as searching
from searchsvc.settings import load_settings

WARMUP = 40  # requests before measuring: imports, first searches of each worker


def http_load(server: Server, requests: list[mix.MixQuery], clients: int) -> dict[str, Any]:
    """Send `requests` from `clients` threads; latencies, errors, throughput and worker RSS."""
    latencies: list[float] = [0.0] * len(requests)
    took: list[float] = [0.0] * len(requests)
    statuses: list[int] = [0] * len(requests)
    peak_rss: dict[int, int] = {}
    done = threading.Event()

    def send(i: int) -> None:
        statuses[i], latencies[i], took[i] = timed_get(server.port, "/api/search?" + requests[i].params())

    def sample() -> None:
        while not done.is_set():
            for worker in server.workers():
                try:
                    peak_rss[worker.pid] = max(peak_rss.get(worker.pid, 0), worker.memory_info().rss)
                except Exception:  # a worker that just exited
                    pass
            done.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    by_clients(len(requests), clients, send)
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    errors = [s for s in statuses if s != 200]
    return {
        "clients": clients,
        "requests": len(requests),
        "seconds": round(seconds, 2),
        "throughput_rps": round(len(requests) / seconds, 2),
        "errors": len(errors),
        "error_statuses": sorted(set(errors)),
        "latency_ms": latency_summary(latencies),
        "server_took_ms": latency_summary(took),
        "by_kind_ms": _by_kind(requests, latencies),
        "worker_peak_rss_bytes": sorted(peak_rss.values()),
    }


def by_clients(count: int, clients: int, work: Callable[[int], None]) -> None:
    """`work(i)` for every i below `count`, from `clients` threads each taking the next i."""
    cursor = iter(range(count))
    lock = threading.Lock()

    def client() -> None:
        while True:
            with lock:
                i = next(cursor, None)
            if i is None:
                return
            work(i)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _by_kind(requests: list[mix.MixQuery], samples: list[float]) -> dict[str, dict[str, float]]:
    kinds = sorted({r.kind for r in requests}) + ["filtered"]
    found = {}
    for kind in kinds:
        mine = [
            s for r, s in zip(requests, samples, strict=True) if r.kind == kind or (kind == "filtered" and r.filtered)
        ]
        if mine:
            found[kind] = latency_summary(mine)
    return found


def in_process(requests: list[mix.MixQuery], engines: dict[str, Callable[[mix.MixQuery], Any]]) -> dict[str, Any]:
    """Each request through each engine in turn (interleaved, so load drifts hit all alike)."""
    samples: dict[str, list[float]] = {name: [] for name in engines}
    errors: dict[str, list[str]] = {name: [] for name in engines}
    for request in requests:
        for name, search in engines.items():
            started = time.perf_counter()
            try:
                search(request)
            except Exception as exc:  # a timed-out search is a result to report, not a crash
                errors[name].append(f"{type(exc).__name__}: {request.q[:80]}")
            samples[name].append((time.perf_counter() - started) * 1000)
    return {
        name: {"latency_ms": latency_summary(values), "by_kind_ms": _by_kind(requests, values), "errors": errors[name]}
        for name, values in samples.items()
    }


def _service(backend: Backend) -> Callable[[mix.MixQuery], Any]:
    def ask(request: mix.MixQuery) -> Any:
        return searching.search(
            backend,
            SearchRequest(
                q=request.q,
                subject=request.subject,
                author=request.author,
                year_from=request.year_from,
                year_to=request.year_to,
            ),
        )

    return ask


def run(
    records: int, requests: int, clients: list[int], workers: int, distinct: int, opensearch: str | None = None
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-query-") as scratch:
        work = Path(scratch)
        source = work / "corpus.jsonl"
        described = corpus.prepare(source, records)
        engines_built = ("searchsvc", "whoosh", "tantivy") + ((OPENSEARCH,) if opensearch else ())
        builds = {engine: build_once(engine, source, work, opensearch) for engine in engines_built}
        unique = mix.generate(corpus.load(source), distinct)
        sequence = [unique[i % len(unique)] for i in range(requests)]
        warmup = mix.generate(corpus.load(source), WARMUP, seed=mix.SEED + 1)
        index_dir = work / "searchsvc-index"
        loads = []
        with procfile_web(index_dir, workers, work / "gunicorn.log") as server:
            for count in clients:
                http_load(server, warmup, count)
                loads.append(http_load(server, sequence, count))
        if opensearch:
            with procfile_web(index_dir, workers, work / "gunicorn-os.log", **opensearch_env(opensearch)) as server:
                for count in clients:
                    http_load(server, warmup, count)
                    loads.append({**http_load(server, sequence, count), "backend": "opensearch"})
        backend = WhooshBackend(load_settings({"index_dir": index_dir, "vector_store": str(VECTOR_STORE)}, environ={}))
        bare = BareSearcher(work / "whoosh-index")
        from bench.tantivy_ref import TantivySearcher  # the bench extra's tantivy: only this run needs it

        reference = TantivySearcher(work / "tantivy-index")
        engines = {"searchsvc": _service(backend), "whoosh": bare.search, "tantivy": reference.search}
        if opensearch:
            os_settings = {"backend": "opensearch", "opensearch_url": opensearch, "opensearch_index": "bench"}
            engines[OPENSEARCH] = _service(OpenSearchBackend(load_settings(os_settings, environ={})))
        in_process(warmup, engines)
        local = in_process(sequence, engines)
        bare.close()
        shutil.rmtree(work / "whoosh-index", ignore_errors=True)
    return {
        "corpus": described,
        "machine": machine(),
        "workers": workers,
        "mix": {
            "distinct": len(unique),
            "requests": requests,
            "kinds": dict(mix.KINDS),
            "filtered": mix.FILTERED,
            "seed": mix.SEED,
        },
        "builds": builds,
        "http": loads,
        "in_process": local,
        "ratios": _ratios(loads, local, workers),
    }


def _ratios(loads: list[dict[str, Any]], local: dict[str, Any], workers: int) -> dict[str, Any]:
    """The targets' ratios, judged on the run with one client per worker (no queueing)."""
    judged = next((load for load in loads if load["clients"] == workers and "backend" not in load), loads[0])
    bare = local["whoosh"]["latency_ms"]
    return {
        "judged_clients": judged["clients"],
        "http_p50_over_bare_whoosh_p50": round(judged["latency_ms"]["p50"] / bare["p50"], 3),
        "http_p99_over_http_p50": round(judged["latency_ms"]["p99"] / judged["latency_ms"]["p50"], 2),
        "inprocess_searchsvc_p50_over_bare_whoosh_p50": round(local["searchsvc"]["latency_ms"]["p50"] / bare["p50"], 3),
        "bare_whoosh_p50_over_tantivy_p50": round(bare["p50"] / local["tantivy"]["latency_ms"]["p50"], 1),
    }


def markdown(result: dict[str, Any]) -> str:
    described = result["corpus"]
    lines = [
        f"{described['records']:,} records ({described['synthetic']:,} synthetic); "
        f"{result['mix']['requests']} requests "
        f"({result['mix']['distinct']} distinct, seed {result['mix']['seed']}); gunicorn with {result['workers']} sync "
        f"workers; load average at the end {result['machine']['load_average_1_5_15']}",
        "",
    ]
    rows = []
    for load in result["http"]:
        lat = load["latency_ms"]
        rows.append(
            [
                f"gunicorn{' on OpenSearch' if 'backend' in load else ''}, {load['clients']} clients",
                load["throughput_rps"],
                lat["p50"],
                lat["p95"],
                lat["p99"],
                lat["max"],
                load["errors"],
                ", ".join(str(mib(r)) for r in load["worker_peak_rss_bytes"]),
            ]
        )
    for name, label in (
        ("searchsvc", "in-process `WhooshBackend.search`"),
        (OPENSEARCH, "in-process `OpenSearchBackend.search`"),
        ("whoosh", "in-process bare Whoosh"),
        ("tantivy", "in-process tantivy"),
    ):
        if name not in result["in_process"]:
            continue
        lat = result["in_process"][name]["latency_ms"]
        rows.append([label, round(1000 / lat["mean"], 2), lat["p50"], lat["p95"], lat["p99"], lat["max"], "", ""])
    lines.append(table(["", "req/s", "p50 ms", "p95 ms", "p99 ms", "max ms", "errors", "worker peak RSS MiB"], rows))
    lines += ["", "p50 ms by kind of request:", ""]
    kinds = list(result["in_process"]["whoosh"]["by_kind_ms"])
    kind_rows = []
    for load in result["http"]:
        where = " on OpenSearch" if "backend" in load else ""
        kind_rows.append(
            [f"gunicorn{where}, {load['clients']} clients"] + [load["by_kind_ms"][k]["p50"] for k in kinds]
        )
    for name in [name for name in ("searchsvc", OPENSEARCH, "whoosh", "tantivy") if name in result["in_process"]]:
        kind_rows.append([f"in-process {name}"] + [result["in_process"][name]["by_kind_ms"][k]["p50"] for k in kinds])
    lines.append(table(["", *kinds], kind_rows))
    lines += ["", "Ratios: " + ", ".join(f"{k} = {v}" for k, v in result["ratios"].items())]
    builds = ", ".join(f"{engine} {build['seconds']} s" for engine, build in result["builds"].items())
    lines += ["", f"Builds of this corpus (one round each, before the load runs): {builds}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=0, help="0: the 29,580 ACL records; more adds synthetic ones")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--distinct", type=int, default=0, help="distinct requests, repeated to --requests (0: all)")
    parser.add_argument("--clients", default="2,6", help="comma-separated client counts, one load run each")
    parser.add_argument("--workers", type=int, default=2, help="WEB_CONCURRENCY for gunicorn")
    parser.add_argument("--opensearch", metavar="URLS", help="also serve the mix from this OpenSearch cluster")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    clients = [int(c) for c in args.clients.split(",")]
    result = run(args.records, args.requests, clients, args.workers, args.distinct or args.requests, args.opensearch)
    report(result, markdown(result), args.out)


if __name__ == "__main__":
    sys.exit(main())
