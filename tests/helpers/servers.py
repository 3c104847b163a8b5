"""Real servers for tests: the Procfile's gunicorn on a free loopback port, real `searchsvc rebuild` runs.

Shared by the tests that need what only exists across processes (tests/system/) and by
the browser tests (tests/system/test_ui_browser.py), which drive a page served exactly as in production.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import psutil
import pytest

from tests.helpers.paths import REPO

VENV_BIN = Path(sys.executable).parent
SEARCHSVC = VENV_BIN / "searchsvc"
REQUEST_TIMEOUT = 30  # seconds; gunicorn's worker timeout is 30 s too
POLL_INTERVAL = 0.1
POLL_ATTEMPTS = 300  # × POLL_INTERVAL: about 30 s for a server to come up or a switch to be seen

# Straight to the loopback server, whatever proxy the environment names.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get(url: str, timeout: float = REQUEST_TIMEOUT) -> tuple[int, Any]:
    """GET `url`: its status and JSON body, for error statuses too."""
    return send(urllib.request.Request(url), timeout)


def send(request: urllib.request.Request, timeout: float = REQUEST_TIMEOUT) -> tuple[int, Any]:
    """Send `request`: its status and JSON body, for error statuses too."""
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        try:
            return error.code, json.loads(error.read())
        finally:
            error.close()


def get_text(url: str, timeout: float = REQUEST_TIMEOUT) -> tuple[int, str]:
    """GET `url`: its status and body as text, for error statuses too (e.g. /metrics)."""
    try:
        with _OPENER.open(url, timeout=timeout) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        try:
            return error.code, error.read().decode("utf-8", errors="replace")
        finally:
            error.close()


def free_port() -> int:
    """A loopback port nothing listens on now (the kernel's pick for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def procfile_web_command() -> str:
    """The Procfile's `web:` command, as the platform would hand it to a shell."""
    for line in (REPO / "Procfile").read_text(encoding="utf-8").splitlines():
        kind, _, command = line.partition(":")
        if kind.strip() == "web":
            return command.strip()
    raise AssertionError("the Procfile has no web: line")


def environment(**extra: str) -> dict[str, str]:
    """This process's environment (SEARCHSVC_* already removed), the venv's bin first on PATH."""
    return {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", **extra}


def gunicorn_refusing(**extra_env: str) -> subprocess.CompletedProcess[str]:
    """Start gunicorn with the Procfile's config and `extra_env`, for settings that must stop it
    before any worker boots: it is expected to exit by itself (60 s at most)."""
    return subprocess.run(
        [sys.executable, "-m", "gunicorn", "--config", "config/gunicorn.conf.py", "searchsvc:create_app()"],
        cwd=REPO,
        env=environment(**extra_env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def run_rebuild(
    index_dir: Path, *sources: Path, force: bool = False, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    """Run `searchsvc rebuild SOURCES --index-dir index_dir` (`--force`) as a separate process, whatever its outcome."""
    return subprocess.run(
        [str(SEARCHSVC), "rebuild", *map(str, sources), "--index-dir", str(index_dir), *(["--force"] if force else [])],
        cwd=REPO,
        env=environment(**extra_env),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def rebuild_index(index_dir: Path, *sources: Path, force: bool = False, **extra_env: str) -> str:
    """Run a rebuild that must succeed and publish; return the generation it published."""
    done = run_rebuild(index_dir, *sources, force=force, **extra_env)
    assert done.returncode == 0, f"rebuild exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    summary = done.stdout.split()
    assert summary[:3] == ["rebuilt", "index", "generation"], done.stdout
    return summary[3]


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group (gunicorn stops its workers), SIGKILL if it lingers."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=30)
            return
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


@contextmanager
def serving(command: list[str], env: Mapping[str, str], port: int, log: Path) -> Iterator[str]:
    """Run `command` (a server on 127.0.0.1:`port`) from the repository root until /healthz
    answers; yield its base URL; stop its whole process group on exit.

    Its output goes to the file `log`, not a pipe that could fill up and block it.
    """
    base = f"http://127.0.0.1:{port}"
    with log.open("wb") as output:
        process = subprocess.Popen(
            command,
            cwd=REPO,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        for _ in range(POLL_ATTEMPTS):
            if process.poll() is not None:
                pytest.fail(f"server exited with status {process.returncode}:\n{tail(log)}")
            try:
                if get(f"{base}/healthz", timeout=2)[0] == 200:
                    break
            except (OSError, http.client.HTTPException, ValueError):  # refused, reset or cut off while starting
                pass
            time.sleep(POLL_INTERVAL)
        else:
            pytest.fail(f"server never answered {base}/healthz:\n{tail(log)}")
        yield base
    finally:
        _stop(process)


def server_output(log: Path) -> str:
    return log.read_text(encoding="utf-8", errors="replace")


def tail(log: Path) -> str:
    return server_output(log)[-5000:]


@contextmanager
def procfile_web(tmp_path: Path, index_dir: Path, prefix: Sequence[str] = (), **extra_env: str) -> Iterator[str]:
    """The Procfile's web: command through bash, as a platform runs it, with two workers.

    `prefix` runs it under another command (e.g. setpriv); `extra_env` adds to its environment,
    e.g. GUNICORN_CMD_ARGS for options the platform would set.
    """
    port = free_port()
    env = environment(
        PORT=str(port), HOST="127.0.0.1", WEB_CONCURRENCY="2", SEARCHSVC_INDEX_DIR=str(index_dir), **extra_env
    )
    with serving([*prefix, "bash", "-c", procfile_web_command()], env, port, tmp_path / "server.log") as base:
        yield base


def gunicorn_workers(pidfile: Path) -> list[int]:
    """The worker processes of the gunicorn master whose pid is in `pidfile` (gunicorn --pid)."""
    master = int(pidfile.read_text().strip())
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return [int(pid) for pid in children]


def answers_by_worker(port: int, workers: Sequence[int], paths: Sequence[str]) -> dict[int, dict[str, int]]:
    """The status of every GET `paths` from each worker: a kept-alive connection stays with the worker
    that accepted it, which holds its socket (a worker is pinned by no header or setting)."""
    statuses: dict[int, dict[str, int]] = {pid: {} for pid in workers}
    for _attempt in range(POLL_ATTEMPTS):
        if all(len(found) == len(paths) for found in statuses.values()):
            break
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
        try:
            answered = _status(connection, paths[0])  # answered, so accepted by a worker
            pid = _worker_holding(connection, port, workers)
            if pid is None:  # a worker started since `workers` were read
                continue
            found = statuses[pid]
            found.setdefault(paths[0], answered)
            for path in paths:
                if path not in found:
                    found[path] = _status(connection, path)
        except (OSError, http.client.HTTPException):  # closed when idle: the next connection goes on
            pass
        finally:
            connection.close()
    return statuses


def _status(connection: http.client.HTTPConnection, path: str) -> int:
    connection.request("GET", path)
    response = connection.getresponse()
    response.read()
    return response.status


def _worker_holding(connection: http.client.HTTPConnection, port: int, workers: Sequence[int]) -> int | None:
    assert connection.sock is not None
    client_port = connection.sock.getsockname()[1]
    for pid in workers:
        for held in psutil.Process(pid).net_connections(kind="tcp"):
            if held.laddr and held.laddr.port == port and held.raddr and held.raddr.port == client_port:
                return pid
    return None


class ClientThreads:
    """Client threads, each running `_client(number)` until the `with` block ends."""

    def __init__(self, clients: int) -> None:
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._client, args=(number,), name=f"client-{number}", daemon=True)
            for number in range(clients)
        ]

    def __enter__(self) -> Self:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=REQUEST_TIMEOUT + 10)
        assert not any(thread.is_alive() for thread in self._threads), "a client thread did not stop"

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def _client(self, number: int) -> None:
        raise NotImplementedError


def kill_once(victim: subprocess.Popen[Any], done: Callable[[], object], what: str, pause_s: float = 0.01) -> None:
    """SIGKILL `victim` (its stderr a pipe) as soon as `done()` holds, looking every `pause_s` for
    300 s at most: it must still be running until then, and end by the signal."""
    try:
        deadline = time.monotonic() + 300
        while not done():
            assert victim.poll() is None, f"the {what} ended before a checkpoint: {victim.communicate()[1]!r}"
            assert time.monotonic() < deadline, "no checkpoint was saved"
            time.sleep(pause_s)
        victim.send_signal(signal.SIGKILL)
    finally:
        victim.kill()
        victim.communicate()
    assert victim.returncode == -signal.SIGKILL
