"""Numbered, strictly decoded lines of a source file, shared by every reader."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from searchsvc.core.errors import SourceFormatError

_BOM = "\ufeff"
# The longest line a source may have. A paper record (title, abstract, a few hundred authors) is
# a few kilobytes; a longer line is not a record, and reading it whole could exhaust memory.
MAX_LINE_BYTES = 1_000_000


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
