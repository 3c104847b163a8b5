"""The papers of a rebuild, held in a scratch SQLite file instead of memory.

A rebuild of 300,000 records held every merged paper in Python objects (about 0.9 GB, more
with the forked index writers' copies). Here the papers being merged, the keys they answer to
and, once merging ends, the catalogue (newest first, with each paper's oldest-first rank) live
on disk, so a rebuild's memory stays the same whatever the number of papers: SQLite keeps a
small page cache, the operating system's file cache does the rest.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from searchsvc.core.arrival import Arrival, now
from searchsvc.core.errors import RebuildFailed, StorageFull
from searchsvc.core.paper import Paper
from searchsvc.host import ScratchFolder, fsync_dir, remove_abandoned

# SQLite's page cache for the scratch file, in KiB (its default is 2 MiB): enough for the key
# lookups of merging to stay fast, small beside a rebuild's index writer buffers.
_CACHE_KIB = 8 * 1024
log = logging.getLogger(__name__)
SCRATCH_PREFIX = ".rebuild-papers-"  # then the process's id and a random part (host.ScratchFolder)
FILE_NAME = "papers.sqlite"
_SCHEMA = """
CREATE TABLE paper (
    grp INTEGER PRIMARY KEY,   -- the number of the record that started it: the first read wins
    doc TEXT NOT NULL,         -- the merged paper (`Paper.encoded`)
    title TEXT NOT NULL,       -- its normalised title, to tell a shared DOI under another title
    first_source TEXT NOT NULL,
    min_id TEXT NOT NULL,      -- the smallest id of its records: its id, whatever the order read
    own_ids INTEGER NOT NULL,  -- every record's id came from its source, none from its title
    year INTEGER,
    no_abstract INTEGER NOT NULL
);
CREATE INDEX paper_min_id ON paper (min_id);
CREATE TABLE merge_key (key TEXT PRIMARY KEY, grp INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX merge_key_grp ON merge_key (grp);
-- records: merged so far, ever (the next record's number follows); removed: those of removed papers
CREATE TABLE meta (records INTEGER NOT NULL, removed INTEGER NOT NULL);
INSERT INTO meta VALUES (0, 0);
"""
# Newest first, undated last, ties by id (`core.paper.catalogue_key`: SQLite compares TEXT as
# UTF-8 bytes, which orders like Python's str); and each paper's place in the oldest-first order.
# The ranks are computed over the small columns only: sorting rows with their papers' text
# would take memory that grows with the collection.
_CATALOGUE = """
DROP TABLE IF EXISTS catalogue;
CREATE TEMP TABLE rank AS
SELECT grp,
       ROW_NUMBER() OVER (ORDER BY year IS NULL, year DESC, min_id) - 1 AS position,
       ROW_NUMBER() OVER (ORDER BY year IS NULL, year, min_id) - 1 AS oldest
FROM paper;
CREATE TABLE catalogue (
    position INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, oldest INTEGER NOT NULL, grp INTEGER NOT NULL
);
INSERT INTO catalogue SELECT r.position, p.min_id, r.oldest, r.grp FROM rank r JOIN paper p USING (grp);
DROP TABLE rank;
"""
# When each paper entered this index and last changed here (core.arrival), by id: written by a
# rebuild for every paper (`_arrivals`), kept and changed by updates (`MergeStore.settle`).
_ARRIVAL = "CREATE TABLE IF NOT EXISTS arrival (id TEXT PRIMARY KEY, added TEXT NOT NULL, changed TEXT NOT NULL)"
# A rebuild's arrivals from the previous generation's file (attached as `previous`): a paper keeps
# its `added` under the same id, and its `changed` unless its text, lists or publication differ
# (its encoded form without its own first id and its sources, compared in SQLite: no paper is decoded).
_KEPT_ARRIVALS = """
INSERT INTO arrival
SELECT c.id, coalesce(o.added, :at),
       CASE WHEN o.changed IS NOT NULL AND json_remove(p.doc, '$[6]', '$[0]') = json_remove(op.doc, '$[6]', '$[0]')
            THEN o.changed ELSE :at END
FROM catalogue c JOIN paper p USING (grp)
LEFT JOIN previous.arrival o ON o.id = c.id
LEFT JOIN previous.paper op ON op.min_id = c.id
"""
# A paper under a new id (a record with a smaller one joined it) keeps the earliest `added` of the
# previous papers it shares a merge key with (their `id:` keys included).
_RENAMED_ARRIVALS = """
UPDATE arrival SET added = found.added FROM (
    SELECT c.id AS id, min(oa.added) AS added
    FROM catalogue c
    JOIN merge_key k ON k.grp = c.grp
    JOIN previous.merge_key ok ON ok.key = k.key
    JOIN previous.paper op ON op.grp = ok.grp
    JOIN previous.arrival oa ON oa.id = op.min_id
    WHERE c.id NOT IN (SELECT id FROM previous.arrival)
    GROUP BY c.id
) AS found
WHERE arrival.id = found.id AND found.added < arrival.added
"""


class Group:
    """A paper being merged, as `MergeStore.groups_of` finds it."""

    __slots__ = ("number", "title", "first_source", "min_id", "own_ids")

    def __init__(self, number: int, title: str, first_source: str, min_id: str, own_ids: bool) -> None:
        self.number = number
        self.title = title
        self.first_source = first_source
        self.min_id = min_id
        self.own_ids = own_ids


class MergeStore:
    """The file while records are merged: papers by group number, and keys to groups.

    A rebuild starts an empty one; an update (`operations.update`) starts from a copy of the
    published collection's file and notes what it touches (`changes`), so it can tell the
    engine which papers to index again and which to delete.
    """

    def __init__(self, parent: Path | None, published: Path | None = None) -> None:
        """A new scratch folder in `parent` (None: the system's temporary directory), empty or
        holding a copy of the `published` collection file."""
        if parent is not None:
            parent.mkdir(parents=True, exist_ok=True)
            remove_abandoned(parent, SCRATCH_PREFIX)
        self.scratch = ScratchFolder(parent, SCRATCH_PREFIX)
        self.directory = self.scratch.path
        path = self.directory / FILE_NAME
        if published is not None:
            shutil.copyfile(published, path)
        self.db = _connect(path)
        # An update's copy drops the catalogue: only a rebuild reads papers in catalogue order.
        self.db.executescript(f"{_SCHEMA if published is None else 'DROP TABLE IF EXISTS catalogue;'}\n{_ARRIVAL};")
        # group → its (id, stored fields) before this merge touched it (None: new); only for updates
        self.changes: dict[int, tuple[str, dict[str, Any]] | None] | None = None if published is None else {}
        counts: tuple[int, int] = self.db.execute("SELECT records, removed FROM meta").fetchone()
        self.records_before, self.removed_before = counts
        self.records_removed = 0  # records of the papers `remove` took out this time
        self.db.execute("BEGIN")  # one transaction for the whole merge: a commit per record is slow

    def groups_of(self, keys: list[str]) -> list[tuple[str, Group]]:
        """The papers that answer to any of `keys`, with the key each answers to."""
        rows = self.db.execute(
            "SELECT DISTINCT k.key, p.grp, p.title, p.first_source, p.min_id, p.own_ids "
            f"FROM merge_key k JOIN paper p USING (grp) WHERE k.key IN ({','.join('?' * len(keys))})",
            keys,
        ).fetchall()
        return [(key, Group(number, title, source, low, bool(own))) for key, number, title, source, low, own in rows]

    def paper(self, number: int) -> Paper:
        return Paper.decoded(self.db.execute("SELECT doc FROM paper WHERE grp = ?", (number,)).fetchone()[0])

    def put(self, number: int, paper: Paper, title: str, min_id: str, own_ids: bool) -> None:
        """Store (or replace) a group's merged paper."""
        self._note(number)
        self.db.execute(
            "INSERT OR REPLACE INTO paper VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                number,
                paper.encoded(),
                title,
                str(paper.sources[0]),
                min_id,
                own_ids,
                paper.year,
                not paper.abstract,
            ),
        )

    def claim(self, keys: Iterable[str], number: int) -> None:
        """Give `keys` to group `number`, except those another paper answers to already (kept apart)."""
        self.db.executemany("INSERT OR IGNORE INTO merge_key VALUES (?, ?)", ((key, number) for key in keys))

    def absorb(self, number: int, other: int) -> None:
        """Group `other` became part of group `number`: its keys are now `number`'s."""
        self._note(other)
        self.db.execute("UPDATE merge_key SET grp = ? WHERE grp = ?", (number, other))
        self.db.execute("DELETE FROM paper WHERE grp = ?", (other,))

    def remove(self, paper_id: str) -> bool:
        """Forget the paper with this id and the keys it answers to; False if there is none."""
        row = self.db.execute("SELECT grp, doc FROM paper WHERE min_id = ?", (paper_id,)).fetchone()
        if row is None:
            return False
        number, doc = row
        self._note(number)
        self.records_removed += len(Paper.decoded(doc).sources)  # a source location per record merged into it
        self.db.execute("DELETE FROM merge_key WHERE grp = ?", (number,))
        self.db.execute("DELETE FROM paper WHERE grp = ?", (number,))
        return True

    def current(self, number: int) -> tuple[Paper, str] | None:
        """A group's merged paper and its id now (None once absorbed or removed)."""
        row = self.db.execute("SELECT doc, min_id FROM paper WHERE grp = ?", (number,)).fetchone()
        return None if row is None else (Paper.decoded(row[0], row[1]), row[1])

    def _note(self, number: int) -> None:
        if self.changes is not None and number not in self.changes:
            before = self.current(number)
            self.changes[number] = None if before is None else (before[1], before[0].stored())

    def discard(self) -> None:
        self.db.close()
        self.scratch.remove()

    @contextmanager
    def failures_explained(self) -> Iterator[None]:
        """SQLite's errors: a full disk as StorageFull, others as a RebuildFailed; where, privately."""
        try:
            yield
        except sqlite3.Error as exc:
            where = f"cannot write the rebuild's scratch file in {self.directory.parent}"
            if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
                raise StorageFull(f"{where}: No space left on device") from exc
            raise RebuildFailed(
                f"cannot write the rebuild's scratch file: {type(exc).__name__}: {exc}; "
                "the published index is unchanged",
                private=where,
            ) from exc

    def settle(self, departed: Iterable[str], arrived: Iterable[tuple[str, str | None]], at: str) -> dict[str, Arrival]:
        """An update's arrivals: the papers with ids `departed` are gone; each (id, its id before
        the update, None if new) was added or changed `at`. A changed paper keeps the earliest
        `added` of its id before and its id now. Each arrived paper's arrival, by id."""
        arrived = list(arrived)
        asked = {old for _, old in arrived if old} | {paper_id for paper_id, _ in arrived}
        known = {}
        for paper_id in asked:
            row = self.db.execute("SELECT added FROM arrival WHERE id = ?", (paper_id,)).fetchone()
            if row is not None:
                known[paper_id] = row[0]
        gone = {*departed, *(old for _, old in arrived if old)}
        self.db.executemany("DELETE FROM arrival WHERE id = ?", ((paper_id,) for paper_id in gone))
        settled = {}
        for paper_id, old in arrived:
            earlier = [known[i] for i in (old, paper_id) if old is not None and i in known]
            settled[paper_id] = Arrival(min(earlier, default=at), at)
        self.db.executemany(
            "INSERT OR REPLACE INTO arrival VALUES (?, ?, ?)",
            ((paper_id, found.added, found.changed) for paper_id, found in settled.items()),
        )
        return settled

    def finish(self, records: int, journal_entries: int = 0, previous: Path | None = None) -> Collection:
        """The merged papers, `records` merged in all, ever (record numbers never repeat, so a new
        paper never takes an old one's number); a rebuild's in catalogue order too, each arrived
        now unless the `previous` generation's collection file held it (`_arrivals`). They include
        the journal's first `journal_entries` changes, which the engine keeps with the generation."""
        removed = self.removed_before + self.records_removed
        self.db.execute("UPDATE meta SET records = ?, removed = ?", (records, removed))
        self.db.execute("COMMIT")
        if self.changes is None:
            self.db.executescript(_CATALOGUE)
            _arrivals(self.db, now(), previous)
        self.db.close()
        return Collection(self.scratch, records - removed, journal_entries)  # less those of removed papers


def _arrivals(db: sqlite3.Connection, at: str, previous: Path | None) -> None:
    """A rebuild's arrivals: kept from the `previous` collection file where it has them, else `at`.
    A previous file that cannot be read (damaged, or written before arrivals) costs the arrivals
    it held, never the rebuild: its papers then count as new."""
    if previous is not None and previous.is_file():
        try:
            db.execute("ATTACH DATABASE ? AS previous", (str(previous),))
            try:
                if db.execute("SELECT 1 FROM previous.sqlite_master WHERE name = 'arrival'").fetchone():
                    db.execute(_KEPT_ARRIVALS, {"at": at})
                    db.execute(_RENAMED_ARRIVALS)
                    return
            finally:
                db.execute("DETACH DATABASE previous")
        except sqlite3.DatabaseError as exc:
            log.warning("papers count as new: the previous collection file %s cannot be read: %s", previous, exc)
            db.execute("DELETE FROM arrival")
    db.execute("INSERT INTO arrival SELECT id, :at, :at FROM catalogue", {"at": at})


class Collection:
    """The distinct papers of a rebuild or update, and how many records they were merged from
    (an update's included every record read since the rebuild): a `core.catalogue.Catalogue`.

    Close it (or use it as a context manager) to delete its scratch folder (the collection
    file too, unless `keep` moved it out first to become the published collection); the folder
    is deleted at garbage collection otherwise. A forked index writer reads its share through
    `catalogue`, which opens its own connection.
    """

    def __init__(self, scratch: ScratchFolder, records: int, journal_entries: int = 0) -> None:
        self.directory = scratch.path
        self.path = scratch.path / FILE_NAME
        self._scratch = scratch
        self.records = records
        self.journal_entries = journal_entries
        self._db = _connect(self.path)
        self._size: int = self._db.execute("SELECT count(*) FROM paper").fetchone()[0]

    def __len__(self) -> int:
        return self._size

    @property
    def merged(self) -> int:
        """Records folded into a paper already read from another record."""
        return self.records - self._size

    def without_abstract(self) -> int:
        """Papers indexed by their title alone."""
        return self._db.execute("SELECT count(*) FROM paper WHERE no_abstract").fetchone()[0]

    def __iter__(self) -> Iterator[Paper]:
        """Every paper, newest first."""
        return (paper for paper, _oldest in self.catalogue())

    def __getitem__(self, paper_id: str) -> Paper:
        row = self._db.execute(
            "SELECT p.min_id, p.doc, a.added, a.changed FROM paper p LEFT JOIN arrival a ON a.id = p.min_id "
            "WHERE p.min_id = ?",
            (paper_id,),
        ).fetchone()
        if row is None:
            raise KeyError(paper_id)
        return _arrived(Paper.decoded(row[1], row[0]), row[2], row[3])

    def catalogue(self, start: int = 0, end: int | None = None) -> Iterator[tuple[Paper, int]]:
        """Papers `start` to `end` of the newest-first order, each with its rank oldest first."""
        db = _connect(self.path)
        try:
            rows = db.execute(
                "SELECT c.id, c.oldest, p.doc, a.added, a.changed FROM catalogue c JOIN paper p USING (grp) "
                "LEFT JOIN arrival a USING (id) WHERE c.position >= ? AND c.position < ? ORDER BY c.position",
                (start, self._size if end is None else end),
            )
            for paper_id, oldest, doc, added, changed in rows:
                yield _arrived(Paper.decoded(doc, paper_id), added, changed), oldest
        finally:
            db.close()

    def sizes(self) -> list[int]:
        """Each paper's stored size in bytes, newest first (SQLite reads the lengths, not the papers)."""
        rows = self._db.execute(
            "SELECT length(CAST(p.doc AS BLOB)) FROM catalogue c JOIN paper p USING (grp) ORDER BY c.position"
        )
        return [size for (size,) in rows]

    def keep(self, path: Path) -> None:
        """Move the collection's file to `path` (durably), where the next update starts from it."""
        self._db.close()
        path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("rb+") as stream:
            os.fsync(stream.fileno())
        os.replace(self.path, path)
        fsync_dir(path.parent)
        self._db = _connect(path)
        self.path = path

    def close(self) -> None:
        self._db.close()
        self._scratch.remove()

    def __enter__(self) -> Collection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def filed_under(path: Path, key: str) -> str | None:
    """The id of the paper a kept collection file files under merge key `key` (`arxiv:…`, `doi:…`),
    or None; read only, waiting for no lock (sqlite3.Error where the file is not such a file: the
    files kept are never written again, so a lock means something else holds it)."""
    with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=0)) as db:
        row = db.execute("SELECT p.min_id FROM merge_key k JOIN paper p USING (grp) WHERE k.key = ?", (key,)).fetchone()
    return row[0] if row and isinstance(row[0], str) else None


def _arrived(paper: Paper, added: str | None, changed: str | None) -> Paper:
    if added is not None and changed is not None:
        paper.arrival = Arrival(added, changed)
    return paper


def _connect(path: Path) -> sqlite3.Connection:
    """A connection for scratch data: nothing survives a crash, so no journal and no fsync."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.executescript(
        "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA temp_store = FILE; "
        f"PRAGMA cache_size = -{_CACHE_KIB};"
    )
    return db
