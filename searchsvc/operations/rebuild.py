"""A rebuild: sources → records → merged papers → a new published index generation."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from searchsvc.backends import Backend
from searchsvc.core.errors import SearchsvcError
from searchsvc.core.progress import ProgressFactory, counted, no_progress
from searchsvc.ingest.field_limits import FieldLimits
from searchsvc.ingest.merging import Replayed, merge_records
from searchsvc.ingest.sources import discover, read_records
from searchsvc.operations.published import keep_collection, prune_collections, published_changes


@dataclass
class RebuildReport:
    files: list[str]
    records: int
    papers: int
    merged: int
    generation: str
    seconds: float
    embedded: int = 0  # papers whose vectors were computed (the others were stored already)
    embedding_seconds: float = 0.0  # of `seconds`, the time spent embedding them
    warnings: list[str] = field(default_factory=list)
    by_format: dict[str, int] = field(default_factory=dict)  # records read, per source format
    without_abstract: int = 0  # papers indexed by their title alone
    replayed: Replayed = field(default_factory=Replayed)  # the journal's changes merged after the sources
    discarded: int = 0  # changes dropped from the journal (`--discard-changes`)

    def summary(self) -> str:
        formats = ", ".join(f"{count} {name}" for name, count in sorted(self.by_format.items()))
        embedding = f" in {self.embedding_seconds:.1f} s" if self.embedded else ""
        title_only = (
            f" ({self.without_abstract} without an abstract, found by title only)" if self.without_abstract else ""
        )
        changes = ""
        if self.replayed.changes:
            kept = self.replayed
            changes = f", replayed {kept.added} added and {kept.removed} removed from {kept.changes} earlier change(s)"
        if self.discarded:
            changes += f", {self.discarded} earlier change(s) discarded"
        return (
            f"rebuilt index generation {self.generation} from {len(self.files)} file(s): "
            f"{self.records} records read{f' ({formats})' if formats else ''}, "
            f"{self.papers} papers indexed{title_only}{changes}, "
            f"{self.merged} merged, {self.embedded} embedded{embedding}, {len(self.warnings)} warning(s), "
            f"{self.seconds:.1f} s"
        )


def rebuild(
    backend: Backend,
    sources: Sequence[Path],
    progress: ProgressFactory = no_progress,
    warn: Callable[[str], None] = lambda message: None,
    discard_changes: bool = False,
) -> RebuildReport:
    """Read every source, merge, and publish a new generation; all or nothing. Then embed
    the papers that have no vector yet, for ranking by meaning.

    The changes written since (`searchsvc add`/`remove`, the write API: `Backend.journal`) are
    replayed after the sources, unless `discard_changes`, which drops them once the new
    generation is published. Any error (a malformed source, a failed build or check)
    propagates before anything is published, so the previous index keeps serving. An error while embedding comes after
    publishing: the new generation serves, ranked lexically, and the error says so.
    """
    started = time.monotonic()
    warnings: list[str] = []

    def note(message: str) -> None:
        warnings.append(message)
        warn(message)

    replayed = Replayed()
    with backend.exclusive_change("rebuild"):
        files = discover(sources)
        changes = backend.journal()
        published = published_changes(backend, changes)
        by_format: Counter[str] = Counter()
        with progress("reading", None) as advance:
            # Beside the index, not in /tmp: that is often a RAM disk, whose files would count as memory.
            records = counted(read_records(files, note, by_format, FieldLimits.of(backend.settings)), advance)
            replay = () if discard_changes else changes.changes(published)
            collection = merge_records(records, note, backend.settings.index_dir, replay, replayed)
        names = [str(path) for path in files]
        with collection, progress("indexing", len(collection)) as advance:
            generation = backend.build(collection, advance, {"sources": names}, keep_collection(backend, collection))
            papers, without_abstract = len(collection), collection.without_abstract()
        # Published: only now may the journal lose what the new generation does not include.
        discarded = changes.keep_first(replayed.changes)
        prune_collections(backend, generation)
        embedding_started = time.monotonic()
        try:
            embedded = backend.embed(progress)
        except (SearchsvcError, OSError) as exc:
            raise SearchsvcError(
                f"index generation {generation} is published, but its papers could not be embedded: {exc}; "
                "searches rank it lexically until a rebuild succeeds"
            ) from exc
    return RebuildReport(
        files=names,
        records=collection.records,
        papers=papers,
        merged=collection.merged,
        generation=generation,
        seconds=time.monotonic() - started,
        embedded=embedded,
        embedding_seconds=time.monotonic() - embedding_started,
        warnings=warnings,
        by_format=dict(by_format),
        without_abstract=without_abstract,
        replayed=replayed,
        discarded=discarded,
    )
