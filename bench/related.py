"""Related papers: are the lists better by meaning than by shared words (more-like-this)?

For each paper of a collection (or a seeded sample of `--papers` of them), the top `--top`
related papers are listed twice on the same published index: by more-like-this (ranking by
meaning off) and by meaning (the paper's vector against the whole collection's). A related
paper counts as on topic if it shares a subject or an author with the paper; the table gives
the mean share of the top `--top` that do, for each signal and each method, over the papers
that have subjects (resp. authors) at all.

    python -m bench related --seeds                         # builds and embeds the seeds in a temporary index
    python -m bench related --index-dir DIR --vector-store DIR [--papers 500]   # an index built already
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path
from typing import Any

from bench.measure import REPO, machine, report, table
from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.model import Hit
from searchsvc.core.paper import Paper
from searchsvc.operations.rebuild import rebuild
from searchsvc.operations.search import related
from searchsvc.settings import load_settings

METHODS = {"more-like-this": False, "meaning": True}  # method → semantic_ranking


def evaluate(index_dir: Path, vector_store: Path, papers: int | None, top: int, seed: int) -> dict[str, Any]:
    backends = {
        method: WhooshBackend(
            load_settings(
                {
                    "index_dir": index_dir,
                    "vector_store": str(vector_store),
                    "semantic_ranking": semantic,
                    "related_papers": top,
                },
                environ={},
            )
        )
        for method, semantic in METHODS.items()
    }
    meaning = backends["meaning"]
    status = meaning.status()
    if status["semantic_ranking"] != "on":
        raise SystemExit(
            f"the index's papers are not all embedded yet (semantic_ranking: {status['semantic_ranking']})"
        )
    searcher = meaning._generations.get().searcher
    ids = sorted(stored["id"] for stored in searcher.all_stored_fields())
    chosen = ids if papers is None or papers >= len(ids) else sorted(random.Random(seed).sample(ids, papers))
    shares: dict[str, dict[str, list[float]]] = {m: {"subject": [], "author": [], "either": []} for m in METHODS}
    for paper_id in chosen:
        paper = meaning.paper(paper_id)
        for method, backend in backends.items():
            found = related(backend, paper_id, top)
            for signal, values in _shares(paper, found, top).items():
                if values is not None:
                    shares[method][signal].append(values)
    summary = {
        method: {signal: (sum(v) / len(v) if v else None, len(v)) for signal, v in signals.items()}
        for method, signals in shares.items()
    }
    return {"papers": len(chosen), "collection": len(ids), "top": top, "summary": summary}


def _shares(paper: Paper, related: list[Hit], top: int) -> dict[str, float | None]:
    """Share of the top `top` related papers sharing a subject, an author, either (None: the paper has none)."""
    subjects, authors = set(paper.subjects), set(paper.authors)

    def share(test: Any) -> float:
        return sum(1 for hit in related[:top] if test(hit)) / top

    return {
        "subject": share(lambda hit: subjects & set(hit.subjects)) if subjects else None,
        "author": share(lambda hit: authors & set(hit.authors)) if authors else None,
        "either": share(lambda hit: subjects & set(hit.subjects) or authors & set(hit.authors))
        if subjects or authors
        else None,
    }


def _text(name: str, result: dict[str, Any]) -> str:
    rows = []
    for method, signals in result["summary"].items():
        shares = (f"{share:.3f} ({count})" if share is not None else "–" for share, count in signals.values())
        rows.append([method, *shares])
    head = (
        f"{name}: {result['papers']} of {result['collection']} papers, top {result['top']} related; "
        "mean share sharing a subject / an author / either (papers counted)\n\n"
    )
    return head + table(["method", "subject", "author", "either"], rows)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", action="store_true", help="build and embed the seeds in a temporary index")
    parser.add_argument("--index-dir", type=Path, help="a published index (e.g. the ACL records')")
    parser.add_argument("--vector-store", type=Path, help="its vector store folder")
    parser.add_argument("--name", default="collection")
    parser.add_argument("--papers", type=int, help="a seeded sample of this many papers (default: all)")
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.seeds:
        with tempfile.TemporaryDirectory() as work:
            index_dir, store = Path(work) / "index", Path(work) / "vectors"
            settings = load_settings({"index_dir": index_dir, "vector_store": str(store)}, environ={})
            rebuild(WhooshBackend(settings), [REPO / "seeds"])
            result = evaluate(index_dir, store, args.papers, args.top, args.seed)
        name = "seeds"
    elif args.index_dir and args.vector_store:
        result = evaluate(args.index_dir, args.vector_store, args.papers, args.top, args.seed)
        name = args.name
    else:
        parser.error("give --seeds, or --index-dir and --vector-store")
    result = {"name": name, **result, "machine": machine()}
    report(result, _text(name, result), args.out)
