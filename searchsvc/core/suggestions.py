"""Suggestions as you type: which word of the query is completed, and the query each suggestion searches.

The last word of the query is completed, the earlier ones are kept as typed: completing a word
the user has moved past would rewrite what they already chose. A word suggestion replaces the
last word with the completed word; an author suggestion replaces it with `author:"Name"`, so
picking one searches that author's papers (narrowed by the earlier words), through the same
query language as everything else. Engines only find the completions (most papers first).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from searchsvc.core.text import fold

KINDS = ("word", "author")
# Of the listed suggestions, authors get at most this share while words fill the list: a word
# finds far more papers than a name, so ranking both by papers alone would never show an author.
AUTHOR_SHARE = 3
_LAST_WORD = re.compile(r"(?P<kept>^|.*\s)(?P<last>\S+)$", re.DOTALL)
_PLAIN_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Suggestion:
    text: str  # the whole query to search
    kind: str  # "word" or "author"
    value: str  # the completed word or the author's name
    papers: int  # papers holding the word (title and abstract counted apart), or the author's papers


@dataclass(frozen=True)
class Typed:
    """A query split into what is kept and the start of the word being typed, as written (which
    each engine folds as it folds the words it indexes: backends.analysis)."""

    kept: str
    written: str

    @property
    def prefix(self) -> str:
        """The start of the word folded as names are: what authors are matched by."""
        return fold(self.written)


def typed(q: str) -> Typed | None:
    """What to complete in `q`: None if its last word is finished (a space after it) or is syntax
    (inside a phrase, a field, a wildcard), which a word completion would break."""
    found = _LAST_WORD.match(q)
    if found is None or found["kept"].count('"') % 2:  # inside an open phrase
        return None
    start = Typed(found["kept"], found["last"])
    return start if _PLAIN_WORD.fullmatch(start.prefix) else None


def combine(start: Typed, words: list[tuple[str, int]], authors: list[tuple[str, int]], limit: int) -> list[Suggestion]:
    """At most `limit` suggestions: words first, then authors in at most a share of the places
    (more where there are too few words)."""
    shown_authors = min(len(authors), max(limit // AUTHOR_SHARE, limit - len(words)))
    chosen = [Suggestion(start.kept + word, "word", word, papers) for word, papers in words[: limit - shown_authors]]
    for name, papers in authors[:shown_authors]:
        quoted = name.replace('"', " ")  # a quote would end the phrase early
        chosen.append(Suggestion(f'{start.kept}author:"{quoted}"', "author", name, papers))
    return chosen


def most_papers_first(found: list[tuple[str, int]], limit: int) -> list[tuple[str, int]]:
    """The `limit` completions with the most papers, ties alphabetical: the order both engines
    list words and authors in (the Whoosh engine's arrays are sorted so once per generation)."""
    return sorted(found, key=lambda pair: (-pair[1], pair[0]))[:limit]
