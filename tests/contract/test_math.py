"""TeX in titles and abstracts (issue #31, item 5) on both engines: found by its words, never by its
commands; highlights still mark words beside math; the page shows math as MathML."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient

from searchsvc import create_app
from searchsvc.backends import open_backend
from searchsvc.core.tex import MATH_END, MATH_START
from searchsvc.operations import update
from searchsvc.operations.rebuild import rebuild
from searchsvc.settings import load_settings
from tests.helpers.backends import BACKENDS, BackendFactory, Build, every_backend, merged
from tests.helpers.records import write_jsonl

SORTING = {
    "id": "sorting",
    "title": r"Sorting in $O(n \log n)$ time with \emph{few} comparisons",
    "abstract": (
        r"We replace the $\mathrm{softmax}$ of attention by a sparse map with an $\ell_1$ penalty, "
        r"whose \textbf{gradient} is $\frac{\partial L}{\partial x}$ and whose cost is $\mathcal{O}(n)$. "
        r"The r\'esum\'e of the method -- in $\mathbb{R}^n$ -- follows."
    ),
    "year": 2021,
    "arxiv": "2101.00001",
}
PLAIN = {"id": "plain", "title": "Attention without softmax", "abstract": "A softmax-free attention map.", "year": 2020}
# Command names of SORTING's TeX: none is a word of either record.
COMMANDS = ["mathrm", "ell", "ell_1", "emph", "textbf", "frac", "partial", "mathcal", "mathbb"]


@pytest.fixture(scope="module")
def math_client(factory: BackendFactory) -> FlaskClient:
    return factory.publish_records([SORTING, PLAIN]).test_client()


def _ids(client: FlaskClient, q: str) -> list[str]:
    return [hit["id"] for hit in client.get("/api/search", query_string={"q": q}).json["results"]]


def test_math_is_found_by_its_words(math_client: FlaskClient) -> None:
    assert sorted(_ids(math_client, "softmax")) == ["plain", "sorting"]
    assert _ids(math_client, '"the softmax"') == ["sorting"]  # a phrase across the math's edge
    assert _ids(math_client, '"mathrm softmax"') == []
    # ℓ1 as a page's rendered math gives it to a copy and paste: the letters it styles.
    for words in ("log", '"n log n"', "few comparisons", "gradient", "résumé", "resume", "l1", "L1", "ℓ1"):
        assert _ids(math_client, words) == ["sorting"], words


@pytest.mark.parametrize("command", COMMANDS)
def test_no_tex_command_name_is_a_searchable_word(math_client: FlaskClient, command: str) -> None:
    assert _ids(math_client, command) == []
    assert _ids(math_client, f'"{command}"') == []


def test_suggestions_and_spelling_offer_no_command_name(math_client: FlaskClient) -> None:
    for prefix in ("mathr", "ell", "emp", "textb"):
        suggested = math_client.get("/api/suggest", query_string={"q": prefix}).json
        assert not any(
            option["value"].lower().startswith(("mathrm", "ell_", "emph", "textbf"))
            for option in suggested["suggestions"]
        ), suggested
    assert math_client.get("/api/search", query_string={"q": "mathrn"}).json["suggestion"] is None


def test_highlights_mark_words_beside_math_and_hold_no_tex(math_client: FlaskClient) -> None:
    (hit,) = math_client.get("/api/search", query_string={"q": "comparisons gradient"}).json["results"]
    assert hit["title"] == SORTING["title"]  # stored as the source wrote it
    assert "<mark>comparisons</mark>" in hit["highlights"]["title"]
    assert "<mark>gradient</mark>" in hit["highlights"]["abstract"]
    text = json.dumps(hit["highlights"], ensure_ascii=False)
    assert "\\\\" not in text and "$" not in text  # TeX read as its words (the API shows no MathML)
    assert not any(MATH_START <= ord(char) <= ord(MATH_END) for char in text)
    assert "O(n log n)" in hit["highlights"]["title"]


def test_a_pasted_identifiers_paper_is_highlighted_as_every_hit(math_client: FlaskClient) -> None:
    (hit,) = math_client.get("/api/search", query_string={"q": "arXiv:2101.00001"}).json["results"]
    assert hit["matched"] == "identifier"
    assert hit["highlights"]["title"] == "Sorting in O(n log n) time with few comparisons"


def test_the_results_page_shows_math_as_mathml_beside_marked_words(math_client: FlaskClient) -> None:
    page = math_client.get("/", query_string={"q": "comparisons gradient"}).get_data(as_text=True)
    title = page.split('class="hit-title">', 1)[1].split("</h2>", 1)[0]
    assert '<math display="inline">' in title and "<mark>comparisons</mark>" in title
    assert "$" not in title and "\\" not in title and "few" in title
    snippet = page.split('class="snippet">', 1)[1].split("</p>", 1)[0]
    assert "<mark>gradient</mark>" in snippet and "<math" in snippet
    paper = math_client.get("/papers/sorting").get_data(as_text=True)
    assert "<title>Sorting in O(n log n) time with few comparisons – searchsvc</title>" in paper
    assert paper.count("<math") == 6  # the title's one, the abstract's five
    assert "\\mathrm" not in paper.split("<h2>Abstract</h2>", 1)[1].split('<h2 id="cite-heading">')[0]


def test_exports_keep_the_tex(math_client: FlaskClient) -> None:
    lines = math_client.get("/api/export", query_string={"format": "jsonl", "id": "sorting"}).get_data(as_text=True)
    assert json.loads(lines.splitlines()[0])["abstract"] == SORTING["abstract"]
    (item,) = math_client.get("/api/export", query_string={"format": "csljson", "id": "sorting"}).json
    assert (item["title"], item["abstract"]) == (SORTING["title"], SORTING["abstract"])
    assert math_client.get("/api/papers/sorting").json["title"] == SORTING["title"]


@pytest.mark.reliability
def test_hostile_tex_is_escaped_on_every_page(build: Build) -> None:
    hostile = {
        "id": "hostile",
        "title": r"Graphs $\text{<script>alert(1)</script>}$, $\href{javascript:alert(1)}{x}$ <img onerror=alert(2)>",
        "abstract": r"graph $<img src=x onerror=alert(3)>$ $\begin{matrix} a$ unbalanced $x " + "$" + "{" * 200 + "$",
    }
    client = build([hostile]).test_client()
    for path in ("/?q=graph", "/papers/hostile", "/?q=graphs"):
        response = client.get(path)
        assert response.status_code == 200, path
        page = response.get_data(as_text=True)
        assert "<script>alert" not in page and "<img src=x" not in page and 'href="javascript' not in page, path
    hit = client.get("/api/search?q=graph").json["results"][0]
    assert hit["title"] == hostile["title"]
    assert "<script>" not in json.dumps(hit["highlights"]) and "<img" not in json.dumps(hit["highlights"])


def test_removing_a_paper_with_math_scores_like_a_rebuild_without_it(
    factory: BackendFactory, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The Whoosh backend subtracts a removed paper's words from the statistics by analysing it
    again (live_statistics): its reading, not its TeX, or the lengths and counts would be off."""
    other = {"id": "other", "title": r"Sparse $\mathrm{softmax}$ attention", "abstract": "attention map softmax"}
    folder = tmp_path_factory.mktemp("math-removal")
    updated = factory.overrides(semantic_ranking=False)
    rebuild(
        open_backend(load_settings(updated, environ={})), [write_jsonl(folder / "all.jsonl", [SORTING, PLAIN, other])]
    )
    backend = open_backend(load_settings(updated, environ={}))
    assert update.remove(backend, ["sorting"]).removed == ["sorting"]
    merged(backend)
    rebuilt = factory.overrides(semantic_ranking=False)
    rebuild(open_backend(load_settings(rebuilt, environ={})), [write_jsonl(folder / "kept.jsonl", [PLAIN, other])])
    for q in ("softmax", "attention map", "sparse softmax"):
        found = [
            [
                (hit["id"], hit["score"])
                for hit in create_app(settings).test_client().get(f"/api/search?q={q}").json["results"]
            ]
            for settings in (updated, rebuilt)
        ]
        assert found[0] == found[1] and len(found[0]) == 2, q


@pytest.fixture(scope="module")
def both(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, FlaskClient]]:
    with every_backend(request, tmp_path_factory) as factories:
        yield {kind: made.publish_records([SORTING, PLAIN]).test_client() for kind, made in factories.items()}


@pytest.mark.parametrize("q", ["softmax", "attention map", '"n log n"', "gradient cost"])
def test_both_engines_index_the_same_words_of_math(both: dict[str, FlaskClient], q: str) -> None:
    whoosh, opensearch = (
        [(hit["id"], hit["score"]) for hit in both[kind].get("/api/search", query_string={"q": q}).json["results"]]
        for kind in BACKENDS
    )
    assert opensearch == whoosh
