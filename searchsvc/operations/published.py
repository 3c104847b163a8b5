"""The published generation's collection file: the merge state the next update starts from.

Every rebuild and update keeps its collection (`ingest.collection`) beside the index as
`collections/<generation>.sqlite`, moved into place by the engine's hook just before it
publishes that generation; the files of older generations are deleted once it is published.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from searchsvc.backends import Backend
from searchsvc.ingest.collection import Collection, journal_entries_of
from searchsvc.ingest.journal import Journal

COLLECTIONS = "collections"


def collection_file(backend: Backend, generation: str) -> Path:
    return backend.settings.index_dir / COLLECTIONS / f"{generation}.sqlite"


def keep_collection(backend: Backend, collection: Collection) -> Callable[[str], None]:
    """The hook an engine calls with a new generation's name just before publishing it."""
    return lambda generation: collection.keep(collection_file(backend, generation))


def prune_collections(backend: Backend, published: str) -> None:
    """Delete the collection files of every generation but the published one (under the rebuild lock)."""
    for path in (backend.settings.index_dir / COLLECTIONS).glob("*.sqlite"):
        if path.stem != published:
            path.unlink(missing_ok=True)


def published_changes(backend: Backend, changes: Journal) -> int:
    """How many of the journal's changes the published generation includes; a line past them is a
    change that died before it was published. Without a published collection to tell (none yet,
    or one kept before the journal), every change counts: a change is never dropped on a guess."""
    published = backend.published()
    path = None if published is None else collection_file(backend, published)
    if path is None or not path.is_file():
        return len(changes)
    return journal_entries_of(path)
