"""Search bodies: a request's plan, its pages and sorts, highlights, tiers and facet aggregations.

Pure functions of the request and the settings; nothing here talks to the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

from searchsvc.backends.opensearch.mapping import (
    ADDED,
    AUTHOR_VALUE,
    CITATIONS,
    EXACT,
    FOLDED,
    TEX,
    TEXT_FIELDS,
    VECTOR,
    VENUE,
)
from searchsvc.backends.opensearch.querying import MATCH_ALL, Dsl, all_of, all_words, filters, translate, year_range
from searchsvc.core.model import FACETS, LIST_FACETS, SearchRequest
from searchsvc.core.query import Node, as_typed, required_words, widened
from searchsvc.core.ranking import LAST_TIER, RELATED_KEY_TERMS
from searchsvc.settings import Settings

SOURCE = [
    *("id", "title", "abstract", TEX, "year", "subjects", "authors"),
    *("identifiers", "publication", "added", "changed"),
]
FACET_FIELDS = {"year": "year", "subject": "subjects", "author": AUTHOR_VALUE, "venue": VENUE}
FOLDED_FIELDS = {"subject": f"subjects.{FOLDED}", "author": f"authors.{FOLDED}", "venue": f"{VENUE}.{FOLDED}"}
# Values fetched per facet before the display order is applied: the cluster orders ties by
# raw bytes, the service case-insensitively, so a few more than shown must come back.
FACET_HEADROOM = 10
WORD_SAMPLE = 200  # papers per shard whose text one round of word completions reads
# Words of a sample listed, then counted exactly: significant_text lists by significance, not
# papers, so as many as a short prefix may start in a sample, not only a page's worth.
SAMPLED_WORDS = 200
# Words counted at most per key press (a `filters` aggregation checks each narrowed paper against
# each word and field): the first round's two fields' worth, shared by the rounds after it.
COUNTED_WORDS = 2 * SAMPLED_WORDS
# Rounds of word completions at most per key press: each samples only papers holding a word no
# earlier round found, so a word in one paper is found once the papers before it are read.
WORD_ROUNDS = 4
# The longest regular expression a search may send: OpenSearch's `index.max_regex_length` default.
# The words found so far are left out by name, so later rounds stop once they no longer fit.
REGEX_CHARS = 1000
_BY_YEAR = {"order": "desc", "missing": "_last"}
SORTS = {
    # Ties go to the newer paper, then the id: core.paper.catalogue_key, as on the Whoosh backend.
    "relevance": [{"_score": "desc"}, {"year": _BY_YEAR}, {"id": "asc"}],
    "newest": [{"year": _BY_YEAR}, {"id": "asc"}],
    "oldest": [{"year": {"order": "asc", "missing": "_last"}}, {"id": "asc"}],
    "cited": [{CITATIONS: {"order": "desc", "missing": "_last"}}, {"year": _BY_YEAR}, {"id": "asc"}],
    "added": [{ADDED: {"order": "desc", "missing": "_last"}}, {"year": _BY_YEAR}, {"id": "asc"}],
}
HIGHLIGHT = {
    "pre_tags": ["<mark>"],
    "post_tags": ["</mark>"],
    "encoder": "html",  # the cluster escapes the text around the marks
    "fields": {
        **{name: {"number_of_fragments": 0} for name in ("title", f"title.{EXACT}")},
        **{name: {"fragment_size": 120, "number_of_fragments": 2} for name in ("abstract", f"abstract.{EXACT}")},
    },
}


@dataclass(frozen=True)
class Plan:
    """A request translated: the scored query, the all-words tier, and the facet filters."""

    tree: Node | None
    scored: Dsl
    required: Dsl | None
    literal: Dsl | None  # the query as typed, when it matches some word through its typos (core.typos)
    filters: dict[str, Dsl | None]

    @property
    def post_filter(self) -> Dsl:
        """Every facet's filter: narrows the hits, not the facet counts."""
        return all_of(list(self.filters.values()))

    @property
    def first_tier(self) -> Dsl | None:
        """What a paper of the first tier matches besides the query (core.ranking's tiers): all
        words of a group as typed, or the query as typed; None when that is the whole match."""
        return self.required if self.required is not None else self.literal

    def count_agg(self, narrowing: Dsl) -> Dsl:
        """Counts the papers matching `narrowing` that the filters let through."""
        return {"filter": all_of([*self.filters.values(), narrowing])}

    def tier_query(self, tier: int) -> Dsl:
        """The scored query narrowed to one tier: all words as typed (0), the rest as typed (1),
        the rest: found through typos (2)."""
        if tier == 0:
            inside, outside = [self.first_tier], []
        elif tier == 1:
            inside, outside = [self.literal], [self.required]
        else:
            inside, outside = [], [self.literal]
        placed = {"filter": [q for q in inside if q], "must_not": [q for q in outside if q]}
        # The first tiers scored by the words as typed: widening a query never reorders them.
        scored = self.scored if tier == LAST_TIER or self.literal is None else self.literal
        return {"bool": {"must": [scored], **placed}} if any(placed.values()) else scored

    def matched(self) -> Dsl:
        """Every paper the query matches and the filters let through."""
        return all_of([self.scored, self.post_filter])

    def narrowed(self) -> Dsl:
        """The papers of the first tier (all words of a group, where the query has one) that the
        filters let through: what suggestions are counted among."""
        return all_of([self.tier_query(0), self.post_filter])

    def finds_all_words(self) -> Dsl:
        """The papers a respelled query would count as finding: filtered, matching all words."""
        wanted = all_of([*self.filters.values(), self.required or self.scored])
        return {"bool": {"must": [self.scored], "filter": [wanted]}}


def plan(request: SearchRequest, tree: Node | None) -> Plan:
    """The bodies' parts for `request`, its query parsed and checked as `tree`."""
    typed = as_typed(tree)
    required = required_words(typed)
    return Plan(
        tree=tree,
        scored=MATCH_ALL if tree is None else translate(tree),
        required=None if required is None else all_words(required),
        literal=translate(typed) if typed is not None and widened(tree) else None,
        filters=filters(request),
    )


def page(sort: str, start: int, size: int, highlight: bool, with_vectors: bool = False) -> Dsl:
    """The part of a search body that asks for places [start, start + size) in `sort` order."""
    fields = [*SOURCE, VECTOR] if with_vectors else SOURCE
    body: Dsl = {"from": start, "size": size, "sort": SORTS[sort], "_source": fields}
    if highlight:
        body["highlight"] = HIGHLIGHT
    return body


def facet_aggs(plan: Plan, settings: Settings) -> Dsl:
    """Multi-select: each facet counted under the query and every filter but its own."""
    aggs = {}
    for name in FACETS:
        others = [f for other, f in plan.filters.items() if other != name]
        aggs[f"facet_{name}"] = {"filter": all_of(others), "aggs": {"values": _values_agg(name, settings)}}
    return aggs


def _values_agg(name: str, settings: Settings) -> Dsl:
    if name == "year":
        return {"terms": {"field": "year", "size": settings.year_facet_limit, "order": {"_key": "desc"}}}
    size = settings.facet_limit + FACET_HEADROOM
    return {"terms": {"field": FACET_FIELDS[name], "size": size, "order": [{"_count": "desc"}, {"_key": "asc"}]}}


def selection_aggs(request: SearchRequest, settings: Settings) -> Dsl:
    """The index's own spelling of the selected values, over every paper (a global aggregation)."""
    selected: Dsl = {}
    if request.year_from is not None or request.year_to is not None:
        selected["year"] = {
            "filter": year_range(request.year_from, request.year_to),
            "aggs": {"values": {"terms": {"field": "year", "size": settings.year_facet_limit}}},
        }
    for name in LIST_FACETS:
        wanted = getattr(request, name)
        if wanted:
            selected[name] = {
                "filter": {"terms": {FOLDED_FIELDS[name]: list(wanted)}},
                "aggs": {"values": {"terms": {"field": FACET_FIELDS[name], "size": 10 * len(wanted)}}},
            }
    return {"selected": {"global": {}, "aggs": selected}} if selected else {}


def lookup_aggs(plan: Plan, name: str, folded_prefix: str, limit: int, settings: Settings) -> Dsl:
    """Values of facet `name` with a word starting with `folded_prefix`, counted under the
    query and every other facet's filter."""
    others = all_of([f for other, f in plan.filters.items() if other != name])
    if name == "year":
        values: Dsl = {"terms": {"field": "year", "size": settings.year_facet_limit}}
    else:
        values = {
            "terms": {
                "field": FOLDED_FIELDS[name],
                "include": rf"(.*[^a-z0-9])?{_regexp_literal(folded_prefix)}.*" if folded_prefix else ".*",
                "size": limit + 1 + FACET_HEADROOM,
                "order": [{"_count": "desc"}, {"_key": "asc"}],
            },
            "aggs": {"shown": {"terms": {"field": FACET_FIELDS[name], "size": 1}}},
        }
    return {"lookup": {"filter": others, "aggs": {"values": values}}}


def author_completions(folded_prefix: str, limit: int, among: Dsl) -> Dsl:
    """Authors with a word starting with `folded_prefix` and their papers among those `among`
    matches: the `prefix` query narrows to papers with such a name word, the aggregation counts
    their names."""
    return {
        "query": all_of([among, {"prefix": {"authors": folded_prefix}}]),
        "size": 0,
        "aggs": {
            "authors": {
                "terms": {
                    "field": FOLDED_FIELDS["author"],
                    "include": rf"(.*[^a-z0-9])?{_regexp_literal(folded_prefix)}.*",
                    "size": limit + FACET_HEADROOM,
                    "order": [{"_count": "desc"}, {"_key": "asc"}],
                },
                "aggs": {"shown": {"terms": {"field": FACET_FIELDS["author"], "size": 1}}},
            }
        },
    }


def word_completions(folded_prefix: str, among: Dsl, found: list[str], size: int) -> Dsl | None:
    """Words of titles and abstracts starting with `folded_prefix`, other than those `found`
    already, read from a sample of the papers `among` matches holding one (at most `size` a
    field); None when the words found no longer fit a regular expression (`REGEX_CHARS`).

    `.exact` is a text field without fielddata, so its words cannot be listed by a terms
    aggregation; `significant_text` re-reads the text of the sample instead. A sample holds
    `WORD_SAMPLE` papers a shard, so a word held by papers outside it is missed in this round;
    leaving the words found out of the query and the listing makes the next round sample only
    papers holding a word not found yet. The total says whether any such paper was left out.
    `bg_count` counts deleted copies of updated papers too, so papers are counted by `word_papers`."""
    words = _unfound_words(folded_prefix, found)
    if len(words) > REGEX_CHARS:
        return None
    regexp = {"value": words, "flags": "INTERSECTION|COMPLEMENT"}
    return {
        "query": {
            "bool": {
                "filter": [among],
                "should": [{"regexp": {f"{field}.{EXACT}": regexp}} for field in TEXT_FIELDS],
                "minimum_should_match": 1,
            }
        },
        "size": 0,
        "track_total_hits": True,
        "aggs": {
            "sample": {
                "sampler": {"shard_size": WORD_SAMPLE},
                "aggs": {
                    field: {
                        "significant_text": {
                            "field": f"{field}.{EXACT}",
                            "source_fields": [field],
                            "include": words,
                            "size": size,
                            # Every word of the sample (up to `size`): the default heuristic drops
                            # those no more frequent in the sample than in all papers.
                            "percentage": {},
                            "min_doc_count": 1,
                            "shard_min_doc_count": 1,
                        }
                    }
                    for field in TEXT_FIELDS
                },
            }
        },
    }


def _unfound_words(folded_prefix: str, found: list[str]) -> str:
    """A regular expression (Lucene's syntax) of the words starting with `folded_prefix` but `found`."""
    start = _regexp_literal(folded_prefix)
    if not found:
        return f"{start}.*"
    ends = "|".join(f"({_regexp_literal(word[len(folded_prefix) :])})" for word in found)
    return f"{start}(.*&~({ends}))"


def word_papers(words: list[str], among: Dsl) -> Dsl:
    """Papers holding each word, per field (`title:word`, `abstract:word`), counted over the papers
    `among` matches."""
    checks = {f"{field}:{word}": {"term": {f"{field}.{EXACT}": word}} for word in words for field in TEXT_FIELDS}
    return {"query": among, "size": 0, "aggs": {"papers": {"filters": {"filters": checks}}}}


def more_like(index: str, like: tuple[str, ...], unlike: tuple[str, ...], among: Dsl) -> Dsl:
    """Papers of `among` sharing the `like` papers' most distinctive words (those of `unlike` left
    out of the words, and all of them out of the papers), by default 30% of those words."""
    more_like_this: Dsl = {
        "fields": list(TEXT_FIELDS),
        "like": [{"_index": index, "_id": paper_id} for paper_id in like],
        "min_term_freq": 1,
        "min_doc_freq": 1,
        "max_query_terms": RELATED_KEY_TERMS,
    }
    if unlike:
        more_like_this["unlike"] = [{"_index": index, "_id": paper_id} for paper_id in unlike]
    words: Dsl = {"more_like_this": more_like_this}
    return {"bool": {"must": [words], "filter": [among], "must_not": [given_papers(like, unlike)]}}


def key_terms_body(paper_ids: tuple[str, ...]) -> Dsl:
    """An `mtermvectors` body asking each paper's most distinctive words by tf-idf, the measure
    more_like_this picks its words by (the mapping keeps no term vectors: read from `_source`)."""
    choosing = {"max_num_terms": RELATED_KEY_TERMS, "min_term_freq": 1, "min_doc_freq": 1}
    parameters = {"fields": list(TEXT_FIELDS), "positions": False, "offsets": False, "filter": choosing}
    return {"ids": list(paper_ids), "parameters": {**parameters, "term_statistics": True, "field_statistics": False}}


def key_terms_marking(answer: Dsl) -> Dsl | None:
    """A highlight query marking, in title and abstract alike, the `RELATED_KEY_TERMS` best words
    of an `mtermvectors` answer to `key_terms_body` (None: no words), as Whoosh marks the liked
    papers' key terms in related papers."""
    scores: dict[str, float] = {}
    for doc in answer.get("docs", []):
        for field in doc.get("term_vectors", {}).values():
            for term, about in field.get("terms", {}).items():
                scores[term] = max(scores.get(term, 0.0), float(about.get("score", 0.0)))
    best = sorted(scores, key=lambda term: (-scores[term], term))[:RELATED_KEY_TERMS]
    return {"bool": {"should": [{"terms": {field: best}} for field in TEXT_FIELDS]}} if best else None


def given_papers(like: tuple[str, ...], unlike: tuple[str, ...]) -> Dsl:
    """The papers a `similar:` search names, never among its answers."""
    return {"ids": {"values": [*like, *unlike]}}


def _regexp_literal(text: str) -> str:
    """`text` as a literal in Lucene's regular expression syntax."""
    return "".join(f"\\{char}" if not char.isalnum() else char for char in text)
