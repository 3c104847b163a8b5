""" "Did you mean": which query words are worth respelling, which respelling wins, and the new query.

An engine says which words no paper contains and offers respellings it knows, with how many
papers have each; the rule for choosing among them and for offering the result lives here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from searchsvc.core.deadline import Deadline
from searchsvc.core.edits import MAX_EDITS, edit_distance
from searchsvc.core.query import TEXT_FIELDS, Node, words

if TYPE_CHECKING:
    from searchsvc.core.vocabulary import Vocabulary

MIN_WORD_LENGTH = 3  # shorter words have too many neighbours one edit away to guess from
MAX_WORD_LENGTH = 30  # a longer "word" is a pasted identifier or noise, not a misspelling
MAX_RESPELLED_WORDS = 8  # unknown words looked up per query: a query of 100 made-up words is not a typo


@dataclass(frozen=True)
class Check:
    """A query word, as the engine's unstemmed analysis reads it, and where it stands in the query."""

    start: int
    end: int
    word: str


def checks(tree: Node | None, tokens: Callable[[str], list[str]]) -> list[Check]:
    """The plain title/abstract words of the query worth respelling if no paper has them:
    one token long (as `tokens` reads it), MIN_WORD_LENGTH to MAX_WORD_LENGTH letters, not a number."""
    found = []
    for word in words(tree):
        if word.field not in (None, *TEXT_FIELDS) or len(word.text) > MAX_WORD_LENGTH:
            continue
        read = tokens(word.text)
        if len(read) == 1 and MIN_WORD_LENGTH <= len(read[0]) <= MAX_WORD_LENGTH and not read[0].isdigit():
            found.append(Check(word.start, word.end, read[0]))
    return found


def respellings(found: Iterable[Check], vocabulary: Vocabulary, deadline: Deadline) -> dict[Check, str]:
    """The respelling `choose` picks for each checked word no paper contains, among the vocabulary's
    near words: at most MAX_RESPELLED_WORDS such words are looked up, each within the deadline."""
    chosen: dict[Check, str] = {}
    looked_up = 0
    for check in found:
        if vocabulary.papers(check.word):
            continue
        if looked_up == MAX_RESPELLED_WORDS:
            break
        deadline.check()
        looked_up += 1
        better = choose(check.word, vocabulary.near(check.word))
        if better is not None:
            chosen[check] = better
    return chosen


def choose(word: str, options: Iterable[tuple[str, int]]) -> str | None:
    """The best respelling of `word` among `(text, papers)` options: nearer words win over
    commoner ones (one edit before two), then the commonest, then alphabetical order. The
    first letter is trusted: few misspellings change it."""
    frequency: dict[str, int] = {}
    for text, papers in options:
        if text[:1] == word[:1]:
            frequency[text] = frequency.get(text, 0) + papers
    scored = [(edit_distance(word, text), -count, text) for text, count in frequency.items()]
    best = min((entry for entry in scored if 0 < entry[0] <= MAX_EDITS), default=None)
    return None if best is None else best[2]


def respelled_query(query: str, respellings: Mapping[Check, str]) -> str | None:
    """`query` with each checked word replaced by its respelling (None when there is none)."""
    if not respellings:
        return None
    corrected = query
    for check, better in sorted(respellings.items(), key=lambda item: item[0].start, reverse=True):
        corrected = corrected[: check.start] + better + corrected[check.end :]
    return corrected


def worth_offering(found_by_respelling: int, found_now: int) -> bool:
    """A respelled query is offered only if it finds more papers matching all its words."""
    return found_by_respelling > found_now
