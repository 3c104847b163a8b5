"""Bytes that are not UTF-8 in the URL are a 400 naming the parameter, never searched as text.

Werkzeug would decode `q=%80` as `q=\ufffd` and search for a replacement character."""

from __future__ import annotations

import pytest
from flask import Flask

pytestmark = pytest.mark.reliability


@pytest.mark.parametrize(
    ("url", "parameter"),
    [
        ("/api/search?q=%80", "q"),
        ("/api/search?q=caf%C3", "q"),  # cut in the middle of a character
        ("/api/search?q=ok&subject=%FF%FE", "subject"),
        ("/api/search?q=ok&author=%ED%A0%80", "author"),  # a lone surrogate, encoded
        ("/api/facets/author?prefix=%C0%AF", "prefix"),  # an overlong '/'
        ("/api/export?format=csv&q=%80", "q"),
        ("/api/search?%80=1", "\ufffd"),
    ],
)
def test_invalid_utf8_in_an_api_parameter_is_a_400_naming_it(seed_app: Flask, url: str, parameter: str) -> None:
    response = seed_app.test_client().get(url)
    assert response.status_code == 400 and response.mimetype == "application/json", response.data[:300]
    error = response.get_json()["error"]
    assert error["code"] == "invalid_parameters"
    assert error["details"] == {parameter: ["Not valid UTF-8 text."]}
    assert f"{parameter} is not valid UTF-8" in error["message"]


@pytest.mark.parametrize("url", ["/?q=%80", "/?q=ok&author=%FF", "/papers/%80", "/api/papers/%FF%FF"])
def test_invalid_utf8_on_a_page_or_in_a_path_is_a_400(seed_app: Flask, url: str) -> None:
    response = seed_app.test_client().get(url)
    assert response.status_code == 400, response.data[:300]
    text = response.get_data(as_text=True)
    if url.startswith("/api/"):
        assert response.get_json()["error"]["details"] == {"path": ["Not valid UTF-8 text."]}
    else:
        assert response.mimetype == "text/html" and "not valid UTF-8" in text and "\ufffd" not in text


def test_valid_utf8_and_plus_signs_still_search(seed_app: Flask) -> None:
    client = seed_app.test_client()
    for url in ("/api/search?q=caf%C3%A9", "/api/search?q=embedding+tables", "/api/search?q=%E2%80%AE", "/?q=x&"):
        assert client.get(url).status_code == 200, url
