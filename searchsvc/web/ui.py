"""The query UI: server-rendered pages over the same backend and request schema as the JSON API.

Every state of a page is its URL's GET parameters, so pages can be shared, bookmarked and
used without JavaScript; the templates only lay out what `page_links` and the backend give.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from flask import Blueprint, redirect, render_template, request, url_for
from werkzeug import Response
from werkzeug.datastructures import MultiDict

from searchsvc.core.errors import AuthorNotFound, InvalidRequest, QuerySyntaxError, SearchsvcError, SearchTimedOut
from searchsvc.core.export import EXPORT_FORMATS, bibtex_entry
from searchsvc.core.model import SORTS, SearchRequest
from searchsvc.core.publication import venue_kind
from searchsvc.core.tex import plain
from searchsvc.operations import search as searching
from searchsvc.operations.authors import author_profile
from searchsvc.web.math_html import shown, tex_html
from searchsvc.web.page_links import SearchLinks, last_page, page_numbers, with_query
from searchsvc.web.schemas import TOO_LONG, AuthorRequestSchema, SearchRequestSchema, SimilarRequestSchema, load_params
from searchsvc.web.service import service
from searchsvc.web.year_histogram import year_histogram

blueprint = Blueprint("ui", __name__)

SORT_LABELS = {
    "relevance": "Relevance",
    "newest": "Newest first",
    "oldest": "Oldest first",
    "cited": "Most cited",
    "added": "Recently added",
}
assert set(SORT_LABELS) == set(SORTS)
_FORM_FIELDS = ("q", "sort")  # what the search form shows; it carries the rest as hidden fields
# The lookup boxes of the facets with thousands of values ("find_author=nau"): part of the page's
# URL, not of the search.
FIND = {"author": "find_author", "venue": "find_venue"}


@blueprint.context_processor
def _settings() -> dict[str, Any]:
    return {"settings": service().settings}


# TeX in titles and abstracts (web/math_html.py): `tex` shows a text with its math as MathML, `math`
# an engine's highlight of it (`hit.highlights.title|math(hit.title)`), `plain` its words only
# (a <title>, an aria-label).
blueprint.add_app_template_filter(tex_html, "tex")
blueprint.add_app_template_filter(shown, "math")
blueprint.add_app_template_filter(plain, "plain")


def _published() -> dict[str, str] | None:
    """The generation served and when its papers last changed, for the search page's footer (the
    other pages leave it out: on OpenSearch it costs a request to the cluster); None if unknown."""
    try:
        generation, changed_at = service().backend.last_change()
        changed = datetime.fromisoformat(changed_at).astimezone(UTC)  # (naive: taken as local time)
    except (SearchsvcError, KeyError, ValueError):
        return None
    return {
        "generation": generation,
        "changed_at": changed.isoformat(),
        "changed": changed.strftime("%Y-%m-%d %H:%M UTC"),
    }


@blueprint.get("/")
def search() -> tuple[str, int] | Response:
    settings = service().settings
    params = _given_params()
    find = {facet: params.pop(name, "").strip() for facet, name in FIND.items()}
    try:
        most = settings.max_facet_prefix_length
        problems = {FIND[facet]: [TOO_LONG.format(max=most)] for facet, typed in find.items() if len(typed) > most}
        if problems:
            raise InvalidRequest(f"invalid parameters: {', '.join(problems)}", problems)
        search_request: SearchRequest = load_params(SearchRequestSchema(settings), params)
        # Each result's "Why this result" (closed until opened): for a page of at most max_per_page hits
        # ranked by relevance, what their scores were made of (core.explanation).
        result = searching.search(service().backend, replace(search_request, explain=True))
        found = {
            facet: searching.facet_values(service().backend, facet, typed, search_request, settings.facet_limit)
            for facet, typed in find.items()
            if typed
        }
    except (InvalidRequest, QuerySyntaxError, SearchTimedOut) as error:
        return _render_form_error(params, error), 503 if isinstance(error, SearchTimedOut) else 400
    if result.identifier is not None and result.identifier.found and result.hits and not found:
        return redirect(url_for("ui.paper", paper_id=result.hits[0].id), 303)  # a pasted arXiv id or DOI: its page
    links = _links(search_request)
    last = last_page(result, settings.max_result_window)
    return render_template(
        "search.html",
        search_request=search_request,
        result=result,
        links=links,
        hidden=links.hidden_fields(*_FORM_FIELDS),
        pages=page_numbers(search_request.page, last),
        last_page=last,
        years=year_histogram(result.facets["year"]),
        find=find,
        found=found,
        sorts=SORT_LABELS,
        export_formats=[(name, chosen.label) for name, chosen in EXPORT_FORMATS.items()],
        published=_published(),
    ), 200


@blueprint.get("/similar")
def similar() -> tuple[str, int] | Response:
    """Papers chosen on a results page (`id`, repeatable): the search for papers like them."""
    params = _given_params()
    try:
        like: SearchRequest = load_params(SimilarRequestSchema(service().settings), params)
    except InvalidRequest as error:
        return _render_form_error(params, error), 400
    return redirect(_links(like).to(like), 303)


@blueprint.get("/chosen/download")
def download_chosen() -> tuple[str, int] | Response:
    """Papers chosen on a results page (`id`, repeatable) as a download in `format`: the export of
    exactly those. None chosen is the form again, saying so, not an export of every paper."""
    params = _given_params()
    chosen = params.getlist("id")
    if not chosen:
        error = InvalidRequest("invalid parameters: id", {"id": ["Choose at least one paper."]})
        return _render_form_error(params, error), 400
    pairs = [("format", params.get("format", "")), *(("id", paper_id) for paper_id in chosen)]
    return redirect(with_query(url_for("api.export"), pairs), 303)


@blueprint.get("/papers/<path:paper_id>")
def paper(paper_id: str) -> str:
    backend = service().backend
    found = backend.paper(paper_id)
    return render_template(
        "paper.html",
        paper=found,
        related=searching.related(backend, paper_id, service().settings.related_papers),
        bibtex=bibtex_entry(found),
        venue_kind=venue_kind(found.publication.venue),
        links=_links(SearchRequest(per_page=service().settings.default_per_page)),
    )


@blueprint.get("/authors/<path:name>")
def author(name: str) -> tuple[str, int]:
    """An author's papers as a search filtered to them, with their years, subjects and co-authors.

    Bad parameters are the generic 400 page (the page has no form to fill in again); an unknown
    name is a 404 page offering the closest names.
    """
    settings = service().settings
    wanted: SearchRequest = load_params(AuthorRequestSchema(settings), _given_params())
    try:
        profile = author_profile(service().backend, name, wanted)
    except AuthorNotFound as error:
        page = render_template(
            "error.html", title="Author not found", message=error.message, authors=error.details["suggestions"]
        )
        return page, 404
    links = _links(wanted, base=url_for("ui.author", name=profile.name), export_pairs=(("author", profile.name),))
    last = last_page(profile.result, settings.max_result_window)
    return render_template(
        "author.html",
        profile=profile,
        search_request=wanted,
        result=profile.result,
        links=links,
        pages=page_numbers(wanted.page, last),
        last_page=last,
        years=year_histogram(profile.years),
        search_link=_links(SearchRequest(per_page=settings.default_per_page)).toggle("author", profile.name),
        sorts=SORT_LABELS,
        export_formats=[(format_name, chosen.label) for format_name, chosen in EXPORT_FORMATS.items()],
    ), 200


def _given_params() -> MultiDict[str, str]:
    """The query string without empty values: a submitted form sends its empty boxes too, meaning "not set"."""
    return MultiDict([(name, value) for name, value in request.args.items(multi=True) if value.strip()])


def _links(
    search_request: SearchRequest, base: str | None = None, export_pairs: tuple[tuple[str, str], ...] = ()
) -> SearchLinks:
    """Links of the search page, or of another page listing results (`base`) such as an author's."""
    return SearchLinks(
        search_request,
        base=base or url_for("ui.search"),
        export_base=url_for("api.export"),
        feed_base=url_for("feeds.feed"),
        default_per_page=service().settings.default_per_page,
        export_pairs=export_pairs,
    )


def _render_form_error(params: MultiDict[str, str], error: InvalidRequest | QuerySyntaxError | SearchTimedOut) -> str:
    """The search form as the user filled it in, with what is wrong instead of results."""
    problems: list[str] = []
    if not isinstance(error, InvalidRequest):
        problems.append(error.message)
    else:
        for field, messages in error.details.items():
            problems.extend(f"{field}: {message}" for message in _flatten(messages))
    return render_template(
        "search.html",
        search_request=None,
        form=params,
        hidden=[(name, value) for name, value in params.items(multi=True) if name not in (*_FORM_FIELDS, "page")],
        syntax_error=error.details.get("column") if isinstance(error, QuerySyntaxError) else None,
        problems=problems,
        sorts=SORT_LABELS,
    )


def _flatten(messages: Any) -> list[str]:
    """marshmallow's messages (a list, or a dict of lists per list item) as plain strings."""
    if isinstance(messages, dict):
        return [message for nested in messages.values() for message in _flatten(nested)]
    if isinstance(messages, list):
        return [str(message) for message in messages]
    return [str(messages)]
