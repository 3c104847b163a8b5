"""Property-based fuzzing of the query parser (hypothesis).

The property: any string gets a parse tree or a `QuerySyntaxError` whose message starts with its
label and whose column lies inside the query. The settings and strategies are in
tests/helpers/fuzzing.py (a fixed seed in CI; SEARCHSVC_FUZZ_EXAMPLES=5000 fuzzes longer);
the endpoints are fuzzed in tests/unit/web/test_fuzz.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from searchsvc.core.errors import QuerySyntaxError
from searchsvc.core.query import parse
from tests.helpers.fuzzing import FUZZ, queries

pytestmark = pytest.mark.reliability


@FUZZ
@given(queries)
def test_parser_answers_or_explains(text: str) -> None:
    try:
        parse(text)
    except QuerySyntaxError as error:
        assert error.message.startswith(error.label)
        column = error.details["column"]
        assert isinstance(column, int) and 1 <= column <= len(text) + 1, (text, column)
