"""Two versions of searchsvc side by side: the query mix through gunicorn, interleaved.

Serves one published index (e.g. the ACL records', built once with `searchsvc rebuild`) from
this checkout and from another one (`--baseline`, e.g. `git worktree add ../baseline <commit>`),
each with the Procfile's `web:` line, at the same time; or each version its own index of the same
records (`--baseline-index-dir`), where the index's layout changed. Each client sends every request
of the seeded mix (bench/mix.py) to one server and then the other, alternating which goes first, so
a change in the machine's load hits both alike. Reports p50/p95/p99 per version, their ratios, and
the requests whose answers (all but `took_ms`) differ between the versions.

    python -m bench versus --baseline ../baseline --index-dir DIR [--baseline-index-dir DIR]
        [--vector-store DIR] [--requests 400]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from bench import corpus, mix
from bench.measure import REPO, latency_summary, machine, report, table
from bench.query import WARMUP, _by_kind, by_clients
from bench.server import Server, procfile_web, timed_answer

VERSIONS = ("baseline", "this")


def run(
    baseline: Path,
    index_dirs: tuple[Path, Path],
    settings: dict[str, str],
    requests: int,
    clients: int,
    workers: int,
) -> dict[str, Any]:
    records = corpus.load(corpus.ACL)
    sequence = mix.generate(records, requests)
    warmup = mix.generate(records, WARMUP, seed=mix.SEED + 1)
    with tempfile.TemporaryDirectory(prefix="bench-versus-") as scratch:
        logs = Path(scratch)
        with (
            procfile_web(index_dirs[0], workers, logs / "baseline.log", repo=baseline, **settings) as old,
            procfile_web(index_dirs[1], workers, logs / "this.log", repo=REPO, **settings) as new,
        ):
            servers = {"baseline": old, "this": new}
            _load(servers, warmup, clients)
            samples, statuses, answers = _load(servers, sequence, clients)
    result: dict[str, Any] = {
        "machine": machine(),
        "requests": requests,
        "clients": clients,
        "workers": workers,
        "index_dirs": {version: str(path) for version, path in zip(VERSIONS, index_dirs, strict=True)},
        "differing": [
            sequence[i].params() for i, (a, b) in enumerate(zip(*answers.values(), strict=True)) if not _agree(a, b)
        ],
        "keys_of_one_version": sorted({key for a, b in zip(*answers.values(), strict=True) for key in _apart(a, b)}),
    }
    for version in VERSIONS:
        result[version] = {
            "latency_ms": latency_summary(samples[version]),
            "by_kind_ms": _by_kind(sequence, samples[version]),
            "errors": sum(1 for s in statuses[version] if s != 200),
        }
    result["ratios"] = {
        f"{p}_this_over_baseline": round(result["this"]["latency_ms"][p] / result["baseline"]["latency_ms"][p], 3)
        for p in ("p50", "p95", "p99")
    }
    return result


def _load(
    servers: dict[str, Server], requests: list[mix.MixQuery], clients: int
) -> tuple[dict[str, list[float]], dict[str, list[int]], dict[str, list[Any]]]:
    samples: dict[str, list[float]] = {v: [0.0] * len(requests) for v in VERSIONS}
    statuses: dict[str, list[int]] = {v: [0] * len(requests) for v in VERSIONS}
    answers: dict[str, list[Any]] = {v: [None] * len(requests) for v in VERSIONS}

    def send(i: int) -> None:
        for version in VERSIONS if i % 2 == 0 else VERSIONS[::-1]:
            status, elapsed, body = timed_answer(servers[version].port, "/api/search?" + requests[i].params())
            statuses[version][i], samples[version][i] = status, elapsed
            answers[version][i] = _answer(body) if status == 200 else status

    by_clients(len(requests), clients, send)
    return samples, statuses, answers


def _answer(body: bytes) -> dict[str, Any]:
    """What must be the same from both versions: the whole answer but the time it took."""
    found: dict[str, Any] = json.loads(body)
    found.pop("took_ms", None)
    return found


def _agree(a: Any, b: Any) -> bool:
    """Whether two answers say the same wherever both say something: a key only one version
    has (a field added since the other) is left out, and listed (`_apart`)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return all(_agree(a[key], b[key]) for key in a.keys() & b.keys())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_agree(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _apart(a: Any, b: Any, path: str = "") -> set[str]:
    """The keys (as paths, list places as []) only one of the answers has."""
    if isinstance(a, dict) and isinstance(b, dict):
        found = {f"{path}.{key}".lstrip(".") for key in a.keys() ^ b.keys()}
        for key in a.keys() & b.keys():
            found |= _apart(a[key], b[key], f"{path}.{key}")
        return found
    if isinstance(a, list) and isinstance(b, list):
        return set().union(*(_apart(x, y, f"{path}[]") for x, y in zip(a, b, strict=False)))
    return set()


def markdown(result: dict[str, Any]) -> str:
    rows = []
    for version in VERSIONS:
        lat = result[version]["latency_ms"]
        rows.append([version, lat["p50"], lat["p95"], lat["p99"], lat["max"], result[version]["errors"]])
    lines = [
        f"{result['requests']} requests of the ACL query mix, {result['clients']} clients, each request sent to both "
        f"versions in turn; {result['workers']} gunicorn workers each; load average at the end "
        f"{result['machine']['load_average_1_5_15']}",
        "",
        table(["version", "p50 ms", "p95 ms", "p99 ms", "max ms", "errors"], rows),
        "",
        "Ratios: " + ", ".join(f"{k} = {v}" for k, v in result["ratios"].items()),
        "",
        f"Requests whose answers (all but `took_ms`) differ between the versions: {len(result['differing'])}"
        + (
            f" (keys only one version has left out: {', '.join(result['keys_of_one_version'])})."
            if result.get("keys_of_one_version")
            else "."
        ),
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the other checkout (its Procfile and code)")
    parser.add_argument("--index-dir", type=Path, required=True, help="a published index both versions can read")
    parser.add_argument("--baseline-index-dir", type=Path, help="the baseline's own index of the same records")
    parser.add_argument("--vector-store", type=Path, help="its vector store (default: <index-dir>/vectors)")
    parser.add_argument("--semantic-ranking", choices=("true", "false"), default="true")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    # Always named: clean_env (measure.py) points both servers at this checkout's bench store otherwise.
    store = args.vector_store or args.index_dir / "vectors"
    settings = {"SEARCHSVC_SEMANTIC_RANKING": args.semantic_ranking, "SEARCHSVC_VECTOR_STORE": str(store.resolve())}
    index_dirs = ((args.baseline_index_dir or args.index_dir).resolve(), args.index_dir.resolve())
    result = run(args.baseline.resolve(), index_dirs, settings, args.requests, args.clients, args.workers)
    report(result, markdown(result), args.out)
