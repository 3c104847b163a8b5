"""marshmallow schemas: what a search request accepts and the JSON a search result becomes.

The CLI's `--json` and the HTTP API both go through these, so both print the same document
and reject the same input with the same messages.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from marshmallow import Schema, ValidationError, fields, post_dump, post_load, pre_dump, validate, validates_schema

from searchsvc.core import fusion
from searchsvc.core.arrival import iso_second, since_second
from searchsvc.core.errors import InvalidRequest
from searchsvc.core.explanation import PART_PLACES, SCORE_PLACES
from searchsvc.core.export import EXPORT_FORMATS
from searchsvc.core.model import (
    LIST_FACETS,
    SORTS,
    ExportRequest,
    FacetLookupRequest,
    Hit,
    SearchRequest,
    SearchResult,
    SuggestRequest,
)
from searchsvc.core.paper import Paper, id_problem
from searchsvc.core.publication import MAX_VENUE_CHARS, date_bounds, iso_date
from searchsvc.core.suggestions import KINDS
from searchsvc.core.tex import unmarked
from searchsvc.core.text import composed, one_line
from searchsvc.settings import Settings

_YEAR = validate.Range(min=1000, max=2999, error="Must be a year between {min} and {max}.")
TOO_LONG = "Longer than the maximum of {max} characters."


_ISO_DATE = {"pattern": r"^\d{4}(-\d{2}(-\d{2})?)?$", "example": "2021-06-29"}  # what the OpenAPI document says


def _iso_date(text: str | None) -> None:
    if text is not None and (len(text) > len("2021-06-29") or not iso_date(text)):
        raise ValidationError("Must be an ISO 8601 date: 2021-06-29, 2021-06 or 2021.")


_OUT_OF_RANGE = "Must be between {min} and {max}."


def _optional_text(validator: Callable[[str | None], None], description: str, **documented: str) -> fields.String:
    """A text parameter that may be left out, checked by `validator`; `documented`: more of its OpenAPI schema."""
    return fields.String(
        load_default=None, allow_none=True, validate=validator, metadata={"description": description, **documented}
    )


def _instant(text: str | None) -> None:
    if text is not None and (len(text) > len("2026-12-04T22:04:13.123456+01:00") or since_second(text) is None):
        raise ValidationError("Must be an ISO 8601 date or date and time: 2026-12-01 or 2026-12-04T22:04:13Z.")


class SearchRequestSchema(Schema):
    """Parses and validates search parameters against the configured limits.

    Limits taken from settings are attached as field validators when the schema is made,
    so the OpenAPI document generated from it states the limits this service enforces.
    """

    q = fields.String(load_default="", metadata={"description": "The query; empty lists every paper."})
    subject = fields.List(
        fields.String(validate=validate.Length(min=1, max=100)),
        load_default=list,
        metadata={"description": "Only papers in any of these subjects (repeatable)."},
    )
    author = fields.List(
        fields.String(validate=validate.Length(min=1, max=200)),
        load_default=list,
        metadata={"description": "Only papers by any of these authors (repeatable; case and accents ignored)."},
    )
    venue = fields.List(
        fields.String(validate=validate.Length(min=1, max=MAX_VENUE_CHARS)),
        load_default=list,
        metadata={
            "description": "Only papers in any of these journals or proceedings (repeatable; case and accents ignored)."
        },
    )
    year_from = fields.Integer(load_default=None, allow_none=True, strict=False, validate=_YEAR)
    year_to = fields.Integer(
        load_default=None,
        allow_none=True,
        strict=False,
        validate=_YEAR,
        metadata={"description": "Inclusive; not before year_from."},
    )
    date_from = _optional_text(
        _iso_date,
        "ISO 8601 date: 2021-06-29, or 2021-06 or 2021 for its first day. A paper is in the range when its date, "
        "as precisely as known, may be in it (a paper of 2021 is in a range from 2021-06-29).",
        **_ISO_DATE,
    )
    date_to = _optional_text(
        _iso_date,
        "Inclusive ISO 8601 date; 2021-06 or 2021 stands for its last day. Not before date_from.",
        **_ISO_DATE,
    )
    added_since = _optional_text(
        _instant,
        "Only papers added to this index at or after this ISO 8601 instant (a date: from its start, in UTC; a time "
        "without an offset: UTC). A change's changed_at gives the papers it added and those added since.",
        example="2026-12-04T22:04:13Z",
    )
    sort = fields.String(
        load_default="relevance",
        validate=validate.OneOf(SORTS),
        metadata={
            "description": "cited: most cited first, papers without a known count last; added: the latest "
            "additions to this index first."
        },
    )
    page = fields.Integer(
        load_default=1,
        validate=validate.Range(min=1),
        metadata={"description": "1-based; page * per_page may not exceed the result window (max_result_window)."},
    )
    per_page = fields.Integer()
    exact = fields.Boolean(
        load_default=False,
        metadata={
            "description": "Search the words only as typed: no words a typo away (typo_tolerance) and no other "
            "forms (expand_synonyms)."
        },
    )
    explain = fields.Boolean(
        load_default=False,
        metadata={
            "description": "Take each result's score apart (its `explanation`): only for a query ranked by relevance."
        },
    )

    def __init__(self, settings: Settings, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.settings = settings
        _limit(
            self,
            "q",
            validate.Length(max=settings.max_query_length, error=TOO_LONG),
        )
        for name in LIST_FACETS:
            _limit(self, name, validate.Length(max=settings.max_filter_values, error="More than {max} values."))
        _limit(self, "per_page", validate.Range(min=1, max=settings.max_per_page, error=_OUT_OF_RANGE))
        if "per_page" in self.fields:
            self.fields["per_page"].load_default = settings.default_per_page
        if "page" in self.fields:  # this schema's own copy of the field: the window is a setting
            self.fields["page"].metadata = {
                "description": "1-based; page * per_page may not exceed the result window "
                f"({settings.max_result_window:,})."
            }

    @validates_schema
    def _check_combinations(self, data: dict[str, Any], **_: Any) -> None:
        window = self.settings.max_result_window
        if data.get("page", 1) * data.get("per_page", self.settings.default_per_page) > window:
            raise ValidationError(
                f"page * per_page must be at most {window}: narrow the search instead of paging this deep.", "page"
            )
        low, high = data.get("date_from"), data.get("date_to")
        if low and high and date_bounds(iso_date(low))[0] > date_bounds(iso_date(high))[1]:
            raise ValidationError(f"Must not be before date_from ({low}).", "date_to")
        if data["year_from"] is not None and data["year_to"] is not None and data["year_from"] > data["year_to"]:
            raise ValidationError(f"Must not be before year_from ({data['year_from']}).", "year_to")

    @post_load
    def _make_request(self, data: dict[str, Any], **_: Any) -> Any:
        return self._build(data)

    def _build(self, data: dict[str, Any]) -> Any:
        """The plain request object; subclasses wrap the search in their own."""
        return self._search_request(data)

    def _search_request(self, data: dict[str, Any]) -> SearchRequest:
        return SearchRequest(
            q=data["q"].strip(),
            # Stored values have their whitespace folded (ingest.fields): "Dan  Klein" is "Dan Klein".
            subject=_folded_values(data["subject"]),
            author=_folded_values(data["author"]),
            venue=_folded_values(data["venue"]),
            year_from=data["year_from"],
            year_to=data["year_to"],
            date_from=iso_date(data["date_from"]) or None,
            date_to=iso_date(data["date_to"]) or None,
            added_since=None if data.get("added_since") is None else since_second(data["added_since"]),
            sort=data.get("sort", "relevance"),
            page=data.get("page", 1),
            per_page=data.get("per_page", self.settings.default_per_page),
            exact=data.get("exact", False),
            explain=data.get("explain", False),
        )


def _limit(schema: Schema, name: str, validator: validate.Validator) -> None:
    """Add a validator to this schema's copy of a field (the list itself is shared between copies)."""
    if name in schema.fields:
        schema.fields[name].validators = [*schema.fields[name].validators, validator]


class FacetLookupRequestSchema(SearchRequestSchema):
    """A facet value lookup: a prefix, under the same query and filters as a search."""

    prefix = fields.String(load_default="", metadata={"description": "Start of any word of the value."})
    limit = fields.Integer()

    class Meta:
        exclude = ("sort", "page", "per_page", "explain")

    def __init__(self, settings: Settings, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        _limit(
            self,
            "prefix",
            validate.Length(max=settings.max_facet_prefix_length, error=TOO_LONG),
        )
        _limit(self, "limit", validate.Range(min=1, max=settings.max_per_page, error=_OUT_OF_RANGE))
        self.fields["limit"].load_default = settings.facet_limit

    def _build(self, data: dict[str, Any]) -> FacetLookupRequest:
        return FacetLookupRequest(self._search_request(data), prefix=data["prefix"].strip(), limit=data["limit"])


FEED_ENTRIES = 50  # papers in a feed: those of its search most recently added to this index


class FeedRequestSchema(SearchRequestSchema):
    """A feed: a search's query and filters. Its papers are always the `FEED_ENTRIES` most recently
    added, so a search page's sort and paging are accepted (its URL works with the path changed) and ignored."""

    def _build(self, data: dict[str, Any]) -> SearchRequest:
        return self._search_request({**data, "sort": "added", "page": 1, "per_page": FEED_ENTRIES})


class AuthorRequestSchema(SearchRequestSchema):
    """An author's papers: a search's filters, sort and page; the author is in the path, and there is no query."""

    class Meta:
        exclude = ("q", "author", "explain")

    def _build(self, data: dict[str, Any]) -> SearchRequest:
        return self._search_request({**data, "q": "", "author": []})


_SEARCH_FILTERS = (
    "q",
    "subject",
    "author",
    "venue",
    "year_from",
    "year_to",
    "date_from",
    "date_to",
    "added_since",
)  # what an export by id leaves out


def _paper_id(paper_id: str) -> None:
    """A value that could be a paper's id (`core.paper.id_problem`), or the reason it cannot."""
    problem = id_problem(paper_id)
    if problem:
        raise ValidationError(f"Not a paper id: {problem}.")


class ExportRequestSchema(SearchRequestSchema):
    """An export: a format, and the papers chosen by id or else the search whose results (up to
    `max_export`) it downloads."""

    format = fields.String(required=True, validate=validate.OneOf(sorted(EXPORT_FORMATS)))
    id = fields.List(
        fields.String(validate=_paper_id),
        load_default=list,
        metadata={"description": "A paper to export (repeatable): exactly these, in this order, instead of a search."},
    )

    class Meta:
        exclude = ("page", "per_page", "explain")

    def __init__(self, settings: Settings, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        _limit(self, "id", validate.Length(max=settings.max_export, error="More than {max} values: the export limit."))

    @validates_schema
    def _check_chosen(self, data: dict[str, Any], **_: Any) -> None:
        chosen = data["id"]
        twice = sorted(paper_id for paper_id, times in Counter(chosen).items() if times > 1)
        if twice:
            raise ValidationError(f"Given more than once: {', '.join(twice)}.", "id")
        searched = [name for name in _SEARCH_FILTERS if data.get(name)]
        if chosen and searched:
            raise ValidationError(f"Give papers by id or a search ({', '.join(searched)}), not both.", "id")

    def _build(self, data: dict[str, Any]) -> ExportRequest:
        return ExportRequest(self._search_request(data), format=data["format"], ids=tuple(data["id"]))


MAX_SIMILAR_PAPERS = 50  # papers given to be like or unlike: each is read and averaged


class SimilarRequestSchema(SearchRequestSchema):
    """Papers like the given ones: `similar:` clauses added to a search (its query, filters, page)."""

    id = fields.List(
        fields.String(validate=_paper_id),
        required=True,
        error_messages={"required": "Choose at least one paper."},
        validate=validate.Length(min=1, max=MAX_SIMILAR_PAPERS, error="Give 1 to {max} papers."),
        metadata={"description": "A paper to be like (repeatable)."},
    )
    unlike = fields.List(
        fields.String(validate=_paper_id),
        load_default=list,
        data_key="not",
        validate=validate.Length(max=MAX_SIMILAR_PAPERS, error="At most {max} papers."),
        metadata={"description": "A paper to be unlike (repeatable)."},
    )

    class Meta:
        exclude = ("sort", "explain")

    def _build(self, data: dict[str, Any]) -> SearchRequest:
        clauses = [f'similar:"{paper_id}"' for paper_id in data["id"]]
        clauses += [f'-similar:"{paper_id}"' for paper_id in data["unlike"]]
        return self._search_request({**data, "q": " ".join([*clauses, data["q"]])})


def load_params(schema: Schema, params: Mapping[str, Any]) -> Any:
    """Validated request from raw parameters, or `InvalidRequest` naming every bad field.

    `params` may be a multi-dict (a query string): list fields take every value given,
    other fields exactly one.
    """
    getlist = getattr(params, "getlist", None)
    if getlist is not None:
        lists = {field.data_key or name for name, field in schema.fields.items() if isinstance(field, fields.List)}
        repeated = {name: ["Given more than once."] for name in params if name not in lists and len(getlist(name)) > 1}
        if repeated:
            raise InvalidRequest(f"invalid parameters: {', '.join(sorted(repeated))}", repeated)
        params = {name: getlist(name) if name in lists else params[name] for name in params}
    try:
        return schema.load(params)
    except ValidationError as exc:
        details = exc.messages if isinstance(exc.messages, dict) else {"_schema": exc.messages}
        raise InvalidRequest(f"invalid parameters: {', '.join(sorted(details))}", details) from None


def parse_search_request(params: Mapping[str, Any], settings: Settings) -> SearchRequest:
    """Validated search from raw parameters, or `InvalidRequest` naming every bad field."""
    return load_params(SearchRequestSchema(settings), params)


class SuggestRequestSchema(SearchRequestSchema):
    """Suggestions as you type: the query so far, under a search's filters. A search page's sort and
    paging are accepted (its form can be sent as it is) and ignored."""

    q = fields.String(
        required=True,
        metadata={
            "description": "The query so far: its last word is completed among the papers the earlier "
            "words and the filters find; a space at the end says it is finished."
        },
    )
    limit = fields.Integer()

    def __init__(self, settings: Settings, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        _limit(self, "limit", validate.Range(min=1, max=settings.suggestion_limit, error=_OUT_OF_RANGE))
        self.fields["limit"].load_default = settings.suggestion_limit

    def _build(self, data: dict[str, Any]) -> SuggestRequest:
        return SuggestRequest(data["q"], self._search_request(data), limit=data["limit"])


class SuggestionSchema(Schema):
    text = fields.String(required=True, metadata={"description": "The whole query to search for this suggestion."})
    kind = fields.String(required=True, validate=validate.OneOf(KINDS))
    value = fields.String(required=True, metadata={"description": "The completed word, or the author's name."})
    papers = fields.Integer(
        required=True,
        metadata={
            "description": "A word: papers with it in the title plus papers with it in the abstract. "
            "An author: their papers."
        },
    )


class SuggestionsSchema(Schema):
    q = fields.String(required=True)
    suggestions = fields.List(fields.Nested(SuggestionSchema), required=True)


class QuerySchema(Schema):
    """The request as the service understood it (defaults filled in, duplicates dropped)."""

    q = fields.String(required=True)
    subject = fields.List(fields.String(), required=True)
    author = fields.List(fields.String(), required=True)
    venue = fields.List(fields.String(), required=True)
    year_from = fields.Integer(allow_none=True, required=True)
    year_to = fields.Integer(allow_none=True, required=True)
    date_from = fields.String(allow_none=True, required=True)
    date_to = fields.String(allow_none=True, required=True)
    added_since = fields.Function(
        lambda request: None if request.added_since is None else iso_second(request.added_since),
        allow_none=True,
        required=True,
        metadata={"type": "string"},
    )
    sort = fields.String(required=True)
    page = fields.Integer(required=True)
    per_page = fields.Integer(required=True)
    exact = fields.Boolean(required=True)
    explain = fields.Boolean(required=True)


class IdentifiersSchema(Schema):
    """Where the paper is found outside this service; each null when no source gave it."""

    arxiv = fields.String(
        allow_none=True,
        required=True,
        metadata={
            "description": "arXiv id without its version (1909.02107, hep-th/9901001): https://arxiv.org/abs/<arxiv>."
        },
    )
    doi = fields.String(
        allow_none=True,
        required=True,
        metadata={
            "description": "DOI, lowercase, without a resolver prefix (10.1145/3394486.3403059): https://doi.org/<doi>."
        },
    )
    url = fields.String(
        allow_none=True,
        required=True,
        metadata={"description": "The source's own page for the paper: an absolute http or https URL."},
    )

    @post_dump
    def _unknown_as_null(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {name: value or None for name, value in data.items()}


class CitationsSchema(Schema):
    count = fields.Integer(required=True, metadata={"description": "How many works cite the paper."})
    source = fields.String(
        allow_none=True, required=True, metadata={"description": 'Who counted them ("OpenAlex"); null if not said.'}
    )

    @post_dump
    def _unknown_as_null(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {**data, "source": data["source"] or None}


def _text_or_null(description: str) -> fields.String:
    """A string field of every paper, null where unknown."""
    return fields.String(allow_none=True, required=True, metadata={"description": description})


class PaperSchema(Schema):
    id = fields.String(required=True)
    title = fields.String(required=True)
    abstract = fields.String(required=True)
    year = fields.Integer(allow_none=True, required=True)
    date = _text_or_null("ISO 8601, as precise as the sources: 2021, 2021-06 or 2021-06-29; null if unknown.")
    venue = _text_or_null("The journal or conference; null if no source names one.")
    citations = fields.Nested(
        CitationsSchema,
        allow_none=True,
        required=True,
        metadata={"description": "The largest citation count a source gave, and who counted; null if none did."},
    )
    subjects = fields.List(fields.String(), required=True)
    authors = fields.List(fields.String(), required=True)
    orcids = fields.Dict(
        keys=fields.String(),
        values=fields.String(),
        required=True,
        metadata={"description": "Author name (as in authors) → ORCID iD (0000-0002-1825-0097), if a source gave one."},
    )
    identifiers = fields.Nested(IdentifiersSchema, required=True)
    added = _text_or_null("When the paper entered this index (ISO 8601, UTC), kept across rebuilds.")
    changed = _text_or_null("When it was added or last changed here: by a change, or a rebuild that read it otherwise.")

    @pre_dump
    def _with_publication(self, paper: Paper | Hit, **_: Any) -> dict[str, Any]:
        """The paper's fields, its publication's among them (a page and an export read it whole)."""
        found = paper.publication
        citations = None if found.citations is None else {"count": found.citations, "source": found.citations_source}
        return {
            **{name: getattr(paper, name) for name in self.fields if hasattr(paper, name)},
            "date": found.date or None,
            "venue": found.venue or None,
            "citations": citations,
            "orcids": found.orcids_of(paper.authors),
            "added": paper.arrival.added if paper.arrival else None,
            "changed": paper.arrival.changed if paper.arrival else None,
        }


class HighlightsSchema(Schema):
    """The text the engines index and highlight: TeX read as text (`$\\mathrm{softmax}$` is `softmax`),
    as `title` and `abstract` are not. Pages show its math as MathML; the API leaves that to clients,
    which have the TeX in `title` and `abstract`."""

    title = fields.String(
        required=True,
        metadata={"description": "HTML: escaped text, matches in <mark>; TeX commands and math read as text."},
    )
    abstract = fields.String(
        required=True,
        metadata={"description": "HTML snippet: escaped, matches in <mark>; TeX commands and math read as text."},
    )

    @post_dump
    def _without_math_marks(self, data: dict[str, str], **kwargs: Any) -> dict[str, str]:
        """Without the marks where math runs were, which only pages read (core.tex)."""
        return {name: unmarked(text) for name, text in data.items()}


class Rounded(fields.Float):
    """A number shown to `places` decimal places."""

    def __init__(self, places: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.places = places

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> float | None:
        return None if value is None else round(float(value), self.places) + 0.0  # + 0.0: never -0.0


def _part(description: str, **kwargs: Any) -> Rounded:
    return Rounded(PART_PLACES, required=True, metadata={"description": description}, **kwargs)


class WordPartSchema(Schema):
    word = fields.String(
        required=True,
        metadata={
            "description": "A query word as the query wrote it; where it is several words of the index, each "
            "of them after it (`memory-efficient: effici`)."
        },
    )
    fields_ = fields.Dict(
        data_key="fields",
        attribute="fields",
        keys=fields.String(),
        values=Rounded(PART_PLACES),
        required=True,
        metadata={"description": "Its part of the lexical score in each field it is searched in (0: not there)."},
    )
    total = _part("Its part of the lexical score: the sum over its fields.")


_WEIGHTS = ", ".join([*(f"{value:g} for {name}" for name, value in fusion.WEIGHTS.items()), f"else {fusion.WEIGHT:g}"])


class ExplanationSchema(Schema):
    """A hit's score taken apart: lexical = Σ words' parts + coordination + other; score = lexical /
    best_lexical + meaning when ranked by meaning, else lexical. Parts are shown to 6 decimal places and the
    score to 4, so the sums hold within 0.00005 + 0.0000005 per part."""

    tier = fields.Integer(
        required=True,
        metadata={
            "description": "0: matches every word as typed; 1: some of them; 2: only through a word's typos or "
            "other forms. Tiers come in order; within one, the score decides."
        },
    )
    words = fields.List(
        fields.Nested(WordPartSchema),
        required=True,
        metadata={"description": "Each query word's BM25F part, the largest first; empty where `other` is all."},
    )
    coordination = _part("The bonus for matching more of the query's words (0 for a lone word).")
    other = _part(
        "What the words do not explain: the whole lexical score for a query not of plain words (phrases, "
        "wildcards, AND/OR/NOT, fields of names), else 0."
    )
    lexical = _part("The lexical score: the parts' sum.")
    best_lexical = _part(
        "When ranked by meaning: the best lexical score among the tier's candidates, which divides it.", allow_none=True
    )
    similarity = _part(
        "When ranked by meaning: cosine similarity of the paper's vector and the query's, the query's moved a "
        "little toward the paper a first ranking of the tier placed first (pseudo-relevance feedback).",
        allow_none=True,
    )
    similarity_rank = fields.Integer(
        allow_none=True,
        required=True,
        metadata={
            "description": "Its rank by similarity among the tier's candidates reordered by meaning (1: nearest)."
        },
    )
    meaning = _part(
        f"When ranked by meaning: the encoder's weight ({_WEIGHTS}) × similarity, its part of the score.",
        allow_none=True,
    )
    score = Rounded(SCORE_PLACES, required=True, metadata={"description": "The hit's score, as shown."})


class HitSchema(PaperSchema):
    score = fields.Float(
        allow_none=True,
        required=True,
        metadata={
            "description": "Higher is more relevant, comparable within one search; null unless sorted by relevance."
        },
    )
    highlights = fields.Nested(HighlightsSchema, required=True)
    matched = fields.String(
        allow_none=True,
        required=True,
        metadata={"description": '"identifier" where the query was this paper\'s arXiv id or DOI; else null.'},
    )
    explanation = fields.Nested(
        ExplanationSchema,
        allow_none=True,
        required=True,
        metadata={"description": "Why it is here (explain=true, a query ranked by relevance); else null."},
    )


class PastedIdentifierSchema(Schema):
    value = fields.String(
        attribute="label",
        required=True,
        metadata={"description": 'The arXiv id or DOI the query was, normalised: "arXiv:1909.02107", "DOI 10.1/x".'},
    )
    found = fields.Boolean(
        allow_none=True,
        required=True,
        metadata={
            "description": "Whether the index holds that paper (then it is the one result); null where this "
            "index cannot tell (its collection file is on another machine), and the words were searched."
        },
    )


class FacetValueSchema(Schema):
    value = fields.Raw(required=True, metadata={"description": "A year (integer), subject or author (string)."})
    count = fields.Integer(required=True)
    selected = fields.Boolean(required=True)


class FacetsSchema(Schema):
    year = fields.List(fields.Nested(FacetValueSchema), required=True)
    subject = fields.List(fields.Nested(FacetValueSchema), required=True)
    author = fields.List(fields.Nested(FacetValueSchema), required=True)
    venue = fields.List(fields.Nested(FacetValueSchema), required=True)


class TypoMatchSchema(Schema):
    typed = fields.String(required=True, metadata={"description": "A query word no paper holds, as typed."})
    matched = fields.List(
        fields.String(),
        required=True,
        metadata={"description": "The words a typo away it matched instead; papers only they find rank last."},
    )


class AlsoSearchedSchema(Schema):
    typed = fields.String(required=True, metadata={"description": "Words of the query, as typed side by side."})
    forms = fields.List(
        fields.String(),
        required=True,
        metadata={
            "description": "Their other forms searched too (an acronym the papers define, its long form, a synonym); "
            "papers only these find rank last."
        },
    )


class SearchResultSchema(Schema):
    """The search result document shared by `searchsvc search --json` and `GET /api/search`."""

    query = fields.Nested(QuerySchema, attribute="request", required=True)
    total = fields.Integer(required=True)
    page = fields.Integer(required=True)
    per_page = fields.Integer(required=True)
    pages = fields.Integer(required=True)
    took_ms = fields.Float(required=True)
    results = fields.List(fields.Nested(HitSchema), attribute="hits", required=True)
    facets = fields.Nested(FacetsSchema, required=True)
    suggestion = fields.String(allow_none=True, required=True)
    identifier = fields.Nested(
        PastedIdentifierSchema,
        allow_none=True,
        required=True,
        metadata={"description": "Set where the whole query was one arXiv id, DOI, or arxiv.org or doi.org address."},
    )
    typos = fields.List(fields.Nested(TypoMatchSchema), required=True)
    also_searched = fields.List(fields.Nested(AlsoSearchedSchema), required=True)


def dump_search_result(result: SearchResult) -> dict[str, Any]:
    """The JSON-ready document for a result."""
    return SearchResultSchema().dump(result)


class RelatedPapersSchema(Schema):
    id = fields.String(required=True, metadata={"description": "The paper the results are related to."})
    results = fields.List(fields.Nested(HitSchema), required=True)


class FacetLookupSchema(Schema):
    name = fields.String(required=True)
    prefix = fields.String(required=True)
    values = fields.List(fields.Nested(FacetValueSchema), required=True)
    truncated = fields.Boolean(required=True, metadata={"description": "More values matched than were listed."})


class CoauthorSchema(Schema):
    name = fields.String(required=True)
    count = fields.Integer(required=True, metadata={"description": "Papers written together, among the listed ones."})


class AuthorSchema(Schema):
    """`GET /api/authors/<name>`: an author's papers, paged and sorted as a search's, and their co-authors."""

    name = fields.String(required=True, metadata={"description": "The name as the index stores it."})
    query = fields.Nested(QuerySchema, attribute="request", required=True)
    total = fields.Integer(attribute="result.total", required=True, metadata={"description": "The author's papers."})
    page = fields.Integer(attribute="result.page", required=True)
    per_page = fields.Integer(attribute="result.per_page", required=True)
    pages = fields.Integer(attribute="result.pages", required=True)
    took_ms = fields.Float(attribute="result.took_ms", required=True)
    results = fields.List(fields.Nested(HitSchema), attribute="result.hits", required=True)
    years = fields.List(fields.Nested(FacetValueSchema), required=True, metadata={"description": "Papers per year."})
    subjects = fields.List(fields.Nested(FacetValueSchema), required=True)
    coauthors = fields.List(
        fields.Nested(CoauthorSchema),
        required=True,
        metadata={"description": "Everyone who wrote any of these papers with the author: most first, then by name."},
    )
    coauthors_complete = fields.Boolean(
        required=True,
        metadata={"description": "False if the author has more papers than max_export: only the newest were counted."},
    )


class ChangeReportSchema(Schema):
    """What one change through the write API did (ingest.update.ChangeReport)."""

    added = fields.List(fields.String(), required=True, metadata={"description": "Ids of papers new to the index."})
    replaced = fields.List(
        fields.String(), required=True, metadata={"description": "Ids of papers whose record changed."}
    )
    removed = fields.List(fields.String(), required=True)
    unchanged = fields.List(
        fields.String(), required=True, metadata={"description": "Ids of papers sent again as they were."}
    )
    missing = fields.List(
        fields.String(), required=True, metadata={"description": "Ids asked to be removed that no paper has."}
    )
    records = fields.Integer(required=True, metadata={"description": "Records read from the body."})
    generation = fields.String(
        required=True, metadata={"description": "The generation served now: the one published, or as before."}
    )
    changed_at = fields.String(
        required=True,
        allow_none=True,
        metadata={"description": "When the change was published (ISO 8601, UTC); null if nothing changed."},
    )
    seconds = fields.Float(required=True)
    embedded = fields.Integer(required=True, metadata={"description": "Papers whose vectors were computed."})
    embedding_seconds = fields.Float(required=True)
    semantic_ranking = fields.String(
        required=True,
        validate=validate.OneOf(("on", "pending", "off")),
        metadata={
            "description": "on: every paper is ranked by meaning too; pending: the change's papers are being "
            "embedded in the background, and are ranked by their words until then (GET /readyz says when it "
            "ends); off: ranking by meaning is off."
        },
    )
    warnings = fields.List(fields.String(), required=True)
    replayed = fields.Boolean(
        required=True,
        metadata={
            "description": "true: this is the report of a change made earlier under the same Idempotency-Key, "
            "not made again; generation and semantic_ranking are as they are now."
        },
    )


class StatusSchema(Schema):
    status = fields.String(required=True)
    generation = fields.String(required=True)
    doc_count = fields.Integer(required=True)
    built_at = fields.String(required=True)
    changed_at = fields.String(
        required=True,
        metadata={
            "description": "When the papers served last changed (ISO 8601, UTC): the last change through the write "
            "API, else built_at."
        },
    )
    engine = fields.String(
        required=True, metadata={"description": "whoosh or opensearch (the library's version is not disclosed)."}
    )
    changes = fields.Integer(
        required=True,
        metadata={
            "description": "Changes made since the sources (adds and removes, through the API or the command line): "
            "every rebuild replays them after its sources, until discarded with `searchsvc rebuild --discard-changes`."
        },
    )
    semantic_ranking = fields.String(
        required=True,
        metadata={"description": "on; pending while a rebuild embeds the papers (lexical until then); off."},
    )
    deleted_copies = fields.Integer(
        metadata={
            "description": "OpenSearch only: old copies of papers a write or the embedding after it rewrote, still in "
            "the index's segments (every shard copy counted) until the merge started after the write drops them. "
            "Lucene counts them in word statistics, so scores differ slightly from a fresh build's until this is 0."
        },
    )
    encoder = fields.String(
        metadata={
            "description": "What embeds queries and papers, when ranking by meaning is on: bge-small-int8, "
            "bge-small, onnx-int8, onnx or numpy (onnx-int8 when bge-small's files are not installed, numpy when "
            "ONNX Runtime cannot run)."
        },
    )
    encoder_notice = fields.String(
        metadata={
            "description": "Only when the encoder that runs is not the configured one: why, and how to get that one."
        },
    )


class HealthSchema(Schema):
    status = fields.String(required=True)


class ErrorBodySchema(Schema):
    code = fields.String(required=True, metadata={"description": "Machine-readable: invalid_parameters, ..."})
    message = fields.String(required=True)
    details = fields.Dict(required=True, metadata={"description": "For invalid parameters: field → messages."})


class ErrorSchema(Schema):
    error = fields.Nested(ErrorBodySchema, required=True)


def _folded_values(values: list[str]) -> tuple[str, ...]:
    """Filter values with their whitespace folded and composed as records' are, each once, none empty."""
    return tuple(dict.fromkeys(composed(value) for value in map(one_line, values) if value))
