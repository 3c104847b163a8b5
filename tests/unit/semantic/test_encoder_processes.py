"""A rebuild's embedding in worker processes: the vectors of one process, and an error, never a hang, when one dies."""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from searchsvc.core.errors import RebuildFailed
from searchsvc.semantic import selection
from searchsvc.semantic.encoder_processes import EncoderProcesses
from searchsvc.semantic.onnx_model import tokenizer_file
from searchsvc.settings import load_settings
from tests.unit.semantic.test_onnx_encoder import _onnx, _texts


def _processes(kind: str, model: Path | None = None) -> EncoderProcesses:
    cache = load_settings(environ={}).model_cache_dir
    model = model or selection._onnx_model(kind, cache)
    return EncoderProcesses(kind, selection.model_id(kind), model, tokenizer_file(kind, cache), 2)


def _chunks(size: int) -> list[list[str]]:
    texts = _texts()
    return [texts[start : start + size] for start in range(0, len(texts), size)]


@pytest.mark.parametrize("kind", ["onnx", "onnx-int8", "bge-small-int8"])
def test_two_processes_give_the_vectors_of_one(kind: str) -> None:
    """A rebuild's processes and a search's encoder give a paper one vector (the same cut, pooling, model)."""
    chunks = _chunks(9)
    with _processes(kind) as encode_chunks:
        got = list(encode_chunks(iter(chunks)))
    assert [len(vectors) for vectors in got] == [len(chunk) for chunk in chunks]
    want = [_onnx(kind).encode(chunk) for chunk in chunks]
    assert np.abs(np.vstack(got) - np.vstack(want)).max() < 1e-6
    assert not multiprocessing.active_children(), "the workers outlived their encoder"


def test_a_worker_killed_while_embedding_is_an_error_naming_it() -> None:
    """What the kernel's OOM killer does: SIGKILL, no word from the process."""
    with pytest.raises(RebuildFailed, match=r"embedding process \(pid \d+\) was killed by SIGKILL"):  # noqa: PT012
        with _processes("onnx") as encode_chunks:
            for number, _vectors in enumerate(encode_chunks(iter(_chunks(4) * 4))):
                if number == 0:
                    for worker in multiprocessing.active_children():
                        os.kill(worker.pid, signal.SIGKILL)
    assert not multiprocessing.active_children()


def test_a_worker_that_fails_is_an_error_saying_why(tmp_path: Path) -> None:
    damaged = tmp_path / "model.onnx"
    damaged.write_bytes(b"not a model")
    with pytest.raises(RebuildFailed, match="embedding process failed: OnnxUnavailable: ONNX Runtime cannot load"):
        with _processes("onnx", damaged) as encode_chunks:
            list(encode_chunks(iter(_chunks(4))))
    assert not multiprocessing.active_children()


def test_processes_only_for_enough_texts_and_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})
    assert selection.rebuild_processes(10) == 1
    assert selection.rebuild_processes(2 * selection.TEXTS_PER_PROCESS) == 2
    assert selection.rebuild_processes(100_000) == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0})
    assert selection.rebuild_processes(100_000) == 1
