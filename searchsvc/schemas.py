"""marshmallow schemas: what a search request accepts and the JSON a search result becomes.

The CLI's `--json` and the HTTP API both go through these, so both print the same document
and reject the same input with the same messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marshmallow import Schema, ValidationError, fields, post_load, validate, validates, validates_schema

from searchsvc.errors import InvalidRequest
from searchsvc.search import SORTS, SearchRequest, SearchResult
from searchsvc.settings import Settings

_YEAR = validate.Range(min=1000, max=2999, error="Must be a year between {min} and {max}.")


class SearchRequestSchema(Schema):
    """Parses and validates search parameters against the configured limits."""

    q = fields.String(load_default="")
    subject = fields.List(fields.String(validate=validate.Length(min=1, max=100)), load_default=list)
    author = fields.List(fields.String(validate=validate.Length(min=1, max=200)), load_default=list)
    year_from = fields.Integer(load_default=None, allow_none=True, strict=False, validate=_YEAR)
    year_to = fields.Integer(load_default=None, allow_none=True, strict=False, validate=_YEAR)
    sort = fields.String(load_default="relevance", validate=validate.OneOf(SORTS))
    page = fields.Integer(load_default=1, validate=validate.Range(min=1))
    per_page = fields.Integer(load_default=None)

    def __init__(self, settings: Settings, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.settings = settings

    @validates("q")
    def _check_query_length(self, value: str, **_: Any) -> None:
        if len(value) > self.settings.max_query_length:
            raise ValidationError(f"Longer than the maximum of {self.settings.max_query_length} characters.")

    @validates("subject", "author")
    def _check_filter_count(self, value: list[str], **_: Any) -> None:
        if len(value) > self.settings.max_filter_values:
            raise ValidationError(f"More than {self.settings.max_filter_values} values.")

    @validates("per_page")
    def _check_per_page(self, value: int | None, **_: Any) -> None:
        if value is not None and not 1 <= value <= self.settings.max_per_page:
            raise ValidationError(f"Must be between 1 and {self.settings.max_per_page}.")

    @validates_schema
    def _check_combinations(self, data: dict[str, Any], **_: Any) -> None:
        window = self.settings.max_result_window
        if data["page"] * (data["per_page"] or self.settings.default_per_page) > window:
            raise ValidationError(
                f"page * per_page must be at most {window}: narrow the search instead of paging this deep.", "page"
            )
        if data["year_from"] is not None and data["year_to"] is not None and data["year_from"] > data["year_to"]:
            raise ValidationError(f"Must not be before year_from ({data['year_from']}).", "year_to")

    @post_load
    def _make_request(self, data: dict[str, Any], **_: Any) -> SearchRequest:
        return SearchRequest(
            q=data["q"].strip(),
            subject=tuple(dict.fromkeys(data["subject"])),
            author=tuple(dict.fromkeys(data["author"])),
            year_from=data["year_from"],
            year_to=data["year_to"],
            sort=data["sort"],
            page=data["page"],
            per_page=data["per_page"] or self.settings.default_per_page,
        )


def parse_search_request(params: Mapping[str, Any], settings: Settings) -> SearchRequest:
    """Validated request from raw parameters, or `InvalidRequest` naming every bad field."""
    try:
        return SearchRequestSchema(settings).load(params)
    except ValidationError as exc:
        details = exc.messages if isinstance(exc.messages, dict) else {"_schema": exc.messages}
        fields_named = ", ".join(sorted(details))
        raise InvalidRequest(f"invalid search parameters: {fields_named}", details) from None


class QuerySchema(Schema):
    q = fields.String()
    subject = fields.List(fields.String())
    author = fields.List(fields.String())
    year_from = fields.Integer(allow_none=True)
    year_to = fields.Integer(allow_none=True)
    sort = fields.String()
    page = fields.Integer()
    per_page = fields.Integer()


class HitSchema(Schema):
    id = fields.String()
    title = fields.String()
    abstract = fields.String()
    year = fields.Integer(allow_none=True)
    subjects = fields.List(fields.String())
    authors = fields.List(fields.String())
    score = fields.Float(allow_none=True)
    highlights = fields.Dict(keys=fields.String(), values=fields.String())


class FacetValueSchema(Schema):
    value = fields.Raw()
    count = fields.Integer()
    selected = fields.Boolean()


class FacetsSchema(Schema):
    year = fields.List(fields.Nested(FacetValueSchema))
    subject = fields.List(fields.Nested(FacetValueSchema))
    author = fields.List(fields.Nested(FacetValueSchema))


class SearchResultSchema(Schema):
    """The search result document shared by `searchsvc search --json` and `GET /api/search`."""

    query = fields.Nested(QuerySchema, attribute="request")
    total = fields.Integer()
    page = fields.Integer()
    per_page = fields.Integer()
    pages = fields.Integer()
    took_ms = fields.Float()
    results = fields.List(fields.Nested(HitSchema), attribute="hits")
    facets = fields.Nested(FacetsSchema)
    suggestion = fields.String(allow_none=True)


def dump_search_result(result: SearchResult) -> dict[str, Any]:
    """The JSON-ready document for a result."""
    return SearchResultSchema().dump(result)
