"""The ONNX graph of all-MiniLM-L6-v2, built from the pinned safetensors weights.

ONNX Runtime runs the model several times faster than numpy (int8 arithmetic, fused
kernels), but the usual way to get its graph is exporting it from PyTorch, which the
service does not install, or downloading one from a hub, which it never does. The graph
of a 6-layer BERT is short, so it is written here with `onnx.helper`, op for op as
`encoder.Encoder._forward` computes it; the tests hold both to the same numbers.

    python -m searchsvc.semantic.onnx_graph OUT.onnx   # the fp32 graph, for inspection
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from searchsvc.semantic.encoder import DIMENSIONS, HEAD_SIZE, HEADS, LAYERS

OPSET = 17  # the first with LayerNormalization
IR_VERSION = 8  # what opset 17 needs; `onnx` writes its own newest by default, which a runtime may not read yet
INPUTS = ("input_ids", "attention_mask")  # int64 (batch, tokens), as the tokenizer gives them
OUTPUT = "pooled"  # float32 (batch, 384): the mean of the real tokens' states, not yet unit length


class _Graph:
    """Nodes and initializers in the order they are added, so the same weights give the same bytes."""

    def __init__(self, weights: dict[str, np.ndarray]) -> None:
        self.w = weights
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._names: set[str] = set()
        self._count = 0

    def const(self, name: str, value: np.ndarray | np.generic) -> str:
        if name not in self._names:
            self._names.add(name)
            # asarray: a scalar such as np.float32(1.0) as the 0-d array from_array is typed to take (same bytes)
            self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    # Attribute values are Any to onnx.helper.make_node too (ints, floats, lists, tensors...).
    def op(self, op_type: str, inputs: list[str], output: str = "", **attributes: Any) -> str:
        self._count += 1
        output = output or f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, inputs, [output], name=output, **attributes))
        return output

    def linear(self, x: str, name: str) -> str:
        """x·Wᵀ + b, with Wᵀ stored transposed so the MatMul reads it as it is."""
        weight = self.const(name + ".weight", np.ascontiguousarray(self.w[name + ".weight"].T))
        return self.op("Add", [self.op("MatMul", [x, weight]), self.const(name + ".bias", self.w[name + ".bias"])])

    def layer_norm(self, x: str, name: str) -> str:
        scale, bias = (
            self.const(name + ".weight", self.w[name + ".weight"]),
            self.const(name + ".bias", self.w[name + ".bias"]),
        )
        return self.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=1e-12)


def build_graph(weights: dict[str, np.ndarray]) -> onnx.ModelProto:
    """The fp32 model: token ids and attention mask in, mean-pooled states out."""
    g = _Graph({name: array.astype(np.float32) for name, array in weights.items() if array.dtype != np.int64})
    x = _embeddings(g)
    padding = _padding(g)
    for layer in range(LAYERS):
        x = _layer(g, x, padding, f"encoder.layer.{layer}.")
    _mean_pool(g, x)
    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"]) for name in INPUTS],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", DIMENSIONS])],
        g.initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="searchsvc", ir_version=IR_VERSION
    )
    onnx.checker.check_model(model)
    return model


def _embeddings(g: _Graph) -> str:
    words = g.op("Gather", [g.const("word_embeddings", g.w["embeddings.word_embeddings.weight"]), "input_ids"])
    length = g.op("Shape", ["input_ids"], start=1, end=2)
    positions = g.op(
        "Slice",
        [
            g.const("position_embeddings", g.w["embeddings.position_embeddings.weight"]),
            g.const("zero", np.array([0])),
            length,
        ],
    )
    token_type = g.const("token_type_0", g.w["embeddings.token_type_embeddings.weight"][0])
    x = g.op("Add", [g.op("Add", [words, positions]), token_type])
    return g.layer_norm(x, "embeddings.LayerNorm")


def _padding(g: _Graph) -> str:
    """−1e9 where the mask is 0, broadcast over heads and query tokens: no attention paid to padding."""
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    bias = g.op("Mul", [g.op("Sub", [mask, g.const("one", np.float32(1.0))]), g.const("big", np.float32(1e9))])
    return g.op("Unsqueeze", [bias, g.const("axes_1_2", np.array([1, 2]))])


def _layer(g: _Graph, x: str, padding: str, p: str) -> str:
    heads = g.const("heads_shape", np.array([0, 0, HEADS, HEAD_SIZE]))

    def split(name: str, perm: list[int]) -> str:
        return g.op("Transpose", [g.op("Reshape", [g.linear(x, f"{p}attention.self.{name}"), heads])], perm=perm)

    query, key, value = split("query", [0, 2, 1, 3]), split("key", [0, 2, 3, 1]), split("value", [0, 2, 1, 3])
    scores = g.op("Div", [g.op("MatMul", [query, key]), g.const("sqrt_head", np.float32(math.sqrt(HEAD_SIZE)))])
    weights = g.op("Softmax", [g.op("Add", [scores, padding])], axis=-1)
    context = g.op("Transpose", [g.op("MatMul", [weights, value])], perm=[0, 2, 1, 3])
    context = g.op("Reshape", [context, g.const("hidden_shape", np.array([0, 0, DIMENSIONS]))])
    x = g.layer_norm(
        g.op("Add", [g.linear(context, p + "attention.output.dense"), x]), p + "attention.output.LayerNorm"
    )
    hidden = _gelu(g, g.linear(x, p + "intermediate.dense"))
    return g.layer_norm(g.op("Add", [g.linear(hidden, p + "output.dense"), x]), p + "output.LayerNorm")


def _gelu(g: _Graph, x: str) -> str:
    """BERT's exact GELU, x·½(1 + erf(x/√2)), as PyTorch exports it (ONNX Runtime fuses the pattern)."""
    erf = g.op("Erf", [g.op("Div", [x, g.const("sqrt2", np.float32(math.sqrt(2)))])])
    return g.op(
        "Mul", [g.op("Mul", [x, g.op("Add", [erf, g.const("one", np.float32(1.0))])]), g.const("half", np.float32(0.5))]
    )


def _mean_pool(g: _Graph, x: str) -> str:
    mask = g.op("Unsqueeze", [g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT), g.const("axis_2", np.array([2]))])
    axis = g.const("axis_1", np.array([1]))
    total = g.op("ReduceSum", [g.op("Mul", [x, mask]), axis], keepdims=0)
    return g.op("Div", [total, g.op("ReduceSum", [mask, axis], keepdims=0)], output=OUTPUT)


def main(argv: list[str] | None = None) -> None:
    from safetensors.numpy import load_file

    from searchsvc.semantic.encoder import model_dir

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        raise SystemExit("usage: python -m searchsvc.semantic.onnx_graph OUT.onnx")
    model = build_graph(load_file(str(model_dir() / "model.safetensors")))
    Path(args[0]).write_bytes(model.SerializeToString())


if __name__ == "__main__":
    main()
