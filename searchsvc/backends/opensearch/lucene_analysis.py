"""Read the word characters and the folding both engines analyse by from a cluster's own components.

`backends/lucene_tables.py` is written by this module and read by `backends/analysis.py`, so the
Whoosh backend reads text exactly as the cluster does without a hand-written table: which characters
make a word (Java's `\\w` with analysis.WORD_FLAGS, as the mapping's tokenizer reads it) and what
each character becomes through Lucene's `lowercase` and `asciifolding` filters (per character,
without context, so one `str.translate` table reproduces both). Rerun it when the cluster's
OpenSearch or Java version changes (tests/contract/test_analysis_parity.py fails then), and bump
both engines' index versions if the tables changed:

    python -m searchsvc.backends.opensearch.lucene_analysis http://127.0.0.1:9200
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

from opensearchpy import OpenSearch

from searchsvc.backends.analysis import WORD_FLAGS

TABLES = Path(__file__).resolve().parents[1] / "lucene_tables.py"
_BATCH = 8192  # characters per `_analyze` request
_SEPARATOR = "\u0001"  # a control character: in no word, folded to itself
# Every Unicode scalar value: surrogates cannot be sent (nor read from UTF-8 text).
_CHARACTERS = [chr(code) for code in range(0x110000) if not 0xD800 <= code <= 0xDFFF]
_HEADER = '''"""Lucene's word characters and folding, as a cluster's own components give them ({source}).

Written by `python -m searchsvc.backends.opensearch.lucene_analysis URL`, never by hand; read by analysis.py.
"""

# Each run of code points Java's `\\w` matches (analysis.WORD_FLAGS), as (first, last).
WORD_CHARACTERS: tuple[tuple[int, int], ...] = (
'''
_MIDDLE = """)
# Each code point Lucene's `lowercase` then `asciifolding` change, with the code points they make of it.
FOLDED: dict[int, tuple[int, ...]] = {
"""


def tables_module(client: OpenSearch) -> str:
    """The text of lucene_tables.py as the cluster's tokenizer and filters give it, one entry a line."""
    info = client.info()
    nodes = client.nodes.info(metric="jvm")["nodes"]
    java = ", ".join(sorted({node["jvm"]["version"] for node in nodes.values()}))
    runs = _ranges(sorted(_word_characters(client)))
    return "".join(
        [
            _HEADER.format(source=f"OpenSearch {info['version']['number']}, Java {java}"),
            *(f"    (0x{first:04X}, 0x{last:04X}),\n" for first, last in runs),
            _MIDDLE,
            *(f"    0x{ord(character):04X}: ({_points(folded)}),\n" for character, folded in _folded(client)),
            "}\n",
        ]
    )


def _points(text: str) -> str:
    """A tuple's items: "0x006F, 0x0065", or "0x0061," (one item, as ruff formats it)."""
    return ", ".join(f"0x{ord(character):04X}" for character in text) + ("," if len(text) == 1 else "")


def _word_characters(client: OpenSearch) -> Iterator[int]:
    """Each character the cluster's `\\w` matches, asked a batch at a time, the characters apart."""
    tokenizer = {"type": "pattern", "pattern": r"\w", "group": 0, "flags": WORD_FLAGS}
    for batch in _batches([c for c in _CHARACTERS if c != _SEPARATOR]):
        at: dict[int, str] = {}  # Java's offsets count UTF-16 units
        offset = 0
        for character in batch:
            at[offset] = character
            offset += len(character.encode("utf-16-le")) // 2 + 1
        text = _SEPARATOR.join(batch)
        for token in client.indices.analyze(body={"tokenizer": tokenizer, "text": text})["tokens"]:
            yield ord(at[token["start_offset"]])


def _folded(client: OpenSearch) -> Iterator[tuple[str, str]]:
    """(character, what lowercase + asciifolding make of it) for each character they change."""
    for batch in _batches(_CHARACTERS):
        body = {"tokenizer": "keyword", "filter": ["lowercase", "asciifolding"], "text": batch}
        tokens = [token["token"] for token in client.indices.analyze(body=body)["tokens"]]
        if len(tokens) != len(batch):
            raise RuntimeError(f"{len(batch)} characters analysed as {len(tokens)} tokens")
        yield from ((character, folded) for character, folded in zip(batch, tokens, strict=True) if folded != character)


def _batches(characters: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(characters), _BATCH):
        yield characters[start : start + _BATCH]


def _ranges(codes: list[int]) -> list[list[int]]:
    """Sorted code points as [first, last] runs."""
    runs: list[list[int]] = []
    for code in codes:
        if runs and runs[-1][1] == code - 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="a node of the cluster, e.g. http://127.0.0.1:9200")
    parser.add_argument("--out", type=Path, default=TABLES)
    args = parser.parse_args(argv)
    client = OpenSearch(hosts=[args.url])
    try:
        args.out.write_text(tables_module(client), encoding="ascii")
    finally:
        client.close()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
