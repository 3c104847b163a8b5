"""Papers → one Whoosh index in a generation directory."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from whoosh import index

from searchsvc.backends.whoosh.schema import OLDEST_RANK, build_schema
from searchsvc.papers import Paper

Progress = Callable[[int], None]


def date_key(paper: Paper, newest: bool) -> tuple[bool, int, str]:
    """Sort key for newest- or oldest-first: undated papers last either way, ties by id."""
    year = paper.year or 0
    return (paper.year is None, -year if newest else year, paper.id)


def write_index(directory: Path, papers: Iterable[Paper], memory_mb: int, progress: Progress) -> None:
    """Index `papers` into `directory` with one writer and one commit.

    Documents are written newest first, and one writer makes one segment, so document
    numbers follow the newest-first order: Whoosh breaks score ties by the lower document
    number, which makes relevance ties go to the newer paper, and sorting by newest is
    sorting by document number. Only the oldest-first position needs a column.
    """
    ordered = sorted(papers, key=lambda paper: date_key(paper, newest=True))
    oldest_rank = _ranks(sorted(range(len(ordered)), key=lambda i: date_key(ordered[i], newest=False)))
    ix = index.create_in(str(directory), build_schema())
    writer = ix.writer(limitmb=memory_mb)
    try:
        for paper, rank in zip(ordered, oldest_rank, strict=True):
            writer.add_document(
                id=paper.id,
                title=paper.title,
                abstract=paper.abstract,
                title_exact=paper.title,
                abstract_exact=paper.abstract,
                author=" ; ".join(paper.authors),
                subject="\n".join(paper.subjects),
                year=paper.year,
                subjects=paper.subjects,
                authors=paper.authors,
                facet_year=_column_list([] if paper.year is None else [paper.year]),
                facet_subject=_column_list(paper.subjects),
                facet_author=_column_list(paper.authors),
                **{OLDEST_RANK: rank},
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
