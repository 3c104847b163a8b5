"""The vector store appends: an add writes its own vectors as a part, a removal writes nothing,
and unused rows or too many parts are compacted away (issue #30: every change at 300,000 papers
rewrote the whole 230 MB store)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import numpy as np
import pytest

from searchsvc.semantic import embedding, store
from searchsvc.semantic.embedding import embed_new
from searchsvc.semantic.encoder import DIMENSIONS
from searchsvc.semantic.selection import EncodeChunks
from searchsvc.semantic.store import KEY_BYTES, StoredVectors, content_key, find, load, part_files

TEXTS = [f"paper number {n}" for n in range(40)]


@contextmanager
def _encoder(_count: int) -> Iterator[EncodeChunks]:
    """A made-up encoder: each text's vector says which text it was, so rows can be checked."""

    def encode(chunks):  # type: ignore[no-untyped-def]
        for chunk in chunks:
            vectors = np.zeros((len(chunk), DIMENSIONS), dtype=np.float32)
            vectors[:, 0] = [int(text.rsplit(" ", 1)[1]) for text in chunk]
            yield vectors

    yield encode


def _embed(path: Path, numbers: list[int]) -> int:
    keys = np.array([content_key(TEXTS[n]) for n in numbers], dtype=f"S{KEY_BYTES}")
    return embed_new(path, keys, lambda i: TEXTS[numbers[i]], _encoder, lambda _p, _t: nullcontext(lambda _n: None))


def _identity(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_ino, info.st_mtime_ns


def test_an_add_appends_a_part_and_a_removal_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "model.npz"
    assert _embed(path, list(range(30))) == 30
    assert path.exists() and not part_files(path)  # a first embedding is a base
    base = _identity(path)
    assert _embed(path, list(range(32))) == 2
    assert [len(store.load_file(part).keys) for part in part_files(path)] == [2]
    assert _identity(path) == base
    files = sorted(tmp_path.iterdir())
    assert _embed(path, list(range(2, 32))) == 0  # two papers removed: nothing to write
    assert sorted(tmp_path.iterdir()) == files and _identity(path) == base
    keys = np.array([content_key(TEXTS[n]) for n in (31, 5, 39)], dtype=f"S{KEY_BYTES}")
    vectors, found = find(path, keys)
    assert found.tolist() == [True, True, False]
    assert vectors[:2, 0].tolist() == [31.0, 5.0]
    in_order = np.array([content_key(TEXTS[n]) for n in range(32)], dtype=f"S{KEY_BYTES}")  # base, then part
    vectors, found = find(path, in_order)
    assert found.all() and vectors[:, 0].tolist() == list(range(32))


def test_unused_rows_past_a_quarter_are_compacted_away(tmp_path: Path) -> None:
    path = tmp_path / "model.npz"
    _embed(path, list(range(30)))
    _embed(path, list(range(32)))
    _embed(path, list(range(20, 33)))  # 20 of 33 rows unused: compacted with the one new paper
    assert not part_files(path)
    assert sorted(load(path).vectors[:, 0].tolist()) == list(range(20, 33))


def test_too_many_parts_are_compacted_into_the_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedding, "MAX_PARTS", 3)
    path = tmp_path / "model.npz"
    _embed(path, list(range(30)))
    for count in (31, 32, 33):
        _embed(path, list(range(count)))
        assert len(part_files(path)) == count - 30
    _embed(path, list(range(34)))
    assert not part_files(path) and len(load(path).keys) == 34


def test_runs_of_the_bases_keys_are_views_of_it_and_the_rest_is_found_as_find_finds_it(tmp_path: Path) -> None:
    """A fresh open reads each segment's vectors with `find_runs`: a segment whose papers are a run
    of the base's, in order, is a view of the base's rows (at 300,000 papers not a copy of 230 MB)."""
    path = tmp_path / "model.npz"
    _embed(path, list(range(20)))
    _embed(path, list(range(24)))  # a part with 20..23
    keys = np.array([content_key(TEXTS[n]) for n in [*range(12), *range(12, 20), 21, 3, 39, 22]], dtype=f"S{KEY_BYTES}")
    runs = store.find_runs(path, keys, [(0, 12), (12, 8), (20, 4), (24, 0)])
    assert [len(vectors) for vectors, _ in runs] == [12, 8, 4, 0]
    assert [vectors.flags.owndata for vectors, _ in runs[:2]] == [False, False]  # views of the base's rows
    for (vectors, found), (first, count) in zip(runs, [(0, 12), (12, 8), (20, 4), (24, 0)], strict=True):
        expected, expected_found = find(path, keys[first : first + count])
        assert found.tolist() == expected_found.tolist()
        assert np.array_equal(vectors, expected)
    assert runs[2][0][:, 0].tolist() == [21.0, 3.0, 0.0, 22.0] and runs[2][1].tolist() == [True, True, False, True]


def _base(path: Path, count: int) -> StoredVectors:
    """A base of `count` rows, each row's first value its number, saved as `save` saves one."""
    keys = np.array([content_key(f"base {n}") for n in range(count)], dtype=f"S{KEY_BYTES}")
    vectors = np.zeros((count, DIMENSIONS), dtype=np.float16)
    vectors[:, 0] = np.arange(count) % 2048
    vectors[:, 1] = np.arange(count) // 2048
    stored = StoredVectors(keys, vectors)
    store.save(path, stored)
    return stored


def test_a_few_of_the_bases_rows_are_read_alone_and_as_the_whole_file_gives_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A generation's first look after an add read all of a 300,000-paper base (1.5 s) for the one
    new paper whose text an earlier one had: the rows of a few keys are read by themselves."""
    path = tmp_path / "vectors.npz"
    base = _base(path, 1000)
    new = np.array([content_key(f"new {n}") for n in range(5)], dtype=f"S{KEY_BYTES}")
    keys = np.concatenate([new[:2], base.keys[[7, 993, 500]], new[2:]])
    expected = np.zeros((len(keys), DIMENSIONS), dtype=np.float16)
    expected[2:5] = base.vectors[[7, 993, 500]]
    whole = store.load_file
    monkeypatch.setattr(store, "load_file", lambda file: pytest.fail(f"{file} read whole"))
    vectors, found = find(path, keys)
    assert found.tolist() == [False, False, True, True, True, False, False, False]
    assert np.array_equal(vectors, expected)
    # Many keys, a file cut short, a compressed member: the whole file, with the same rows.
    monkeypatch.setattr(store, "load_file", whole)
    assert np.array_equal(find(path, base.keys[::-1])[0], base.vectors[::-1])
    with path.open("r+b") as stream:
        stream.truncate(path.stat().st_size - 500)
    assert not find(path, keys)[1].any()  # unreadable as a whole (load_file says so): found nowhere
    np.savez_compressed(path, keys=base.keys, vectors=base.vectors)
    vectors, found = find(path, keys)
    assert np.array_equal(vectors, expected) and found.sum() == 3


def test_rows_on_demand_are_finds_rows_and_outlive_a_compaction_of_their_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh process reads the rows its searches rank from the files it opened, not the whole
    store (230 MB at 300,000 papers) first: the same rows `find` gives, whatever the store becomes."""
    path = tmp_path / "vectors.npz"
    base = _base(path, 1000)
    new = np.array([content_key(f"new {n}") for n in range(3)], dtype=f"S{KEY_BYTES}")
    part = np.zeros((3, DIMENSIONS), dtype=np.float16)
    part[:, 0] = [-1, -2, -3]
    store.append(path, StoredVectors(new, part))
    keys = np.concatenate([base.keys[[5, 999]], new[[2, 0]], base.keys[[0]]])
    expected, found = find(path, keys)
    assert found.all()
    whole = store.load_file
    monkeypatch.setattr(store, "load_file", lambda file: pytest.fail(f"{file} read whole"))
    rows = store.rows_on_demand(path, keys)
    assert rows is not None and len(rows) == 5
    assert np.array_equal(rows[np.arange(5)], expected)
    assert np.array_equal(rows[[[4, 2]]], expected[[[4, 2]]]) and np.array_equal(rows[1:4], expected[1:4])
    assert np.array_equal(rows[3], expected[3])
    monkeypatch.setattr(store, "load_file", whole)
    store.save(path, StoredVectors(base.keys[:10], base.vectors[:10]))  # compacted: part deleted, base replaced
    assert np.array_equal(rows[np.arange(5)], expected)
    assert store.rows_on_demand(path, keys) is None  # not every key is in the store now
    assert np.array_equal(store.rows_on_demand(path, base.keys[[9, 0]])[[0, 1]], base.vectors[[9, 0]])  # type: ignore[index]


def test_rows_on_demand_need_a_store_laid_out_as_save_writes_it(tmp_path: Path) -> None:
    """A member compressed, or a file cut short: no rows on demand (the store is then read whole, as
    before, and `load_file` says what is wrong)."""
    path = tmp_path / "vectors.npz"
    base = _base(path, 100)
    assert store.rows_on_demand(path, base.keys) is not None
    np.savez_compressed(path, keys=base.keys, vectors=base.vectors)
    assert store.rows_on_demand(path, base.keys) is None
    _base(path, 100)
    with path.open("r+b") as stream:
        stream.truncate(path.stat().st_size - 500)
    assert store.rows_on_demand(path, base.keys) is None
