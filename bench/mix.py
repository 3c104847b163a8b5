"""A seeded, realistic query mix drawn from the corpus's own records.

Of every 100 requests: 10 browse (empty query), 50 are 1–3 consecutive words of a real
title, 15 a quoted two- or three-word phrase of a title, 25 a pasted sentence (an abstract's
sentence of 8–30 words, cut to the service's 500 characters). 20 of the 100 carry a filter:
a year range, a subject or an author of a real record, one or two at once. Every request
asks for the first page of 10 with all three facets (the service always counts them).
"""

from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlencode

SEED = 6
MAX_QUERY = 500
_WORD = re.compile(r"^[A-Za-z][A-Za-z-]*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# Share of each kind, in this order; fractions of 100.
KINDS = (("browse", 10), ("words", 50), ("phrase", 15), ("sentence", 25))
FILTERED = 0.20


@dataclass(frozen=True)
class MixQuery:
    kind: str
    q: str
    year_from: int | None = None
    year_to: int | None = None
    subject: tuple[str, ...] = field(default=())
    author: tuple[str, ...] = field(default=())

    def params(self) -> str:
        """The API's query string for this request."""
        pairs: list[tuple[str, Any]] = [("q", self.q)]
        if self.year_from is not None:
            pairs.append(("year_from", self.year_from))
        if self.year_to is not None:
            pairs.append(("year_to", self.year_to))
        pairs += [("subject", s) for s in self.subject] + [("author", a) for a in self.author]
        return urlencode(pairs)

    @property
    def filtered(self) -> bool:
        return bool(self.year_from or self.year_to or self.subject or self.author)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def generate(records: list[dict[str, Any]], count: int, seed: int = SEED) -> list[MixQuery]:
    """`count` requests; the same records and seed always give the same mix."""
    rng = random.Random(seed)
    kinds = [kind for kind, share in KINDS for _ in range(share)]
    mix = []
    while len(mix) < count:
        kind = rng.choice(kinds)
        q = _text(rng, records, kind)
        if q is None:
            continue
        mix.append(MixQuery(kind, q, **(_filters(rng, records) if rng.random() < FILTERED else {})))
    return mix


def _text(rng: random.Random, records: list[dict[str, Any]], kind: str) -> str | None:
    record = rng.choice(records)
    if kind == "browse":
        return ""
    if kind == "sentence":
        sentences = [s for s in _SENTENCE_END.split(record.get("abstract") or "") if 8 <= len(s.split()) <= 30]
        return rng.choice(sentences)[:MAX_QUERY] if sentences else None
    words = [w.strip(":,.;?!()").lower() for w in record["title"].split()]
    words = [w for w in words if _WORD.match(w)]
    size = rng.choice((1, 2, 3)) if kind == "words" else rng.choice((2, 3))
    if len(words) < size:
        return None
    start = rng.randrange(len(words) - size + 1)
    text = " ".join(words[start : start + size])
    if kind == "phrase":
        return f'"{text}"'
    return text


def _filters(rng: random.Random, records: list[dict[str, Any]]) -> dict[str, Any]:
    record = rng.choice([r for r in rng.sample(records, 20) if r.get("year") and r.get("authors")] or records)
    chosen = rng.sample(("year", "subject", "author"), rng.choice((1, 1, 2)))
    found: dict[str, Any] = {}
    if "year" in chosen and record.get("year"):
        found["year_from"] = record["year"] - rng.randrange(3)
        found["year_to"] = record["year"]
    if "subject" in chosen and record.get("categories"):
        found["subject"] = (record["categories"][0],)
    if "author" in chosen and record.get("authors"):
        found["author"] = (rng.choice(record["authors"]),)
    return found
