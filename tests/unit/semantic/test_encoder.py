"""The numpy encoder against the reference implementation, and the model files it accepts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from searchsvc.semantic import encoder as encoder_module
from searchsvc.semantic.encoder import Encoder, ModelUnavailable, model_dir, numpy_encoder
from tests.helpers.paths import TEST_DATA

REFERENCE = TEST_DATA / "minilm-reference.json"


def test_encoder_matches_sentence_transformers() -> None:
    """Embeddings sentence-transformers 5.7 (PyTorch) computed for the same texts, one of them
    longer than the model's 256 tokens (so truncation is checked too)."""
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    got = numpy_encoder().encode(reference["texts"])
    want = np.array(reference["embeddings"], dtype=np.float32)
    assert got.shape == want.shape == (4, 384)
    assert np.abs(got - want).max() < 1e-5
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_encoder_order_does_not_depend_on_batching() -> None:
    texts = ["short", "a somewhat longer text about embedding tables " * 5, "FP8 training", ""]
    together = numpy_encoder().encode(texts)
    alone = np.vstack([numpy_encoder().encode([text]) for text in texts])
    assert np.abs(together - alone).max() < 1e-5


def test_model_files_other_than_the_published_ones_are_refused(tmp_path: Path) -> None:
    shutil.copy(model_dir() / "tokenizer.json", tmp_path / "tokenizer.json")
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 64)
    with pytest.raises(ModelUnavailable, match="not the published all-MiniLM-L6-v2 file"):
        Encoder(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(ModelUnavailable, match="is missing"):
        Encoder(tmp_path)


def test_the_encoder_is_loaded_once_per_process() -> None:
    assert encoder_module.numpy_encoder() is encoder_module.numpy_encoder()
