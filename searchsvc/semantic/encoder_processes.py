"""A rebuild's embedding on one single-threaded ONNX Runtime process per core.

One process per core embedded more papers/s than ONNX Runtime's intra-op threads on this
machine with the default int8 encoder (docs/performance.md, "Embedding"): the threads wait on
each other at every operator. Processes
are spawned, not forked, and each creates its own session: a forked copy of a process
holding a session or the tokenizer's thread pool could deadlock. A process that dies (the
kernel's OOM killer) or fails ends the rebuild's embedding with an error naming it; a
process whose parent dies reads the end of its pipe and exits.
"""

from __future__ import annotations

import multiprocessing
import signal
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from types import TracebackType
from typing import cast

import numpy as np

from searchsvc.core.errors import RebuildFailed
from searchsvc.semantic.encoder import DIMENSIONS, load_tokenizer

UNIT = 4  # texts handed to a process at a time: fp32's batch, so its batches are a single process's
_JOIN_SECONDS = 10.0


@dataclass
class _Chunk:
    vectors: np.ndarray
    units_left: int


class EncoderProcesses:
    """`processes` workers running the `kind` model; as a context manager, gives `encode_chunks` and
    stops the workers on exit."""

    def __init__(self, kind: str, model_id: str, model: Path, tokenizer: Path, processes: int) -> None:
        self._tokenizer = load_tokenizer(tokenizer)  # only to sort texts by length: the workers run the model
        context = multiprocessing.get_context("spawn")
        self._workers = [_Worker(context, (kind, model_id, model, tokenizer)) for _ in range(processes)]

    def __enter__(self) -> Callable[[Iterable[list[str]]], Iterator[np.ndarray]]:
        return self.encode_chunks

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        for worker in self._workers:
            worker.stop()

    def encode_chunks(self, chunks: Iterable[list[str]]) -> Iterator[np.ndarray]:
        """The vectors of each chunk of texts, in order, as `Encoder.encode` would give them.

        Each chunk's texts are sorted by token count and dealt out UNIT at a time to whichever
        process is free, the next chunk's as soon as this one's are all out: no process waits
        for another, and long and short texts are shared as they come."""
        pending: dict[int, _Chunk] = {}
        units = self._units(chunks, pending)
        free = list(self._workers)
        busy: dict[Connection, tuple[_Worker, int, list[int]]] = {}
        first, exhausted = 0, False
        while True:
            while free and not exhausted:
                unit = next(units, None)
                if unit is None:
                    exhausted = True
                else:
                    worker = free.pop()
                    worker.send(unit[2])
                    busy[worker.conn] = (worker, unit[0], unit[1])
            while first in pending and pending[first].units_left == 0:
                yield pending.pop(first).vectors
                first += 1
            if not busy:
                return
            for conn in wait(list(busy)):
                worker, chunk, rows = busy.pop(cast(Connection, conn))  # wait() answers with what it was given
                pending[chunk].vectors[rows] = worker.receive()
                pending[chunk].units_left -= 1
                free.append(worker)

    def _units(
        self, chunks: Iterable[list[str]], pending: dict[int, _Chunk]
    ) -> Iterator[tuple[int, list[int], list[str]]]:
        """(chunk number, rows, texts) of each unit, registering each chunk in `pending` as it is read."""
        for number, texts in enumerate(chunks):
            lengths = [len(encoding.ids) for encoding in self._tokenizer.encode_batch(texts)]
            order = sorted(range(len(texts)), key=lengths.__getitem__)  # as OnnxEncoder.encode orders them
            starts = range(0, len(order), UNIT)
            pending[number] = _Chunk(np.zeros((len(texts), DIMENSIONS), dtype=np.float32), len(starts))
            for start in starts:
                rows = order[start : start + UNIT]
                yield number, rows, [texts[row] for row in rows]


class _Worker:
    """One process and the parent's end of its pipe."""

    def __init__(self, context: multiprocessing.context.SpawnContext, model: tuple[str, str, Path, Path]) -> None:
        self.conn, theirs = context.Pipe()
        self.process = context.Process(target=_serve, args=(theirs, *model), name="searchsvc-embedding", daemon=True)
        self.process.start()
        theirs.close()  # its end is the child's alone: its death reads as the end of the pipe here

    def send(self, texts: list[str]) -> None:
        try:
            self.conn.send(texts)
        except OSError:  # it has died: say how
            raise self._died() from None

    def receive(self) -> np.ndarray:
        try:
            reply = self.conn.recv()
        except (EOFError, OSError):
            raise self._died() from None
        if isinstance(reply, str):
            raise RebuildFailed(f"an embedding process failed: {reply}")
        return reply

    def stop(self) -> None:
        self.conn.close()  # it reads the end of the pipe and exits
        self.process.join(_JOIN_SECONDS)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()

    def _died(self) -> RebuildFailed:
        self.process.join(_JOIN_SECONDS)
        code = self.process.exitcode
        if code is not None and code < 0:
            how = f"was killed by {signal.Signals(-code).name}"
            if -code == signal.SIGKILL:
                how += " (by the kernel's OOM killer if memory ran out)"
        else:
            how = f"exited with status {code}"
        return RebuildFailed(f"an embedding process (pid {self.process.pid}) {how}")


def _serve(conn: Connection, kind: str, model_id: str, model: Path, tokenizer: Path) -> None:
    """In a worker: embed each list of texts received, until the parent closes its end or dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it closes the pipe
    try:
        from searchsvc.semantic.onnx_encoder import OnnxEncoder

        encoder = OnnxEncoder(kind, model_id, model, load_tokenizer(tokenizer), threads=1)
        while True:
            try:
                texts = conn.recv()
            except EOFError:
                return
            conn.send(encoder.encode(texts))
    except BrokenPipeError:
        return  # the parent is gone
    except Exception as exc:
        traceback.print_exc()  # the whole story on stderr; the parent's error gives the gist
        conn.send(f"{type(exc).__name__}: {exc}")
