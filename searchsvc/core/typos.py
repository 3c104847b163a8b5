"""Typo tolerance, exact first: which query words may be typos, which indexed words each also
matches, and the query that matches them.

A plain title/abstract word that no paper holds, of `MIN_LETTERS` letters or more and letters
only (never a number, an id or an initial), also matches the indexed words one edit away from
it, two from `TWO_EDITS_FROM` letters: the nearest and commonest `MAX_ALTERNATIVES`, with its
first letter, as "did you mean" trusts it. The papers only those words find rank after every
paper matching the query as typed (core.ranking's last tier), so a typo never outranks an
exact match, the complaint users of typo-tolerant engines make most (typesense#242,
meilisearch#3410). An engine supplies the lookup (its vocabulary's near words, with papers);
the rule is here, so both engines respell alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from searchsvc.core.deadline import Deadline
from searchsvc.core.edits import edit_distance
from searchsvc.core.model import TypoMatch
from searchsvc.core.query import AllOf, AnyOf, Group, Node, Respelled, Word, widened
from searchsvc.core.spelling import Check, checks

MIN_LETTERS = 5  # shorter words have too many neighbours one edit away: "graph" is not a typo of "grape"
TWO_EDITS_FROM = 9  # letters from which a word may be two edits away from what was meant
MAX_ALTERNATIVES = 3  # words one typed word stands for; each is a posting list read

# A word's near words in the index with how many papers hold each, or None when some paper holds it.
Lookup = Callable[[str], Iterable[tuple[str, int]] | None]


def typo_checks(tree: Node | None, tokens: Callable[[str], list[str]]) -> list[Check]:
    """The query's words that may be typos, as `tokens` (the engine's unstemmed analysis) reads them."""
    return [check for check in checks(tree, tokens) if len(check.word) >= MIN_LETTERS and check.word.isalpha()]


def allowed_edits(word: str) -> int:
    return 2 if len(word) >= TWO_EDITS_FROM else 1


def alternatives(word: str, options: Iterable[tuple[str, int]]) -> tuple[str, ...]:
    """The words `word` also matches among `(text, papers)` options (a word given twice adds up):
    within `allowed_edits`, same first letter, letters only; nearest first, then commonest, then
    alphabetical; at most MAX_ALTERNATIVES."""
    papers: dict[str, int] = {}
    for text, count in options:
        if text[:1] == word[:1] and text.isalpha():
            papers[text] = papers.get(text, 0) + count
    limit = allowed_edits(word)
    near = sorted(
        (distance, -count, text)
        for text, count in papers.items()
        if 0 < (distance := edit_distance(word, text)) <= limit
    )
    return tuple(text for _, _, text in near[:MAX_ALTERNATIVES])


def respelled(tree: Node | None, tokens: Callable[[str], list[str]], lookup: Lookup, deadline: Deadline) -> Node | None:
    """`tree` with each word that may be a typo, and that no paper holds, a `Respelled` matching
    its alternatives as well (`tree` itself when there is none)."""
    found: dict[tuple[int, int], tuple[str, ...]] = {}
    for check in typo_checks(tree, tokens):
        deadline.check()
        options = lookup(check.word)
        near = () if options is None else alternatives(check.word, options)
        if near:
            found[(check.start, check.end)] = near
    return tree if tree is None or not found else _respell(tree, found)


def _respell(node: Node, found: dict[tuple[int, int], tuple[str, ...]]) -> Node:
    if isinstance(node, Word):
        near = found.get((node.start, node.end))
        return node if near is None else Respelled(node, near)
    if isinstance(node, AllOf | AnyOf | Group):
        return type(node)(tuple(_respell(child, found) for child in node.nodes))
    return node  # negated words and phrases are never respelled


def matches(tree: Node | None) -> list[TypoMatch]:
    """The respelled words of a searched query, in order, with what each matched."""
    return [TypoMatch(node.typed.text, node.alternatives) for node in widened(tree) if isinstance(node, Respelled)]
