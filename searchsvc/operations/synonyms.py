"""The other forms a search widens its words with (core.synonyms): the acronyms the published
generation's papers define, as its rebuild or update kept them, and the synonyms file's groups;
built once per generation and file, and shared by every search of this process."""

from __future__ import annotations

import logging
from pathlib import Path

from searchsvc.backends import Backend
from searchsvc.core.acronyms import Acronym
from searchsvc.core.deadline import budget
from searchsvc.core.synonyms import Synonyms, read_file
from searchsvc.operations.published import acronyms_file, published_lately, read_acronyms

_log = logging.getLogger(__name__)


def published_acronyms(backend: Backend) -> list[Acronym]:
    """The published generation's acronyms; none where it kept none here (built on another machine,
    or before acronyms were kept) or the file cannot be read (logged)."""
    published = backend.published()
    return [] if published is None else _acronyms(acronyms_file(backend, published))


def table(backend: Backend) -> Synonyms:
    """The groups searches widen with now: built once per generation and synonyms file (read
    again when it changes), at a worker's start (`web.app.open_index`) or, after a new
    generation, by the first search, checking the request's deadline as it goes. Which generation
    is published is asked at most once a second (`published_lately`), not by every search."""
    published = published_lately(backend)
    acronyms = None if published is None else acronyms_file(backend, published)
    file = backend.settings.synonyms_file
    stamp = (acronyms, _modified(acronyms), file, _modified(Path(file) if file else None))
    found = _TABLES.get(stamp)
    if found is None:
        check = budget(backend.settings.search_time_limit_ms).check
        found = Synonyms.of(_acronyms(acronyms) if acronyms else [], _groups(file), check)
        _TABLES.clear()  # only the newest is searched with
        _TABLES[stamp] = found
    return found


_TABLES: dict[tuple[Path | None, int, str, int], Synonyms] = {}


def _modified(path: Path | None) -> int:
    """When the file last changed (0: none, or none to read: the engine says why when it answers)."""
    try:
        return 0 if path is None else path.stat().st_mtime_ns
    except (OSError, ValueError):  # ValueError: a damaged index pointer naming no file at all
        return 0


def _acronyms(path: Path) -> list[Acronym]:
    try:
        return read_acronyms(path)
    except FileNotFoundError:
        return []
    except (OSError, ValueError, TypeError) as error:
        _log.warning("the acronyms in %s are unreadable; searching without them: %s", path, error)
        return []


def _groups(file: str) -> list[tuple[str, ...]]:
    try:
        return read_file(Path(file)) if file else []
    except ValueError as error:  # checked at start; changed since
        _log.warning("synonyms_file: %s; searching without its groups", error)
        return []
