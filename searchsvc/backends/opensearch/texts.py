"""A paper's title and abstract in its document: their reading indexed, the text as written beside it.

A field's indexed words and its `_source` are one value in OpenSearch, and the highlighter reads
`_source`: so `title` and `abstract` hold the reading (`core.tex`, as the Whoosh backend indexes
it), and `tex` (stored, never indexed) the source's text of each that differs, which papers are
read back with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from searchsvc.backends.opensearch.mapping import TEX
from searchsvc.backends.opensearch.querying import Dsl
from searchsvc.core.paper import Paper
from searchsvc.core.tex import reading


def text_fields(paper: Paper) -> Dsl:
    """The document's `title`, `abstract` and `tex`."""
    source = {"title": paper.title, "abstract": paper.abstract}
    read = {name: reading(text) for name, text in source.items()}
    differing = {name: text for name, text in source.items() if text != read[name]}
    return {**read, TEX: differing or None}


def as_written(source: Mapping[str, Any]) -> dict[str, Any]:
    """A document's `_source` with title and abstract as the source wrote them."""
    return {**source, **(source.get(TEX) or {})}


def paper_of(source: Mapping[str, Any]) -> Paper:
    return Paper.from_stored(as_written(source))
