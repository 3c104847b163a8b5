"""The longest fields a paper may have, applied to every record read, whatever its format.

`read_records` (ingest/sources.py) passes each record of every reader through `limited`, so a
rebuild and a write through the API (whose body is read by the same readers) limit alike. The
limits are settings (`max_title_chars` and the rest: `searchsvc settings` gives their reasons).
A title or abstract too long is cut at a word and ends in "…": the paper stays findable by its
first words, and its page shows it was cut. A name or subject too long is left out rather than
cut, as a name cut short would be another person with a page of their own. Lists keep their
first items (the first authors). Each cut is a warning at its record (`file:line: what was cut`).
Merging applies them again (ingest/merging.py): the union of two records' authors can pass them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from searchsvc.core.paper import Paper, paper_id_for_title
from searchsvc.core.text import preview
from searchsvc.settings import Settings

_ELLIPSIS = "…"
# A list field: what its items are called, and the settings of their number and length.
_LISTS = {
    "authors": ("author names", "max_authors", "max_author_name_chars"),
    "subjects": ("subjects", "max_subjects", "max_subject_chars"),
}


@dataclass(frozen=True)
class FieldLimits:
    title_chars: int
    abstract_chars: int
    authors: int
    author_name_chars: int
    subjects: int
    subject_chars: int

    @classmethod
    def of(cls, settings: Settings) -> FieldLimits:
        return cls(
            title_chars=settings.max_title_chars,
            abstract_chars=settings.max_abstract_chars,
            authors=settings.max_authors,
            author_name_chars=settings.max_author_name_chars,
            subjects=settings.max_subjects,
            subject_chars=settings.max_subject_chars,
        )


DEFAULT_LIMITS = FieldLimits.of(Settings())


def limited(paper: Paper, limits: FieldLimits, warn: Callable[[str], None], where: str | None = None) -> Paper:
    """`paper` with every field within `limits` (changed in place), each cut warned about at `where`
    (default: the paper's first record)."""
    if (
        len(paper.title) <= limits.title_chars
        and len(paper.abstract) <= limits.abstract_chars
        and _within(paper.authors, limits.authors, limits.author_name_chars)
        and _within(paper.subjects, limits.subjects, limits.subject_chars)
    ):
        return paper  # (nearly every record: a few comparisons)
    where = str(paper.sources[0]) if where is None else where
    if len(paper.title) > limits.title_chars:
        derived = paper.id == paper_id_for_title(paper.title)
        warn(f"{where}: title of {len(paper.title):,} characters cut to {limits.title_chars:,} (max_title_chars)")
        paper.title = _cut(paper.title, limits.title_chars)
        if derived:  # an id made from the title is made from the title kept, as a re-import of it would make it
            paper.id = paper_id_for_title(paper.title)
    if len(paper.abstract) > limits.abstract_chars:
        warn(
            f"{where}: abstract of {len(paper.abstract):,} characters cut to {limits.abstract_chars:,} "
            "(max_abstract_chars)"
        )
        paper.abstract = _cut(paper.abstract, limits.abstract_chars)
    paper.authors = _list(paper.authors, "authors", limits.authors, limits.author_name_chars, where, warn)
    paper.subjects = _list(paper.subjects, "subjects", limits.subjects, limits.subject_chars, where, warn)
    return paper


def _within(items: list[str], most: int, chars: int) -> bool:
    return len(items) <= most and max(map(len, items), default=0) <= chars


def _cut(text: str, limit: int) -> str:
    """`text` in `limit` characters: its words that fit, then "…" (a word cut only when the first
    half holds no space). Readers fold whitespace, so one space separates words."""
    head = text[: limit - len(_ELLIPSIS)]
    if text[len(head)] != " ":
        space = head.rfind(" ")
        if space > limit // 2:
            head = head[:space]
    return head.rstrip() + _ELLIPSIS


def _list(items: list[str], field: str, most: int, chars: int, where: str, warn: Callable[[str], None]) -> list[str]:
    """The first `most` of `items` no longer than `chars`, each kind of cut warned about once."""
    kind, most_setting, chars_setting = _LISTS[field]
    long = [item for item in items if len(item) > chars]
    if long:
        warn(
            f"{where}: {kind} longer than {chars:,} characters left out ({chars_setting}): {len(long):,}, "
            f"the first {preview(long[0])}"
        )
        items = [item for item in items if len(item) <= chars]
    if len(items) > most:
        warn(f"{where}: {len(items):,} {field}, the first {most:,} kept ({most_setting})")
        items = items[:most]
    return items
