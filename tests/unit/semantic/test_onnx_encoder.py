"""The ONNX encoders against the numpy encoder, the reference: fp32 gives its numbers, int8 close ones."""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest

from searchsvc.ingest.sources import discover, read_records
from searchsvc.semantic import onnx_encoder
from searchsvc.semantic.encoder import numpy_encoder
from searchsvc.semantic.selection import TextEncoder, shared_encoder
from searchsvc.semantic.store import paper_text
from searchsvc.settings import load_settings
from tests.helpers.paths import SEEDS, TEST_DATA


@cache
def _texts() -> list[str]:
    """The seeds' papers as a rebuild embeds them, and the reference texts (one past 256 tokens)."""
    papers = [paper_text(paper.title, paper.abstract) for paper in read_records(discover([SEEDS]), lambda _m: None)]
    reference = json.loads((TEST_DATA / "minilm-reference.json").read_text(encoding="utf-8"))["texts"]
    return papers + reference + ["FP8 training"]


def _onnx(kind: str) -> TextEncoder:
    encoder = shared_encoder(kind, load_settings(environ={}).model_cache_dir)
    assert encoder.name == kind, "ONNX Runtime did not run: the test would compare numpy with itself"
    return encoder


def test_fp32_onnx_gives_the_numpy_encoders_numbers() -> None:
    texts = _texts()
    assert len(texts) > 20
    got, want = _onnx("onnx").encode(texts), numpy_encoder().encode(texts)
    assert np.abs(got - want).max() < 1e-4


def test_int8_onnx_points_every_text_the_same_way() -> None:
    """Cosine with the numpy encoder's vector of at least 0.99 for each text (0.997 at least and 0.999 on
    average over 160 ACL abstracts; nDCG@10 on the test collections: docs/performance.md). On average
    1 − cosine is 8.5e-4 on these texts; uint8 × int8 products, which saturate on x86 CPUs without
    VNNI, gave 2.2e-3 on such a CPU (onnx_quantize)."""
    texts = _texts()
    got, want = _onnx("onnx-int8").encode(texts), numpy_encoder().encode(texts)
    cosines = (got * want).sum(axis=1)
    assert cosines.min() >= 0.99 and 1 - cosines.mean() < 1.3e-3
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("kind", ["onnx", "onnx-int8"])
def test_a_texts_vector_does_not_depend_on_its_batch(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches are padded to their longest text: the padding must change nothing, nor, for int8, the
    other texts (each token has its own scale; int8 runs one text a pass, so batches are forced here)."""
    monkeypatch.setitem(onnx_encoder.BATCH, kind, 4)
    texts = [*_texts()[:9], ""]
    together = _onnx(kind).encode(texts)
    alone = np.vstack([_onnx(kind).encode([text]) for text in texts])
    assert np.abs(together - alone).max() < 1e-4
    assert _onnx(kind).encode([]).shape == (0, 384)


def test_token_counts_agree_with_the_numpy_encoder() -> None:
    assert _onnx("onnx").token_count(_texts()) == numpy_encoder().token_count(_texts())
