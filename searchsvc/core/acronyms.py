"""Acronyms a collection defines itself: "long form (ACRONYM)" pairs found in titles and abstracts.

Papers write "Deep Learning Recommendation Models (DLRM)" once and "DLRM" after; a reader types
either. The pairs are found as Schwartz and Hearst do ("A simple algorithm for identifying
abbreviation definitions in biomedical text", PSB 2003): a short form in parentheses, of 2 to 10
characters with a letter and two capitals, and the shortest run of the words before it whose
letters, read from the end, hold the short form's letters in order, its first letter starting a
word. A plural short form ("DNNs") stands for the singular; a hyphenated long form is its words.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from searchsvc.core.text import normalise_title

_DEFINED = re.compile(r"\(\s*([A-Za-z0-9][A-Za-z0-9\-/&.]{0,9}?)\s*\)")
_CLAUSE_END = re.compile(r"[.;:!?()\[\]{}]\s|[()\[\]{}]")  # a long form does not cross these
MAX_LONG_FORMS = 3  # long forms kept per short form: the ones the collection uses most
# A long form starting with one of these took a letter from a joining word ("Accident and
# Emergency (A&E)" read as "and emergency"): Schwartz and Hearst's commonest mistake.
_NOT_FIRST = frozenset("a an and as at by for from in of on or the to with".split())


@dataclass(frozen=True)
class Acronym:
    """A short form and the long forms the collection defines it with, most used first."""

    short: str
    long: tuple[str, ...]
    papers: int  # papers defining it


def short_form(text: str) -> str | None:
    """`text` as a short form (its plural's "s" dropped), or None if it cannot be one."""
    letters = [char for char in text if char.isalpha()]
    if not letters or sum(char.isupper() for char in text) < 2 or len(text) < 2:
        return None
    if text.endswith("s") and text[:-1].isupper() and len(text) > 2:
        text = text[:-1]
    return text


def long_form(short: str, before: str) -> str | None:
    """The long form of `short` ending `before` (the text before its parenthesis), or None:
    Schwartz and Hearst's match of the short form's letters, from the last, to the text's."""
    clause = _CLAUSE_END.split(before)[-1]
    words = clause.split()[-min(len(short) + 5, 2 * len(short)) :]
    text = " ".join(words)
    s, i = len(short) - 1, len(text) - 1
    while s >= 0:
        char = short[s].lower()
        if not char.isalnum():
            s -= 1
            continue
        while i >= 0 and (text[i].lower() != char or (s == 0 and i > 0 and text[i - 1].isalnum())):
            i -= 1
        if i < 0:
            return None
        i -= 1
        s -= 1
    found = text[i + 1 :].strip(" -,")  # from the word the short form's first letter starts
    words = normalise_title(found).split()
    if len(words) < 2 or words[0] in _NOT_FIRST or short.casefold() in words:
        return None
    return found


def defined(text: str) -> Iterable[tuple[str, str]]:
    """Every (short form, long form) pair `text` defines."""
    for match in _DEFINED.finditer(text):
        short = short_form(match.group(1))
        if short is None:
            continue
        found = long_form(short, text[: match.start()])
        if found is not None:
            yield short, normalized(found)


def normalized(form: str) -> str:
    """A long form as kept and shown: folded to lower case, hyphens as spaces, one space between words."""
    return normalise_title(form)


def mine(texts: Iterable[str]) -> list[Acronym]:
    """The acronyms `texts` (one paper's title and abstract each) define, by short form: each
    with its `MAX_LONG_FORMS` commonest long forms and how many papers define it."""
    pairs: Counter[tuple[str, str]] = Counter()
    for text in texts:
        pairs.update(set(defined(text)))
    by_short: dict[str, Counter[str]] = {}
    for (short, long), papers in pairs.items():
        by_short.setdefault(short, Counter())[long] = papers
    found = []
    for short, forms in sorted(by_short.items()):
        ranked = sorted(forms.items(), key=lambda item: (-item[1], item[0]))[:MAX_LONG_FORMS]
        found.append(Acronym(short, tuple(form for form, _ in ranked), sum(forms.values())))
    return found


def merged(kept: Iterable[Acronym], more: Iterable[Acronym]) -> list[Acronym]:
    """`kept` with `more` added (an update's papers'): papers summed, new long forms after the
    kept ones, at most MAX_LONG_FORMS; a paper removed since does not take its pairs away until
    the next rebuild counts again."""
    by_short = {acronym.short: acronym for acronym in kept}
    for acronym in more:
        old = by_short.get(acronym.short)
        if old is None:
            by_short[acronym.short] = acronym
        else:
            forms = tuple(dict.fromkeys((*old.long, *acronym.long)))[:MAX_LONG_FORMS]
            by_short[acronym.short] = Acronym(acronym.short, forms, old.papers + acronym.papers)
    return [by_short[short] for short in sorted(by_short)]


def text_of(title: str, abstract: str) -> str:
    """What a paper's acronyms are mined from."""
    return f"{title}\n{abstract}"
