"""The exact scan behind candidates found by meaning (`meaning_candidates`): `core.ranking.related_order`
over N random unit vectors of 384 dimensions held as float16, as a generation holds them, K nearest,
a tenth of the rows left out as a filter would; the median and best of a few runs, and the load.

    python -m bench meaning_scan --sizes 30000 100000 300000 1000000
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from searchsvc.core.ranking import related_order
from searchsvc.semantic.encoder import DIMENSIONS


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[30_000, 100_000, 300_000])
    parser.add_argument("--nearest", type=int, default=100)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"load before: {os.getloadavg()}")
    print("| vectors | median ms | best ms | load |\n|---|---|---|---|")
    for size in args.sizes:
        rows = rng.standard_normal((size, DIMENSIONS), dtype=np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        vectors = rows.astype(np.float16)
        del rows
        query = vectors[5].astype(np.float32)
        left_out = np.flatnonzero(rng.random(size) < 0.1)
        times = []
        for _ in range(args.runs):
            started = time.perf_counter()
            related_order(vectors, query, args.nearest, exclude=left_out)
            times.append(time.perf_counter() - started)
        times.sort()
        median, best = times[len(times) // 2] * 1000, times[0] * 1000
        print(f"| {size:,} | {median:.0f} | {best:.0f} | {os.getloadavg()[0]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
