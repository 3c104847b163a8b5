"""Facet listings read from the cluster's aggregations, in the order `core.facet_order` sets."""

from __future__ import annotations

from searchsvc.backends.analysis import folded
from searchsvc.backends.opensearch.querying import Dsl
from searchsvc.core.facet_order import Value, display_order, listing
from searchsvc.core.model import FacetValue, SearchRequest
from searchsvc.core.text import has_word_starting


def facet_listing(name: str, aggs: Dsl, request: SearchRequest, limit: int) -> list[FacetValue]:
    """Facet `name` of a search: its counted values and the request's selection."""
    buckets = aggs[f"facet_{name}"]["values"]["buckets"]
    counts: dict[Value, int] = {bucket["key"]: bucket["doc_count"] for bucket in buckets}
    marked, listed, unknown = _selection(name, aggs, request)
    return listing(counts, marked, listed, unknown, limit, by_value=name == "year")


def lookup_values(name: str, prefix: str, aggs: Dsl, request: SearchRequest) -> list[FacetValue]:
    """Every value of facet `name` with a word starting with `prefix`, in display order."""
    counts: dict[Value, int] = {}
    for bucket in aggs["lookup"]["values"]["buckets"]:
        value = bucket["key"] if name == "year" else bucket["shown"]["buckets"][0]["key"]
        counts[value] = counts.get(value, 0) + bucket["doc_count"]
    marked, _listed, _unknown = _selection(name, aggs, request)
    candidates = {value for value in {*counts, *marked} if has_word_starting(str(value), prefix)}
    shown = sorted(candidates, key=display_order(counts, by_value=name == "year"))
    return [FacetValue(value, counts.get(value, 0), value in marked) for value in shown]


def _selection(name: str, aggs: Dsl, request: SearchRequest) -> tuple[set[Value], set[Value], list[str]]:
    """(values shown as selected, values listed even at count 0, selected values the index lacks)."""
    known = [b["key"] for b in aggs.get("selected", {}).get(name, {}).get("values", {}).get("buckets", [])]
    if name == "year":
        return set(known), {year for year in known if year in (request.year_from, request.year_to)}, []
    wanted: tuple[str, ...] = getattr(request, name)
    # Folded as the filter's normalizer folds (mapping.py), so what it matched is what is marked.
    folded_known = {folded(str(value)) for value in known}
    marked = {value for value in known if folded(str(value)) in {folded(w) for w in wanted}}
    return marked, marked, [value for value in wanted if folded(value) not in folded_known]
