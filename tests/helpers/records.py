"""Source records written on demand: JSON lines and profile pages in the seed format."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def jsonl(records: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> Path:
    """Write `records` as a JSON-lines source file at `path` (its folder created); return `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(jsonl(records), encoding="utf-8")
    return path


def profile_page(name: str, records: Iterable[tuple[str, str, str, str]], stated: int | None = None) -> str:
    """A profile page in the seed format; each record is (year line, title, abstract, subjects)."""
    records = list(records)
    parts = ["arXiv subjects", name, f"Publications and source records attributed to {name}."]
    parts.append(f"At least {stated if stated is not None else len(records)} recordsLinked to original sources")
    for record in records:
        parts.extend(record)
    return "\n\n".join(parts) + "\n"


def made_up_papers(word: str, count: int) -> list[dict[str, Any]]:
    """`count` JSON-lines records about `word`, a word no seed paper contains, so searches for it
    tell which index a server answers from."""
    return [
        {
            "id": f"{word}-{number:02d}",
            "title": f"The {word} lattice, part {number}",
            "abstract": f"We study the {word} lattice of quokka migration, case {number}.",
            "year": 2000 + number % 20,
            "categories": ["q-bio.PE"],
            "authors": [f"Quinn Quokka{number}"],
        }
        for number in range(count)
    ]


# An Atom feed whose one title expands to 10^9 "lol"s (a few GB) if entities are expanded.
BILLION_LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
    + "".join(f' <!ENTITY lol{n} "{f"&lol{n - 1};" * 10 if n > 1 else "&lol;" * 10}">\n' for n in range(1, 10))
    + ']>\n<feed xmlns="http://www.w3.org/2005/Atom"><entry><title>&lol9;</title></entry></feed>\n'
)
