"""The acronyms a collection defines (core.acronyms: Schwartz and Hearst's "long form (SF)" pairs)."""

from __future__ import annotations

import pytest

from searchsvc.core.acronyms import MAX_LONG_FORMS, Acronym, defined, merged, mine


@pytest.mark.parametrize(
    ("text", "pairs"),
    [
        (
            "We train Deep Learning Recommendation Models (DLRM) at scale.",
            [("DLRM", "deep learning recommendation models")],
        ),
        ("Deep neural networks (DNNs) are everywhere.", [("DNN", "deep neural networks")]),  # a plural short form
        (
            "We propose Fault-Tolerant Hybrid-Sharded Data Parallelism (FT-HSDP).",
            [("FT-HSDP", "fault tolerant hybrid sharded data parallelism")],
        ),
        (
            "using differentiable neural architecture search (DNAS) and",
            [("DNAS", "differentiable neural architecture search")],
        ),
        ("Accident and Emergency (A&E) units", []),  # "and emergency": a long form never starts with a joining word
        ("as shown before (see Table 2)", []),
        ("results from 2019 (2019)", []),
        ("a model (dnn) with", []),  # no capital: not a short form
        ("the BERT model (BERT) is", []),  # the long form holds the short form itself
        ("Click-through rate (CTR). Then (CTR) again", [("CTR", "click through rate")]),  # not across a sentence
    ],
)
def test_what_a_text_defines(text: str, pairs: list[tuple[str, str]]) -> None:
    assert list(defined(text)) == pairs


def test_mining_counts_papers_and_keeps_the_commonest_long_forms() -> None:
    texts = [
        "Neural architecture search (NAS) finds networks. Neural architecture search (NAS) again.",  # one paper
        "We use neural architecture search (NAS).",
        "Network attached storage (NAS) is slow.",
        "Tensor parallelism (TP) and tower partitioner (TP).",
    ]
    found = {acronym.short: acronym for acronym in mine(texts)}
    assert found["NAS"] == Acronym("NAS", ("neural architecture search", "network attached storage"), 3)
    assert found["TP"].long == ("tensor parallelism", "tower partitioner")
    many = [f"Alpha beta{'x' * n} (AB) here" for n in range(MAX_LONG_FORMS + 2)]
    assert len({a.short: a for a in mine(many)}["AB"].long) == MAX_LONG_FORMS


def test_an_update_adds_its_papers_pairs_to_the_published_ones() -> None:
    kept = [Acronym("NAS", ("neural architecture search",), 2), Acronym("TP", ("tensor parallelism",), 1)]
    more = [Acronym("NAS", ("network attached storage",), 1), Acronym("CTR", ("click through rate",), 1)]
    assert merged(kept, more) == [
        Acronym("CTR", ("click through rate",), 1),
        Acronym("NAS", ("neural architecture search", "network attached storage"), 3),
        Acronym("TP", ("tensor parallelism",), 1),
    ]
