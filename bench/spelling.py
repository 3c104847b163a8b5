""" "Did you mean" lookups: the per-generation vocabulary against Whoosh's edit-distance automaton.

Usage: python -m bench.spelling INDEX_DIR [--misspellings N] [--scale-words N]

Measures on a built index: the time and memory to read the vocabulary, the time of one
lookup by each method, whether the two choose the same respelling for N misspellings made
from the index's own words (one or two random edits), and the vocabulary's build time and
memory for a synthetic word list of --scale-words distinct words.
"""

from __future__ import annotations

import argparse
import random
import string
import time
import tracemalloc
from pathlib import Path

from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.generations import GenerationStore
from searchsvc.backends.whoosh.schema import EXACT_FIELDS
from searchsvc.backends.whoosh.spelling import _exact_words, vocabulary
from searchsvc.core import edits, spelling
from searchsvc.core.vocabulary import Vocabulary

SEED = 20261201


def automaton_respelling(reader: IndexReader, word: str) -> str | None:
    """The previous method: Whoosh's Levenshtein automaton over each exact field's word list."""
    if any(reader.doc_frequency(field, word) for field in EXACT_FIELDS.values()):
        return None
    options = [
        (candidate, reader.doc_frequency(field, candidate))
        for field in EXACT_FIELDS.values()
        for candidate in reader.terms_within(field, word, edits.MAX_EDITS, prefix=1)
    ]
    return spelling.choose(word, options)


def vocabulary_respelling(words: Vocabulary, word: str) -> str | None:
    return None if words.papers(word) else spelling.choose(word, words.near(word))


def misspell(rng: random.Random, word: str) -> str:
    """`word` with one or two random edits after its first letter."""
    for _ in range(rng.choice((1, 2))):
        i = rng.randrange(1, len(word))
        kind = rng.choice("dist")
        if kind == "d" and len(word) > 2:
            word = word[:i] + word[i + 1 :]
        elif kind == "i":
            word = word[:i] + rng.choice(string.ascii_lowercase) + word[i:]
        elif kind == "s":
            word = word[:i] + rng.choice(string.ascii_lowercase) + word[i + 1 :]
        elif i + 1 < len(word):
            word = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    return word


def measured(build):  # type: ignore[no-untyped-def]
    tracemalloc.start()
    started = time.perf_counter()
    built = build()
    seconds = time.perf_counter() - started
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return built, seconds, held


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("index_dir", type=Path)
    parser.add_argument("--misspellings", type=int, default=300)
    parser.add_argument("--scale-words", type=int, default=1_000_000)
    args = parser.parse_args()
    hold = GenerationStore(args.index_dir).hold_current()
    from whoosh.filedb.filestore import FileStorage

    searcher = FileStorage(str(hold.path), supports_mmap=False).open_index().searcher()
    reader = searcher.reader()
    started = time.perf_counter()
    words = vocabulary(searcher)
    print(f"vocabulary: {words.size} words, read from the index in {time.perf_counter() - started:.2f} s")
    saved = Path(hold.path.parent.parent / "vocabulary-bench.json")
    words.save(saved)
    started = time.perf_counter()
    words = Vocabulary.load(saved)
    print(f"saved: {saved.stat().st_size / 2**20:.1f} MiB, loaded in {time.perf_counter() - started:.3f} s")
    _, _, held = measured(lambda: Vocabulary.load(saved))
    print(f"held in memory: {held / 2**20:.1f} MiB")
    saved.unlink()

    rng = random.Random(SEED)
    known = sorted({w for w, _ in _exact_words(searcher) if 4 <= len(w) <= 15 and w.isalpha()})
    samples = [misspell(rng, rng.choice(known)) for _ in range(args.misspellings)]
    same = 0
    old_time = new_time = 0.0
    differences = []
    for word in samples:
        started = time.perf_counter()
        old = automaton_respelling(reader, word)
        old_time += time.perf_counter() - started
        started = time.perf_counter()
        new = vocabulary_respelling(words, word)
        new_time += time.perf_counter() - started
        same += old == new
        if old != new:
            differences.append((word, old, new))
    n = len(samples)
    print(
        f"{n} misspellings: same choice {same}/{n}; mean lookup automaton {old_time / n * 1000:.2f} ms, "
        f"vocabulary {new_time / n * 1000:.2f} ms"
    )
    for word, old, new in differences[:10]:
        print(f"  differs: {word!r}: automaton {old!r}, vocabulary {new!r}")
    long_word = "".join(rng.choice(string.ascii_lowercase) for _ in range(30))
    for method, lookup in (
        ("automaton", lambda: automaton_respelling(reader, long_word)),
        ("vocabulary", lambda: vocabulary_respelling(words, long_word)),
    ):
        started = time.perf_counter()
        lookup()
        print(f"30-letter nonsense word, {method}: {(time.perf_counter() - started) * 1000:.0f} ms")

    synthetic = [
        (misspell(rng, rng.choice(known)) + rng.choice(string.ascii_lowercase), 1) for _ in range(args.scale_words)
    ]
    scaled, seconds, held = measured(lambda: Vocabulary.of(synthetic))
    started = time.perf_counter()
    for word in samples:
        vocabulary_respelling(scaled, word)
    lookup = (time.perf_counter() - started) / n * 1000
    print(
        f"synthetic: {scaled.size} words, built in {seconds:.2f} s, {held / 2**20:.1f} MiB held, "
        f"mean lookup {lookup:.2f} ms"
    )
    hold.release()


if __name__ == "__main__":
    main()
