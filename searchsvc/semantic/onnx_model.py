"""The ONNX model files, built on first use into the service's model cache and checked by SHA-256.

Nothing is downloaded here: MiniLM's fp32 graph is built from the pinned safetensors weights
(`onnx_graph`); bge-small's is the one fetched at install time (`bge_model`). Each is rewritten
into int8 (`onnx_quantize`). Both steps are deterministic for
pinned `onnx`, `numpy` and `protobuf` versions, so the built files' SHA-256 are pinned below like
the weights' own; a file that differs (other versions, a damaged cache) is not used
(docs/decisions.md). Building both takes a few seconds, once per cache directory.

    python -m searchsvc.semantic.onnx_model [CACHE_DIR]   # build them now (an install step)
"""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

from safetensors.numpy import load_file

from searchsvc.host import ScratchFolder, remove_abandoned
from searchsvc.semantic import bge_model
from searchsvc.semantic.encoder import WEIGHTS_SHA256, checked_model_files, model_dir, sha256

# SHA-256 of each built file, for onnx==1.23.2, numpy==2.4.6 and protobuf==7.36.2 (pyproject.toml).
BUILT_SHA256 = {
    "onnx": "325354f19c5c820383db3cdc9677818b0de7ccac6ee99061b9e81c45dfde92a9",
    "onnx-int8": "227c3414670d5cf42351ee659c1f6d3675ec72126a76f8d9019b6435fef3f0f4",
    "bge-small-int8": "650b7c5c26b487f861bf2b5fa4e713616484bf9a399c04dd353efb15bee13304",
}
BGE = ("bge-small-int8", "bge-small")  # the encoders running bge-small-en-v1.5; the others run MiniLM
INT8_OF = {"onnx-int8": "onnx", "bge-small-int8": "bge-small"}  # each int8 model and the fp32 one it is built from

_TEMP_PREFIX = ".build-"  # a build's folder (host.ScratchFolder), its model file before it is renamed into place


class OnnxUnavailable(RuntimeError):
    """The ONNX model cannot be built, is not the expected file, or does not load: the numpy
    encoder is used instead (`selection.shared_encoder`)."""


def model_file(kind: str, cache_dir: Path) -> Path:
    """The checked model file of `kind` (an ONNX encoder's name), built into `cache_dir` if it is not
    there; bge-small's fp32 graph must have been fetched (`bge_model.BgeUnavailable` otherwise)."""
    if kind == "bge-small":
        return bge_model.checked_files(cache_dir)[0]
    path = cache_dir / _file_name(kind)
    if _is_expected(path, kind):
        return path
    if kind in INT8_OF:
        fp32 = model_file(INT8_OF[kind], cache_dir)  # before taking the lock, which that call takes too
        build: Callable[[Path], None] = partial(_quantize, fp32)
    else:
        build = _build_fp32
    cache_dir.mkdir(parents=True, exist_ok=True)
    with (cache_dir / ".build.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # workers starting together build it once; released on close
        if not _is_expected(path, kind):
            _write_atomically(path, build)
    if not _is_expected(path, kind):
        raise OnnxUnavailable(
            f"the {kind} model built here is not the expected file (SHA-256 differs): "
            f"are onnx, numpy and protobuf the pinned versions? ({path}: {sha256(path)})"
        )
    return path


def tokenizer_file(kind: str, cache_dir: Path) -> Path:
    """The checked tokenizer of the model `kind` runs."""
    return bge_model.checked_files(cache_dir)[1] if kind in BGE else checked_model_files(model_dir())[1]


def _file_name(kind: str) -> str:
    if kind in BGE:
        return f"bge-small-en-v1.5-{bge_model.MODEL_SHA256[:12]}-int8-{BUILT_SHA256[kind][:12]}.onnx"
    return f"all-MiniLM-L6-v2-{WEIGHTS_SHA256[:12]}-{kind}-{BUILT_SHA256[kind][:12]}.onnx"


def _is_expected(path: Path, kind: str) -> bool:
    return path.is_file() and sha256(path) == BUILT_SHA256[kind]


def _write_atomically(path: Path, build: Callable[[Path], None]) -> None:
    """Build into a temporary file beside `path`, then rename it into place: readers never see half a model."""
    remove_abandoned(path.parent, _TEMP_PREFIX)  # left by a process killed while building
    scratch = ScratchFolder(path.parent, _TEMP_PREFIX)
    try:
        tmp = scratch.path / path.name
        build(tmp)
        with open(tmp, "rb") as stream:
            os.fsync(stream.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        scratch.remove()


def _build_fp32(out: Path) -> None:
    from searchsvc.semantic.onnx_graph import build_graph

    weights, _tokenizer = checked_model_files(model_dir())
    out.write_bytes(build_graph(load_file(str(weights))).SerializeToString())


def _quantize(fp32: Path, out: Path) -> None:
    import onnx

    from searchsvc.semantic.onnx_quantize import quantize

    out.write_bytes(quantize(onnx.load(str(fp32))).SerializeToString())


def main(argv: list[str] | None = None) -> None:
    from searchsvc.settings import load_settings

    args = sys.argv[1:] if argv is None else argv
    cache_dir = Path(args[0]) if args else load_settings().model_cache_dir
    for kind in BUILT_SHA256:
        try:
            print(model_file(kind, cache_dir))
        except bge_model.BgeUnavailable as exc:
            print(f"{kind}: {exc}", file=sys.stderr)


if __name__ == "__main__":
    main()
