"""The benchmark corpus: the real ACL Anthology records, cut to N or extended with labelled synthetic ones.

Synthetic records (ids `synthetic-<n>`, `"synthetic": true`) recombine real ones: the first
half of one title with the second half of another, sentences drawn from several abstracts,
authors, subjects and a year from random real records. Word statistics stay those of the
real collection, so posting lists grow as they would with more papers of the same field.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

from bench.measure import REPO

ACL = REPO.parent / "shared" / "data" / "acl-anthology-2016" / "corpus.jsonl"
SEED = 20261130
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def load(path: Path = ACL) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def prepare(target: Path, records: int, source: Path = ACL) -> dict[str, Any]:
    """Write `records` records to `target` (0: all real ones); say how many are synthetic."""
    real = load(source)
    count = records or len(real)
    chosen = real[:count]
    synthetic = max(0, count - len(real))
    rng = random.Random(SEED)
    with target.open("w", encoding="utf-8") as sink:
        for record in chosen:
            sink.write(json.dumps(record, ensure_ascii=False) + "\n")
        for n in range(synthetic):
            sink.write(json.dumps(_synthetic(rng, real, n), ensure_ascii=False) + "\n")
    return {"source": str(source), "records": count, "real": min(count, len(real)), "synthetic": synthetic}


def _synthetic(rng: random.Random, real: list[dict[str, Any]], n: int) -> dict[str, Any]:
    first, second, third = rng.choice(real), rng.choice(real), rng.choice(real)
    head = first["title"].split()
    tail = second["title"].split()
    title = " ".join(head[: max(1, len(head) // 2)] + tail[len(tail) // 2 :])
    sentences: list[str] = []
    for donor in (first, second, third):
        parts = _SENTENCE_END.split(donor.get("abstract") or "")
        if parts and parts[0]:
            start = rng.randrange(len(parts))
            sentences.extend(parts[start : start + 2])
    return {
        "id": f"synthetic-{n}",
        "title": title,
        "abstract": " ".join(sentences),
        "year": third.get("year"),
        "categories": list(first.get("categories") or []),
        "authors": list(dict.fromkeys((second.get("authors") or [])[:2] + (third.get("authors") or [])[:2])),
        "synthetic": True,
    }
