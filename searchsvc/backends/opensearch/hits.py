"""Hits read from the cluster's answer: the paper, its score, and its highlighted text.

The cluster marks matched words; the service escapes text its own way and cuts snippets as
every engine does (`core.text.opening` when nothing is marked).
"""

from __future__ import annotations

import re
from html import escape, unescape

from searchsvc.backends.opensearch.mapping import EXACT
from searchsvc.backends.opensearch.querying import Dsl
from searchsvc.backends.opensearch.texts import paper_of
from searchsvc.core.model import Hit
from searchsvc.core.text import ELLIPSIS, opening

_MARK = re.compile(r"</?mark>")
_MARK_TAG = re.compile(r"(</?mark>)")
_FRAGMENTS = " … "  # between the highlighter's fragments


def hit(doc: Dsl, score: float | None) -> Hit:
    """A result entry for a hit document, with `score` (lexical or fused, rounded by the caller)."""
    paper = paper_of(doc["_source"])
    marked = doc.get("highlight", {})
    read = doc["_source"]  # title and abstract as indexed and highlighted: their reading (texts.py)
    title = _best(marked, "title") or escape(read["title"], quote=True)
    return Hit.of(paper, score, title, _snippet(_best(marked, "abstract"), read.get("abstract") or ""))


def _best(marked: Dsl, field: str) -> str:
    """The field's highlight from whichever analysis (stemmed words, exact phrases) marked more."""
    candidates = [_FRAGMENTS.join(map(_escaped, marked.get(name, []))) for name in (field, f"{field}.{EXACT}")]
    return max(candidates, key=lambda text: text.count("<mark>"))


def _escaped(fragment: str) -> str:
    """The cluster's highlight re-escaped the way every other text of the service is.

    Its HTML encoder writes `/` as `&#x2F;`; only the marks it added are markup (a `<mark>`
    in the stored text arrives escaped), so the text between them is decoded and escaped again.
    """
    parts = _MARK_TAG.split(fragment)
    return "".join(part if _MARK_TAG.fullmatch(part) else escape(unescape(part), quote=True) for part in parts)


def _snippet(highlighted: str, abstract: str) -> str:
    """Marked fragments with an ellipsis where words were cut off; else the escaped opening."""
    if not highlighted:
        return escape(opening(abstract), quote=True)
    plain = unescape(_MARK.sub("", highlighted)).split(_FRAGMENTS)
    before = "" if abstract.startswith(plain[0]) else ELLIPSIS
    after = "" if abstract.endswith(plain[-1]) else ELLIPSIS
    return before + highlighted + after
