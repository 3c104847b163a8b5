"""Hostile and broken source files through the real `searchsvc rebuild`: each fails at once with one
`error: file:line: what is wrong` line and no traceback, in bounded time and memory, and the index
published before keeps serving (same generation, searches answer)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.records import BILLION_LAUGHS, profile_page
from tests.system.test_cli_processes import SEARCHSVC

# A failing rebuild reads a megabyte of the file at most: its peak is the interpreter with the
# service's modules (60 MiB, as for a rebuild of one profile page), far below the 200 MB file.
MAX_PEAK_MIB = 150
MAX_SECONDS = 60  # the interpreter's start on a loaded machine; the refusal itself takes milliseconds


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_mib: float


# The process is started by a small Python that reports its child's peak RSS. (ru_maxrss of a child
# of pytest itself starts at pytest's own size: Linux keeps the high-water mark of the forked copy
# across exec.)
_PEAK_OF_CHILD = (
    "import resource, subprocess, sys; code = subprocess.call(sys.argv[2:]); "
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); sys.exit(code)"
)


def run(*args: str, env: dict[str, str]) -> Finished:
    """A real `searchsvc` process: its exit code, output, time and peak RSS (KiB from getrusage, on Linux)."""
    with tempfile.TemporaryDirectory() as folder:
        out, err, peak = (Path(folder) / name for name in ("out", "err", "peak"))
        started = time.monotonic()
        with out.open("wb") as stdout, err.open("wb") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-c", _PEAK_OF_CHILD, str(peak), SEARCHSVC, *args],
                env=env,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
            )
            try:
                process.wait(timeout=MAX_SECONDS * 2)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        seconds = time.monotonic() - started
        peak_kib = int(peak.read_text()) if peak.exists() else 0
        return Finished(process.returncode, out.read_text(), err.read_text(), seconds, peak_kib / 1024)


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], str]:
    """An index of one small profile page, published once for the module: (environment, status before)."""
    folder = tmp_path_factory.mktemp("published")
    page = folder / "ada.txt"
    page.write_text(profile_page("Ada", [("arXiv2020", "Quokka habitats", "A. Ada", "cs.LG↗")]), encoding="utf-8")
    env = {**os.environ, "SEARCHSVC_INDEX_DIR": str(folder / "index"), "SEARCHSVC_SEMANTIC_RANKING": "false"}
    built = run("rebuild", str(page), env=env)
    assert built.returncode == 0, built.stderr
    return env, run("status", env=env).stdout


def billion_laughs(folder: Path) -> Path:
    path = folder / "bomb.atom"
    path.write_text(BILLION_LAUGHS, encoding="utf-8")
    return path


def one_200_mb_line(folder: Path) -> Path:
    """A JSON array of records dumped on one line, 200 MB (written as a repeated chunk: well under a second)."""
    path = folder / "dump.json"
    chunk = json.dumps([{"title": "Quokka habitats", "abstract": "x" * 1000}] * 1000)[1:-1].encode() + b", "
    with path.open("wb") as stream:
        stream.write(b"[")
        while stream.tell() < 200_000_000:
            stream.write(chunk)
        stream.write(b"{}]")
    return path


def binary(folder: Path) -> Path:
    path = folder / "photo.bib"  # a picture saved under a source's name
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40_000)
    return path


def check_refused(
    published: tuple[dict[str, str], str], folder: Path, make: Callable[[Path], Path], problem: str
) -> Finished:
    env, before = published
    path = make(folder)
    result = run("rebuild", str(path), env=env)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(f"error: {path}:") and result.stderr.count("\n") == 1, result.stderr
    assert problem in result.stderr and "Traceback" not in result.stderr
    assert result.seconds < MAX_SECONDS and 0 < result.peak_mib < MAX_PEAK_MIB, (result.seconds, result.peak_mib)
    assert run("status", env=env).stdout == before  # the same generation serves
    found = run("search", "quokka", "--json", env=env)
    assert found.returncode == 0 and json.loads(found.stdout)["total"] == 1
    return result


@pytest.mark.reliability
def test_billion_laughs_atom_is_refused(published, tmp_path: Path) -> None:
    check_refused(published, tmp_path, billion_laughs, ":2: refused: the XML declares a DTD")


@pytest.mark.reliability
def test_200_mb_single_line_is_refused_at_the_line_limit(published, tmp_path: Path) -> None:
    check_refused(published, tmp_path, one_200_mb_line, ":1: line longer than 1,000,000 bytes: not a paper record")


@pytest.mark.reliability
def test_binary_file_is_refused(published, tmp_path: Path) -> None:
    check_refused(published, tmp_path, binary, ":1: not UTF-8 text (byte 1 of the line)")
