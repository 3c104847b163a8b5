"""bge-small-en-v1.5 on ONNX Runtime: pooled by its [CLS] token, int8 close to fp32, queries as typed.

Needs the model fetched (`python -m searchsvc.semantic.bge_model`, a step of the README's test command)."""

from __future__ import annotations

import numpy as np
import pytest

from searchsvc.semantic import onnx_encoder
from searchsvc.semantic.selection import TextEncoder, shared_encoder
from searchsvc.settings import load_settings
from tests.unit.semantic.test_onnx_encoder import _texts

TEXTS = [
    "Aspirin reduces the risk of heart attack.",
    "Acetylsalicylic acid lowers myocardial infarction risk.",
    "Deep learning for image segmentation.",
]
# Cosines of TEXTS' fp32 vectors (0-1, 0-2, 1-2), computed once with onnxruntime and tokenizers alone
# on the fetched graph (the first token's state, unit length). Mean pooling would give others.
FP32_COSINES = (0.8482, 0.4495, 0.4326)
FP32_FIRST = (-0.0425, 0.0287, -0.0270, 0.0614)  # the first four components of TEXTS[0]'s vector


def _bge(kind: str) -> TextEncoder:
    encoder = shared_encoder(kind, load_settings(environ={}).model_cache_dir)
    assert encoder.name == kind, f"{kind} did not run: fetch it with `python -m searchsvc.semantic.bge_model`"
    return encoder


def _cosines(vectors: np.ndarray) -> tuple[float, ...]:
    return tuple(float(vectors[a] @ vectors[b]) for a, b in ((0, 1), (0, 2), (1, 2)))


def test_fp32_gives_the_reference_numbers() -> None:
    vectors = _bge("bge-small").encode(TEXTS)
    assert np.allclose(_cosines(vectors), FP32_COSINES, atol=1e-3)
    assert np.allclose(vectors[0, :4], FP32_FIRST, atol=1e-3)


def test_int8_points_every_text_the_way_fp32_does() -> None:
    """Ours (per-token int8 from the fp32 graph): mean 1 − cosine 5.3e-4 on 300 SciFact abstracts, 3.3x closer
    than the -q jar's int8 (docs/decisions.md); 6.2e-4 on these texts, where uint8 × int8 products, which
    saturate on x86 CPUs without VNNI, gave 1.2e-3 on such a CPU (onnx_quantize)."""
    texts = [*TEXTS, *_texts()]
    got, want = _bge("bge-small-int8").encode(texts), _bge("bge-small").encode(texts)
    cosines = (got * want).sum(axis=1)
    assert cosines.min() >= 0.99 and 1 - cosines.mean() < 1e-3
    assert np.allclose(_cosines(got), FP32_COSINES, atol=0.01)


def test_queries_are_embedded_as_typed_like_papers() -> None:
    """Without BAAI's instruction: it moved nDCG@10 by noise either way and more than doubled a short
    query's tokens (docs/decisions.md, 2026-12-08)."""
    assert _bge("bge-small-int8").query_prefix == ""
    assert shared_encoder("onnx-int8", load_settings(environ={}).model_cache_dir).query_prefix == ""


@pytest.mark.parametrize("kind", ["bge-small", "bge-small-int8"])
def test_a_texts_vector_does_not_depend_on_its_batch(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(onnx_encoder.BATCH, kind, 4)
    texts = [*_texts()[:9], ""]
    together = _bge(kind).encode(texts)
    alone = np.vstack([_bge(kind).encode([text]) for text in texts])
    assert np.abs(together - alone).max() < 1e-4
