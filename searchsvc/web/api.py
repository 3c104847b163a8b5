"""The JSON API: thin routes from query strings to the backend and back through the schemas."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request
from werkzeug.exceptions import NotFound

from searchsvc.core.export import EXPORT_FORMATS
from searchsvc.core.model import FACETS
from searchsvc.operations import search as searching
from searchsvc.operations.authors import author_profile
from searchsvc.web.openapi import Operation, documented
from searchsvc.web.schemas import (
    AuthorRequestSchema,
    AuthorSchema,
    ExportRequestSchema,
    FacetLookupRequestSchema,
    FacetLookupSchema,
    PaperSchema,
    RelatedPapersSchema,
    SearchRequestSchema,
    SearchResultSchema,
    SimilarRequestSchema,
    SuggestionsSchema,
    SuggestRequestSchema,
    load_params,
)
from searchsvc.web.service import service

blueprint = Blueprint("api", __name__, url_prefix="/api")


_PAPER_ID = {"paper_id": {"type": "string", "description": "The paper's id, as in search results."}}


@blueprint.get("/search")
@documented(
    Operation(
        "Ranked, faceted search",
        params=SearchRequestSchema,
        response=SearchResultSchema,
        errors=(400, 503),
    )
)
def search() -> Response:
    search_request = load_params(SearchRequestSchema(service().settings), request.args)
    return jsonify(SearchResultSchema().dump(searching.search(service().backend, search_request)))


@blueprint.get("/similar")
@documented(
    Operation(
        "Papers like the given ones and unlike the `not` ones (the mean of their vectors, Rocchio), "
        "among what the query and filters find: the 100 nearest, paged, as a search result",
        params=SimilarRequestSchema,
        response=SearchResultSchema,
        errors=(400, 503),
    )
)
def similar() -> Response:
    similar_request = load_params(SimilarRequestSchema(service().settings), request.args)
    return jsonify(SearchResultSchema().dump(searching.search(service().backend, similar_request)))


@blueprint.get("/suggest")
@documented(
    Operation(
        "Suggestions as you type: the query's last word completed to words and author names, counted among "
        "the papers the earlier words and the filters find, most papers first",
        params=SuggestRequestSchema,
        response=SuggestionsSchema,
        errors=(400, 503),
    )
)
def suggest() -> Response:
    wanted = load_params(SuggestRequestSchema(service().settings), request.args)
    found = searching.suggest(service().backend, wanted)
    return jsonify(SuggestionsSchema().dump({"q": wanted.q, "suggestions": found}))


@blueprint.get("/papers/<path:paper_id>")
@documented(Operation("One paper", response=PaperSchema, errors=(404, 503), path_params=_PAPER_ID))
def paper(paper_id: str) -> Response:
    return jsonify(PaperSchema().dump(service().backend.paper(paper_id)))


@blueprint.get("/papers/<path:paper_id>/related")
@documented(
    Operation(
        "Papers like this one (more-like-this)", response=RelatedPapersSchema, errors=(404, 503), path_params=_PAPER_ID
    )
)
def related(paper_id: str) -> Response:
    results = searching.related(service().backend, paper_id, service().settings.related_papers)
    return jsonify(RelatedPapersSchema().dump({"id": paper_id, "results": results}))


@blueprint.get("/authors/<path:name>")
@documented(
    Operation(
        "An author's papers (case and accents ignored in the name), their years, subjects and co-authors",
        params=AuthorRequestSchema,
        response=AuthorSchema,
        errors=(400, 404, 503),
        path_params={"name": {"type": "string", "description": "The author's name; may contain slashes."}},
    )
)
def author(name: str) -> Response:
    wanted = load_params(AuthorRequestSchema(service().settings), request.args)
    return jsonify(AuthorSchema().dump(author_profile(service().backend, name, wanted)))


@blueprint.get("/facets/<name>")
@documented(
    Operation(
        "Facet values starting with a prefix, counted under the query and the other filters",
        params=FacetLookupRequestSchema,
        response=FacetLookupSchema,
        errors=(400, 404, 503),
        path_params={"name": {"type": "string", "enum": list(FACETS)}},
    )
)
def facet_values(name: str) -> Response:
    if name not in FACETS:
        raise NotFound(f"no facet named {name!r}; the facets are {', '.join(FACETS)}")
    lookup = load_params(FacetLookupRequestSchema(service().settings), request.args)
    found = searching.facet_values(service().backend, name, lookup.prefix, lookup.search, lookup.limit)
    return jsonify(FacetLookupSchema().dump(found))


@blueprint.get("/export")
@documented(
    Operation(
        "Chosen papers, or a search's results up to the export limit, as a download "
        "(BibTeX, RIS, CSL-JSON, CSV or JSON lines)",
        params=ExportRequestSchema,
        download_types=tuple(chosen.media_type for chosen in EXPORT_FORMATS.values()),
        errors=(400, 404, 503),
    )
)
def export() -> Response:
    settings = service().settings
    wanted = load_params(ExportRequestSchema(settings), request.args)
    backend = service().backend
    papers = (
        searching.papers_by_id(backend, wanted.ids)
        if wanted.ids
        else searching.export(backend, wanted.search, settings.max_export)
    )
    chosen = EXPORT_FORMATS[wanted.format]
    return Response(
        chosen.write(papers),
        content_type=chosen.media_type,
        headers={
            "Content-Disposition": f'attachment; filename="searchsvc-export.{chosen.extension}"',
            "X-Export-Count": str(len(papers)),
            "X-Export-Limit": str(settings.max_export),
        },
    )
