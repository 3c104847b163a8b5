"""Sharded embedding benchmark (issue #34): `searchsvc embed` in one process against `--shard 1/2`
and `--shard 2/2` side by side, on an OpenSearch cluster, on the same collection.

Each process is pinned to a core of its own (`taskset`), so one process on one core is compared
with two processes on one core each: what one embedding machine is against two. Each run embeds
into an index of its own, built with ranking by meaning off (no vectors) and with a vector store
of its own (nothing stored yet); the vectors the two runs leave in the cluster are compared paper
by paper. The cluster's nodes are not pinned: they share the same cores, as the bulk writes of
each checkpoint cost them some.

    python -m bench sharded_embedding --urls http://127.0.0.1:9200,... [--papers 2400] [--rounds 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import base64
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import corpus
from bench.measure import REPO, VENV_BIN, machine, report, table


def _environment(urls: str, alias: str, store: Path, index_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEARCHSVC_")}
    return {
        **env,
        "PATH": f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        "SEARCHSVC_BACKEND": "opensearch",
        "SEARCHSVC_OPENSEARCH_URL": urls,
        "SEARCHSVC_OPENSEARCH_INDEX": alias,
        "SEARCHSVC_VECTOR_STORE": str(store),
        "SEARCHSVC_INDEX_DIR": str(index_dir),
        **extra,
    }


def _searchsvc(*args: str) -> list[str]:
    return [str(VENV_BIN / "python"), "-m", "searchsvc", *args]


def _prepared(urls: str, alias: str, source: Path, work: Path) -> dict[str, str]:
    """An index of `source` behind `alias`, without vectors; the environment that embeds it."""
    env = _environment(urls, alias, work / f"{alias}-vectors", work / f"{alias}-index")
    built = dict(env, SEARCHSVC_SEMANTIC_RANKING="false")
    subprocess.run(_searchsvc("rebuild", str(source)), env=built, cwd=REPO, check=True, capture_output=True)
    return env


def _timed(commands: list[list[str]], env: dict[str, str]) -> dict[str, Any]:
    """Start `commands` at once: the wall time until the last ends, each one's wall and CPU
    seconds (user + system, from its own rusage: what it would take on a core of its own, however
    busy the machine's are), and their outputs."""
    started = time.monotonic()
    running = [subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.PIPE, text=True) for command in commands]
    ends: dict[int, float] = {}
    cpu: dict[int, float] = {}
    while len(ends) < len(running):
        pid, status, usage = os.wait4(-1, 0)
        if pid not in {process.pid for process in running}:
            continue
        ends[pid], cpu[pid] = time.monotonic() - started, usage.ru_utime + usage.ru_stime
        if os.waitstatus_to_exitcode(status):
            raise RuntimeError(f"{pid} exited {os.waitstatus_to_exitcode(status)}")
    outputs = [process.stdout.read().strip() for process in running if process.stdout]
    return {
        "wall_s": round(max(ends.values()), 2),
        "each_wall_s": [round(ends[process.pid], 2) for process in running],
        "each_cpu_s": [round(cpu[process.pid], 2) for process in running],
        "outputs": outputs,
    }


def _vectors(urls: str, alias: str) -> dict[str, bytes]:
    from opensearchpy import OpenSearch
    from opensearchpy.helpers import scan

    client = OpenSearch(hosts=urls.split(","))
    client.indices.refresh(index=alias)
    found = {hit["_id"]: hit["_source"].get("vector") for hit in scan(client, index=alias, _source=["vector"])}
    return {paper: base64.b64decode(vector) if vector else b"" for paper, vector in found.items()}


def _merged(urls: str, alias: str, timeout: float = 300.0) -> None:
    """Wait until the merge each `embed` starts after it (its rewritten copies) is done: it would
    take the cores from the next measurement."""
    from opensearchpy import OpenSearch

    from searchsvc.backends.opensearch.merging import deleted

    client = OpenSearch(hosts=urls.split(","))
    deadline = time.monotonic() + timeout
    while deleted(client, alias) and time.monotonic() < deadline:
        client.indices.refresh(index=alias)
        time.sleep(1.0)
    time.sleep(2.0)  # the merging process's own exit


def _drop(urls: str, alias: str) -> None:
    from opensearchpy import OpenSearch

    client = OpenSearch(hosts=urls.split(","))
    client.indices.delete(index=f"{alias}*", ignore_unavailable=True)


def one_round(urls: str, source: Path, work: Path, number: int) -> dict[str, Any]:
    one, two = f"bench-shard-one-{number}", f"bench-shard-two-{number}"
    try:
        env_one = _prepared(urls, one, source, work)
        env_two = _prepared(urls, two, source, work)
        before = os.getloadavg()
        runs: dict[str, dict[str, Any]] = {}
        shards = [["taskset", "-c", str(n - 1), *_searchsvc("embed", "--shard", f"{n}/2")] for n in (1, 2)]
        for kind in ("one", "two") if number % 2 == 0 else ("two", "one"):  # each order in turn
            if kind == "one":
                runs[kind] = _timed([["taskset", "-c", "0", *_searchsvc("embed")]], env_one)
            else:
                runs[kind] = _timed(shards, env_two)
            _merged(urls, one if kind == "one" else two)
        after = os.getloadavg()
        first, second = _vectors(urls, one), _vectors(urls, two)
    finally:
        _drop(urls, one)
        _drop(urls, two)
    same = sum(1 for paper, vector in first.items() if vector and second.get(paper) == vector)
    single, both = runs["one"], runs["two"]
    return {
        "order": "one process first" if number % 2 == 0 else "shards first",
        "one_process": single,
        "two_processes": both,
        "wall_ratio": round(both["wall_s"] / single["wall_s"], 3),
        "cpu_ratio": round(max(both["each_cpu_s"]) / single["each_cpu_s"][0], 3),
        "papers": len(first),
        "identical_vectors": same,
        "load_average_before": [round(x, 2) for x in before],
        "load_average_after": [round(x, 2) for x in after],
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", required=True, help="the cluster's URLs, comma-separated")
    parser.add_argument("--papers", type=int, default=2400)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as folder:
        work = Path(folder)
        source = work / "papers.jsonl"
        prepared = corpus.prepare(source, args.papers)
        rounds = [one_round(args.urls, source, work, number) for number in range(args.rounds)]
    rows = [
        [
            f"{n + 1} ({r['order']})",
            r["papers"],
            f"{r['one_process']['wall_s']} / {r['one_process']['each_cpu_s'][0]}",
            f"{r['two_processes']['wall_s']} / {' + '.join(map(str, r['two_processes']['each_cpu_s']))}",
            f"{r['wall_ratio']}×",
            f"{r['cpu_ratio']}×",
            r["identical_vectors"],
            f"{r['load_average_before']} → {r['load_average_after']}",
        ]
        for n, r in enumerate(rounds)
    ]
    header = ["round", "papers", "1 process, 1 core: wall / CPU s", "2 shards, 1 core each: wall / CPU s each"]
    header += [
        "wall ratio",
        "CPU ratio (slowest shard / one process)",
        "identical vectors",
        "load average before → after",
    ]
    text = (
        f"{prepared['records']} ACL papers, onnx-int8 (the default encoder), OpenSearch 2-node test cluster "
        "on the same 2 cores; `searchsvc embed` pinned with taskset\n\n" + table(header, rows)
    )
    report({"machine": machine(), "corpus": prepared, "rounds": rounds}, text, args.out)
