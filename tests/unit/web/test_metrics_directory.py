"""The metrics folder's start (prometheus_client's multiprocess mode): only the library's files are
emptied, and a folder another running server keeps its metrics in is refused. Across real gunicorn
workers: tests/system/test_metrics_gunicorn.py."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from prometheus_client import Counter, Gauge, Histogram, Summary

from searchsvc.core.errors import ConfigurationError
from searchsvc.web import metrics_directory
from searchsvc.web.metrics_directory import MULTIPROC_DIR_ENV
from tests.helpers.servers import gunicorn_refusing

_SERVE = """
import sys, time
from searchsvc.web import metrics_directory
metrics_directory.prepare()
print("serving", flush=True)
time.sleep(60)
"""


@contextmanager
def another_server(directory: Path) -> Iterator[subprocess.Popen[str]]:
    """A process that took `directory` for its metrics, as a running server's master has, until killed."""
    env_setting = f"import os; os.environ[{MULTIPROC_DIR_ENV!r}] = {str(directory)!r}\n"
    server = subprocess.Popen([sys.executable, "-c", env_setting + _SERVE], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "serving"
        yield server
    finally:
        server.kill()
        server.wait()
        server.stdout.close()


@pytest.fixture
def directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "metrics"
    monkeypatch.setenv(MULTIPROC_DIR_ENV, str(folder))
    yield folder
    metrics_directory.remove(None)  # let go of the folder, as the master does at its exit


def test_the_library_file_names_are_every_one_prometheus_client_writes() -> None:
    """values.py names a file `{type}_{pid}.db`, a gauge's `gauge_{mode}_{pid}.db`."""
    prefixes = [kind._type for kind in (Counter, Histogram, Summary)]
    prefixes += [f"gauge_{mode}" for mode in Gauge._MULTIPROC_MODES]
    assert all(metrics_directory.LIBRARY_FILE.fullmatch(f"{prefix}_4242.db") for prefix in prefixes)


def test_a_start_removes_the_library_files_and_nothing_else(directory: Path) -> None:
    """Issue #36: every `*.db` in the folder was deleted, not only the library's."""
    directory.mkdir()
    library = ["counter_12.db", "histogram_12.db", "summary_7.db", "gauge_livesum_12.db", "gauge_all_3.db"]
    others = ["cache.db", "counter.db", "counter_x.db", "gauge_12.db", "counter_12.db.bak", "notes.txt"]
    for name in library + others:
        (directory / name).write_bytes(b"x")
    assert metrics_directory.prepare() is None
    assert sorted(path.name for path in directory.iterdir() if path.suffix != ".lock") == sorted(others)


def test_a_folder_another_running_server_uses_is_refused(directory: Path) -> None:
    """Issue #36: a second instance on the same folder wiped the first one's live counters."""
    with another_server(directory) as server:
        (directory / "counter_12.db").write_bytes(b"the other server's worker's counts")
        with pytest.raises(ConfigurationError, match=rf"another searchsvc server \(pid {server.pid} on "):
            metrics_directory.prepare()
        assert (directory / "counter_12.db").exists()
    assert metrics_directory.prepare() is None  # its lock went with it
    assert not (directory / "counter_12.db").exists()


def test_gunicorn_refuses_a_metrics_folder_another_server_uses_with_one_line(tmp_path: Path) -> None:
    directory = tmp_path / "metrics"
    directory.mkdir()
    with another_server(directory):
        result = gunicorn_refusing(SEARCHSVC_METRICS="on", **{MULTIPROC_DIR_ENV: str(directory)})
    assert result.returncode == 2, result.stderr
    assert f"error: {MULTIPROC_DIR_ENV}={directory}: another searchsvc server (pid " in result.stderr
    assert "Booting worker" not in result.stderr and "Traceback" not in result.stderr
