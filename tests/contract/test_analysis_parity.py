"""Both engines read rare text alike: the same words, folded the same way (backends/analysis.py).

Records with "*" inside words, letters Lucene's ASCII folding spells in ASCII ("œ", "ß", "Ł", "æ",
ligatures, full-width forms), combining marks, superscripts and letters past U+FFFF are published on both engines;
plain words then find the same papers with the same scores (BM25F reads each field's average
length, so one word counted apart moves every score), and phrases and wildcards the same papers.
The table Whoosh folds and splits by is the cluster's own (opensearch/lucene_analysis.py).
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterator
from itertools import accumulate
from typing import Any

import pytest
from flask.testing import FlaskClient
from opensearchpy import OpenSearch

from searchsvc import create_app
from searchsvc.backends.analysis import WORD_PATTERN
from searchsvc.backends.opensearch.lucene_analysis import TABLES, tables_module
from searchsvc.backends.opensearch.mapping import index_body
from searchsvc.backends.whoosh.schema import text_analyzer
from tests.helpers.backends import BACKENDS, every_backend
from tests.helpers.opensearch_cluster import Cluster
from tests.helpers.paths import SHARED_ACL
from tests.helpers.records import write_jsonl

RARE = [
    ("*The processors* of *the lexicon", "Processors*, we note, keep *the words* apart: a*b and *x."),
    ("L'œuvre complète: Œuvre of the translator", "Les œuvres of Łódź and Gdańsk, read in Straße and STRASSE."),
    ("Æsthetics of æsthetic judgement", "Encyclopædia entries on æsthetics, Ærø and Þórr; the ɔ and ɛ vowels."),
    (
        "Ｆｕｌｌ－ｗｉｄｔｈ ｆｏｒｍｓ of financial text",
        "The ﬁnancial ﬂow of ｌｅｘｉｃａｌ ｆｏｒｍｓ, ＡＢＣ and ①.",
    ),
    ("İstanbul and ǅemal: cased letters", "Dotted İ and the digraph ǅ, ǆ, Ǆ; Ŋ, ŋ, ĸ and ſ in old texts."),
    ("Naïve and nai\u0308ve: combining marks", "Cafe\u0301 and café, x² and x₁, H₂O, ½ and ⅓ in the text."),
    ("Letters past U+FFFF: 𠀀 and 𐐀𐐨", "One character of two UTF-16 units, 𠀀 or 𝐱, is a word; 𐐀 is cased."),
    ("తెలుగు and हिन्दी scripts", "Words with vowel signs: తెలుగు భాష, हिन्दी भाषा, and the oeuvre lexicon."),
    ("The translator's oeuvre", "An oeuvre of lexicon and processors: the strasse of lodz, financial forms."),
]
# ASCII papers sharing the rare papers' words, so that scores depend on document frequencies and
# average lengths of both kinds.
PLAIN = [
    ("Lexicon processors for translation", "We build processors of the lexicon for machine translation."),
    ("Financial text and forms", "Financial forms, full width or not, are text of their own."),
    ("Aesthetics of translation", "The aesthetics of a translator's work and its judgement."),
    ("Vowels and letters", "Cased letters and vowels in old texts and scripts."),
]
WORDS = [
    "the",  # "*The" is the stop word "the"
    "processors",
    "lexicon words",
    "oeuvre",
    "œuvre complète",
    "lodz gdansk",
    "Łódź",
    "strasse",
    "aesthetics",
    "æsthetic encyclopaedia",
    "aero thorr",
    "full width forms",
    "ｆｕｌｌ lexical",
    "financial flow",
    "istanbul",
    "dzemal dz",
    "naive",
    "cafe x2",
    "తెలుగు",
    "vowels",
    "𠀀 letters",
    "𐐨𐐨",
]
PHRASES_AND_WILDCARDS = ['"œuvre complète"', '"full width"', "œuv*", "strass*", "æsth*", "ｌｅｘ*", '"naïve and"']


def _records() -> list[dict[str, Any]]:
    return [
        {"id": f"p{number:02d}", "title": title, "abstract": abstract, "year": 2000 + number, "authors": ["A. Writer"]}
        for number, (title, abstract) in enumerate(RARE + PLAIN)
    ]


@pytest.fixture(scope="module")
def both(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, FlaskClient]]:
    source = write_jsonl(tmp_path_factory.mktemp("rare") / "records.jsonl", _records())
    with every_backend(request, tmp_path_factory) as factories:
        published = {kind: made.published([source], semantic_ranking=False) for kind, made in factories.items()}
        yield {kind: create_app(overrides).test_client() for kind, overrides in published.items()}


def _ranked(client: FlaskClient, q: str) -> tuple[int, list[tuple[str, float]]]:
    answer = client.get("/api/search", query_string={"q": q, "per_page": 50})
    assert answer.status_code == 200, answer.json
    return answer.json["total"], [(hit["id"], hit["score"]) for hit in answer.json["results"]]


@pytest.mark.parametrize("q", WORDS, ids=json.dumps)
def test_words_of_rare_text_find_the_same_papers_with_the_same_scores(both: dict[str, FlaskClient], q: str) -> None:
    (whoosh_total, whoosh), (opensearch_total, opensearch) = (_ranked(both[kind], q) for kind in BACKENDS)
    assert whoosh_total == opensearch_total
    assert opensearch == whoosh
    assert whoosh or q == "the"  # a stop word finds nothing; every other query finds papers to compare


@pytest.mark.parametrize("q", PHRASES_AND_WILDCARDS, ids=json.dumps)
def test_phrases_and_wildcards_of_rare_text_find_the_same_papers(both: dict[str, FlaskClient], q: str) -> None:
    """Each engine scores these its own way (docs/scaling.md): the same papers, not the same scores."""
    (whoosh_total, whoosh), (opensearch_total, opensearch) = (_ranked(both[kind], q) for kind in BACKENDS)
    assert whoosh_total == opensearch_total > 0
    assert {paper for paper, _ in opensearch} == {paper for paper, _ in whoosh}


def test_the_words_and_folding_are_the_test_clusters_own(opensearch_cluster: Cluster) -> None:
    """lucene_tables.py is what the cluster's tokenizer and filters do to every character: a new
    OpenSearch or Java version fails here (rerun lucene_analysis; if the tables changed, bump both indexes)."""
    client = OpenSearch(hosts=opensearch_cluster.urls)
    try:
        assert tables_module(client) == TABLES.read_text(encoding="ascii")
    finally:
        client.close()


def test_every_word_of_the_acl_records_is_read_as_the_cluster_reads_it(opensearch_cluster: Cluster) -> None:
    """Whoosh stems with PyStemmer, the cluster with Lucene's Snowball: a PyStemmer of another
    Snowball release reads words otherwise (PyStemmer 3.1's Snowball 3 keeps "universal", "adding",
    "organization" and 94 more words of these records apart from "univers", "ad", "organ", 3,141
    occurrences), and each engine then finds other papers. All 61,182 words of titles and abstracts,
    through each engine's analyzer of ranked text."""
    words: Counter[str] = Counter()
    with SHARED_ACL.open(encoding="utf-8") as records:
        for line in records:
            record = json.loads(line)
            words.update(re.findall(WORD_PATTERN, f"{record.get('title') or ''} {record.get('abstract') or ''}"))
    assert len(words) > 50_000
    client = OpenSearch(hosts=opensearch_cluster.urls)
    index = "test-analysis-acl-words"
    analyzer = text_analyzer()
    differ = []
    try:
        client.indices.create(index=index, body=index_body(1, {}))
        vocabulary = sorted(words)
        for start in range(0, len(vocabulary), 5_000):
            chunk = vocabulary[start : start + 5_000]
            starts = list(accumulate((len(word) + 1 for word in chunk[:-1]), initial=0))  # offsets run on
            read: dict[str, list[str]] = {}
            for token in client.indices.analyze(index=index, body={"field": "title", "text": chunk})["tokens"]:
                word = chunk[bisect_right(starts, token["start_offset"]) - 1]  # the value the token is in
                read.setdefault(word, []).append(token["token"])
            differ += [word for word in chunk if [t.text for t in analyzer(word)] != read.get(word, [])]
    finally:
        client.indices.delete(index=index, ignore_unavailable=True)
        client.close()
    assert not differ, f"{len(differ)} words read otherwise, e.g. {sorted(differ, key=words.__getitem__)[-5:]}"


@pytest.mark.parametrize("typed", ["œuv", "Łód", "æsth", "STRAS", "ｆｉｎ"], ids=json.dumps)
def test_a_word_being_typed_is_folded_as_the_words_it_completes(both: dict[str, FlaskClient], typed: str) -> None:
    """Suggestions as you type: the typed start of a word is folded as the index folds its words, so
    "œuv" completes "oeuvre" on both engines (authors are matched by their own folding)."""
    found = {}
    for kind in BACKENDS:
        answer = both[kind].get("/api/suggest", query_string={"q": typed})
        assert answer.status_code == 200, answer.json
        found[kind] = [(s["value"], s["papers"]) for s in answer.json["suggestions"] if s["kind"] == "word"]
    assert found["opensearch"] == found["whoosh"]
    assert found["whoosh"], typed
