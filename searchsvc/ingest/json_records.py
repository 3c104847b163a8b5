"""JSON lines of third-party records (arXiv OAI snapshot, OpenAlex works): one object a line.

Shared by their readers: blank lines skipped, each line parsed, problems reported as
`file:line: what is wrong`, an empty file refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.paper import Paper, SourceLocation
from searchsvc.ingest.fields import FieldProblem
from searchsvc.ingest.lines import numbered_lines


def json_papers(path: Path, convert: Callable[[dict[str, Any], SourceLocation], Paper]) -> Iterator[Paper]:
    """`convert` applied to each non-blank line's object; a FieldProblem it raises becomes that line's error."""
    where = str(path)
    found = 0
    last = 1
    for number, text in numbered_lines(path):
        last = number
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SourceFormatError(where, number, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
        except RecursionError:
            raise SourceFormatError(where, number, "JSON nested too deeply") from None
        if not isinstance(obj, dict):
            raise SourceFormatError(where, number, f"expected a JSON object, found {type(obj).__name__}")
        try:
            paper = convert(obj, SourceLocation(where, number))
        except FieldProblem as exc:
            raise SourceFormatError(where, number, str(exc)) from None
        if "\\u" in text:  # only an escape can make a lone surrogate; most lines have none
            _check_characters(paper, where, number)
        found += 1
        yield paper
    if found == 0:
        raise SourceFormatError(where, last, "file has no records")


def _check_characters(paper: Paper, where: str, number: int) -> None:
    """JSON may escape half of a UTF-16 pair (`\\ud800`) alone: that is not a character, and no
    index, file or page can hold it."""
    try:
        json.dumps(paper.stored(), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        half = f"\\u{ord(exc.object[exc.start]):04x}"
        raise SourceFormatError(
            where, number, f"text holds {half}, half of a UTF-16 surrogate pair alone, which is not a character"
        ) from None
