"""A search, written once for every engine: parse, the engine's first answer, the page ranked by
the core's policy, its hits and facets, and "did you mean".

An engine (a `Backend`) only counts, finds each tier's candidates in lexical order and fetches
papers; which papers come first, how meaning reorders them and whether a respelling is worth
offering are decided here and in `core/`, so both engines give the same pages by construction.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from html import escape
from typing import Any

import numpy as np

from searchsvc.backends import Answer, Backend
from searchsvc.core import fusion, spelling, typos
from searchsvc.core.deadline import Deadline, budget
from searchsvc.core.errors import PaperNotFound, QuerySyntaxError
from searchsvc.core.explanation import SCORE_PLACES, LexicalParts, explained
from searchsvc.core.facet_order import counted_in
from searchsvc.core.identifiers import Pasted, pasted
from searchsvc.core.model import (
    FacetLookup,
    FacetValue,
    Hit,
    PastedIdentifier,
    SearchRequest,
    SearchResult,
    SuggestRequest,
)
from searchsvc.core.paper import Paper
from searchsvc.core.query import Node, SimilarTo, as_typed, check_term_count, meaning, only_describes, parse, similar_to
from searchsvc.core.ranking import LAST_TIER, Placed, join_by_meaning, rank_page
from searchsvc.core.suggestions import Suggestion, typed
from searchsvc.core.synonyms import matches as other_forms
from searchsvc.core.tex import reading
from searchsvc.core.text import opening
from searchsvc.operations import synonyms
from searchsvc.operations.published import paper_filed_under
from searchsvc.semantic.selection import query_encoder
from searchsvc.settings import Settings

Ranked = list[tuple[Any, float | None]]
SIMILAR_RESULTS = 100  # papers a `similar:` search ranks: the nearest ones, paged


def search(backend: Backend, request: SearchRequest) -> SearchResult:
    """The page of results `request` asks for, with facets and "did you mean". Every stage checks
    the request's one deadline. A query that is one arXiv id or DOI answers with that paper alone
    where the index holds it (its filters aside: the reader asked for that paper), else with the
    words searched and a note that it is not here."""
    started, deadline = time.perf_counter(), budget(backend.settings.search_time_limit_ms)
    identifier = pasted(request.q)
    found = None if identifier is None else _identified(backend, request, identifier, started, deadline)
    if isinstance(found, SearchResult):
        return found
    tree = _parsed(backend.settings, request)
    like = similar_to(tree)
    if like is not None:
        return _similar(backend, request, like, started, deadline)
    with backend.answer(request, _widened(backend, request, tree), deadline, "page") as answer:
        placed, by_meaning = _placed(answer, request, tree, backend.settings, deadline)
        hits = answer.hits(_scored(answer, placed))
        if request.explain and placed is not None:
            hits = _explained(answer, hits, placed, deadline)
        facets = answer.facets()
        deadline.check()
        suggestion = _did_you_mean(answer, request, deadline)
        total, searched = answer.total() + by_meaning, answer.searched()
    return SearchResult(
        request=request,
        total=total,
        hits=hits,
        facets=facets,
        took_ms=round((time.perf_counter() - started) * 1000, 2),
        suggestion=suggestion,
        identifier=found,
        typos=typos.matches(searched),
        also_searched=other_forms(searched),
    )


def _similar(
    backend: Backend, request: SearchRequest, like: SimilarTo, started: float, deadline: Deadline
) -> SearchResult:
    """Papers like the `similar:` ones (Rocchio: nearest the mean of their vectors minus a share of
    the `-similar:` ones'), among what the rest of the query and the filters find: the
    `SIMILAR_RESULTS` nearest, paged; facets count those."""
    try:
        found = backend.similar(like, request, SIMILAR_RESULTS)
    except PaperNotFound as missing:
        message = f"similar: {missing.message}"
        raise QuerySyntaxError(f"{QuerySyntaxError.label}: {message}", {"q": [message]}) from None
    deadline.check()
    return SearchResult(
        request=request,
        total=len(found),
        hits=found[request.start : request.end],
        facets=counted_in(found, request, backend.settings.facet_limit),
        took_ms=round((time.perf_counter() - started) * 1000, 2),
    )


def related(backend: Backend, paper_id: str, limit: int) -> list[Hit]:
    """The papers most like one paper, in the whole collection: its paper page's list."""
    return backend.similar(SimilarTo((paper_id,), (), None), SearchRequest(), limit)


def _identified(
    backend: Backend, request: SearchRequest, identifier: Pasted, started: float, deadline: Deadline
) -> SearchResult | PastedIdentifier:
    """The result holding the paper `identifier` names, first and alone, with its facet values;
    else whether the index could tell that it has no such paper."""
    paper_id, known = paper_filed_under(backend, identifier.key)
    deadline.check()
    if paper_id is None:
        return PastedIdentifier(identifier.label, False if known else None)
    try:
        paper = backend.paper(paper_id)
    except PaperNotFound:  # filed, but not in what the engine serves: it cannot tell
        return PastedIdentifier(identifier.label, None)
    deadline.check()
    title, abstract = reading(paper.title), opening(reading(paper.abstract))  # as highlights always are
    hit = replace(Hit.of(paper, None, escape(title, quote=True), escape(abstract, quote=True)), matched="identifier")
    values: dict[str, list[str | int]] = {
        "year": [] if paper.year is None else [paper.year],
        "subject": list(dict.fromkeys(paper.subjects)),
        "author": list(dict.fromkeys(paper.authors)),
    }
    return SearchResult(
        request=request,
        total=1,
        hits=[hit] if request.page == 1 else [],
        facets={name: [FacetValue(value, 1, False) for value in found] for name, found in values.items()},
        took_ms=round((time.perf_counter() - started) * 1000, 2),
        identifier=PastedIdentifier(identifier.label, True),
    )


def export(backend: Backend, request: SearchRequest, limit: int) -> list[Paper]:
    """The first `limit` papers of the search's whole ordered result set, ranked as its pages are."""
    whole = replace(request, page=1, per_page=limit)
    deadline, tree = budget(backend.settings.search_time_limit_ms), _parsed(backend.settings, whole)
    like = similar_to(tree)
    if like is not None:
        return papers_by_id(backend, [hit.id for hit in backend.similar(like, whole, min(limit, SIMILAR_RESULTS))])
    with backend.answer(whole, _widened(backend, whole, tree), deadline, "export") as answer:
        return answer.papers(_ranked(answer, whole, tree, backend.settings, deadline))


def papers_by_id(backend: Backend, ids: Sequence[str]) -> list[Paper]:
    """The papers `ids` names, in that order (an unknown one is `PaperNotFound`, named): what a
    reader picked to cite, looked up one by one within the request's one deadline."""
    deadline, papers = budget(backend.settings.search_time_limit_ms), []
    for paper_id in ids:
        deadline.check()
        papers.append(backend.paper(paper_id))
    return papers


def facet_values(backend: Backend, name: str, prefix: str, request: SearchRequest, limit: int) -> FacetLookup:
    """Values of facet `name` with a word starting with `prefix`, counted as the search's facets are."""
    return backend.facet_values(name, prefix, request, _parsed_words(backend.settings, request, "facet values"), limit)


def suggest(backend: Backend, wanted: SuggestRequest) -> list[Suggestion]:
    """Completions of the query's last word among the papers its earlier words and the search's
    filters find (core.suggestions): a word or name those papers lack is not offered, and each
    suggestion counts the papers the search it leads to would find."""
    start = typed(wanted.q)
    if start is None:
        return []
    narrowing = replace(wanted.search, q=start.kept.strip(), sort="relevance", page=1)
    return backend.suggest(start, narrowing, _parsed_words(backend.settings, narrowing, "suggestions"), wanted.limit)


def _parsed(settings: Settings, request: SearchRequest) -> Node | None:
    """The request's query parsed, refused when it has too many terms."""
    tree = parse(request.q)
    check_term_count(tree, settings.max_query_terms)
    return tree


def _widened(backend: Backend, request: SearchRequest, tree: Node | None) -> Node | None:
    """The query with the other forms of its words (core.synonyms), unless that is off or the
    request asks for its words only as typed."""
    expand = backend.settings.expand_synonyms and not request.exact
    return synonyms.table(backend).widened(tree) if expand else tree


def _parsed_words(settings: Settings, request: SearchRequest, what: str) -> Node | None:
    """The request's query parsed for `what`, which counts what words find: `similar:` refused."""
    tree = _parsed(settings, request)
    if similar_to(tree) is not None:
        message = f"similar: ranks a search's results and cannot narrow {what}; search with it instead"
        raise QuerySyntaxError(f"{QuerySyntaxError.label}: {message}", {"q": [message]})
    return tree


def _ranked(
    answer: Answer[Any], request: SearchRequest, tree: Node | None, settings: Settings, deadline: Deadline
) -> Ranked:
    """The page's papers in order with their scores: by the ranking policy for a query sorted by
    relevance, in the engine's browsing order otherwise (no scores)."""
    return _scored(answer, _placed(answer, request, tree, settings, deadline)[0])


def _placed(
    answer: Answer[Any], request: SearchRequest, tree: Node | None, settings: Settings, deadline: Deadline
) -> tuple[list[Placed[Any]] | None, int]:
    """The page's papers placed by the ranking policy, or None when it is not ranked by relevance;
    and how many papers holding none of the query's words meaning found (core.ranking), which
    the total counts."""
    if tree is None or request.sort != "relevance":
        return None, 0
    total, literal, all_words = answer.total(), answer.literal(), answer.all_words()
    sizes = [all_words, literal - all_words, total - literal]  # core.ranking's tiers; empty ones take no place
    query = _query_vector(answer, settings)
    weight = None if query is None else fusion.weight(query_encoder(settings).name)
    if query is None or not settings.meaning_candidates:
        return rank_page(sizes, request.start, request.end, answer, query, deadline, weight=weight), 0
    alone = settings.meaning_without_words and only_describes(tree)
    joining = join_by_meaning(sizes, answer, query, settings.meaning_candidates, alone)
    deadline.check()
    placed = rank_page(joining.sizes, request.start, request.end, answer, query, deadline, joining, weight)
    return placed, joining.added


def _scored(answer: Answer[Any], placed: list[Placed[Any]] | None) -> Ranked:
    """The papers placed with their scores as shown; the engine's browsing order, without scores, if none are."""
    if placed is None:
        return [(ref, None) for ref in answer.page()]
    return [(found.ref, round(found.score, SCORE_PLACES)) for found in placed]


def _explained(answer: Answer[Any], hits: list[Hit], placed: list[Placed[Any]], deadline: Deadline) -> list[Hit]:
    """The hits with their scores taken apart (core.explanation): the engine asked for its words'
    parts once per tier on the page, for these papers only."""
    parts: list[LexicalParts | None] = [None] * len(placed)
    for tier in sorted({found.tier for found in placed}):
        places = [i for i, found in enumerate(placed) if found.tier == tier]
        for i, found in zip(places, answer.lexical_parts(tier, [placed[i].ref for i in places]), strict=True):
            parts[i] = found
        deadline.check()
    return [
        replace(hit, explanation=explained(found, part)) for hit, found, part in zip(hits, placed, parts, strict=True)
    ]


def _query_vector(answer: Answer[Any], settings: Settings) -> Callable[[int], np.ndarray] | None:
    """A tier's query vector, if this search is ranked by meaning too (each computed once, when
    needed): the first tiers' of the words as typed, the last's of the words searched (a misspelt
    word as the word likeliest meant), as their lexical order is (core.ranking)."""
    searched = answer.searched()
    texts = {tier: meaning(as_typed(searched) if tier < LAST_TIER else searched) for tier in range(LAST_TIER + 1)}
    if not (settings.semantic_ranking and any(texts.values())) or not answer.meaning_ready():
        return None  # off, nothing to mean, or the papers are still being embedded
    encoded: dict[str, np.ndarray] = {}

    def vector(tier: int) -> np.ndarray:
        text = texts[tier] or texts[LAST_TIER]
        if text not in encoded:
            encoder = query_encoder(settings)
            encoded[text] = encoder.encode([encoder.query_prefix + text])[0]
        return encoded[text]

    return vector


def _did_you_mean(answer: Answer[Any], request: SearchRequest, deadline: Deadline) -> str | None:
    """A respelling of the words no paper contains, offered if it finds more papers."""
    corrected = spelling.respelled_query(request.q, answer.respellings())
    deadline.check()
    if corrected is None:
        return None
    finds = answer.all_words_of(replace(request, q=corrected), parse(corrected))
    deadline.check()
    return corrected if spelling.worth_offering(finds, answer.all_words()) else None
