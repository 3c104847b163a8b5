"""Updates: add records to, or remove papers from, the published collection without a rebuild.

The published collection's merge state (`ingest.collection`, kept beside the index by every
rebuild and update) is copied, the new records are merged into the copy by the rebuild's own
rules (`merging.merge_into`), and the papers that changed are handed to the engine, which
publishes a new generation sharing what did not change. The copy becomes the new published
collection just before the engine publishes, so a process killed at any point leaves a
published generation and the collection it was built from.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from searchsvc.backends import Backend
from searchsvc.core.acronyms import merged, mine, text_of
from searchsvc.core.arrival import now
from searchsvc.core.catalogue import Change, Idempotency, JournalEntry
from searchsvc.core.errors import IndexUnavailable, SearchsvcError, storage_full_explained
from searchsvc.core.paper import Paper, SourceLocation
from searchsvc.core.progress import ProgressFactory, counted, no_progress
from searchsvc.ingest.collection import MergeStore
from searchsvc.ingest.field_limits import FieldLimits
from searchsvc.ingest.merging import merge_into
from searchsvc.ingest.sources import discover, read_records
from searchsvc.operations.background_embedding import embed_pending
from searchsvc.operations.published import (
    collection_file,
    keep_collection,
    prune_collections,
    published_changes,
)
from searchsvc.operations.synonyms import published_acronyms


@dataclass
class ChangeReport:
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # ids asked to be removed that no paper has
    records: int = 0  # records read
    generation: str = ""  # the published generation afterwards (the same one if nothing changed)
    changed_at: str | None = None  # when it was made, just before publishing (None: nothing changed)
    seconds: float = 0.0
    embedded: int = 0
    embedding_seconds: float = 0.0
    # "on": every paper is ranked by meaning too; "pending": its new papers are being embedded
    # in the background (a write through the API); "off": ranking by meaning is off
    semantic_ranking: str = "off"
    warnings: list[str] = field(default_factory=list)
    replayed: bool = False  # the answer of a change made earlier under the same idempotency key

    _OUTCOME = ("added", "replaced", "removed", "unchanged", "missing", "records", "warnings")

    def outcome(self) -> dict[str, Any]:
        """What the change did, as its journal entry keeps it for a retry under the same key."""
        return {name: getattr(self, name) for name in self._OUTCOME}

    @classmethod
    def replayed_from(cls, entry: JournalEntry, generation: str, semantic_ranking: str) -> ChangeReport:
        """The report of the change `entry` made, answered again: `generation` is served now."""
        assert entry.idempotency is not None
        kept = {name: entry.idempotency.outcome[name] for name in cls._OUTCOME if name in entry.idempotency.outcome}
        return cls(**kept, generation=generation, changed_at=entry.at, semantic_ranking=semantic_ranking, replayed=True)

    def summary(self) -> str:
        counts = ", ".join(f"{len(ids)} {name}" for name, ids in self._lists().items() if ids or name != "missing")
        published = f"published index generation {self.generation}" if self.changed_at else "nothing to publish"
        embedding = " (the rest in the background)" if self.semantic_ranking == "pending" else ""
        return (
            f"{published}: {counts}; {self.records} records read, {self.embedded} embedded{embedding}, "
            f"{len(self.warnings)} warning(s), {self.seconds:.1f} s"
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def _lists(self) -> dict[str, list[str]]:
        return {
            "added": self.added,
            "replaced": self.replaced,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "missing": self.missing,
        }


def add(
    backend: Backend,
    sources: Sequence[Path],
    progress: ProgressFactory = no_progress,
    warn: Callable[[str], None] = lambda message: None,
    origin: str | None = None,
    embed: bool = True,
    max_records: int | None = None,
    idempotency: Idempotency | None = None,
    reported: Callable[[str], str] = str,
) -> ChangeReport:
    """Merge the sources' records into the published collection and publish the papers that changed.
    `origin` names where they came from in the manifest (default: the sources' paths). With `embed`
    false, the new papers are left for the caller to embed (`semantic_ranking: pending`). More than
    `max_records` records (None: no limit) is TooManyRecords, before anything is indexed. A change
    sent again under its `idempotency` key is not made again: its first report is answered
    (`replayed`). `reported` gives each warning as the report says it (a client's, without paths)."""
    report = ChangeReport()

    def note(message: str) -> None:
        report.warnings.append(reported(message))
        warn(message)

    read: list[Paper] = []  # as the journal keeps them, to be replayed by every rebuild

    def merge(store: MergeStore) -> int:
        files = discover(sources)
        with progress("reading", None) as advance:
            limits = FieldLimits.of(backend.settings)
            records = _bounded(read_records(files, note, Counter(), limits), max_records)
            merged = merge_into(store, counted(_kept(records, read, origin), advance), note, limits)
        report.records = merged - store.records_before
        return merged

    by = origin or f"searchsvc add {' '.join(map(str, sources))}"
    provenance = {"added_from": origin or [str(s) for s in sources]}

    def asked(at: str) -> JournalEntry:
        return JournalEntry(at, by, read)

    return _update(backend, merge, report, progress, provenance, embed, by, asked, idempotency)


def remove(
    backend: Backend,
    ids: Sequence[str],
    progress: ProgressFactory = no_progress,
    warn: Callable[[str], None] = lambda message: None,
    embed: bool = True,
    origin: str = "searchsvc remove",
    idempotency: Idempotency | None = None,
) -> ChangeReport:
    """Remove the papers with these ids and publish; ids no paper has are reported as missing.
    `embed` and `idempotency` as for `add` (a removal embeds nothing, but its store drops the
    removed vectors); `origin` names who asked, in the journal."""
    report = ChangeReport()

    def merge(store: MergeStore) -> int:
        report.missing = [paper_id for paper_id in dict.fromkeys(ids) if not store.remove(paper_id)]
        return store.records_before

    def change(at: str) -> JournalEntry:
        return JournalEntry(at, origin, removed=[i for i in dict.fromkeys(ids) if i not in report.missing])

    return _update(backend, merge, report, progress, {"removed": list(ids)}, embed, origin, change, idempotency)


def _update(
    backend: Backend,
    merge: Callable[[MergeStore], int],
    report: ChangeReport,
    progress: ProgressFactory,
    provenance: dict[str, Any],
    embed: bool,
    by: str,
    asked: Callable[[str], JournalEntry],
    idempotency: Idempotency | None,
) -> ChangeReport:
    """Merge, publish what changed and journal it (`by`: who asked, as the journal names them; `asked`:
    the change as the journal keeps it, made at the time given), unless the journal holds the change made under the same
    idempotency key: then its report."""
    started = time.monotonic()
    with ExitStack() as held:
        # Until the change is published a full disk leaves everything as it was (a journal line
        # past the published count is dropped by the next change): StorageFull says so.
        with storage_full_explained("cannot write the change"):
            held.enter_context(backend.exclusive_change("write", by))
            earlier = _publish(backend, merge, report, progress, provenance, asked, idempotency)
        if earlier is not None:
            return earlier
        embedding_started = time.monotonic()
        if report.changed_at and embed:
            embedded = embed_pending(backend, progress)
            report.embedded = embedded or 0
            # None: another process is embedding (a write's, through the API); its next pass takes
            # this change's papers too, so the command does not wait for its lock.
            embed = embedded is not None
        report.embedding_seconds = time.monotonic() - embedding_started
    report.semantic_ranking = _semantic_ranking(backend, report, embed)
    report.seconds = time.monotonic() - started
    return report


def _publish(
    backend: Backend,
    merge: Callable[[MergeStore], int],
    report: ChangeReport,
    progress: ProgressFactory,
    provenance: dict[str, Any],
    asked: Callable[[str], JournalEntry],
    idempotency: Idempotency | None,
) -> ChangeReport | None:
    """Merge and, if anything changed, journal and publish it, holding the index's lock; into `report`.
    None, or the report of the change made earlier under the same idempotency key (not made again)."""
    published = backend.published()
    if published is None:
        raise IndexUnavailable("no index is published: run `searchsvc rebuild` first")
    path = collection_file(backend, published)
    if not path.is_file():
        raise IndexUnavailable(
            f"index generation {published} has no collection file to update here (it was built on another "
            "machine, or by an older version of searchsvc): run `searchsvc rebuild` once"
        )
    journal = backend.journal()
    before = published_changes(backend, journal)
    journal.keep_first(before)  # a change journaled but never published is dropped
    if idempotency is not None and (earlier := journal.find(idempotency.writer, idempotency.key, before)):
        return _replayed(backend, earlier, idempotency)
    store = MergeStore(backend.settings.index_dir, published=path)
    try:
        with store.failures_explained():
            records = merge(store)
            at = now()  # the change's time: its journal entry's, and its papers' arrival (core.arrival)
            change = _classify(store, report, at)
            changed = bool(change.deleted or change.added)
            collection = store.finish(records, before + changed)
    except BaseException:
        store.discard()
        raise
    report.generation = published
    with collection:
        if changed:
            entry = _keyed(asked(at), idempotency, report)
            journal.append(entry)  # durable before the change is published
            # The published acronyms and the new papers': mining all 300,000 papers again would cost a write seconds.
            acronyms = merged(published_acronyms(backend), mine(text_of(p.title, p.abstract) for p in change.added))
            with progress("indexing", len(change.added)) as advance:
                report.generation = backend.apply(
                    collection, change, advance, provenance, keep_collection(backend, collection, acronyms)
                )
            report.changed_at = entry.at  # as the journal keeps it: a retry is answered the same
            prune_collections(backend, report.generation)
    return None


class IdempotencyKeyReused(SearchsvcError):
    """An idempotency key sent again with another request than the change made under it."""

    code = "idempotency_key_reused"


def _keyed(entry: JournalEntry, idempotency: Idempotency | None, report: ChangeReport) -> JournalEntry:
    """`entry` with its key and what it did, for a retry to be answered from."""
    if idempotency is None:
        return entry
    return dataclasses.replace(entry, idempotency=dataclasses.replace(idempotency, outcome=report.outcome()))


def _replayed(backend: Backend, earlier: JournalEntry, asked: Idempotency) -> ChangeReport:
    """The report of `earlier`, made under `asked`'s key, if `asked` is the same request."""
    assert earlier.idempotency is not None
    if earlier.idempotency.request != asked.request:
        raise IdempotencyKeyReused(
            f"the idempotency key {asked.key!r} was used at {earlier.at} for another request: send a new key "
            "with a new change; nothing was changed",
            {"key": asked.key, "changed_at": earlier.at},
        )
    return replayed(backend, earlier)


def replayed(backend: Backend, entry: JournalEntry) -> ChangeReport:
    """The report of the published change `entry`, answered again (to a retry, or to GET /api/changes)."""
    return ChangeReport.replayed_from(entry, backend.published() or "", str(backend.status()["semantic_ranking"]))


def _semantic_ranking(backend: Backend, report: ChangeReport, embedded: bool) -> str:
    """Whether the papers are ranked by meaning once the change is published. Asked of the
    backend only when nothing changed: a new generation may not be open here yet."""
    if not backend.settings.semantic_ranking:
        return "off"
    if report.changed_at:
        return "on" if embedded else "pending"
    return str(backend.status()["semantic_ranking"])


def _classify(store: MergeStore, report: ChangeReport, at: str) -> Change:
    """The engine's change and the report's lists, from the papers the merge touched; the papers
    added or changed arrive `at` (a changed one keeps when it was first added)."""
    assert store.changes is not None  # a store opened on a published collection notes its changes
    deleted: list[str] = []
    added = []
    arrived: list[tuple[str, str | None]] = []  # (id now, id before the change: None if new)
    for number, before in sorted(store.changes.items()):
        current = store.current(number)
        if current is None:
            if before is not None:
                deleted.append(before[0])
                report.removed.append(before[0])
            continue
        paper, paper_id = current
        if before is None:
            report.added.append(paper_id)
        elif before == (paper_id, paper.stored()):
            report.unchanged.append(paper_id)
            continue
        else:
            deleted.append(before[0])
            report.replaced.append(paper_id)
            if before[0] != paper_id:
                report.removed.append(before[0])
        added.append(paper)
        arrived.append((paper_id, None if before is None else before[0]))
    arrivals = store.settle(deleted, arrived, at)
    for paper in added:
        paper.arrival = arrivals[paper.id]
    return Change(deleted, added)


class TooManyRecords(SearchsvcError):
    """A change asked with more records than one request may hold (`max_write_records`)."""

    code = "too_many_records"


def _bounded(records: Iterable[Paper], limit: int | None) -> Iterator[Paper]:
    """`records`, refused past the `limit`-th: a change's cost grows with its papers."""
    for number, record in enumerate(records, start=1):
        if limit is not None and number > limit:
            raise TooManyRecords(
                f"the body holds more than {limit:,} records, the most one change may hold "
                "(max_write_records): send them in several requests; nothing was changed",
                {"limit": limit},
            )
        yield record


def _kept(records: Iterable[Paper], kept: list[Paper], origin: str | None) -> Iterator[Paper]:
    """`records`, each also kept for the journal; read from a body, named there by `origin`
    (the body's file is temporary), while warnings go on naming the body."""
    for record in records:
        named = [SourceLocation(origin, source.line) for source in record.sources] if origin else record.sources
        kept.append(dataclasses.replace(copy.deepcopy(record), sources=named))  # as read: merging changes it
        yield record
