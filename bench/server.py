"""The service as production runs it: the Procfile's `web:` line under bash, on a loopback port."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

from bench.measure import REPO, clean_env

STARTUP_SECONDS = 120


def procfile_web_command(repo: Path = REPO) -> str:
    for line in (repo / "Procfile").read_text(encoding="utf-8").splitlines():
        kind, _, command = line.partition(":")
        if kind.strip() == "web":
            return command.strip()
    raise RuntimeError("the Procfile has no web: line")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    port: int
    process: subprocess.Popen[bytes]

    def workers(self) -> list[psutil.Process]:
        """gunicorn's worker processes: the children of the master (bash execs it, or forks it)."""
        master = psutil.Process(self.process.pid)
        if "gunicorn" not in " ".join(master.cmdline()):
            master = next(c for c in master.children() if "gunicorn" in " ".join(c.cmdline()))
        return master.children()


@contextmanager
def procfile_web(index_dir: Path, workers: int, log: Path, repo: Path = REPO, **settings: str) -> Iterator[Server]:
    """gunicorn from the Procfile, serving `index_dir` with `workers` workers, until the block ends
    (`settings`: more SEARCHSVC_* variables, such as the OpenSearch backend's; `repo`: the checkout
    whose code and Procfile serve, for comparing two versions)."""
    port = free_port()
    env = clean_env(
        PORT=str(port),
        HOST="127.0.0.1",
        WEB_CONCURRENCY=str(workers),
        SEARCHSVC_INDEX_DIR=str(index_dir),
        PYTHONPATH=str(repo),
        **settings,
    )
    with log.open("wb") as output:
        process = subprocess.Popen(
            ["bash", "-c", procfile_web_command(repo)],
            cwd=repo,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_ready(port, process, log)
        yield Server(port, process)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _wait_ready(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited {process.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/readyz")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"gunicorn never became ready:\n{log.read_text(errors='replace')[-3000:]}")


def timed_get(port: int, path: str) -> tuple[int, float, float]:
    """GET `path` on a new loopback connection: status (0: the connection failed), milliseconds as the
    client saw them, and the server's own `took_ms` (0 unless 200)."""
    status, elapsed, body = timed_answer(port, path)
    took = json.loads(body).get("took_ms", 0.0) if status == 200 else 0.0
    return status, elapsed, took


def timed_answer(port: int, path: str) -> tuple[int, float, bytes]:
    """GET `path` on a new loopback connection: status (0: the connection failed), milliseconds as the
    client saw them, and the body."""
    started = time.perf_counter()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read()
        status = response.status
        connection.close()
    except (OSError, http.client.HTTPException):
        return 0, (time.perf_counter() - started) * 1000, b""
    return status, (time.perf_counter() - started) * 1000, body
