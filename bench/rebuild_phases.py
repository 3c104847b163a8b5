"""Where a rebuild's time goes: py-spy's raw stacks of `searchsvc rebuild` sorted into phases.

Record the rebuild with its writer processes (py-spy is no dependency of searchsvc: install it
apart), then give the file here:

    py-spy record --subprocesses --format raw -r 20 -o PROFILE.txt -- \
        .venv/bin/python -m searchsvc rebuild CORPUS.jsonl --index-dir DIR
    python -m bench rebuild_phases PROFILE.txt [--cpu-seconds S]     # or PROFILE.txt.gz

Each stack counts for the rebuild process or a writer (a stack through `indexing._child`), in the
phase named by its deepest frame of ours that names one. With `--cpu-seconds` (what `bench build`
measured for the same commit without the profiler, which slows the processes) each share is also
given as that share of those seconds.
"""

from __future__ import annotations

import argparse
import gzip
import re
from collections import Counter
from pathlib import Path

# (phase, a part of the frame's file, the frame's functions or None for any), first match wins.
Rule = tuple[str, str, frozenset[str] | None]
_WRITER: list[Rule] = [
    ("analysis", "analysed_text.py", None),
    ("pooling postings", "term_pool.py", frozenset({"add"})),
    ("spilling runs (sort, write)", "term_pool.py", frozenset({"save", "_sorted", "_write_chunk", "_record_bytes"})),
    ("merging runs", "term_pool.py", frozenset({"postings", "_read", "_unpacked"})),
    ("writing postings and terms", "term_writing.py", None),
    ("writing postings and terms", "segment_writing.py", frozenset({"pairs_of_common_words"})),
    ("compound file, segment close", "segment_writing.py", frozenset({"_flush_segment"})),
    ("compound file, segment close", "whoosh/writing.py", frozenset({"_finalize_segment"})),
    ("stored fields, columns, lengths", "segment_writing.py", frozenset({"add_document", "_note_length"})),
    ("documents' fields", "indexing.py", frozenset({"document", "_column_list", "indexed_text"})),
    ("reading its share (SQLite, decode)", "searchsvc/", frozenset({"catalogue", "from_stored", "papers"})),
]
_PARENT: list[Rule] = [
    ("merging into the scratch store", "merging.py", None),
    ("merging into the scratch store", "scratch", None),
    ("reading sources", "ingest/", None),
    ("content keys", "generation_vectors.py", None),
    ("vocabulary", "spelling.py", None),
    ("vocabulary", "vocabulary.py", None),
    ("segment arrays", "segment_arrays.py", None),
    ("manifest: digests, fsync", "generations.py", None),
    ("writing the index (parent: commit, waiting)", "indexing.py", None),
]
# Phases known from one frame anywhere in the stack, before the deepest frame is looked at.
_WHOLE_CALLS = {
    "PaperSegmentWriter.expect (": "counting words first (expect, reading the share again)",
}
_FRAME = re.compile(r"^(?P<function>.*) \((?P<path>.*?)(?::\d+)?\)$")


def phases(profile: Path) -> Counter[tuple[str, str]]:
    """Samples by (process, phase)."""
    found: Counter[tuple[str, str]] = Counter()
    with (gzip.open if profile.suffix == ".gz" else open)(profile, "rt", encoding="utf-8") as lines:
        for line in lines:
            stack, _, samples = line.rstrip("\n").rpartition(" ")
            if stack:
                frames = stack.split(";")
                writer = any(frame.startswith("_child (") for frame in frames)
                found["writers" if writer else "rebuild process", _phase(frames, writer)] += int(samples)
    return found


def _phase(frames: list[str], writer: bool) -> str:
    if writer:
        for call, phase in _WHOLE_CALLS.items():
            if any(frame.startswith(call) for frame in frames):
                return phase
    rules = _WRITER if writer else _PARENT
    for frame in reversed(frames):
        matched = _FRAME.match(frame)
        if matched is None:
            continue
        function, path = matched["function"].rsplit(".", 1)[-1], matched["path"]
        for phase, part, functions in rules:
            if part in path and (functions is None or function in functions):
                return phase
    return "other" if writer else "start-up, imports, other"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path, help="py-spy record --subprocesses --format raw output")
    parser.add_argument("--cpu-seconds", type=float, help="the rebuild's CPU seconds measured without the profiler")
    args = parser.parse_args(argv)
    found = phases(args.profile)
    total = sum(found.values())
    print(f"{total} samples")
    print("| process | phase | share | ≈ CPU s |\n|---|---|---|---|")
    for process in ("rebuild process", "writers"):
        rows = sorted(((phase, n) for (p, phase), n in found.items() if p == process), key=lambda row: -row[1])
        rows.append(("**all**", sum(n for _, n in rows)))
        for phase, n in rows:
            seconds = f"{n / total * args.cpu_seconds:.1f}" if args.cpu_seconds else "–"
            print(f"| {process} | {phase} | {n / total:.1%} | {seconds} |")


if __name__ == "__main__":
    main()
