"""What the published generation was made from: its collection file, the merge state the next
update starts from, and how many of the journal's changes it includes.

Every rebuild and update keeps its collection (`ingest.collection`) beside the index as
`collections/<generation>.sqlite`, moved into place by the engine's hook just before it
publishes that generation; the files of older generations are deleted once it is published.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from searchsvc.backends import Backend, Journal
from searchsvc.ingest.collection import Collection

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


def published_changes(backend: Backend, journal: Journal) -> int:
    """How many of the journal's changes the published generation includes; an entry past them is
    a change that died before it was published. Where the engine kept no count (nothing published
    yet, or a generation published before it kept one), every change counts: a change is never
    dropped on a guess."""
    published = backend.published_entries()
    return len(journal) if published is None else published
