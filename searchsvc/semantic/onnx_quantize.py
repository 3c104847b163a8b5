"""int8 weight products with one activation scale per token: the int8 model, rewritten from the fp32 graph.

ONNX Runtime's own `quantize_dynamic` scales each layer's input by one number for the whole batch.
One large value anywhere (a separator token, one long text in a batch) then coarsens every other
token's, and a text's vector depends on the texts beside it. Scaling each token by its own largest
value costs a reduction per row and fixes both: with every product int8 the vectors came out 2.4
times closer to fp32's, and batching changes nothing (docs/decisions.md, docs/performance.md).

Each product X·W with a weight matrix W (K×N, an initializer) but those of FP32_WEIGHTS becomes

    w_scale = max|W| per column / 127          Wq = round(W / w_scale) + 128       uint8, stored
    x_scale = max(max|X| per token / 127, ε)   Xq = round(X / x_scale) + 128       uint8, computed
    X·W ≈ float(MatMulInteger(Xq, Wq, 128, 128)) · w_scale · x_scale

Xq is symmetric around 128 because ONNX Runtime takes A's zero point as one number, not one per
row. Wq is unsigned too, though its values are signed: ONNX Runtime multiplies uint8 by int8 on
x86 CPUs without VNNI (AVX2, AVX-512 before VNNI) with an instruction that adds each pair of
products in 16 bits and saturates (`vpmaddubsw`), so there the vectors came out twice as far from
fp32's and unlike those of CPUs with VNNI; uint8 by uint8 is exact on every CPU (docs/decisions.md,
2026-12-08). Products of two activations (attention's) stay fp32.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# The attention's value projections stay fp32: int8 there alone moved the vectors by half as much
# as int8 everywhere (1 − cosine 13.0e-4 of 23.5e-4), for 1/12 of the weight products' work, and
# keeping them fp32 kept nDCG@10 within 0.003 on all three test collections (docs/decisions.md).
FP32_WEIGHTS = (".attention.self.value.",)
_SHARED: dict[str, np.ndarray] = {  # constants every rewritten product uses
    "q8_inverse_127": np.array(1 / 127, np.float32),
    "q8_least_scale": np.array(1e-12, np.float32),  # an all-zero row divides by this, not by 0
    "q8_shift": np.array(128.0, np.float32),
    "q8_zero_point": np.array(128, np.uint8),
}


def quantize(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of the fp32 `model` in which every product with a weight matrix is int8, as above."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    weights = {initializer.name: initializer for initializer in graph.initializer}
    nodes: list[onnx.NodeProto] = []
    added: list[onnx.TensorProto] = [numpy_helper.from_array(value, name) for name, value in _SHARED.items()]
    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in weights and not any(p in node.input[1] for p in FP32_WEIGHTS):
            rewritten, constants = _int8_product(node, numpy_helper.to_array(weights[node.input[1]]))
            nodes += rewritten
            added += constants
        else:
            nodes.append(node)
    used = {name for node in nodes for name in node.input}
    kept = [initializer for initializer in graph.initializer if initializer.name in used]
    del graph.node[:], graph.initializer[:]
    graph.node.extend(nodes)
    graph.initializer.extend(kept + added)
    return model


def _int8_product(node: onnx.NodeProto, weight: np.ndarray) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """The nodes computing `node`'s X·W in int8, and their constants: Wq and w_scale."""
    w_scale = np.abs(weight).max(axis=0) / 127
    w_scale[w_scale == 0] = 1.0
    prefix = node.name
    constants = [
        numpy_helper.from_array((np.round(weight / w_scale) + 128).astype(np.uint8), f"{prefix}_wq"),
        numpy_helper.from_array(w_scale.astype(np.float32), f"{prefix}_w_scale"),
    ]
    nodes: list[onnx.NodeProto] = []

    # Attribute values are Any to onnx.helper.make_node too (ints, floats, lists, tensors...).
    def op(op_type: str, inputs: list[str], name: str, **attributes: Any) -> str:
        output = f"{prefix}_{name}"
        nodes.append(helper.make_node(op_type, inputs, [output], name=output, **attributes))
        return output

    x = node.input[0]
    peak = op("ReduceMax", [op("Abs", [x], "abs")], "peak", axes=[-1], keepdims=1)  # opset 17: axes an attribute
    x_scale = op("Max", [op("Mul", [peak, "q8_inverse_127"], "peak_127"), "q8_least_scale"], "x_scale")
    rounded = op("Round", [op("Div", [x, x_scale], "scaled")], "rounded")
    xq = op("Cast", [op("Add", [rounded, "q8_shift"], "shifted")], "xq", to=TensorProto.UINT8)
    int32 = op("MatMulInteger", [xq, f"{prefix}_wq", "q8_zero_point", "q8_zero_point"], "int32")
    product = op("Cast", [int32], "float", to=TensorProto.FLOAT)
    # Column scales first, then the token scales. Multiplied together first (one Mul by their
    # product), ONNX Runtime 1.31 fuses the pattern into MatMulIntegerToFloat as if the scale were
    # one number per tensor, and the vectors come out wrong (cosine 0.71 with fp32).
    by_column = op("Mul", [product, f"{prefix}_w_scale"], "by_column")
    nodes.append(helper.make_node("Mul", [by_column, x_scale], list(node.output), name=f"{prefix}_by_token"))
    return nodes, constants
