"""A rebuild: sources → records → merged papers → a new published index generation, unless the
published one was made from the same (operations.fingerprint): then nothing is rebuilt."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from searchsvc.backends import Backend, Journal
from searchsvc.backends.ports import FINGERPRINT
from searchsvc.core.errors import SearchsvcError
from searchsvc.core.progress import ProgressFactory, counted, no_progress
from searchsvc.ingest.field_limits import FieldLimits
from searchsvc.ingest.merging import Replayed, merge_records
from searchsvc.ingest.sources import discover, read_records
from searchsvc.operations.fingerprint import PARTS, fingerprint
from searchsvc.operations.published import collection_file, keep_collection, prune_collections, published_changes

# Why a rebuild builds although the published generation holds fingerprints: what differs.
_CHANGED = {
    "sources": "the sources changed",
    "settings": "the settings that shape the index changed",
    "code": "the code that reads or indexes papers changed",
}


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
    rebuilt: bool = True  # False: the published generation was up to date, and nothing was published
    reason: str = ""  # why it was rebuilt, when a generation was published before
    kept: int = 0  # when nothing was rebuilt: the journal's changes the published generation includes

    def summary(self) -> str:
        if not self.rebuilt:
            return self._nothing_rebuilt()
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
            f"{self.seconds:.1f} s{f'; rebuilt because {self.reason}' if self.reason else ''}"
        )

    def _nothing_rebuilt(self) -> str:
        changes = f", {self.kept} change(s)" if self.kept else ""
        discarded = f", {self.discarded} earlier change(s) discarded" if self.discarded else ""
        embedding = f" in {self.embedding_seconds:.1f} s" if self.embedded else ""
        return (
            f"index generation {self.generation} is up to date with its {len(self.files)} source file(s){changes} "
            f"and settings; nothing rebuilt (--force rebuilds anyway){discarded}, {self.embedded} embedded{embedding}, "
            f"{self.seconds:.1f} s"
        )


def rebuild(
    backend: Backend,
    sources: Sequence[Path],
    progress: ProgressFactory = no_progress,
    warn: Callable[[str], None] = lambda message: None,
    discard_changes: bool = False,
    force: bool = False,
) -> RebuildReport:
    """Read every source, merge, and publish a new generation; all or nothing. Then embed
    the papers that have no vector yet, for ranking by meaning.

    Unless `force`, nothing is read or published when the published generation is whole and was
    made from the same sources, settings and code (`fingerprint`) and the journal's changes it
    includes, all kept; its papers that lack a vector are still embedded.

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
        names = [str(path) for path in files]
        changes = backend.journal()
        published = published_changes(backend, changes)
        made_from = fingerprint(backend, files)
        published_generation = backend.published()
        reason = "--force was given" if force else _stale(backend, made_from, changes, published, discard_changes)
        if reason is None:
            return _up_to_date(backend, names, changes, published, progress, started)
        by_format: Counter[str] = Counter()
        limits = FieldLimits.of(backend.settings)
        with progress("reading", None) as advance:
            # Beside the index, not in /tmp: that is often a RAM disk, whose files would count as memory.
            records = counted(read_records(files, note, by_format, limits), advance)
            replay = () if discard_changes else changes.changes(published)
            previous = collection_file(backend, published_generation) if published_generation else None
            collection = merge_records(records, note, backend.settings.index_dir, replay, replayed, limits, previous)
        provenance = {"sources": names, FINGERPRINT: made_from}
        with collection, progress("indexing", len(collection)) as advance:
            generation = backend.build(collection, advance, provenance, keep_collection(backend, collection))
            papers, without_abstract = len(collection), collection.without_abstract()
        # Published: only now may the journal lose what the new generation does not include.
        discarded = changes.keep_first(replayed.changes)
        prune_collections(backend, generation)
        embedded, embedding_seconds = _embed(backend, f"index generation {generation} is published", progress)
    return RebuildReport(
        files=names,
        records=collection.records,
        papers=papers,
        merged=collection.merged,
        generation=generation,
        seconds=time.monotonic() - started,
        embedded=embedded,
        embedding_seconds=embedding_seconds,
        warnings=warnings,
        by_format=dict(by_format),
        without_abstract=without_abstract,
        replayed=replayed,
        discarded=discarded,
        reason=reason,
    )


def _stale(
    backend: Backend, made_from: dict[str, str], journal: Journal, included: int, discard_changes: bool
) -> str | None:
    """Why the published generation is not what this rebuild would make of the sources and the
    journal's first `included` changes (those it includes); "" when there is none; None: it is."""
    published = backend.published()
    if published is None:
        return ""
    was = backend.published_fingerprint()
    if was is None:
        return "the published generation is damaged, unreadable, or older than fingerprints"
    changed = [_CHANGED[part] for part in PARTS if was.get(part) != made_from[part]]
    if changed:
        return " and ".join(changed)
    if not collection_file(backend, published).is_file():
        return "the published generation's merge state is not on this machine"  # where the next add starts
    if len(journal) < included:
        return "the change journal lacks changes it includes"
    if discard_changes and included:
        return "the changes it includes are discarded"
    return None


def _up_to_date(
    backend: Backend, names: list[str], journal: Journal, included: int, progress: ProgressFactory, started: float
) -> RebuildReport:
    """Nothing rebuilt: the changes journaled but never published are dropped, as a rebuild drops
    them, those published kept; the papers that lack a vector embedded."""
    discarded = journal.keep_first(included)
    generation = backend.published() or ""
    embedded, embedding_seconds = _embed(backend, f"index generation {generation} is up to date", progress)
    return RebuildReport(
        files=names,
        records=0,
        papers=0,
        merged=0,
        generation=generation,
        seconds=time.monotonic() - started,
        embedded=embedded,
        embedding_seconds=embedding_seconds,
        discarded=discarded,
        rebuilt=False,
        kept=included,
    )


def _embed(backend: Backend, state: str, progress: ProgressFactory) -> tuple[int, float]:
    """Embed the published papers that lack a vector: how many, and in how long. An error comes after
    publishing: the generation serves, ranked lexically, and the error says so."""
    started = time.monotonic()
    try:
        embedded = backend.embed(progress)
    except (SearchsvcError, OSError) as exc:
        raise SearchsvcError(
            f"{state}, but its papers could not be embedded: {exc}; searches rank it lexically until a rebuild succeeds"
        ) from exc
    return embedded, time.monotonic() - started
