"""Papers → one Whoosh index in a generation directory."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from whoosh import index

from searchsvc.backends.whoosh.schema import NEWEST_RANK, OLDEST_RANK, build_schema
from searchsvc.papers import Paper

Progress = Callable[[int], None]


def date_orders(papers: Sequence[Paper]) -> tuple[list[int], list[int]]:
    """Each paper's rank newest-first and oldest-first; ties by id, undated papers last."""
    newest = sorted(range(len(papers)), key=lambda i: (papers[i].year is None, -(papers[i].year or 0), papers[i].id))
    oldest = sorted(range(len(papers)), key=lambda i: (papers[i].year is None, papers[i].year or 0, papers[i].id))
    return _ranks(newest), _ranks(oldest)


def write_index(directory: Path, papers: Sequence[Paper], memory_mb: int, progress: Progress) -> None:
    """Index `papers` into `directory` with one writer and one commit."""
    newest_rank, oldest_rank = date_orders(papers)
    ix = index.create_in(str(directory), build_schema())
    writer = ix.writer(limitmb=memory_mb)
    try:
        for i, paper in enumerate(papers):
            writer.add_document(
                id=paper.id,
                title=paper.title,
                abstract=paper.abstract,
                author=" ; ".join(paper.authors),
                year=paper.year,
                subjects=paper.subjects,
                authors=paper.authors,
                facet_year=_column_list([] if paper.year is None else [paper.year]),
                facet_subject=_column_list(paper.subjects),
                facet_author=_column_list(paper.authors),
                **{NEWEST_RANK: newest_rank[i], OLDEST_RANK: oldest_rank[i]},
            )
            progress(1)
        writer.commit()
    except BaseException:
        writer.cancel()
        raise
    finally:
        ix.close()


def _column_list(values: list[str] | list[int]) -> bytes:
    return json.dumps(values, ensure_ascii=False).encode("utf-8")


def _ranks(order: list[int]) -> list[int]:
    ranks = [0] * len(order)
    for rank, i in enumerate(order):
        ranks[i] = rank
    return ranks
