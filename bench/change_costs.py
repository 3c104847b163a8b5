"""What one add or remove costs on an index already built, and what it costs a process that served the
generation before it (issue #30: at 300,000 papers, add ≤ 6 s, remove ≤ 2 s, re-open ≤ 0.5 s, fresh
open ≤ 3 s).

    python -m bench change_costs --index-dir DIR [--semantic] --add FILE.jsonl --remove ID,ID,... \\
        [--out bench/results/change-costs.json]

Works on DIR itself (copy it first: the changes are published there). In one process, side by side:
a fresh open of the published generation (`GenerationCache.get()` and, ranking by meaning, its
vectors; the encoder loaded before, as a worker loads it once), then each change in turn through
`operations.update` (with its embedding, as `searchsvc add` does), then the re-open of the process
that held the generation before it. Each step's seconds with the load average beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.measure import machine
from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.operations import update
from searchsvc.operations.update import ChangeReport
from searchsvc.settings import load_settings

Change = tuple[str, Callable[[WhooshBackend], ChangeReport]]  # its name, and how to make it


def run(index_dir: Path, semantic: bool, changes: list[Change]) -> dict[str, Any]:
    settings = load_settings({"index_dir": index_dir, "semantic_ranking": semantic}, environ={})
    reader, writer = WhooshBackend(settings), WhooshBackend(settings)
    if semantic:
        _ = reader.vector_store, writer.vector_store  # load the encoder: not part of any open
    steps: list[dict[str, Any]] = [{"step": "fresh open", **_timed(lambda: _open(reader, semantic))}]
    for name, change in changes:
        made: list[ChangeReport] = []
        timing = _timed(lambda change=change, made=made: made.append(change(writer)))
        report = made[0]
        steps.append(
            {
                "step": name,
                **timing,
                "embedding_s": round(report.embedding_seconds, 2),
                "added": len(report.added),
                "removed": len(report.removed),
                "missing": len(report.missing),
            }
        )
        steps.append({"step": f"re-open after the {name}", **_timed(lambda: _open(reader, semantic))})
    return {"machine": machine(), "index_dir": str(index_dir), "semantic_ranking": semantic, "steps": steps}


def _open(backend: WhooshBackend, semantic: bool) -> None:
    generation = backend._generations.get()  # what a worker's first search after a change waits for
    if semantic:
        assert generation.vectors.get() is not None, "some paper has no vector: the figure would not be a search's"


def _timed(work: Callable[[], object]) -> dict[str, Any]:
    started = time.perf_counter()
    work()
    return {"seconds": round(time.perf_counter() - started, 3), "load": [round(x, 2) for x in os.getloadavg()]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench change_costs", description=__doc__)
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--semantic", action="store_true")
    parser.add_argument("--add", type=Path, action="append", default=[], help="a JSON lines file to add (repeatable)")
    parser.add_argument("--remove", action="append", default=[], help="comma-separated ids to remove (repeatable)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    changes: list[Change] = [
        (f"add of {sum(1 for _ in path.open())}", lambda b, path=path: update.add(b, [path])) for path in args.add
    ]
    changes += [
        (f"remove of {len(ids.split(','))}", lambda b, ids=ids: update.remove(b, ids.split(","))) for ids in args.remove
    ]
    result = run(args.index_dir, args.semantic, changes)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
