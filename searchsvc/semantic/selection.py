"""Which encoder computes the vectors: the one the `encoder` setting names, or numpy if it cannot run.

ONNX Runtime is the fast path, but a machine without it (or where the model cannot be
built) still ranks by meaning with the numpy encoder: the service says so once, in the
log, and `searchsvc status` and /readyz name the encoder that runs.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from searchsvc.semantic.encoder import MODEL_ID, checked_model_files, load_tokenizer, model_dir, numpy_encoder
from searchsvc.semantic.onnx_model import BUILT_SHA256
from searchsvc.semantic.store import store_file

if TYPE_CHECKING:
    from searchsvc.settings import Settings

log = logging.getLogger(__name__)

# Below this many texts per process, starting the processes (each loads the model) costs more
# than the second core gains (docs/performance.md).
TEXTS_PER_PROCESS = 128
# The vectors of each chunk of texts, in order: how a rebuild embeds (`embedding.embed_new`).
EncodeChunks = Callable[[Iterable[list[str]]], Iterator[np.ndarray]]
# How a rebuild gets its way to embed n texts: `partial(rebuild_encoder, settings)`.
RebuildEncoder = Callable[[int], AbstractContextManager[EncodeChunks]]


class TextEncoder(Protocol):
    name: str  # the encoder that runs, as the setting names it
    model_id: str  # names its vectors in the store: other numbers, another id

    def encode(self, texts: list[str]) -> np.ndarray: ...

    def token_count(self, texts: list[str]) -> int: ...


def model_id(name: str) -> str:
    """The store name of `name`'s vectors. fp32 ONNX gives the numpy encoder's numbers (to ~2e-7, below
    float16's resolution in the store; tests/unit/semantic/test_onnx_encoder.py), so they share a store;
    int8 vectors differ by up to ~0.015 a component and have their own, named by the int8 model file, so
    vectors of an earlier int8 build are never served as this one's."""
    return f"{MODEL_ID}-{name}-{BUILT_SHA256[name][:12]}" if name == "onnx-int8" else MODEL_ID


def query_encoder(settings: Settings) -> TextEncoder:
    """The encoder a search embeds its query with: one thread, as each gunicorn worker has a core."""
    return shared_encoder(settings.encoder, settings.model_cache_dir)


def rebuild_encoder(settings: Settings, texts: int) -> AbstractContextManager[EncodeChunks]:
    """How a rebuild embeds `texts` texts: one single-threaded ONNX Runtime process per core, or in
    this process for one core, few texts, or the numpy encoder (whose OpenBLAS uses every core)."""
    processes = rebuild_processes(texts)
    model = None if settings.encoder == "numpy" else _onnx_model(settings.encoder, settings.model_cache_dir)
    if model is None or processes == 1:
        return nullcontext(partial(map, query_encoder(settings).encode))
    from searchsvc.semantic.encoder_processes import EncoderProcesses

    _weights, tokenizer = checked_model_files(model_dir())
    return EncoderProcesses(settings.encoder, model_id(settings.encoder), model, tokenizer, processes)


def vector_store(settings: Settings) -> Path:
    """The store file of the running encoder's vectors: after a fall back to numpy it is numpy's
    own, so vectors of two encoders never mix. With ranking by meaning off, no model is loaded."""
    name = query_encoder(settings).model_id if settings.semantic_ranking else model_id(settings.encoder)
    return store_file(settings.vector_store_dir, name)


@cache
def shared_encoder(name: str = "numpy", cache_dir: Path | None = None, threads: int = 1) -> TextEncoder:
    """One encoder per process and choice; `threads` > 1 only to measure ONNX Runtime's threads
    against processes (bench/embedding.py), never in a web worker."""
    if name == "numpy":
        return numpy_encoder()
    _weights, tokenizer = checked_model_files(model_dir())  # a missing model is a 503 whichever encoder runs
    model = _onnx_model(name, cache_dir or Path())
    if model is None:
        return numpy_encoder()
    from searchsvc.semantic.onnx_encoder import OnnxEncoder

    return OnnxEncoder(name, model_id(name), model, load_tokenizer(tokenizer), threads)


@cache
def _onnx_model(name: str, cache_dir: Path) -> Path | None:
    """The checked model file, or None (said once, in the log) when ONNX Runtime is missing or
    the model cannot be built."""
    try:
        import onnxruntime  # noqa: F401 - the runtime itself, before building anything for it

        from searchsvc.semantic.onnx_model import model_file

        return model_file(name, cache_dir)
    except ImportError as exc:
        reason = f"onnxruntime cannot be imported ({exc})"
    except (OSError, RuntimeError, ValueError) as exc:  # an unwritable cache, a build that differs
        reason = f"{type(exc).__name__}: {exc}"
    log.warning("the %s encoder cannot run, so the numpy encoder is used (about 4x slower): %s", name, reason)
    return None


def rebuild_processes(texts: int) -> int:
    """Processes for embedding `texts` texts: one per core, as long as each has enough to do."""
    return max(1, min(len(os.sched_getaffinity(0)), texts // TEXTS_PER_PROCESS))
