"""Identifiers: every spelling of the same arXiv id or DOI compares equal; only http(s) becomes a link."""

from __future__ import annotations

import pytest

from searchsvc.core.identifiers import Identifiers, arxiv_id, doi, pasted, web_url


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2001.01234", "2001.01234"),
        ("2001.01234v3", "2001.01234"),
        ("arXiv:0704.0001v2", "0704.0001"),
        ("https://arxiv.org/abs/1909.02107v1", "1909.02107"),
        ("http://arxiv.org/pdf/cond-mat/0102536v1.pdf", "cond-mat/0102536"),
        ("hep-th/9901001", "hep-th/9901001"),
        ("math.GT/0309136", "math.GT/0309136"),
        ("not an id", ""),
        ("2001.1", ""),
        ("javascript:alert(1)", ""),
    ],
)
def test_arxiv_ids_lose_prefix_and_version(text: str, expected: str) -> None:
    assert arxiv_id(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("10.1103/PhysRevD.76.013009", "10.1103/physrevd.76.013009"),
        ("https://doi.org/10.7717/peerj.4375", "10.7717/peerj.4375"),
        ("http://dx.doi.org/10.1134/S0021364007210011", "10.1134/s0021364007210011"),
        ("doi: 10.1002/spe.2984", "10.1002/spe.2984"),
        ("https://doi.org/10.1000%2Fabc", "10.1000/abc"),
        ("11.1000/abc", ""),
        ("10.1000/" + "x" * 400, ""),
        ("", ""),
    ],
)
def test_dois_are_lowercase_without_resolver(text: str, expected: str) -> None:
    assert doi(text) == expected


@pytest.mark.parametrize(
    "text, kept",
    [
        ("https://example.org/paper?id=1&v=2", True),
        ("http://arxiv.org/abs/0710.2073v2", True),
        ("javascript:alert(1)", False),
        ("JaVaScRiPt:alert(1)", False),
        ("data:text/html,<script>alert(1)</script>", False),
        ("//example.org/x", False),
        ("https:///nohost", False),
        ("https://example.org/a b", False),
        ("https://example.org/\u0000", False),
        ("ftp://example.org/x", False),
    ],
)
def test_only_http_urls_are_links(text: str, kept: bool) -> None:
    assert web_url(text) == (text if kept else "")


def test_links_are_built_from_checked_values() -> None:
    ids = Identifiers.of(arxiv="1909.02107v3", doi_text='10.1000/a<b>"c', url="https://example.org/p")
    assert [(link.label, link.href) for link in ids.links()] == [
        ("arXiv", "https://arxiv.org/abs/1909.02107"),
        ("DOI", "https://doi.org/10.1000/a%3Cb%3E%22c"),
        ("Source", "https://example.org/p"),
    ]
    assert [link.identifier for link in ids.links()] == ["1909.02107", '10.1000/a<b>"c', "https://example.org/p"]
    assert Identifiers().links() == []


def test_stored_form_keeps_only_known_values_and_reads_back() -> None:
    ids = Identifiers.of(arxiv="0704.0001", doi_text="")
    assert ids.stored() == {"arxiv": "0704.0001"}
    assert Identifiers.from_stored(ids.stored()) == ids
    assert Identifiers.from_stored(None) == Identifiers()
    assert ids.filled_from(Identifiers(doi="10.1/x", arxiv="9999.99999")) == Identifiers("0704.0001", "10.1/x", "")


@pytest.mark.parametrize(
    ("query", "key", "label"),
    [
        ("10.1145/3394486.3403059", "doi:10.1145/3394486.3403059", "DOI 10.1145/3394486.3403059"),
        ("  doi:10.1145/3394486.3403059 ", "doi:10.1145/3394486.3403059", "DOI 10.1145/3394486.3403059"),
        ("https://doi.org/10.1145/3394486.3403059", "doi:10.1145/3394486.3403059", "DOI 10.1145/3394486.3403059"),
        ("dx.doi.org/10.1145/3394486.3403059", "doi:10.1145/3394486.3403059", "DOI 10.1145/3394486.3403059"),
        ("10.1000/ABC", "doi:10.1000/abc", "DOI 10.1000/abc"),
        ("arXiv:1909.02107v2", "arxiv:1909.02107", "arXiv:1909.02107"),
        ("1909.02107", "arxiv:1909.02107", "arXiv:1909.02107"),
        ("https://arxiv.org/abs/1909.02107", "arxiv:1909.02107", "arXiv:1909.02107"),
        ("arxiv.org/pdf/1909.02107v3.pdf", "arxiv:1909.02107", "arXiv:1909.02107"),
        ("hep-th/9901001v1", "arxiv:hep-th/9901001", "arXiv:hep-th/9901001"),
    ],
)
def test_a_query_that_is_one_identifier_is_found_as_the_key_merging_files_it_under(
    query: str, key: str, label: str
) -> None:
    found = pasted(query)
    assert found is not None and (found.key, found.label) == (key, label)


@pytest.mark.parametrize(
    "query",
    [
        "",
        "neural networks",
        "1909.02107 embeddings",
        "doi 10.1145/3394486.3403059",
        "https://example.org/paper",
        "2019",
    ],
)
def test_a_query_with_anything_beside_an_identifier_is_searched_as_words(query: str) -> None:
    assert pasted(query) is None
