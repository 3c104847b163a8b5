"""The other forms a search widens its words with (core.synonyms): the acronyms the published
generation's papers define, as its rebuild or update kept them, and the synonyms file's groups;
built once per generation and file, and shared by every search of this process."""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

from searchsvc.backends import Backend
from searchsvc.core.acronyms import Acronym
from searchsvc.core.synonyms import Synonyms, read_file
from searchsvc.operations.published import acronyms_file, read_acronyms

_log = logging.getLogger(__name__)


def published_acronyms(backend: Backend) -> list[Acronym]:
    """The published generation's acronyms; none where it kept none here (built on another machine,
    or before acronyms were kept) or the file cannot be read (logged)."""
    published = backend.published()
    return (
        []
        if published is None
        else _acronyms(acronyms_file(backend, published), _modified(acronyms_file(backend, published)))
    )


def table(backend: Backend) -> Synonyms:
    """The groups searches widen with now (the file is read again when it changes)."""
    published = backend.published()
    acronyms = None if published is None else acronyms_file(backend, published)
    file = backend.settings.synonyms_file
    return _table(acronyms, _modified(acronyms), file, _modified(Path(file) if file else None))


def _modified(path: Path | None) -> int:
    """When the file last changed (0: none, or none to read: the engine says why when it answers)."""
    try:
        return 0 if path is None else path.stat().st_mtime_ns
    except (OSError, ValueError):  # ValueError: a damaged index pointer naming no file at all
        return 0


@lru_cache(maxsize=4)
def _acronyms(path: Path, _modified: int) -> list[Acronym]:
    try:
        return read_acronyms(path)
    except FileNotFoundError:
        return []
    except (OSError, ValueError, TypeError) as error:
        _log.warning("the acronyms in %s are unreadable; searching without them: %s", path, error)
        return []


@lru_cache(maxsize=4)
def _table(acronyms: Path | None, acronyms_modified: int, file: str, file_modified: int) -> Synonyms:
    groups: list[tuple[str, ...]] = []
    if file:
        try:
            groups = read_file(Path(file))
        except ValueError as error:  # checked at start; changed since
            _log.warning("synonyms_file: %s; searching with the groups it had", error)
            return _table(acronyms, acronyms_modified, "", 0)
    return Synonyms.of([] if acronyms is None else _acronyms(acronyms, acronyms_modified), groups)
