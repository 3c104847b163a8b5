"""Texts found by a prefix of any of their words, best first, without scanning every text per keystroke.

Suggestions as you type run on every key press, so a lookup must cost far less than a search:
at 300,000 papers the vocabulary holds hundreds of thousands of words. Everything that does not
depend on the prefix is done once per generation: texts are ranked once (most papers first,
then alphabetically), and every key (a word start of a text) is sorted once with its text's
rank. A lookup is then two binary searches for the prefix's range of keys and one numpy
partition of the ranks in that range: the smallest ranks are the best texts.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import numpy.typing as npt

_PAST_EVERY_KEY = "\U0010ffff"  # sorts after any character a key can continue with


class Completions:
    """(text, papers) pairs, each reachable by prefixes of its keys."""

    def __init__(self, texts: list[str], papers: list[int], keys: list[str], ranks: npt.NDArray[np.int32]) -> None:
        self._texts = texts  # rank → text: most papers first, ties alphabetical
        self._papers = papers  # rank → papers
        self._keys = keys  # sorted
        self._ranks = ranks  # key position → its text's rank

    @classmethod
    def of(cls, entries: Iterable[tuple[str, int]], keys: Callable[[str], Iterable[str]]) -> Completions:
        """From (text, papers) pairs; `keys(text)` are the folded strings a prefix may start (its word starts).

        Built when a worker opens a generation, so the sorts are by list index (C comparisons of
        strings) and numpy, not by Python key tuples, which took twice as long."""
        pairs = list(entries)
        texts = [text for text, _ in pairs]
        papers = np.array([count for _, count in pairs], dtype=np.int64)
        alphabetical = np.array(sorted(range(len(texts)), key=texts.__getitem__), dtype=np.int64)
        # core.suggestions.most_papers_first's order (most papers, then alphabetical), as arrays
        by_rank = alphabetical[np.argsort(-papers[alphabetical], kind="stable")]
        rank_of = np.empty(len(texts), dtype=np.int32)
        rank_of[by_rank] = np.arange(len(texts), dtype=np.int32)
        all_keys: list[str] = []
        owners: list[int] = []
        for i, text in enumerate(texts):
            for key in dict.fromkeys(keys(text)):
                all_keys.append(key)
                owners.append(i)
        key_order = sorted(range(len(all_keys)), key=all_keys.__getitem__)
        return cls(
            [texts[i] for i in by_rank.tolist()],
            papers[by_rank].tolist(),
            [all_keys[i] for i in key_order],
            rank_of[np.array(owners, dtype=np.int64)[np.array(key_order, dtype=np.int64)]]
            if owners
            else np.empty(0, dtype=np.int32),
        )

    @property
    def size(self) -> int:
        return len(self._texts)

    def top(self, prefix: str, limit: int) -> list[tuple[str, int]]:
        """The `limit` texts with the most papers having a key that starts with `prefix` (folded)."""
        if not prefix or limit < 1:
            return []
        ranks = self._ranks_of(prefix)
        wanted = limit
        while True:  # a text with two keys in the range appears twice: take more until `limit` differ
            best = np.unique(ranks if len(ranks) <= wanted else np.partition(ranks, wanted)[:wanted])
            if len(best) >= limit or len(ranks) <= wanted:
                break
            wanted *= 2
        return [(self._texts[rank], self._papers[rank]) for rank in best[:limit].tolist()]

    def with_prefix(self, prefix: str) -> Iterator[tuple[str, int]]:
        """(text, papers) of every text having a key that starts with `prefix`, most papers first."""
        if not prefix:
            return
        for rank in np.unique(self._ranks_of(prefix)).tolist():
            yield self._texts[rank], self._papers[rank]

    def _ranks_of(self, prefix: str) -> npt.NDArray[np.int32]:
        """The rank of each key starting with `prefix` (a text once per such key)."""
        low = bisect_left(self._keys, prefix)
        high = bisect_left(self._keys, prefix + _PAST_EVERY_KEY, lo=low)
        return self._ranks[low:high]
