"""The exact scan behind candidates found by meaning (`meaning_candidates`): `core.ranking.related_order`
over N random unit vectors of 384 dimensions held as float16, as a generation holds them, K nearest,
a tenth of the rows left out as a filter would; the median and best of a few runs, and the load.

With `--opensearch URLS` (a running cluster: `python tests/helpers/opensearch_cluster.py start`), the
same vectors are also loaded into an index of their own (2 shards, the `vector` field's mapping) and
the cluster's scan (`backends/opensearch/nearest.py`, its script and filter) is timed beside numpy's,
each size's runs alternating, with whether both found the same K papers in the same order.

    python -m bench meaning_scan --sizes 30000 100000 300000 1000000
    python -m bench meaning_scan --sizes 30000 300000 --opensearch http://127.0.0.1:9200
"""

from __future__ import annotations

import argparse
import base64
import os
import time
from collections.abc import Callable, Iterator

import numpy as np
from opensearchpy import OpenSearch
from opensearchpy.helpers import streaming_bulk

from searchsvc.backends.opensearch import nearest
from searchsvc.backends.opensearch.mapping import EMBEDDED, VECTOR, index_body
from searchsvc.core.ranking import related_order
from searchsvc.semantic.encoder import DIMENSIONS

KEPT = "kept"  # the bench index's field the filter reads: a tenth of the papers are not kept
INDEX = "bench-meaning-scan"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[30_000, 100_000, 300_000])
    parser.add_argument("--nearest", type=int, default=100)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--opensearch", help="comma-separated URLs of a running cluster to time beside numpy")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    client = OpenSearch(hosts=args.opensearch.split(","), timeout=600) if args.opensearch else None
    print(f"load before: {os.getloadavg()}")
    engines = ["numpy", "opensearch"] if client else ["numpy"]
    print(f"| vectors | {' | '.join(f'{e} median ms | {e} best ms' for e in engines)} | same nearest | load |")
    print(f"|---|{'---|---|' * len(engines)}---|---|")
    for size in args.sizes:
        print(_row(size, rng, client, args.nearest, args.runs), flush=True)
    if client is not None:
        client.indices.delete(index=INDEX, ignore_unavailable=True)


def _row(size: int, rng: np.random.Generator, client: OpenSearch | None, count: int, runs: int) -> str:
    """One size's line of the table: each scan's median and best, alternating runs, and whether all
    found the same papers in the same order."""
    rows = rng.standard_normal((size, DIMENSIONS), dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    vectors = rows.astype(np.float16)
    del rows
    query = vectors[5].astype(np.float32)
    kept = rng.random(size) >= 0.1
    left_out = np.flatnonzero(~kept)
    scans: dict[str, Callable[[], list[int]]] = {
        "numpy": lambda: [row for row, _ in related_order(vectors, query, count, exclude=left_out)]
    }
    if client is not None:
        _load(client, vectors, kept)
        scans["opensearch"] = lambda: _cluster_scan(client, query, count)
    times: dict[str, list[float]] = {name: [] for name in scans}
    found: dict[str, list[int]] = {}
    for _ in range(runs):
        for name, scan in scans.items():
            started = time.perf_counter()
            found[name] = scan()
            times[name].append(time.perf_counter() - started)
    cells = []
    for name in scans:
        ordered = sorted(times[name])
        cells.append(f"{ordered[len(ordered) // 2] * 1000:.0f} | {ordered[0] * 1000:.0f}")
    same = "yes" if len({tuple(rows) for rows in found.values()}) == 1 else "NO"
    return f"| {size:,} | {' | '.join(cells)} | {same} | {os.getloadavg()[0]:.2f} |"


def _load(client: OpenSearch, vectors: np.ndarray, kept: np.ndarray) -> None:
    """An index of the vectors alone (the row as id), with the service's mapping of `vector`."""
    client.indices.delete(index=INDEX, ignore_unavailable=True)
    body = index_body(2, {})
    properties = body["mappings"]["properties"]
    body["mappings"]["properties"] = {
        VECTOR: properties[VECTOR],
        EMBEDDED: properties[EMBEDDED],
        KEPT: {"type": "boolean"},
    }
    client.indices.create(index=INDEX, body=body)

    def actions() -> Iterator[dict]:
        for row, vector in enumerate(vectors):
            encoded = base64.b64encode(vector.tobytes()).decode("ascii")
            source = {VECTOR: encoded, EMBEDDED: True, KEPT: bool(kept[row])}
            yield {"_index": INDEX, "_id": str(row), "_source": source}

    for ok, item in streaming_bulk(client, actions(), chunk_size=2_000):
        assert ok, item
    client.indices.put_settings(index=INDEX, body={"index": {"refresh_interval": "1s"}})
    client.indices.forcemerge(index=INDEX, max_num_segments=1)
    client.indices.refresh(index=INDEX)


def _cluster_scan(client: OpenSearch, query: np.ndarray, count: int) -> list[int]:
    """The rows of the K papers the cluster's scan finds nearest, ordered again as the service does
    (nearest.nearest_first: numpy's arithmetic over the returned vectors, ties by row here)."""
    body = nearest.body({"term": {KEPT: True}}, query, count, {"timeout": "60s"})
    body["_source"] = [VECTOR]
    docs = client.search(index=INDEX, body=body)["hits"]["hits"]
    ties = np.array([int(doc["_id"]) for doc in docs])
    chosen, _vectors, _similarity = nearest.nearest_first(docs, ties, query, count)
    return [int(doc["_id"]) for doc in chosen]


if __name__ == "__main__":
    main()
