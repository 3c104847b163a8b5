"""The ONNX model files, built on first use into the service's model cache and checked by SHA-256.

Nothing is downloaded: the fp32 graph is built from the pinned safetensors weights
(`onnx_graph`) and quantized to int8 by ONNX Runtime. Both steps are deterministic for
pinned `onnx` and `onnxruntime` versions, so the built files' SHA-256 are pinned below like
the weights' own; a file that differs (other versions, a damaged cache) is not used
(docs/decisions.md). Building both takes a few seconds, once per cache directory.

    python -m searchsvc.semantic.onnx_model [CACHE_DIR]   # build them now (an install step)
"""

from __future__ import annotations

import fcntl
import logging
import os
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from safetensors.numpy import load_file

from searchsvc.core.processes import remove_abandoned
from searchsvc.semantic.encoder import WEIGHTS_SHA256, checked_model_files, model_dir, sha256

# SHA-256 of each built file, for onnx==1.23.2 and onnxruntime==1.31.1 (pyproject.toml).
BUILT_SHA256 = {
    "onnx": "325354f19c5c820383db3cdc9677818b0de7ccac6ee99061b9e81c45dfde92a9",
    "onnx-int8": "7e8769ff661cf5d88965eaa6a38226dcee7bd6d59ef7098ff476cdda1dda350f",
}


# int8 leaves the first two layers fp32: their error is carried through every layer after them,
# and of the mixes measured this one alone kept nDCG@10 within 0.003 of fp32 on all three test
# collections (docs/decisions.md). The prefixes of their weights' names in the fp32 graph.
FP32_LAYERS = ("encoder.layer.0.", "encoder.layer.1.")
_TEMP_PREFIX = ".build-"  # then the building process's id: a model file before it is renamed into place


class OnnxUnavailable(RuntimeError):
    """The ONNX model cannot be built, is not the expected file, or does not load: the numpy
    encoder is used instead (`selection.shared_encoder`)."""


def model_file(kind: str, cache_dir: Path) -> Path:
    """The checked model file of `kind` ("onnx" or "onnx-int8"), built into `cache_dir` if it is not there."""
    path = cache_dir / f"all-MiniLM-L6-v2-{WEIGHTS_SHA256[:12]}-{kind}-{BUILT_SHA256[kind][:12]}.onnx"
    if _is_expected(path, kind):
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    if kind == "onnx-int8":
        fp32 = model_file("onnx", cache_dir)  # before taking the lock, which that call takes too
        build: Callable[[Path], None] = partial(_quantize, fp32)
    else:
        build = _build_fp32
    with (cache_dir / ".build.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # workers starting together build it once; released on close
        if not _is_expected(path, kind):
            _write_atomically(path, build)
    if not _is_expected(path, kind):
        raise OnnxUnavailable(
            f"the {kind} model built here is not the expected file (SHA-256 differs): "
            f"are onnx and onnxruntime the pinned versions? ({path}: {sha256(path)})"
        )
    return path


def _is_expected(path: Path, kind: str) -> bool:
    return path.is_file() and sha256(path) == BUILT_SHA256[kind]


def _write_atomically(path: Path, build: Callable[[Path], None]) -> None:
    """Build into a temporary file beside `path`, then rename it into place: readers never see half a model."""
    remove_abandoned(path.parent, _TEMP_PREFIX)  # left by a process killed while building
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{_TEMP_PREFIX}{os.getpid()}-", suffix=".onnx")
    os.close(fd)
    try:
        build(Path(tmp))
        with open(tmp, "rb") as stream:
            os.fsync(stream.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _build_fp32(out: Path) -> None:
    from searchsvc.semantic.onnx_graph import build_graph

    weights, _tokenizer = checked_model_files(model_dir())
    out.write_bytes(build_graph(load_file(str(weights))).SerializeToString())


def _quantize(fp32: Path, out: Path) -> None:
    """Dynamic int8 quantization of the fp32 model's weight matrices, one scale per output column,
    but for those of FP32_LAYERS.

    One scale per matrix loses too much on this CPU (no VNNI: ONNX Runtime multiplies u8 by
    s8 with AVX2's saturating pair sums); attention's activation-by-activation products stay
    fp32 (MatMulConstBOnly)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    kept = [
        node.name
        for node in onnx.load(str(fp32)).graph.node
        if node.op_type == "MatMul" and node.input[1].startswith(FP32_LAYERS)
    ]
    logging.disable(logging.WARNING)  # its advice to pre-process the model, on the root logger
    try:
        quantize_dynamic(
            fp32,
            out,
            weight_type=QuantType.QInt8,
            per_channel=True,
            nodes_to_exclude=kept,
            extra_options={"MatMulConstBOnly": True},
        )
    finally:
        logging.disable(logging.NOTSET)


def main(argv: list[str] | None = None) -> None:
    from searchsvc.settings import load_settings

    args = sys.argv[1:] if argv is None else argv
    cache_dir = Path(args[0]) if args else load_settings().model_cache_dir
    for kind in BUILT_SHA256:
        print(model_file(kind, cache_dir))


if __name__ == "__main__":
    main()
