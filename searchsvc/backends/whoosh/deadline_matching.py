"""Whoosh queries whose matchers read the request's clock while Whoosh matches: phrases and wildcard words.

The collectors (deadline_collectors.py) read the clock between the matches they are handed. A
phrase of common words, or a query of wildcards expanded to hundreds of words each, can spend
seconds inside Whoosh's matchers before handing over a match, so these read it from within.
Otherwise they match and score as Whoosh's own Phrase and Term
(tests/unit/backends/whoosh/test_spelling_vocabulary.py).
"""

from __future__ import annotations

import copy
from typing import Any

from whoosh import matching, query
from whoosh.matching import Matcher
from whoosh.query import Query, SpanNear2
from whoosh.searching import Searcher

from searchsvc.core.deadline import CHECK_EVERY, Deadline


class CheckedPhrase(query.Phrase):
    """A phrase whose matcher reads the clock every CHECK_EVERY papers it looks at.

    Whoosh's phrase matcher passes over, within one call, every paper holding all the words
    but not side by side: for common words that is most of the collection (`"the the"` looks
    at nearly every paper to find a few dozen), longer than a deadline may go unchecked.
    """

    def __init__(self, fieldname: str, words: list[str], deadline: Deadline | None, boost: float = 1.0) -> None:
        super().__init__(fieldname, words, boost=boost)
        self.deadline = deadline

    def normalize(self) -> Query:
        return self  # built with two words or more (_terms); Phrase.normalize would drop the deadline

    def matcher(self, searcher: Searcher, context: Any = None) -> Matcher:
        """As Phrase.matcher (ordered, adjacent words), with the clock read while it looks."""
        reader = searcher.reader()
        words = [word.encode("utf-8") for word in self.words]
        if any((self.fieldname, word) not in reader for word in words):
            return matching.NullMatcher()
        terms = [query.Term(self.fieldname, word).matcher(searcher, context) for word in words]
        found = _CheckedSpans(terms, self.deadline)
        return found if self.boost == 1.0 else matching.WrappingMatcher(found, boost=self.boost)


# Papers a phrase looks at between two looks at the clock: each look reads and lines up the
# words' position lists, for common words (`"of the"`) far costlier than one posting step.
_SPANS_PER_CHECK = 16


class _CheckedSpans(SpanNear2.SpanNear2Matcher):
    def __init__(self, terms: list[Matcher], deadline: Deadline | None) -> None:
        self._deadline = deadline
        self._looked = 0
        super().__init__(terms, slop=1, ordered=True, mindist=1)  # looks for the first match already

    def copy(self) -> Matcher:
        return _CheckedSpans([m.copy() for m in self.ms], self._deadline)

    def _get_spans(self) -> list[Any]:
        """Called once per paper holding all the words: where the matcher spends its time."""
        self._looked += 1
        if self._deadline is not None and self._looked % _SPANS_PER_CHECK == 0:
            self._deadline.check()
        return super()._get_spans()


class Steps:
    """Steps through postings counted across all of a query's wildcard words, so the clock is
    read every CHECK_EVERY steps of them together (each word alone may take only a few)."""

    def __init__(self, deadline: Deadline | None) -> None:
        self.deadline = deadline
        self._count = 0

    def step(self) -> None:
        self._count += 1
        if self.deadline is not None and self._count % CHECK_EVERY == 0:
            self.deadline.check()


class CheckedTerm(query.Term):
    """A word a wildcard expanded to, whose matcher reads the clock as it is built and stepped.

    Four wildcards of 300 words each are 2,400 matchers to build and unions of them to
    intersect: Whoosh returns no match to the collector for seconds while it does that.
    It is still a Term, so ORs flatten and coordinate it exactly as before.
    """

    def __init__(self, fieldname: str, text: str, steps: Steps, boost: float = 1.0) -> None:
        super().__init__(fieldname, text, boost=boost)
        self.steps = steps

    def __deepcopy__(self, memo: dict[int, Any]) -> CheckedTerm:
        """Whoosh copies every term as it normalizes (`with_boost` deep-copies): the copy must share
        the query's one step count, and copying the count and deadline cost ~50 ms for 1,200 words."""
        return copy.copy(self)  # the other attributes are strings and numbers

    def matcher(self, searcher: Searcher, context: Any = None) -> Matcher:
        if self.steps.deadline is not None:
            self.steps.deadline.check()
        found = super().matcher(searcher, context)
        self.steps.step()
        return found if isinstance(found, matching.NullMatcherClass) else _CheckedPostings(found, self.steps)


class _CheckedPostings(matching.WrappingMatcher):
    def __init__(self, child: Matcher, steps: Steps) -> None:
        super().__init__(child)
        self._steps = steps

    def copy(self) -> Matcher:
        return _CheckedPostings(self.child.copy(), self._steps)

    def _replacement(self, newchild: Matcher) -> Matcher:
        return _CheckedPostings(newchild, self._steps)

    def next(self) -> Any:
        self._steps.step()
        return self.child.next()

    def skip_to(self, id: int) -> Any:
        self._steps.step()
        return self.child.skip_to(id)
