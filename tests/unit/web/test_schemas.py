"""Reading a search request from query parameters: each bad field named, defaults and clean-up applied."""

from __future__ import annotations

import pytest

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.model import SearchRequest
from searchsvc.web.schemas import parse_search_request


def test_request_validation_names_each_bad_field(seed_backend: WhooshBackend) -> None:
    from searchsvc.core.errors import InvalidRequest

    settings = seed_backend.settings
    with pytest.raises(InvalidRequest) as caught:
        parse_search_request({"per_page": "0", "sort": "best", "year_from": "20x", "q": "x" * 501}, settings)
    assert set(caught.value.details) == {"per_page", "sort", "year_from", "q"}
    with pytest.raises(InvalidRequest) as caught:
        parse_search_request({"page": "101", "per_page": "100"}, settings)
    assert "page * per_page must be at most 10000" in caught.value.details["page"][0]
    with pytest.raises(InvalidRequest) as caught:
        parse_search_request({"year_from": "2020", "year_to": "2019"}, settings)
    assert caught.value.details == {"year_to": ["Must not be before year_from (2020)."]}
    assert parse_search_request({"q": "  x  ", "subject": ["a", "a"]}, settings) == SearchRequest(q="x", subject=("a",))
