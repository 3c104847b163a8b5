"""A page's hits: stored papers with their title and abstract highlighted (highlights.py)."""

from __future__ import annotations

from searchsvc.backends.whoosh.generation_cache import OpenGeneration
from searchsvc.backends.whoosh.highlights import MatchedWords, highlight_abstract, highlight_title
from searchsvc.core.deadline import Deadline
from searchsvc.core.model import Hit
from searchsvc.core.paper import Paper
from searchsvc.core.tex import reading


def hits_of(
    gen: OpenGeneration, ranked: list[tuple[int, float | None]], words: MatchedWords, deadline: Deadline
) -> list[Hit]:
    """The papers of `ranked`, highlighted: up to max_per_page abstracts, so the clock is read
    before each and after the last."""
    hits = []
    for docnum, score in ranked:
        deadline.check()
        paper = Paper.from_stored(gen.searcher.stored_fields(docnum))
        hits.append(
            Hit.of(
                paper,
                score,
                highlight_title(reading(paper.title), words),
                highlight_abstract(reading(paper.abstract), words),
            )
        )
    deadline.check()
    return hits
