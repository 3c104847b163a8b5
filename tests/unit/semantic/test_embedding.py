"""Bringing the store up to date as a rebuild does: in worker processes on several cores, else in this one."""

from __future__ import annotations

import os
from contextlib import nullcontext
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from searchsvc.core.progress import ProgressFactory
from searchsvc.semantic import embedding, selection
from searchsvc.semantic.embedding import embed_new
from searchsvc.semantic.encoder import numpy_encoder
from searchsvc.semantic.selection import rebuild_encoder
from searchsvc.semantic.store import KEY_BYTES, content_key, load
from tests.helpers.apps import settings_for
from tests.unit.semantic.test_onnx_encoder import _onnx, _texts


def _counting(reports: list[int]) -> ProgressFactory:
    return lambda _phase, _total: nullcontext(reports.append)


@pytest.mark.parametrize("encoder", ["onnx", "numpy"])
def test_a_rebuild_on_two_cores_stores_the_vectors_of_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoder: str
) -> None:
    """onnx runs in two worker processes here (numpy in this one, on OpenBLAS's threads); progress still counts."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})
    monkeypatch.setattr(selection, "TEXTS_PER_PROCESS", 4)
    monkeypatch.setattr(embedding, "CHUNK", 8)
    texts = _texts()
    assert selection.rebuild_processes(len(texts)) == 2
    keys = np.array([content_key(text) for text in texts], dtype=f"S{KEY_BYTES}")
    reports: list[int] = []
    settings = settings_for(tmp_path, encoder=encoder)
    store = tmp_path / "vectors.npz"
    embedded = embed_new(store, keys, texts.__getitem__, partial(rebuild_encoder, settings), _counting(reports))
    assert embedded == len(texts)
    assert sum(reports) == len(texts) and len(reports) == -(-len(texts) // 8)
    in_one = _onnx(encoder) if encoder != "numpy" else numpy_encoder()
    want = np.vstack([in_one.encode(texts[start : start + 8]) for start in range(0, len(texts), 8)])
    stored = load(store)
    assert np.array_equal(stored.keys, keys)
    assert np.abs(stored.vectors.astype(np.float32) - want).max() < 1e-3  # float16 in the store
