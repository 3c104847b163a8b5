"""Which papers one of several embedding processes embeds: those whose content key falls in its shard.

`searchsvc embed --shard I/N` on N processes or machines splits a collection's embedding N ways.
A paper's shard is its content key (`store.content_key`, a BLAKE2b digest of its text) read as a
number, modulo N: the same text falls in the same shard on every machine and at every restart,
and the shards are of even size without any process asking another which papers it took.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from searchsvc.semantic.store import KEY_BYTES

MAX_SHARDS = 1024  # far more machines than a collection of 30 million papers needs (docs/scaling.md)


class ShardError(ValueError):
    """A shard that is not I/N with 1 <= I <= N <= MAX_SHARDS."""


@dataclass(frozen=True)
class Shard:
    """Shard `number` (1 to `count`) of `count`."""

    number: int
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_SHARDS:
            raise ShardError(f"the number of shards must be from 1 to {MAX_SHARDS}, not {self.count}")
        if not 1 <= self.number <= self.count:
            raise ShardError(f"shard {self.number} of {self.count}: the shard must be from 1 to {self.count}")

    def __str__(self) -> str:
        return f"{self.number}/{self.count}"

    def holds(self, keys: np.ndarray) -> np.ndarray:
        """For each of `keys` (content keys, S16), whether its paper is this shard's to embed."""
        # The key's bytes as they are stored (np.bytes_ items drop trailing zero bytes), first 8 of 16.
        words = np.ascontiguousarray(keys, dtype=f"S{KEY_BYTES}").view(">u8").reshape(-1, KEY_BYTES // 8)
        return words[:, 0] % np.uint64(self.count) == np.uint64(self.number - 1)

    def holds_key(self, key: str) -> bool:
        """Whether the paper whose content key is `key` (hex, as the OpenSearch documents hold it) is this shard's."""
        return bool(self.holds(np.array([bytes.fromhex(key)], dtype=f"S{KEY_BYTES}"))[0])


def parse_shard(text: str) -> Shard:
    """`I/N` as a Shard; ShardError saying what is wrong otherwise."""
    number, slash, count = text.strip().partition("/")
    if not slash or not number.strip().isdigit() or not count.strip().isdigit():
        raise ShardError(f"{text!r} is not a shard: write I/N, shard I of N, as in 1/2")
    return Shard(int(number), int(count))
