"""Measuring helpers shared by the benchmarks: subprocess time and peak memory, percentiles, tables."""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
# Paper vectors by content, shared by every benchmark run (git-ignored): a corpus is embedded
# on its first run (docs/performance.md gives that cost separately); the store keeps the
# vectors of the last corpus rebuilt, so a run on another corpus embeds again.
VECTOR_STORE = REPO / "bench" / ".vectors"
SAMPLE_EVERY = 0.05  # seconds between two RSS samples of a process tree


def tree_rss(process: psutil.Process) -> int:
    """Resident memory of `process` and all its descendants, in bytes."""
    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total


class PeakSampler:
    """Samples the summed RSS of a process tree in a thread until stopped; keeps the peak."""

    def __init__(self, pid: int) -> None:
        self._process = psutil.Process(pid)
        self._stop = threading.Event()
        self.peak = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, tree_rss(self._process))
            except psutil.NoSuchProcess:
                return
            self._stop.wait(SAMPLE_EVERY)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


@dataclass
class RunResult:
    seconds: float
    cpu_seconds: float  # user + system of the process and every descendant it waited for
    peak_rss: int
    stdout: str


def run_measured(command: Sequence[str], env: Mapping[str, str] | None = None, cwd: Path = REPO) -> RunResult:
    """Run `command` to completion; its wall time and the peak RSS of its process tree."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(
        list(command), cwd=cwd, env=dict(env or clean_env()), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    sampler = PeakSampler(process.pid)
    stdout, stderr = process.communicate()
    seconds = time.perf_counter() - started
    peak = sampler.stop()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {process.returncode}:\n{stdout[-3000:]}\n{stderr[-3000:]}")
    return RunResult(seconds, cpu, peak, stdout)


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without SEARCHSVC_* settings but the shared vector store, the venv's bin
    first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEARCHSVC_")}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["SEARCHSVC_VECTOR_STORE"] = str(VECTOR_STORE)
    return {**env, **extra}


def directory_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def percentile(samples: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (no interpolation), as latency reports usually give it."""
    ordered = sorted(samples)
    rank = max(1, round(fraction * len(ordered) + 0.5 - 1e-9))
    return ordered[min(rank, len(ordered)) - 1]


def latency_summary(samples_ms: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(samples_ms),
        "mean": round(statistics.fmean(samples_ms), 2),
        "p50": round(percentile(samples_ms, 0.50), 2),
        "p95": round(percentile(samples_ms, 0.95), 2),
        "p99": round(percentile(samples_ms, 0.99), 2),
        "max": round(max(samples_ms), 2),
    }


def machine() -> dict[str, Any]:
    """What the numbers were measured on, including how busy the machine was."""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def mib(size: int) -> float:
    return round(size / 2**20, 1)


def report(result: dict[str, Any], text: str, out: Path | None) -> None:
    """Print a benchmark's table; with `out`, also write its JSON there and the table beside it (.md)."""
    print(text)
    if out:
        out.write_text(json.dumps(result, indent=2) + "\n")
        out.with_suffix(".md").write_text(text + "\n")
