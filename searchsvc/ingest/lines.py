"""Numbered, strictly decoded lines of a source file, shared by every reader."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from searchsvc.core.errors import SourceFormatError

_BOM = "\ufeff"
# The longest line a source may have. A paper record (title, abstract, a few hundred authors) is
# a few kilobytes; a longer line is not a record, and reading it whole could exhaust memory.
MAX_LINE_BYTES = 1_000_000
_CHUNK_BYTES = 1 << 20


def numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield `(line_number, text)` without the line ending, one line at a time.

    Decoding per line lets a bad byte be reported with its line number instead of
    failing the whole file with an offset nobody can find.
    """
    with path.open("rb") as stream:
        for number, raw in enumerate(iter(lambda: stream.readline(MAX_LINE_BYTES + 1), b""), start=1):
            if len(raw) > MAX_LINE_BYTES:
                raise SourceFormatError(
                    str(path), number, f"line longer than {MAX_LINE_BYTES:,} bytes: not a paper record"
                )
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SourceFormatError(
                    str(path), number, f"not UTF-8 text (byte {exc.start + 1} of the line)"
                ) from None
            if number == 1:
                text = text.removeprefix(_BOM)
            yield number, text.rstrip("\r\n")


def line_chunks(path: Path) -> Iterator[tuple[int, str]]:
    """Yield `(first_line_number, text)` of about a megabyte of whole lines at a time, line endings
    as `\n`: for a reader that finds its records with patterns over many lines, without a Python
    step per line. The same errors as `numbered_lines`: a bad byte by its line, and a line longer
    than MAX_LINE_BYTES (one that fits in a chunk is the reader's to limit)."""
    first, carry = 1, b""
    with path.open("rb") as stream:
        while data := stream.read(_CHUNK_BYTES):
            data = carry + data
            cut = data.rfind(b"\n") + 1
            whole, carry = data[:cut], data[cut:]
            if len(carry) > MAX_LINE_BYTES:
                raise SourceFormatError(
                    str(path),
                    first + whole.count(b"\n"),
                    f"line longer than {MAX_LINE_BYTES:,} bytes: not a paper record",
                )
            if whole:
                yield first, _decoded(path, first, whole)
                first += whole.count(b"\n")
    if carry:
        yield first, _decoded(path, first, carry)


def _decoded(path: Path, first: int, raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        raise SourceFormatError(
            str(path),
            first + raw.count(b"\n", 0, exc.start),
            f"not UTF-8 text (byte {exc.start - line_start + 1} of the line)",
        ) from None
    if first == 1:
        text = text.removeprefix(_BOM)
    return (
        text.replace("\r\n", "\n") if b"\r" in raw else text
    )  # (a scan of the bytes costs a tenth of one of the text)
