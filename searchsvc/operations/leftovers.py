"""What killed changes leave beside the index, removed when a server starts.

A rebuild or a write removes its scratch when it ends, and the next change removes what a killed
one left; a server's start removes it too (each web worker's, so a worker its timeout killed is
followed by one that cleans up after it), so a killed `searchsvc add` does not leave its copy of
the collection, tens of megabytes, until someone writes again. Nothing in use is touched: each
scratch folder is locked by the process using it (`host.ScratchFolder`), and the engine removes
its partial generations, and this module the collection files of generations neither published nor
being built, only while no change holds its lock.
"""

from __future__ import annotations

from searchsvc.backends import Backend
from searchsvc.host import remove_abandoned
from searchsvc.ingest.collection import SCRATCH_PREFIX
from searchsvc.operations.published import remove_orphaned_collections
from searchsvc.semantic.store import TEMP_PREFIX as VECTORS_PREFIX


def remove_leftovers(backend: Backend) -> list[str]:
    """Delete the merge scratch, vector store saves, partial generations and orphaned collection
    files of killed changes; their names."""
    settings = backend.settings
    removed = remove_abandoned(settings.index_dir, SCRATCH_PREFIX)
    removed += remove_abandoned(settings.vector_store_dir, VECTORS_PREFIX)
    return removed + backend.remove_leftovers() + remove_orphaned_collections(backend)
