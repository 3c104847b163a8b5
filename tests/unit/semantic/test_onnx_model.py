"""The ONNX model files: built from the pinned weights, the same bytes every time, checked by SHA-256."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from onnx import TensorProto
from safetensors.numpy import load_file

from searchsvc.semantic import onnx_model
from searchsvc.semantic.encoder import model_dir, sha256
from searchsvc.semantic.onnx_graph import build_graph
from searchsvc.semantic.onnx_model import BUILT_SHA256, OnnxUnavailable, model_file
from searchsvc.semantic.onnx_quantize import quantize


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


def test_int8_rewrites_every_weight_product_but_the_value_projections() -> None:
    """Attention's activation-by-activation products have no weights and stay fp32, as do the six value
    projections (onnx_quantize.FP32_WEIGHTS); the other 30 of the 36 weight products run in int8."""
    fp32 = build_graph(load_file(str(model_dir() / "model.safetensors")))
    nodes = quantize(fp32).graph.node
    ops = Counter(node.op_type for node in nodes)
    kept = [node.input[1] for node in nodes if node.op_type == "MatMul"]
    assert ops["MatMulInteger"] == 30
    assert sorted(name for name in kept if name.endswith(".weight")) == [
        f"encoder.layer.{layer}.attention.self.value.weight" for layer in range(6)
    ]
    assert ops["MatMul"] == 6 + 12  # the value projections, and two products per layer's attention


def test_int8_products_multiply_unsigned_by_unsigned() -> None:
    """uint8 × int8 saturates on x86 CPUs without VNNI (onnx_quantize); uint8 × uint8 is exact on every CPU."""
    quantized = quantize(build_graph(load_file(str(model_dir() / "model.safetensors")))).graph
    types = {initializer.name: initializer.data_type for initializer in quantized.initializer}
    products = [node for node in quantized.node if node.op_type == "MatMulInteger"]
    assert products and all(types[node.input[1]] == TensorProto.UINT8 for node in products)
    assert all(len(node.input) == 4 for node in products)  # both zero points given: 128
