"""What the published generation was made from: its collection file, the merge state the next
update starts from, and how many of the journal's changes it includes.

Every rebuild and update keeps its collection (`ingest.collection`) beside the index as
`collections/<generation>.sqlite`, and the acronyms its papers define as
`collections/<generation>.acronyms.json`, moved into place by the engine's hook just before it
publishes that generation; the files of older generations are deleted once it is published. A
change killed in between leaves a file no generation served needs: the next change removes it, or
a server's start (`remove_orphaned_collections`).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from weakref import WeakKeyDictionary

from searchsvc.backends import Backend, Journal
from searchsvc.core.acronyms import Acronym, mine, text_of
from searchsvc.core.errors import RebuildInProgress
from searchsvc.ingest.collection import Collection, filed_under

COLLECTIONS = "collections"
# How long a search may go on with the name of the generation published a moment ago: on OpenSearch
# asking is a request to the cluster, which would double a search's cost (generations.check_serving).
PUBLISHED_FOR_S = 1.0
_seen: WeakKeyDictionary[Backend, tuple[float, str | None]] = WeakKeyDictionary()
_KEPT = (".sqlite", ".acronyms.json")  # what each generation keeps here: its collection, its acronyms
_log = logging.getLogger(__name__)


def collection_file(backend: Backend, generation: str) -> Path:
    return backend.settings.index_dir / COLLECTIONS / f"{generation}.sqlite"


def published_lately(backend: Backend) -> str | None:
    """The published generation's name as asked at most `PUBLISHED_FOR_S` ago in this process (or
    as this process's last change named it)."""
    now = time.monotonic()
    seen = _seen.get(backend)
    if seen is None or now - seen[0] >= PUBLISHED_FOR_S:
        seen = _seen[backend] = (now, backend.published())
    return seen[1]


def acronyms_file(backend: Backend, generation: str) -> Path:
    return backend.settings.index_dir / COLLECTIONS / f"{generation}.acronyms.json"


def read_acronyms(path: Path) -> list[Acronym]:
    """The acronyms a generation kept (OSError, ValueError or TypeError if the file is missing or damaged)."""
    rows = json.loads(path.read_bytes())
    return [Acronym(str(short), tuple(map(str, long)), int(papers)) for short, long, papers in rows]


def _write_acronyms(path: Path, acronyms: list[Acronym]) -> None:
    rows = [[acronym.short, list(acronym.long), acronym.papers] for acronym in acronyms]
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    partial.replace(path)


def paper_filed_under(backend: Backend, key: str) -> tuple[str | None, bool]:
    """The id of the published paper merge key `key` names (an arXiv id or DOI: `Identifiers.merge_keys`),
    or None; and whether that could be told: not where the published generation has no collection
    file here (built on another machine) or it cannot be read, when the paper may still be indexed."""
    published = backend.published()
    if published is None:
        return None, False
    path = collection_file(backend, published)
    try:
        return filed_under(path, key), True
    except sqlite3.Error as error:  # missing (pruned by a newer change meanwhile, built elsewhere) or damaged
        _log.info("identifier lookup unavailable for generation %s: %s", published, error)
        return None, False


def keep_collection(
    backend: Backend, collection: Collection, acronyms: list[Acronym] | None = None
) -> Callable[[str], None]:
    """The hook an engine calls with a new generation's name just before publishing it: keeps the
    collection and the acronyms its papers define (`acronyms` where the caller knows them, as an
    update does; else mined from every paper)."""

    def keep(generation: str) -> None:
        found = mine(text_of(paper.title, paper.abstract) for paper in collection) if acronyms is None else acronyms
        _write_acronyms(acronyms_file(backend, generation), found)
        collection.keep(collection_file(backend, generation))
        _seen[backend] = (time.monotonic(), generation)  # this process's next search widens with them

    return keep


def prune_collections(backend: Backend, published: str | None) -> list[str]:
    """Delete the collection files of every generation but the published one (under the rebuild
    lock, so none is a running change's); their names."""
    removed = []
    for path in _others(backend, published):
        path.unlink(missing_ok=True)
        removed.append(f"{COLLECTIONS}/{path.name}")
    return removed


def remove_orphaned_collections(backend: Backend) -> list[str]:
    """At a server's start: delete the collection files of generations neither published nor being
    built (a change killed after keeping its file and before publishing, or before pruning the one
    it replaced), unless a change runs now, whose own file one may be; their names. The lock is
    taken only when there is one to remove: a write meanwhile would be refused."""
    if not any(_others(backend, backend.published())):
        return []  # the usual start: take no lock
    try:
        with backend.exclusive_change("start"):
            return prune_collections(backend, backend.published())
    except RebuildInProgress:
        return []  # the running change, or the next one, removes them


def _others(backend: Backend, published: str | None) -> list[Path]:
    folder = backend.settings.index_dir / COLLECTIONS
    kept = [
        path
        for suffix in _KEPT
        for path in folder.glob(f"*{suffix}")
        if not path.name.startswith(".") and path.name.removesuffix(suffix) != published
    ]
    return kept + list(folder.glob(".*.partial"))  # acronyms a killed change was writing


def published_changes(backend: Backend, journal: Journal) -> int:
    """How many of the journal's changes the published generation includes; an entry past them is
    a change that died before it was published. Where the engine kept no count (nothing published
    yet, or a generation published before it kept one), every change counts: a change is never
    dropped on a guess."""
    published = backend.published_entries()
    return len(journal) if published is None else published
