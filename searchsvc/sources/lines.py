"""Numbered, strictly decoded lines of a source file, shared by every reader."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from searchsvc.errors import SourceFormatError

_BOM = "\ufeff"


def numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield `(line_number, text)` without the line ending, one line at a time.

    Decoding per line lets a bad byte be reported with its line number instead of
    failing the whole file with an offset nobody can find.
    """
    with path.open("rb") as stream:
        for number, raw in enumerate(stream, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SourceFormatError(
                    str(path), number, f"not UTF-8 text (byte {exc.start + 1} of the line)"
                ) from None
            if number == 1:
                text = text.removeprefix(_BOM)
            yield number, text.rstrip("\r\n")
