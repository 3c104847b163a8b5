"""Hypothesis settings and strategies shared by the fuzz tests (tests/unit/core/test_query_fuzz.py,
tests/unit/web/test_fuzz.py) and the example count schemathesis uses (tests/system/test_schemathesis.py).

CI runs a fixed number of examples from a fixed seed (`derandomize`), so a run is reproducible;
SEARCHSVC_FUZZ_EXAMPLES=5000 fuzzes longer.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("SEARCHSVC_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,  # a fixed seed: the same examples every run
    deadline=None,  # speed is the benchmarks' business; boundedness comes from the named limits
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)

# Pieces of query syntax, right and wrong, to build operator soup from.
SYNTAX = [
    "AND", "OR", "NOT", "and", "(", ")", "((", '"', "'", "-", "+", "*", "?", "~", "^2", ":", "::", "\\",
    "title:", "abstract:", "author:", "subject:", "year:", "id:", "colour:", "year:2019", "year:2019..",
    "year:..2020", "year:2018-2020", "year:99999999999999999999", "year:-5", "a*", "e*", "*x", "embed*",
    "embedding", "tables", "Naumov", "cs.LG", "memory-efficient", "Results:", "[", "]", "{", "}", "<", ">",
    "\x00", "\x1b[31m", "\u202e", "\ufeff", "\ud7ff", "é", "日本語", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", " ", "\t", "\n",
]  # fmt: skip
soup = st.lists(st.sampled_from(SYNTAX), max_size=40).map(" ".join) | st.lists(
    st.sampled_from(SYNTAX), max_size=60
).map("".join)
queries = st.one_of(
    st.text(max_size=200),
    soup,
    st.text(alphabet=st.characters(codec="utf-8"), min_size=400, max_size=10_000),  # past the length limit
    st.just("(" * 300 + "a" + ")" * 300),
)
numbers = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.sampled_from(["0", "-1", "1e9", "NaN", "inf", "0x10", "١٢", " 5 ", "", "9" * 400]),
    st.text(max_size=20),
)
PARAMETERS = {
    "q": queries,
    "subject": st.text(max_size=120),
    "author": st.text(max_size=220),
    "year_from": numbers,
    "year_to": numbers,
    "sort": st.one_of(st.sampled_from(["relevance", "newest", "oldest"]), st.text(max_size=10)),
    "page": numbers,
    "per_page": numbers,
    "prefix": st.text(max_size=150),
    "limit": numbers,
    "format": st.one_of(st.sampled_from(["bibtex", "csv", "jsonl"]), st.text(max_size=10)),
    "colour": st.text(max_size=10),  # not a parameter of any endpoint
}
# A query string: any parameters, each possibly repeated.
query_strings = st.lists(
    st.sampled_from(sorted(PARAMETERS)).flatmap(lambda name: st.tuples(st.just(name), PARAMETERS[name])),
    max_size=8,
)
