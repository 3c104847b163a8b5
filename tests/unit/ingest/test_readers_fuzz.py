"""Every reader, fed mutated copies of a real sample of its format, reads it or refuses it with a
`SearchsvcError` (`file:line: what is wrong`): never another exception, which would be a 500 on
the write API and a traceback from `rebuild` (issue #36: a RIS line after `TY  - ` that was not a
tag raised KeyError)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from searchsvc.core.errors import SearchsvcError
from searchsvc.ingest.sources import read_records
from tests.helpers.fuzzing import FUZZ
from tests.helpers.reader_samples import READERS

# Bytes that mean something to some reader: line ends, quotes, brackets, tags, escapes, bad UTF-8.
PIECES = [
    b"\n", b"\r\n", b"\r", b" ", b"\t", b'"', b"'", b",", b";", b"{", b"}", b"[", b"]", b"<", b">", b"&", b"\\",
    b"@", b"=", b"#", b"%", b"$", b"TY  - ", b"ER  - ", b" T1  - ", b"AU  - ", b"@article{", b"title = {",
    b'{"title": ', b"null", b"true", b"1e999", b"-1", b"</entry>", b"<entry>", b"<!DOCTYPE x>", b"&amp;",
    b"\x00", b"\x1b", b"\xff", b"\xc3", b"\xe2\x80\xae", b"arXiv2020", b"cs.LG",
]  # fmt: skip


@st.composite
def mutated(draw: st.DrawFn, sample: bytes) -> bytes:
    """`sample` with a few pieces inserted, bytes deleted, or lines repeated, dropped or swapped."""
    data = sample
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["insert", "delete", "lines"]))
        if kind == "insert":
            data = data[:at] + draw(st.sampled_from(PIECES) | st.binary(max_size=8)) + data[at:]
        elif kind == "delete":
            data = data[:at] + data[at + draw(st.integers(1, 40)) :]
        else:
            lines = data.split(b"\n")
            first = draw(st.integers(0, len(lines) - 1))
            second = draw(st.integers(0, len(lines) - 1))
            lines[first], lines[second] = lines[second], lines[first]
            if draw(st.booleans()):
                del lines[first]
            data = b"\n".join(lines)
    return data


@pytest.mark.reliability
@pytest.mark.parametrize("reader", list(READERS))
def test_a_mutated_source_is_read_or_refused_with_a_clear_error(
    reader: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    name, sample = READERS[reader]
    folder = tmp_path_factory.mktemp("fuzz")

    @FUZZ
    @given(data=mutated(sample))
    def check(data: bytes) -> None:
        path = folder / name
        path.write_bytes(data)
        try:
            list(read_records([path], lambda message: None, Counter()))
        except SearchsvcError as refused:
            assert str(path) in refused.message or refused.code != "source_format", refused.message

    check()


def test_the_samples_themselves_are_read(tmp_path: Path) -> None:
    """Mutations of a sample that no reader reads would test only refusals."""
    for reader, (name, sample) in READERS.items():
        path = tmp_path / name
        path.write_bytes(sample)
        counts: Counter[str] = Counter()
        assert list(read_records([path], lambda message: None, counts)), reader
        assert counts.keys() == {reader}  # read by the reader it stands for
