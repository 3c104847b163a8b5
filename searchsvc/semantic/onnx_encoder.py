"""Sentence embeddings on ONNX Runtime: all-MiniLM-L6-v2 (the same numbers as `encoder.Encoder`
in fp32, close to them in int8, several times faster: docs/performance.md) or bge-small-en-v1.5."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnxruntime.capi.onnxruntime_pybind11_state import Fail, InvalidGraph, InvalidProtobuf, NoSuchFile
from tokenizers import Encoding, Tokenizer

from searchsvc.semantic.encoder import DIMENSIONS
from searchsvc.semantic.onnx_graph import INPUTS
from searchsvc.semantic.onnx_model import BGE, OnnxUnavailable

# Texts per forward pass, sorted by length so a batch pads little; small batches are no slower
# here (docs/performance.md). int8 runs one text at a time, which pads nothing: its per-token
# scales (`onnx_quantize`) leave a text's vector the same in any batch, but batches of 2–16 were
# slower (papers/s 36, 36, 33, 29, 25 for 1, 2, 4, 8, 16 texts, one run).
BATCH = {"onnx": 4, "onnx-int8": 1, "bge-small": 4, "bge-small-int8": 1}
# bge's graph gives every token's state and is pooled here by its first ([CLS]) token, as BAAI
# trained it; MiniLM's graph pools (the mean of the real tokens) itself.
CLS_POOLED = BGE
# What goes before a query's text (never a paper's) for each encoder: nothing. BAAI's model card
# suggests an instruction for bge's retrieval queries; measured, it moved nDCG@10 by noise either
# way and cost 8 more tokens a query, more than doubling a short query's embedding
# (docs/decisions.md, 2026-12-08). `python -m bench relevance --query-instruction` measures it.
BAAI_INSTRUCTION = "Represent this sentence for searching relevant passages: "
QUERY_PREFIX: dict[str, str] = {}
_LOAD_ERRORS = (Fail, InvalidGraph, InvalidProtobuf, NoSuchFile)  # ONNX Runtime's own, not Python's


class OnnxEncoder:
    """Maps texts to unit-length 384-dimensional vectors with an ONNX model file from `onnx_model`."""

    def __init__(self, kind: str, model_id: str, model: Path, tokenizer: Tokenizer, threads: int) -> None:
        self.name, self.model_id = kind, model_id
        self.query_prefix = QUERY_PREFIX.get(kind, "")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads  # 1: no thread pool at all, as a gunicorn worker needs
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3  # errors only: its warnings would go to stderr, not the log
        try:
            self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        except _LOAD_ERRORS as exc:
            raise OnnxUnavailable(f"ONNX Runtime cannot load {model.name}: {exc}") from exc
        self._inputs = [given.name for given in self._session.get_inputs()]  # bge's takes token_type_ids too
        self._tokenizer = tokenizer  # no padding set: batches are padded here, to their own longest text

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embeddings of `texts`, in order, as float32 rows."""
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(texts) if texts else []
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        batch = BATCH[self.name]
        for start in range(0, len(order), batch):
            rows = order[start : start + batch]
            out[rows] = self._forward([encodings[i] for i in rows])
        return out

    def token_count(self, texts: list[str]) -> int:
        """Tokens the model reads for `texts` (each cut at MAX_TOKENS): the measure of its work."""
        return sum(len(encoding.ids) for encoding in self._tokenizer.encode_batch(texts))

    def _forward(self, encodings: list[Encoding]) -> np.ndarray:
        length = max(len(encoding.ids) for encoding in encodings)
        ids = np.zeros((len(encodings), length), dtype=np.int64)
        mask = np.zeros((len(encodings), length), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        given = dict(zip(INPUTS, (ids, mask), strict=True))
        feeds = {name: given.get(name, np.zeros_like(ids)) for name in self._inputs}  # token type 0 throughout
        (pooled,) = self._session.run(None, feeds)
        if self.name in CLS_POOLED:
            pooled = pooled[:, 0]
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
