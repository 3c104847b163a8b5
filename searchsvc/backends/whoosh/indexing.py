"""A collection → one Whoosh index in a generation directory, written by several processes at once.

Whoosh's analysis and posting writing are pure Python, so one writer uses one core. The
papers are cut into contiguous runs of the newest-first order and each run is written as
its own segment by a forked child process; the segments are then committed in run order.
A multi-segment index numbers documents segment after segment, so document numbers still
follow the newest-first order that ranking ties and the `newest` sort rely on (see
`write_index`). Whoosh's own `MpWriter` hands documents to whichever child is free, which
loses that order, and merging its sub-segments afterwards costs more than it saves
(docs/decisions.md). What the files beside the index need (each segment's arrays, each paper's
content key, the words of the vocabulary) is gathered by the writers on the way, in parallel,
rather than read back from the index by one process afterwards.
"""

from __future__ import annotations

import bisect
import gc
import itertools
import json
import multiprocessing
import os
import queue
import traceback
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whoosh import index
from whoosh.codec.base import Segment

from searchsvc.backends.whoosh import segment_arrays
from searchsvc.backends.whoosh.generation_vectors import paper_key
from searchsvc.backends.whoosh.schema import build_schema
from searchsvc.backends.whoosh.segment_writing import PaperSegmentWriter
from searchsvc.backends.whoosh.unmapped import open_segment
from searchsvc.core.catalogue import Catalogue
from searchsvc.core.paper import Paper
from searchsvc.core.tex import reading
from searchsvc.host import die_with, exit_if_orphaned

Progress = Callable[[int], None]
# Each process writes at least this many papers. Forking and one more segment per search
# cost more than they save on a small collection, and above 5,000 documents per segment
# Whoosh's Or builds the same kind of matcher as in one big segment (lucene_scoring.CoordinatedOr).
MIN_PAPERS_PER_PROCESS = 6000
_PROGRESS_EVERY = 500  # papers between two progress reports of a child
# A writer's garbage collection: a young generation of this many objects, the oldest collected almost
# never. A writer allocates millions of small objects that live until its segment is written (the
# pooled postings), and Python's default thresholds had the collector walk them all 15 times, 1.4 s
# of each writer's 22 on the ACL records; these took it to 0.2 s (docs/performance.md). A writer
# lives for one segment, and makes almost no reference cycles: the default collector freed 900
# objects in all in a writer of the ACL records.
_WRITER_GC = (50_000, 20, 100)
PROCESSES: int | None = None  # writer processes at most; None: one per CPU core


@dataclass
class Written:
    """What the writers gathered for the files beside the index."""

    keys: bytes  # each document's content key (generation_vectors.paper_key), in document order
    words: bytes  # the unstemmed fields' words, per segment and field, each ended by a newline
    word_papers: array[int]  # the papers holding each of them

    @classmethod
    def of(cls, keys: bytes, writer: PaperSegmentWriter) -> Written:
        return cls(keys, bytes(writer.words), writer.word_papers)

    @classmethod
    def joined(cls, parts: list[Written]) -> Written:
        papers = array("I")
        for part in parts:
            papers.extend(part.word_papers)
        return cls(b"".join(part.keys for part in parts), b"".join(part.words for part in parts), papers)

    def word_counts(self) -> Iterator[tuple[str, int]]:
        """Each word with its papers (a word of both fields, or of several segments, more than once)."""
        return zip(self.words.decode("utf-8").split("\n")[:-1], self.word_papers, strict=True)


def write_index(directory: Path, collection: Catalogue, memory_mb: int, progress: Progress) -> Written:
    """Index `collection` into `directory`: one segment per process, committed once. Each segment's
    arrays are written beside it when several processes write (`segment_arrays.write_missing` writes
    a lone segment's).

    Documents are numbered in the collection's newest-first catalogue order (segment after
    segment, each a contiguous run of that order), which Whoosh's own collectors break score
    ties by; the search itself orders by `doc_order.DocOrder`, which an update's new segment
    needs too.
    """
    runs = _runs(collection, PROCESSES or os.cpu_count() or 1)
    ix = index.create_in(str(directory), build_schema())
    try:
        writer = PaperSegmentWriter(ix, memory_mb)  # holds the index lock; children write without it
        try:
            if len(runs) == 1:
                writer.expect(indexed_text(paper) for paper, _oldest in collection.catalogue())
                keys = _add(writer, collection.catalogue(), progress)
                writer.commit()
                return Written.of(keys, writer)
            written = _write_in_children(ix, collection, runs, memory_mb // len(runs), progress)
            writer._close_segment()
            writer._commit_toc([segment for segment, _ in written])
            writer._finish()
            return Written.joined([part for _, part in written])
        except BaseException:
            if not writer.is_closed:
                writer.cancel()
            raise
    finally:
        ix.close()


def _runs(collection: Catalogue, processes: int) -> list[tuple[int, int]]:
    """Contiguous [start, end) runs, one per process, of about equal text to index: newer papers
    have longer abstracts, and runs of equal counts left one writer working alone for a fifth of
    the time (docs/performance.md, "Rebuilds")."""
    count = len(collection)
    parts = max(1, min(processes, count // MIN_PAPERS_PER_PROCESS))
    if parts == 1:
        return [(0, count)]
    sizes = list(itertools.accumulate(collection.sizes()))
    bounds = [0]
    for part in range(1, parts):
        cut = bisect.bisect_left(sizes, sizes[-1] * part / parts) + 1
        least, most = bounds[-1] + MIN_PAPERS_PER_PROCESS, count - MIN_PAPERS_PER_PROCESS * (parts - part)
        bounds.append(min(max(cut, least), most))  # no run below the minimum
    bounds.append(count)
    return list(zip(bounds, bounds[1:], strict=False))


def _add(writer: PaperSegmentWriter, papers: Iterable[tuple[Paper, int]], progress: Progress) -> bytes:
    """Add each paper; return their content keys in order."""
    keys = []
    for paper, _oldest in papers:
        writer.add_document(**document(paper))
        keys.append(paper_key(paper.title, paper.abstract))
        progress(1)
    return b"".join(keys)


def document(paper: Paper) -> dict[str, Any]:
    """The fields Whoosh indexes for a paper (`live_statistics` analyses the scored ones again for
    deleted papers; the word pairs only say which papers hold a phrase). Title and abstract index
    their reading (`core.tex`) and store the text as the source wrote it."""
    found = paper.publication
    text = indexed_text(paper)
    return {
        **paper.stored(),
        **text,
        "_stored_title": paper.title,
        "_stored_abstract": paper.abstract,
        "title_pairs": text["title"],
        "abstract_pairs": text["abstract"],
        "facet_year": _column_list([] if paper.year is None else [paper.year]),
        "facet_subject": _column_list(paper.subjects),
        "facet_author": _column_list(paper.authors),
        "facet_venue": _column_list([found.venue] if found.venue else []),
        "facet_date": _column_list([found.date] if found.date else []),
        "facet_citations": _column_list([] if found.citations is None else [found.citations]),
        "facet_added": _column_list([paper.arrival.added_second] if paper.arrival else []),
    }


def indexed_text(paper: Paper) -> dict[str, str]:
    """The analysed text fields of a paper, by field name: TeX as its reading, never its commands."""
    title, abstract = reading(paper.title), reading(paper.abstract)
    return {
        "title": title,
        "abstract": abstract,
        "title_exact": title,
        "abstract_exact": abstract,
        "author": " ; ".join(paper.authors),
        "venue": paper.publication.venue,
        "subject": "\n".join(paper.subjects),
    }


def _write_in_children(
    ix: index.Index, collection: Catalogue, runs: list[tuple[int, int]], memory_mb: int, progress: Progress
) -> list[tuple[Segment, Written]]:
    """Each run written as one segment by a forked child (which reads its run from the collection's
    file); the segments in run order, each with what its child gathered."""
    context = multiprocessing.get_context("fork")
    messages: Any = context.Queue()
    children = [
        context.Process(
            target=_child, args=(ix, collection, run, memory_mb, number, messages, os.getpid()), daemon=True
        )
        for number, run in enumerate(runs)
    ]
    for child in children:
        child.start()
    segments: dict[int, tuple[Segment, Written]] = {}
    try:
        while len(segments) < len(runs):
            try:
                kind, number, payload = messages.get(timeout=1)
            except queue.Empty:
                _check_alive(children, segments)
                continue
            if kind == "progress":
                progress(payload)
            elif kind == "done":
                segments[number] = payload
            else:
                error, trace = payload
                raise error from RuntimeError(f"in index writer process {number}:\n{trace}")
        for child in children:
            child.join()
    finally:
        for child in children:
            if child.is_alive():
                child.kill()
                child.join()
    return [segments[number] for number in range(len(runs))]


def _check_alive(children: list[Any], segments: dict[int, Any]) -> None:
    """A child killed from outside (out of memory) sends nothing: notice it instead of waiting forever."""
    for number, child in enumerate(children):
        if number not in segments and child.exitcode not in (None, 0):
            raise RuntimeError(f"index writer process {number} ended with exit code {child.exitcode}")


def _child(
    ix: index.Index,
    collection: Catalogue,
    run: tuple[int, int],
    memory_mb: int,
    number: int,
    messages: Any,
    parent: int,
) -> None:
    """Write one run as one finished segment, and its arrays beside it; send the segment back with what
    was gathered (or the error)."""
    die_with(parent)
    gc.freeze()  # the objects inherited from the parent: never walked by the collector
    gc.set_threshold(*_WRITER_GC)
    try:
        writer = PaperSegmentWriter(ix, max(memory_mb, 32), _lk=False)
        pending = 0

        def report(n: int) -> None:
            nonlocal pending
            pending += n
            if pending >= _PROGRESS_EVERY:
                exit_if_orphaned(parent)
                messages.put(("progress", number, pending))
                pending = 0

        writer.expect(indexed_text(paper) for paper, _oldest in collection.catalogue(*run))
        keys = _add(writer, collection.catalogue(*run), report)
        segment = writer._finalize_segment()
        directory = Path(ix.storage.folder)
        reader = open_segment(directory, ix.schema, segment)
        try:
            segment_arrays.write_segment(directory, reader)
        finally:
            reader.close()
        messages.put(("progress", number, pending))
        messages.put(("done", number, (segment, Written.of(keys, writer))))
    except BaseException as exc:
        messages.put(("error", number, (exc, traceback.format_exc())))


def _column_list(values: list[str] | list[int]) -> bytes:
    return json.dumps(values, ensure_ascii=False).encode("utf-8")
