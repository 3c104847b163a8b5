"""Embedding spread over processes (issue #34): the shard rule, and shards of one store embedding
side by side, each holding the store only to append, together storing what one process stores."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import numpy as np
import pytest

from searchsvc.semantic import embedding
from searchsvc.semantic.embedding import Share, embed_new
from searchsvc.semantic.encoder import DIMENSIONS
from searchsvc.semantic.selection import EncodeChunks
from searchsvc.semantic.shards import MAX_SHARDS, Shard, ShardError, parse_shard
from searchsvc.semantic.store import KEY_BYTES, StoredVectors, content_key, load, part_files

TEXTS = [f"paper number {n}" for n in range(200)]
KEYS = np.array([content_key(text) for text in TEXTS], dtype=f"S{KEY_BYTES}")
_NO_PROGRESS = lambda _phase, _total: nullcontext(lambda _n: None)  # noqa: E731


def _vectors(chunk: list[str]) -> np.ndarray:
    """A made-up encoder's vectors: each says which text it was, so rows can be checked."""
    vectors = np.zeros((len(chunk), DIMENSIONS), dtype=np.float32)
    vectors[:, 0] = [int(text.rsplit(" ", 1)[1]) for text in chunk]
    return vectors


@contextmanager
def _encoder(_count: int) -> Iterator[EncodeChunks]:
    yield lambda chunks: (_vectors(chunk) for chunk in chunks)


def _by_key(path: Path) -> dict[bytes, float]:
    stored = load(path)
    return dict(zip(stored.keys.tolist(), stored.vectors[:, 0].tolist(), strict=True))


def test_each_key_falls_in_exactly_one_shard_of_even_size() -> None:
    keys = np.array([content_key(f"text {n}") for n in range(30_000)], dtype=f"S{KEY_BYTES}")
    for count in (1, 2, 3, 7):
        held = np.vstack([Shard(number, count).holds(keys) for number in range(1, count + 1)])
        assert (held.sum(axis=0) == 1).all()
        sizes = held.sum(axis=1)
        assert sizes.min() > 0.95 * len(keys) / count, sizes


def test_a_key_ending_in_zero_bytes_keeps_its_shard() -> None:
    """numpy drops an S16 item's trailing zero bytes when it is read alone; the rule reads the array's bytes."""
    key = bytes(range(1, 9)) + bytes(8)
    shard = Shard(int.from_bytes(key[:8], "big") % 3 + 1, 3)
    assert shard.holds(np.array([key], dtype=f"S{KEY_BYTES}")).all()
    stripped = np.array([key], dtype=f"S{KEY_BYTES}")[0].hex()  # as an OpenSearch document holds it
    assert len(stripped) < 32 and shard.holds_key(stripped) and shard.holds_key(key.hex())


@pytest.mark.parametrize(
    ("text", "problem"),
    [("2", "write I/N"), ("a/2", "write I/N"), ("0/2", "from 1 to 2"), ("3/2", "from 1 to 2"), ("1/0", "from 1 to")],
)
def test_a_shard_is_i_of_n(text: str, problem: str) -> None:
    assert parse_shard(" 2/3 ") == Shard(2, 3) and str(Shard(2, 3)) == "2/3"
    with pytest.raises(ShardError, match=problem):
        parse_shard(text)
    with pytest.raises(ShardError):
        Shard(1, MAX_SHARDS + 1)


def test_shards_store_what_one_process_stores_each_embedding_only_its_own(tmp_path: Path) -> None:
    whole = tmp_path / "whole" / "model.npz"
    assert embed_new(whole, KEYS, TEXTS.__getitem__, _encoder, _NO_PROGRESS) == len(TEXTS)
    sharded = tmp_path / "sharded" / "model.npz"
    embedded = [
        embed_new(sharded, KEYS, TEXTS.__getitem__, _encoder, _NO_PROGRESS, Share(shard=Shard(n, 3))) for n in (1, 2, 3)
    ]
    assert sum(embedded) == len(TEXTS) and min(embedded) > 0
    assert _by_key(sharded) == _by_key(whole)
    assert not sharded.exists() and len(part_files(sharded)) == 3  # parts, left to the next whole run
    assert embed_new(sharded, KEYS, TEXTS.__getitem__, _encoder, _NO_PROGRESS) == 0
    assert sharded.exists() and not part_files(sharded) and _by_key(sharded) == _by_key(whole)  # compacted


def test_a_shard_holds_the_store_only_to_append_so_another_appends_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shard 1's encoder runs all of shard 2 half-way through: were the store held for the whole
    run, as a run of the whole collection holds it, shard 2 would wait for ever (flock is per open file)."""
    monkeypatch.setattr(embedding, "CHUNK", 8)
    monkeypatch.setattr(embedding, "CHECKPOINT_SECONDS", 0.0)
    path = tmp_path / "model.npz"
    other: list[int] = []

    @contextmanager
    def interrupted(_count: int) -> Iterator[EncodeChunks]:
        def encode(chunks):  # type: ignore[no-untyped-def]
            for number, chunk in enumerate(chunks):
                if number == 2:
                    other.append(embed_new(path, KEYS, TEXTS.__getitem__, _encoder, _NO_PROGRESS, Share(Shard(2, 2))))
                yield _vectors(chunk)

        yield encode

    first = embed_new(path, KEYS, TEXTS.__getitem__, interrupted, _NO_PROGRESS, Share(Shard(1, 2)))
    assert first + other[0] == len(TEXTS)
    assert len(part_files(path)) > 2 and _by_key(path) == {key: float(n) for n, key in enumerate(KEYS.tolist())}


def test_a_share_embeds_only_the_wanted_keys_and_tells_each_batch_once_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the OpenSearch backend asks: the papers the cluster lacks, each checkpoint written to it at once."""
    monkeypatch.setattr(embedding, "CHUNK", 16)
    monkeypatch.setattr(embedding, "CHECKPOINT_SECONDS", 0.0)
    path = tmp_path / "model.npz"
    wanted = np.arange(len(KEYS)) % 4 == 0
    batches: list[StoredVectors] = []
    share = Share(wanted=wanted, saved=batches.append)
    assert embed_new(path, KEYS, TEXTS.__getitem__, _encoder, _NO_PROGRESS, share) == wanted.sum()
    assert len(batches) == -(-int(wanted.sum()) // 16)
    told = np.concatenate([batch.keys for batch in batches])
    assert sorted(told.tolist()) == sorted(KEYS[wanted].tolist())
    assert set(_by_key(path)) == set(KEYS[wanted].tolist())  # the others were never embedded here: not stored
