"""Which encoder runs: the setting, the fall back to numpy, each one's vector store, and where it is shown."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from searchsvc.core.errors import ConfigurationError
from searchsvc.semantic import onnx_model, selection
from searchsvc.semantic.encoder import MODEL_ID, Encoder
from searchsvc.semantic.onnx_model import BUILT_SHA256
from searchsvc.semantic.selection import shared_encoder, vector_store
from tests.helpers.apps import app_for, settings_for
from tests.helpers.indexes import MakeIndex


@pytest.fixture
def fresh_choice() -> Iterator[None]:
    """Forget the encoders this process has chosen, before and after the test."""
    selection.shared_encoder.cache_clear()
    selection._onnx_model.cache_clear()
    yield
    selection.shared_encoder.cache_clear()
    selection._onnx_model.cache_clear()


def test_the_setting_names_one_of_three_encoders(tmp_path: Path) -> None:
    for name in ("onnx-int8", "onnx", "numpy"):
        assert settings_for(tmp_path, encoder=name).encoder == name
    assert settings_for(tmp_path).encoder == "onnx-int8"
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
    selection._onnx_model.cache_clear()
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    assert vector_store(settings_for(tmp_path, encoder="onnx-int8")).name == stores["numpy"]


@pytest.mark.parametrize("encoder", ["onnx", "onnx-int8", "numpy"])
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
