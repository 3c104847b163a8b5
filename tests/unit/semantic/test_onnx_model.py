"""The ONNX model files: built from the pinned weights, the same bytes every time, checked by SHA-256."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from safetensors.numpy import load_file

from searchsvc.semantic import onnx_model
from searchsvc.semantic.encoder import model_dir, sha256
from searchsvc.semantic.onnx_graph import build_graph
from searchsvc.semantic.onnx_model import BUILT_SHA256, OnnxUnavailable, model_file


def test_the_graph_is_built_byte_for_byte_the_same() -> None:
    """What lets the built file's SHA-256 be pinned in the code, like the weights' own."""
    weights = load_file(str(model_dir() / "model.safetensors"))
    assert build_graph(weights).SerializeToString() == build_graph(weights).SerializeToString()


def test_a_fresh_cache_gets_the_pinned_files(tmp_path: Path) -> None:
    for kind in ("onnx", "onnx-int8"):
        path = model_file(kind, tmp_path / "cache")
        assert sha256(path) == BUILT_SHA256[kind]
    assert sorted(p.name for p in (tmp_path / "cache").glob(".build-*")) == []  # no temporary file left


def test_a_damaged_cached_file_is_built_again(tmp_path: Path) -> None:
    path = model_file("onnx", tmp_path)
    path.write_bytes(b"not a model")
    assert model_file("onnx", tmp_path) == path
    assert sha256(path) == BUILT_SHA256["onnx"]


def test_a_build_that_differs_from_the_pinned_one_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Other onnx or onnxruntime versions may build other bytes: they are not used unchecked."""
    monkeypatch.setitem(onnx_model.BUILT_SHA256, "onnx", "0" * 64)
    with pytest.raises(OnnxUnavailable, match="not the expected file"):
        model_file("onnx", tmp_path)


def test_a_file_left_by_a_killed_build_is_removed_by_the_next(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    tmp_path.mkdir(exist_ok=True)
    left = tmp_path / f".build-{child.pid}-abc.onnx"
    left.write_bytes(b"")  # what a build killed before it wrote anything leaves
    model_file("onnx", tmp_path)
    assert not left.exists()
