"""Which encoder computes the vectors: the one the `encoder` setting names, or the next that can run.

bge-small-en-v1.5 needs its files fetched with Maven at install time; without them MiniLM on
ONNX Runtime (`onnx-int8`) runs. ONNX Runtime is the fast path, but a machine without it (or
where the model cannot be built) still ranks by meaning with the numpy encoder. Either way the
service says so once, in the log, and `searchsvc status` and /readyz name the encoder that runs
and why it is not the one configured (`encoder_notice`: how to get that one).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from searchsvc.semantic.bge_model import MODEL_SHA256 as BGE_SHA256
from searchsvc.semantic.bge_model import BgeUnavailable
from searchsvc.semantic.encoder import MODEL_ID, checked_model_files, load_tokenizer, model_dir, numpy_encoder
from searchsvc.semantic.onnx_model import BGE, BUILT_SHA256, tokenizer_file
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
BGE_ID = f"bge-small-en-v1.5@{BGE_SHA256[:12]}"
FALLBACK = "onnx-int8"  # what runs when bge-small cannot


class TextEncoder(Protocol):
    name: str  # the encoder that runs, as the setting names it
    model_id: str  # names its vectors in the store: other numbers, another id
    query_prefix: str  # put before a query's text (never a paper's) before it is embedded

    def encode(self, texts: list[str]) -> np.ndarray: ...

    def token_count(self, texts: list[str]) -> int: ...


@dataclass(frozen=True)
class Choice:
    """The encoder that runs for a configured one, its ONNX model file (None for numpy), and, when it is
    not the one configured, why and how to get that one."""

    kind: str
    model: Path | None
    notice: str = ""


def model_id(name: str) -> str:
    """The store name of `name`'s vectors: bge's and MiniLM's never share one. fp32 ONNX gives the numpy
    encoder's numbers (to ~2e-7, below float16's resolution in the store; tests/unit/semantic/test_onnx_encoder.py),
    so they share a store; int8 vectors differ by up to ~0.015 a component and have their own, named by
    the int8 model file, so vectors of an earlier int8 build are never served as this one's."""
    if name in BGE:
        return f"{BGE_ID}-int8-{BUILT_SHA256[name][:12]}" if name in BUILT_SHA256 else BGE_ID
    return f"{MODEL_ID}-{name}-{BUILT_SHA256[name][:12]}" if name == "onnx-int8" else MODEL_ID


def query_encoder(settings: Settings) -> TextEncoder:
    """The encoder a search embeds its query with: one thread, as each gunicorn worker has a core."""
    return shared_encoder(settings.encoder, settings.model_cache_dir)


def rebuild_encoder(settings: Settings, texts: int) -> AbstractContextManager[EncodeChunks]:
    """How a rebuild embeds `texts` texts: one single-threaded ONNX Runtime process per core, or in
    this process for one core, few texts, or the numpy encoder (whose OpenBLAS uses every core)."""
    processes = rebuild_processes(texts)
    choice = choose(settings.encoder, settings.model_cache_dir)
    if choice.model is None or processes == 1:
        return nullcontext(partial(map, query_encoder(settings).encode))
    from searchsvc.semantic.encoder_processes import EncoderProcesses

    tokenizer = tokenizer_file(choice.kind, settings.model_cache_dir)
    return EncoderProcesses(choice.kind, model_id(choice.kind), choice.model, tokenizer, processes)


def vector_store(settings: Settings) -> Path:
    """The store file of the running encoder's vectors: after a fall back to numpy it is numpy's
    own, so vectors of two encoders never mix. With ranking by meaning off, no model is loaded."""
    name = query_encoder(settings).model_id if settings.semantic_ranking else model_id(settings.encoder)
    return store_file(settings.vector_store_dir, name)


def encoder_status(settings: Settings) -> dict[str, Any]:
    """What `status` and /readyz say of ranking by meaning's encoder: the one that runs, and why it is
    not the configured one (with how to get that) when it is not."""
    running = query_encoder(settings).name
    notice = choose(settings.encoder, settings.model_cache_dir).notice
    return {"encoder": running, **({"encoder_notice": notice} if notice else {})}


@cache
def shared_encoder(name: str = "numpy", cache_dir: Path | None = None, threads: int = 1) -> TextEncoder:
    """One encoder per process and choice; `threads` > 1 only to measure ONNX Runtime's threads
    against processes (bench/embedding.py), never in a web worker."""
    if name == "numpy":
        return numpy_encoder()
    checked_model_files(model_dir())  # a missing MiniLM is a 503 whichever encoder runs: it is the fall back
    cache_dir = cache_dir or Path()
    choice = choose(name, cache_dir)
    if choice.model is None:
        return numpy_encoder()
    from searchsvc.semantic.onnx_encoder import OnnxEncoder

    tokenizer = load_tokenizer(tokenizer_file(choice.kind, cache_dir))
    return OnnxEncoder(choice.kind, model_id(choice.kind), choice.model, tokenizer, threads)


@cache
def choose(name: str, cache_dir: Path) -> Choice:
    """The encoder that runs for `name`: itself, else MiniLM on ONNX Runtime for bge-small, else numpy;
    each step down said once, in the log."""
    if name == "numpy":
        return Choice("numpy", None)
    if name in BGE:
        try:
            return Choice(name, _onnx_model(name, cache_dir))
        except (BgeUnavailable, _OnnxCannotRun) as exc:
            fallback = choose(FALLBACK, cache_dir)
            notice = f"the {name} encoder cannot run, so MiniLM ({fallback.kind}) ranks by meaning: {exc}"
            log.warning("%s", notice)
            return Choice(fallback.kind, fallback.model, notice + (f"; {fallback.notice}" if fallback.notice else ""))
    try:
        return Choice(name, _onnx_model(name, cache_dir))
    except _OnnxCannotRun as exc:
        notice = f"the {name} encoder cannot run, so the numpy encoder is used (about 4x slower): {exc}"
    log.warning("%s", notice)
    return Choice("numpy", None, notice)


class _OnnxCannotRun(Exception):
    """ONNX Runtime is missing, or the model file cannot be built as pinned."""


def _onnx_model(name: str, cache_dir: Path) -> Path:
    """The checked model file; BgeUnavailable for bge-small's missing or damaged files, _OnnxCannotRun
    when ONNX Runtime is missing or the model cannot be built or loaded."""
    try:
        import onnxruntime  # noqa: F401 - the runtime itself, before building anything for it

        from searchsvc.semantic.onnx_model import model_file

        return model_file(name, cache_dir)
    except BgeUnavailable:
        raise
    except ImportError as exc:
        raise _OnnxCannotRun(f"onnxruntime cannot be imported ({exc})") from exc
    except (OSError, RuntimeError, ValueError) as exc:  # an unwritable cache, a build that differs
        raise _OnnxCannotRun(f"{type(exc).__name__}: {exc}") from exc


def rebuild_processes(texts: int) -> int:
    """Processes for embedding `texts` texts: one per core, as long as each has enough to do."""
    return max(1, min(len(os.sched_getaffinity(0)), texts // TEXTS_PER_PROCESS))
